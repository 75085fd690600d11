package fabric

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
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

// BenchmarkAgentObservations: the pair detail of n agents, 64 NICs a
// ToR, each probing its 63 ToR-mates and 8 NICs of other ToRs (the
// default plan's order of size), one NIC dead, turned into observations
// and localised — what `fabric --agents` does after reading them.
func BenchmarkAgentObservations(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
			tor := func(i int) string { return fmt.Sprintf("leaf-%d", i/64) }
			hosts := make([]Host, n)
			pairs := make([]AgentPairs, n)
			for i := range hosts {
				hosts[i] = Host{Name: fmt.Sprint(i), Attachments: []Attachment{{Network: "10.0.0.0/8", Family: FamilyIPv4, Addr: addr(i), Switch: tor(i)}}}
				ps := make([]AgentPair, 0, 71)
				peer := func(j int, scope string) {
					t := tor(j)
					var lost uint64
					if i == 1 || j == 1 {
						lost = 20
					}
					ps = append(ps, AgentPair{Address: addr(j).String(), ToR: &t, Scope: scope, Probes: 20, Answered: 20 - lost, Lost: lost})
				}
				for j := i / 64 * 64; j < min(n, i/64*64+64); j++ {
					if j != i {
						peer(j, "tor")
					}
				}
				for k := 1; k <= 8; k++ {
					peer((i+k*64+k)%n, "inter_tor")
				}
				pairs[i] = AgentPairs{Scale: 1, Pairs: ps}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				in := AgentObservations(hosts, pairs)
				if s := Localize(in); len(s) != 1 || s[0].NIC != addr(1).String() {
					b.Fatalf("%+v", s)
				}
			}
		})
	}
}

// BenchmarkLocalize is Localize alone on n pairs, 64 NICs a ToR, 1,563
// ToRs, 16 spines, each pair between NICs of two random ToRs with one
// traced source port — far more than any real window holds:
//
//   - loss: every pair lost a probe, its port traced through a random
//     spine, and 64 NICs of one ToR lost with all their mates (a dead
//     ToR): loss everywhere;
//   - remark: every pair's probes were remarked through one spine (a
//     spine that rewrites every DSCP), so that every ToR's link to it is
//     a suspect: the most rounds of naming links one at a time.
//
// What it names is not the point; how its cost grows with the pairs is.
func BenchmarkLocalize(b *testing.B) {
	nic := func(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }
	tor := func(i int) string { return fmt.Sprintf("leaf-%d", i/64) }
	for _, remark := range []bool{false, true} {
		for _, n := range []int{10000, 100000} {
			name := fmt.Sprint("loss/", n)
			if remark {
				name = fmt.Sprint("remark/", n)
			}
			b.Run(name, func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				var in LocalizeInput
				for range n {
					s, d := r.IntN(100000), r.IntN(100000)
					if s/64 == d/64 {
						continue
					}
					p := PairObservation{Src: nic(s), Dst: nic(d), SrcToR: tor(s), DstToR: tor(d), Sent: 30}
					sp := SportObservation{Sport: uint16(0xc000 + r.IntN(16384)), Spine: fmt.Sprint("spine-", r.IntN(16))}
					if remark {
						p.Remarked, sp.Remarked, sp.Spine = 1, 1, "spine-3"
					} else {
						p.Lost, sp.Lost = 1, 1
					}
					p.Sports = []SportObservation{sp}
					in.Pairs = append(in.Pairs, p)
				}
				if !remark {
					for s := range 64 {
						for d := range 64 {
							if s != d {
								in.Pairs = append(in.Pairs, PairObservation{Src: nic(s), Dst: nic(d), SrcToR: tor(s), DstToR: tor(d), Sent: 30, Lost: 3})
							}
						}
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					Localize(in)
				}
			})
		}
	}
}
