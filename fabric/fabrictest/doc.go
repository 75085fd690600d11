// Package fabrictest makes fleets of host snapshots for roce-probe
// fabric's tests and benchmarks: copies of one real snapshot document, each
// with its own hostname and addresses, consistent the way a host's own
// snapshot is (the GID tables are what the kernel builds from the moved
// addresses), for a test or benchmark to vary further.
package fabrictest
