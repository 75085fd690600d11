// Command fabricgen writes a fleet of host snapshots for roce-probe
// fabric's benchmarks (docs/performance.md, "fabric"): n copies of a
// snapshot document, each with its own hostname and addresses
// (internal/fabric/fabrictest), one in a hundred with its GID entries of
// enp1s0f0.100 moved and one in a hundred with an MTU of 1500 on
// enp1s0f0, so that the report has findings.
//
//	go run ./internal/cmd/fabricgen -n 10000 -o /tmp/fleet [-base internal/host/testdata/mlx5-counters.json]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/roce-probe/roce-probe/internal/fabric/fabrictest"
)

func main() {
	n := flag.Int("n", 10000, "how many hosts")
	out := flag.String("o", "", "directory to write node-NNNNN.json into (created)")
	base := flag.String("base", "internal/host/testdata/mlx5-counters.json", "the snapshot every host is made from")
	flag.Parse()
	if *out == "" || *n < 1 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: fabricgen -n N -o DIR [-base SNAPSHOT]")
		os.Exit(2)
	}
	b, err := os.ReadFile(*base)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fabricgen:", err)
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "fabricgen:", err)
		os.Exit(1)
	}
	paths, err := fabrictest.WriteFleet(*out, b, *n, fabrictest.VaryBench)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fabricgen:", err)
		os.Exit(1)
	}
	fmt.Printf("%d snapshots in %s\n", len(paths), *out)
}
