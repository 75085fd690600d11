package fabric

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/host"
)

// benchFleetSize is the target: 10,000 snapshots in at most 2 s
// (docs/performance.md).
const benchFleetSize = 10000

var (
	benchOnce  sync.Once
	benchPaths []string
	benchErr   error
)

// benchFleet writes, once per test binary, 10,000 snapshots made from
// mlx5-counters.json (a dual-port mlx5 NIC with VLAN and macvlan netdevs,
// DCB, a counters sample and settings: 19 KB of JSON each, as collect
// writes it), with fabrictest.VaryBench's odd hosts so that the report has
// findings.
func benchFleet(b *testing.B) []string {
	benchOnce.Do(func() {
		base, err := os.ReadFile(filepath.Join(hostTestdata, "mlx5-counters.json"))
		if err != nil {
			benchErr = err
			return
		}
		dir, err := os.MkdirTemp("", "roce-probe-fabric-bench-")
		if err != nil {
			benchErr = err
			return
		}
		benchPaths, benchErr = fabrictest.WriteFleet(dir, base, benchFleetSize, fabrictest.VaryBench)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchPaths
}

// BenchmarkReadFilesAnalyze10k reads 10,000 snapshot files (decode, the
// hosts' facts) on every CPU and compares them: what `roce-probe fabric
// --from DIR` does but printing.
func BenchmarkReadFilesAnalyze10k(b *testing.B) {
	paths := benchFleet(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		hosts, err := ReadFiles(paths, 0)
		if err != nil {
			b.Fatal(err)
		}
		r, err := Analyze(hosts, SourceFiles)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Findings) == 0 {
			b.Fatal("no findings")
		}
	}
}

// BenchmarkAnalyze10k is the comparison alone, on 10,000 hosts' facts.
func BenchmarkAnalyze10k(b *testing.B) {
	hosts, err := ReadFiles(benchFleet(b), 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Analyze(hosts, SourceFiles); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFromSnapshot is one host's facts from a decoded snapshot.
func BenchmarkFromSnapshot(b *testing.B) {
	s, err := host.Load(benchFleet(b)[1])
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := FromSnapshot(s, "x"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad is one snapshot file read and decoded.
func BenchmarkLoad(b *testing.B) {
	p := benchFleet(b)[1]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := host.Load(p); err != nil {
			b.Fatal(err)
		}
	}
}
