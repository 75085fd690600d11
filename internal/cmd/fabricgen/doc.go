// Command fabricgen writes a fleet of host snapshots for roce-probe
// fabric's benchmarks (docs/performance.md, "fabric"): n copies of a
// snapshot document, each with its own hostname and addresses
// (fabric/fabrictest), one in a hundred with its GID entries of
// enp1s0f0.100 moved and one in a hundred with an MTU of 1500 on
// enp1s0f0, so that the report has findings. With -vary example it
// writes the fleet of docs/fabric.md's example instead
// (fabrictest.VaryExample).
//
//	go run ./internal/cmd/fabricgen -n 10000 -o /tmp/fleet [-base host/testdata/mlx5-counters.json] [-vary bench|example]
package main
