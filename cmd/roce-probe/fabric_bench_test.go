package main

import (
	"io"
	"os"
	"testing"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
)

// BenchmarkFabricFrom10k runs `roce-probe fabric --from DIR -o json`
// in-process on 10,000 snapshots (internal/cmd/fabricgen's fleet: copies
// of mlx5-counters.json, 19 KB each, with one host in a hundred's GID
// entries moved and one in a hundred's MTU changed). One op is the whole
// command: reading, comparing, printing. docs/performance.md, "fabric".
func BenchmarkFabricFrom10k(b *testing.B) {
	// b.Loop runs this function once: the fleet is written once.
	base, err := os.ReadFile(hostFixtures + "mlx5-counters.json")
	if err != nil {
		b.Fatal(err)
	}
	fleetDir := b.TempDir()
	if _, err := fabrictest.WriteFleet(fleetDir, base, 10000, fabrictest.VaryBench); err != nil {
		b.Fatal(err)
	}
	cpu0 := cpuTime()
	for b.Loop() {
		if code := run([]string{"fabric", "--from", fleetDir, "-o", "json"}, nil, io.Discard, io.Discard); code != exitFinding {
			b.Fatalf("exit %d", code)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}
