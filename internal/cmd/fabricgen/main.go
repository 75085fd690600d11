package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

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
	fmt.Printf("%d snapshots: %s .. %s\n", len(paths), filepath.Base(paths[0]), filepath.Base(paths[len(paths)-1]))
}
