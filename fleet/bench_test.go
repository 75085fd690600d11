package fleet

import (
	"strconv"
	"testing"
)

// BenchmarkPlan is New (indexing the peers) and one Plan for an agent of
// a Clos of 64-NIC ToRs with 10,000 and 100,000 peers: what an agent
// does when its peers change (New) and at each round (Plan).
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
