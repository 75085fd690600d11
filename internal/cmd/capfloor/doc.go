// Command capfloor measures the floors under `roce-probe decode
// --summary`'s whole-process time (scripts/bench-decode.sh,
// docs/performance.md). With no argument it starts and exits: a Go
// process, nothing else. With a file it also maps the file, as decode
// --summary maps a pcap capture (where the system cannot, it reads it), and
// reads one byte of every 64 — every cache line — on every core
// (GOMAXPROCS goroutines, one slice of the file each): the least any
// decoder of the capture must do. It prints the sum of the bytes read, so
// that the reads are not optimised away.
//
//	go run ./internal/cmd/rocegen -n 100000 -o /tmp/roce-100k.pcap
//	go build -o /tmp/capfloor ./internal/cmd/capfloor
//	hyperfine -N /tmp/capfloor "/tmp/capfloor /tmp/roce-100k.pcap"
package main
