package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/host"
)

func main() {
	n := flag.Int("n", 10000, "how many hosts")
	out := flag.String("o", "", "directory to write node-NNNNN.json into (created)")
	base := flag.String("base", "host/testdata/mlx5-counters.json", "the snapshot every host is made from")
	vary := flag.String("vary", "bench", "which hosts differ: bench (one in a hundred GID pair moved, one MTU 1500) or example (docs/fabric.md's: host 2 GID pair moved, host 3 PFC on 3 and 4)")
	flag.Parse()
	varies := map[string]func(int, *host.Snapshot){"bench": fabrictest.VaryBench, "example": fabrictest.VaryExample}
	if *out == "" || *n < 1 || flag.NArg() > 0 || varies[*vary] == nil {
		fmt.Fprintln(os.Stderr, "usage: fabricgen -n N -o DIR [-base SNAPSHOT] [-vary bench|example]")
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
	paths, err := fabrictest.WriteFleet(*out, b, *n, varies[*vary])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fabricgen:", err)
		os.Exit(1)
	}
	fmt.Printf("%d snapshots: %s .. %s\n", len(paths), filepath.Base(paths[0]), filepath.Base(paths[len(paths)-1]))
}
