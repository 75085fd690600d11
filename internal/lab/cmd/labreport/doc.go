// Command labreport summarises a lab run for scripts/lab.sh: it reads the
// run directory's plan and the go test -json streams (out/NAME.json, made
// with go tool test2json from the binaries' output), prints one line per
// package, the output of every failing test, skipped tests with their
// reason, and the artifacts the tests left, and exits 1 when a test failed,
// a test binary exited non-zero, or no test ran.
//
//	go run ./internal/lab/cmd/labreport RUNDIR
package main
