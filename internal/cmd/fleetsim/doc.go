// Command fleetsim runs the fleet simulation of internal/fleetsim at a
// size too large for the unit tests (docs/performance.md, "fleet"): n
// NICs in a leaf-spine fabric, each with an agent running the fleet
// package's plan, aggregation and governor, and random faults; it prints
// the probes per second per agent and per NIC, the series, the time to
// the first evidence of each fault and fabric.Localize's precision and
// recall, in all and by fault kind.
//
//	go run ./internal/cmd/fleetsim -nics 32000 [-seed 1] [-epochs 7] [-faults 15] [-v] [-cpuprofile FILE]
package main
