package fleet

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// TestAggregatorBound: 10,000 peers in 157 ToRs all probed through one
// aggregator hold at most mates + MaxToRs groups per flow, the least
// recently updated ToR evicted first.
func TestAggregatorBound(t *testing.T) {
	peers := clos(157, func(int) int { return 64 })[:10000]
	a := NewAggregator(32)
	var total Counts
	for range 3 {
		for i, p := range peers {
			k := InterToR
			if p.ToR == "leaf000" {
				k = Mate
			}
			c := Counts{Sent: 2, Answered: 1, Lost: uint64(i % 2)}
			total.add(c)
			for _, flow := range []string{"rdma", "bulk"} {
				if g, ok := a.Add(flow, p, k, c); ok && g.Kind == Mate {
					t.Fatalf("a mate's group was evicted: %+v", g)
				}
			}
		}
	}
	if a.Len() > 2*(64+32) {
		t.Fatalf("%d groups, want at most 2 flows × (64 mates + 32 ToRs)", a.Len())
	}
	held := Counts{}
	tors := map[string]bool{}
	for _, g := range a.Groups() {
		if g.Flow == "rdma" {
			held.add(g.Counts)
			if g.Kind == InterToR {
				tors[g.ToR] = true
			}
		}
	}
	// The 32 ToRs held are the last 32 updated: leaf125..leaf156.
	for i := 125; i < 157; i++ {
		if !tors[fmt.Sprintf("leaf%03d", i)] {
			t.Errorf("leaf%03d not held; held %v", i, tors)
		}
	}
	if held.Sent > total.Sent || held.Sent == 0 {
		t.Errorf("held %+v of %+v", held, total)
	}
}

func TestWorst(t *testing.T) {
	mk := func(a string, ans, lost uint64) PairStat {
		return PairStat{Flow: "f", Peer: Peer{Addr: netip.MustParseAddr(a)}, Counts: Counts{Sent: ans + lost, Answered: ans, Lost: lost}}
	}
	in := []PairStat{mk("10.0.0.1", 9, 1), mk("10.0.0.2", 0, 0), mk("10.0.0.3", 5, 5), mk("10.0.0.4", 1, 1), mk("10.0.0.5", 99, 1), mk("10.0.0.6", 0, 3)}
	got := Worst(in, 3)
	want := []string{"10.0.0.6", "10.0.0.3", "10.0.0.4"} // 100 %, then 50 % with 5 lost before 50 % with 1
	if len(got) != 3 {
		t.Fatalf("%d pairs", len(got))
	}
	for i, w := range want {
		if got[i].Peer.Addr.String() != w {
			t.Errorf("worst[%d] = %v, want %s", i, got[i].Peer.Addr, w)
		}
	}
	if all := Worst(in, 10); len(all) != 5 {
		t.Errorf("Worst(10) = %d pairs, want the 5 that lost a probe", len(all))
	}
}

func TestWindow(t *testing.T) {
	var w Window
	w.Add(Counts{Sent: 10, Lost: 5})
	w.Roll()
	w.Add(Counts{Sent: 10, Answered: 10})
	if got := w.Total(); got != (Counts{Sent: 20, Answered: 10, Lost: 5}) {
		t.Errorf("%+v", got)
	}
	w.Roll()
	if got := w.Total(); got != (Counts{Sent: 10, Answered: 10}) {
		t.Errorf("after two rolls: %+v, want the last period only", got)
	}
}

// TestGovernor: 10 % of a core against a 3 % budget steps down one level
// per period to a tenth; calm periods bring it back one level per three;
// late wake-ups are pressure too.
func TestGovernor(t *testing.T) {
	g := NewGovernor(0.03)
	busy := Sample{Wall: 10 * time.Second, CPU: time.Second, Wakeups: 100}
	calm := Sample{Wall: 10 * time.Second, CPU: 50 * time.Millisecond, Wakeups: 100}
	for i, want := range []float64{0.5, 0.25, 0.1, 0.1} {
		s, why, _ := g.Observe(busy)
		if s != want || why != PressureCPU {
			t.Fatalf("busy period %d: %g %q, want %g cpu", i, s, why, want)
		}
	}
	var steps []float64
	for range 9 {
		s, why, changed := g.Observe(calm)
		if why != PressureNone {
			t.Fatalf("a calm period's pressure: %q", why)
		}
		if changed {
			steps = append(steps, s)
		}
	}
	if fmt.Sprint(steps) != "[0.25 0.5 1]" || g.Pressure() != PressureNone {
		t.Errorf("calm steps %v pressure %q, want [0.25 0.5 1] and none", steps, g.Pressure())
	}
	late := Sample{Wall: 10 * time.Second, CPU: 50 * time.Millisecond, Wakeups: 100, Late: 30}
	if s, why, changed := g.Observe(late); s != 0.5 || why != PressureLate || !changed {
		t.Errorf("late: %g %q %v", s, why, changed)
	}
	// Between half the budget and the budget: hold.
	mid := Sample{Wall: 10 * time.Second, CPU: 200 * time.Millisecond, Wakeups: 100}
	for range 5 {
		if s, _, _ := g.Observe(mid); s != 0.5 {
			t.Fatalf("mid load moved the scale to %g", s)
		}
	}
}

// TestGovernorUpkeep: a period whose CPU is over the budget only by its
// upkeep (a start-up's peer list, host reads after a change: 9 % of a
// core, against a budget of 3 % and probing at 1 %) changes nothing and
// counts as calm; the same CPU spent probing steps down.
func TestGovernorUpkeep(t *testing.T) {
	g := NewGovernor(0.03)
	g.Calm = 1
	startup := Sample{Wall: 10 * time.Second, CPU: time.Second, Upkeep: 900 * time.Millisecond, Wakeups: 100}
	for i := range 5 {
		if s, why, changed := g.Observe(startup); s != 1 || why != PressureNone || changed {
			t.Fatalf("upkeep period %d: %g %q %v, want 1, no pressure, unchanged", i, s, why, changed)
		}
	}
	probing := Sample{Wall: 10 * time.Second, CPU: time.Second, Upkeep: 100 * time.Millisecond, Wakeups: 100}
	if s, why, changed := g.Observe(probing); s != 0.5 || why != PressureCPU || !changed {
		t.Fatalf("probing at 9 %%: %g %q %v, want 0.5 cpu", s, why, changed)
	}
	// Upkeep is calm: with Calm 1 one such period steps back up.
	if s, why, changed := g.Observe(startup); s != 1 || why != PressureNone || !changed {
		t.Errorf("upkeep after pressure: %g %q %v, want back to 1", s, why, changed)
	}
	// An upkeep measured larger than the CPU (clocks read apart) is none
	// of the probing's: not negative CPU.
	if s, why, _ := g.Observe(Sample{Wall: 10 * time.Second, CPU: time.Second, Upkeep: 2 * time.Second}); s != 1 || why != PressureNone {
		t.Errorf("upkeep over CPU: %g %q", s, why)
	}
}
