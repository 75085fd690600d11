package fleet

import (
	"strconv"
	"testing"
)

// BenchmarkPlan is New (indexing the peers), an agent's Planner from an
// Index of the fleet built once (what a simulation or a central planner
// does per agent), and one Plan for an agent of a Clos of 64-NIC ToRs
// with 10,000 and 100,000 peers: what an agent does when its peers
// change (New) and at each round (Plan).
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		peers := clos((n+63)/64, func(int) int { return 64 })[:n]
		b.Run("new/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := New(peers[n/2], peers, DefaultSettings(), 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		x := NewIndex(peers)
		b.Run("planner/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i = (i + 4099) % n // another agent of the fleet each time
				if _, err := x.Planner(peers[i], DefaultSettings(), 1); err != nil {
					b.Fatal(err)
				}
			}
		})
		p, _ := New(peers[n/2], peers, DefaultSettings(), 1)
		b.Run("round/"+strconv.Itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			r := int64(0)
			for b.Loop() {
				r++
				if pl := p.Plan(r); len(pl.Targets) != 63+5 {
					b.Fatalf("%d targets", len(pl.Targets))
				}
			}
		})
	}
}

// BenchmarkAggregatorAdd is one probe outcome added to a ToR group of an
// Aggregator holding 63 mates and maxToRs ToR groups, every Add to a ToR
// it does not hold (so each evicts the least recently updated): the
// worst case of an agent whose sampled ToRs keep changing.
func BenchmarkAggregatorAdd(b *testing.B) {
	for _, maxToRs := range []int{16, 1024} {
		b.Run("tors/"+strconv.Itoa(maxToRs), func(b *testing.B) {
			peers := clos(100000/64, func(int) int { return 64 })
			a := NewAggregator(maxToRs)
			for _, p := range peers[1:64] {
				a.Add("rdma", p, Mate, Counts{Sent: 1, Answered: 1})
			}
			b.ReportAllocs()
			i := 64
			for b.Loop() {
				if i += 64; i >= len(peers) {
					i = 64
				}
				a.Add("rdma", peers[i], InterToR, Counts{Sent: 1, Lost: 1})
			}
			if a.Len() != 63+maxToRs {
				b.Fatalf("%d groups", a.Len())
			}
		})
	}
}
