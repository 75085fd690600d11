// Package netnstest builds throwaway network namespaces joined by veth
// pairs for tests that send real frames on the machine running them. Every
// namespace is removed when its test ends. The tests need root and the ip
// binary: without root they skip (CI runs as root); a missing tool fails
// under ROCE_PROBE_CI=1 and skips otherwise.
package netnstest
