// Command labreport summarises a lab run for scripts/lab.sh: it reads the
// run directory's plan (the first three fields of scripts/lab/plan.sh's
// lines), its kernels file (one results directory per kernel, out-SPEC/)
// and in each the go test -json streams (NAME.json for a
// package's single-host lab tests, NAME.fabric.json for its fabric tests,
// NAME.leafspine.json for its leaf-spine tests, made with go tool test2json
// from the binaries' output). It prints, per
// kernel, one line per package, the output of every failing test and
// skipped tests with their reason (tagged with the kernel release), the
// artifacts the tests left and why fabric tests did not run on a kernel;
// then one line per kernel, "lab: RELEASE: N passed, M failed, K skipped",
// and the total "lab: N passed, M failed, K skipped". It exits 1 when a
// test failed, a test binary exited non-zero, a kernel's run did not
// finish, or no test ran.
//
//	go run ./internal/lab/cmd/labreport RUNDIR
package main
