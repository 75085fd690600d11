// Package roceapp is what an application developer's program does with
// roce-probe's library, in a module of its own: its Examples load a host
// snapshot, pick the GID index for a destination, resolve an address
// handle to its wire markings, check whether the flow (verbs, or rdma_cm
// with the port's default ToS) is lossless, decode
// a capture with ICRC checks and read the counters findings.
//
// The module path (example.com/roceapp) lies outside
// github.com/roce-probe/roce-probe, so Go's internal-package rule refuses
// every import of roce-probe's internal/ packages here: the Examples use
// the public packages only. go.mod replaces roce-probe's module with this
// checkout (../); scripts/test.sh vets and tests the module.
//
// The expected outputs come from the fixtures' documented facts
// (host/testdata/README.md, roce/testdata/make-rxe-captures.sh) and the
// driver rules of docs/qos.md, each named beside the Example.
package roceapp
