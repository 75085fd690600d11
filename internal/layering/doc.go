// Package layering holds no code: its test checks the module's layering
// with `go list` on every system roce-probe builds for.
//
//   - A package under internal/ is machinery (small helpers, the cgo verbs
//     binding, test environments) and imports no public package of the
//     module, directly or through another package. The exceptions are the
//     applications built on the public packages — internal/agent,
//     internal/lab and its subpackages, the development tools under
//     internal/cmd — and the test-frame generator internal/rocegen,
//     which builds its frames with package roce.
//   - Package host, the pure snapshot, links no netlink, namespace,
//     raw-socket or BPF code on linux, darwin or windows (the list and why
//     each entry is on it: forbiddenInHost in layering_test.go).
//   - The packages that analyse a snapshot (roce, gid, vlan, qos, ah,
//     counters, fabric, host) build for darwin and windows without cgo.
//
// Run it with `go test ./internal/layering`; `go test ./...` includes it.
package layering
