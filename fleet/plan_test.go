package fleet

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"slices"
	"testing"
	"time"
)

// clos is a fleet of tors ToRs of size(t) NICs each, ToR names leafNNN.
func clos(tors int, size func(t int) int) []Peer {
	var out []Peer
	for t := range tors {
		for n := range size(t) {
			out = append(out, Peer{Addr: netip.AddrFrom4([4]byte{10, byte(t >> 8), byte(t), byte(n + 1)}), ToR: fmt.Sprintf("leaf%03d", t)})
		}
	}
	return out
}

func mustNew(t testing.TB, self Peer, peers []Peer, s Settings) *Planner {
	t.Helper()
	p, err := New(self, peers, s, 42)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSportCountCoversPaths checks SportCount against the coupon
// collector by simulation: ports hashed uniformly to 16 paths cover every
// path in at least 99 % of trials with SportCount(16, 0.99) ports, and
// one port fewer than the exact need fails more often than with it.
func TestSportCountCoversPaths(t *testing.T) {
	if got := SportCount(1, 0.99); got != 1 {
		t.Errorf("SportCount(1) = %d, want 1", got)
	}
	const width, trials = 16, 20000
	n := SportCount(width, 0.99)
	// The expected number of draws to collect all 16 coupons is
	// 16·H(16) ≈ 54.09: the bound for 0.99 must be well above it.
	if n < 55 || n > 200 {
		t.Fatalf("SportCount(16, 0.99) = %d, want between the mean 54.1 and 200", n)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	covered := func(ports int) float64 {
		ok := 0
		for range trials {
			var seen [width]bool
			c := 0
			for range ports {
				if p := rng.IntN(width); !seen[p] {
					seen[p] = true
					c++
				}
			}
			if c == width {
				ok++
			}
		}
		return float64(ok) / trials
	}
	if p := covered(n); p < 0.99 {
		t.Errorf("%d ports cover all 16 paths in %.4f of trials, want ≥ 0.99", n, p)
	}
	if p := covered(54); p > 0.9 {
		t.Errorf("54 ports (the mean need) cover all paths in %.4f of trials: the simulation is wrong", p)
	}
}

func TestSportDistinctInRange(t *testing.T) {
	peers := clos(2, func(int) int { return 4 })
	p := mustNew(t, peers[0], peers, DefaultSettings())
	for _, tg := range p.Plan(7).Targets {
		seen := map[uint16]bool{}
		for i := range uint32(tg.Sports) {
			s := tg.Sport(i)
			if s < 0xC000 || seen[s] {
				t.Fatalf("target %v port %d = %#x: out of range or repeated", peers[tg.Peer].Addr, i, s)
			}
			seen[s] = true
		}
		if tg.Sport(uint32(tg.Sports)) != tg.Sport(0) {
			t.Errorf("ports do not cycle after %d", tg.Sports)
		}
	}
}

// TestToRCoverage: in a Clos of 40 ToRs of 8 NICs (k = 2 sampled ToRs,
// so a ToR's 8 agents probe 16 ToRs a round), the agents of each ToR
// together probe a NIC of every other ToR within ToRWindow, and every
// NIC of every ToR is probed by someone within a few windows.
func TestToRCoverage(t *testing.T) {
	s := DefaultSettings()
	s.SampleToRs = 2
	peers := clos(40, func(int) int { return 8 })
	planners := make([]*Planner, len(peers))
	for i, self := range peers {
		planners[i] = mustNew(t, self, peers, s)
	}
	w := planners[0].Plan(0).ToRWindow
	if want := time.Duration(math.Ceil(39.0/16)) * s.Rotation; w != want {
		t.Fatalf("ToRWindow %v, want ⌈39/16⌉ rounds = %v", w, want)
	}
	rounds := int64(w / s.Rotation)
	for start := int64(1000); start < 1000+3*rounds; start += rounds { // any window
		seen := map[[2]string]bool{}
		for i, p := range planners {
			for r := start; r < start+rounds; r++ {
				for _, tg := range p.Plan(r).Targets {
					if tg.Kind == InterToR {
						seen[[2]string{peers[i].ToR, peers[tg.Peer].ToR}] = true
					}
				}
			}
		}
		if len(seen) != 40*39 {
			t.Fatalf("window from round %d: %d ToR pairs probed, want 40·39 = 1560", start, len(seen))
		}
	}
	nics := map[netip.Addr]bool{}
	for i, p := range planners {
		for r := range 20 * rounds {
			for _, tg := range p.Plan(r).Targets {
				if tg.Kind == InterToR {
					nics[peers[tg.Peer].Addr] = true
					if peers[tg.Peer].ToR == peers[i].ToR {
						t.Fatalf("%v samples its own ToR", peers[i].Addr)
					}
				}
			}
		}
	}
	if len(nics) != len(peers) {
		t.Errorf("%d of %d NICs probed from other ToRs in 20 windows", len(nics), len(peers))
	}
}

// TestMatesAreAMesh: every ToR-mate in every round, nobody else as a mate.
func TestMatesAreAMesh(t *testing.T) {
	peers := clos(3, func(t int) int { return 5 + t })
	for i, self := range peers {
		p := mustNew(t, self, peers, DefaultSettings())
		var got []netip.Addr
		for _, tg := range p.Plan(3).Targets {
			if tg.Kind == Mate {
				got = append(got, peers[tg.Peer].Addr)
			}
		}
		var want []netip.Addr
		for j, q := range peers {
			if q.ToR == self.ToR && j != i {
				want = append(want, q.Addr)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%v: mates %v, want %v", self.Addr, got, want)
		}
	}
}

// TestNoTopology: an agent that knows no ToR samples every peer within
// PeerWindow, SamplePeers a round, and the fleet's probes reach each host
// about SamplePeers·SampleRate a second.
func TestNoTopology(t *testing.T) {
	const n = 500
	var peers []Peer
	for i := range n {
		peers = append(peers, Peer{Addr: netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})})
	}
	s := DefaultSettings()
	s.SamplePeers = 20
	recv := map[netip.Addr]float64{}
	const rounds = 25 // PeerWindow: ⌈499/20⌉
	for _, self := range peers {
		p := mustNew(t, self, peers, s)
		seen := map[netip.Addr]bool{}
		for r := range int64(rounds) {
			pl := p.Plan(r)
			if pl.PeerWindow != rounds*s.Rotation {
				t.Fatalf("PeerWindow %v, want %v", pl.PeerWindow, rounds*s.Rotation)
			}
			if len(pl.Targets) != 20 {
				t.Fatalf("%d targets, want 20", len(pl.Targets))
			}
			for _, tg := range pl.Targets {
				if tg.Kind != Sampled || peers[tg.Peer].Addr == self.Addr {
					t.Fatalf("target %+v", tg)
				}
				seen[peers[tg.Peer].Addr] = true
				recv[peers[tg.Peer].Addr] += tg.Rate / rounds
			}
		}
		if len(seen) != n-1 {
			t.Fatalf("%v probed %d peers in a window, want %d", self.Addr, len(seen), n-1)
		}
	}
	for a, r := range recv {
		if r < 20*0.9 || r > 20*1.1 {
			t.Errorf("%v receives %.2f probes/s on average over a window, want 20 ± 10 %%", a, r)
		}
	}
}

// TestBounds: whatever the fleet's size, an agent sends at most SendCap,
// and in a fleet whose agents all plan alike no host receives more than
// ReceiveShare on average, small ToRs included.
func TestBounds(t *testing.T) {
	s := DefaultSettings()
	s.SendCap, s.ReceiveShare = 40, 45
	s.MateRate = 2
	// 30 ToRs of 24 NICs, and 3 small ToRs of 2 (a small ToR would
	// receive 12 times a big one's inter-ToR probes per NIC at one rate).
	peers := clos(33, func(t int) int {
		if t >= 30 {
			return 2
		}
		return 24
	})
	recv := map[netip.Addr]float64{}
	const rounds = 40
	for _, self := range peers {
		p := mustNew(t, self, peers, s)
		for r := range int64(rounds) {
			pl := p.Plan(r)
			sum := 0.0
			for _, tg := range pl.Targets {
				sum += tg.Rate
				recv[peers[tg.Peer].Addr] += tg.Rate / rounds
			}
			if sum > s.SendCap+1e-9 || math.Abs(sum-pl.SendRate) > 1e-9 {
				t.Fatalf("%v round %d sends %.3f/s (plan says %.3f), cap %g", self.Addr, r, sum, pl.SendRate, s.SendCap)
			}
			if pl.ReceiveRate > s.ReceiveShare+1e-9 {
				t.Fatalf("plan expects %.2f/s received, share %g", pl.ReceiveRate, s.ReceiveShare)
			}
		}
	}
	for a, r := range recv {
		if r > s.ReceiveShare*1.1 {
			t.Errorf("%v receives %.2f probes/s on average, share %g", a, r, s.ReceiveShare)
		}
	}
	// 23 mates at 2/s (46) is over both: the scale brings it to 40.
	p := mustNew(t, peers[0], peers, s)
	if pl := p.Plan(0); pl.Scale >= 1 || pl.SendRate > 40+1e-9 {
		t.Errorf("scale %g send %g: want < 1 and ≤ 40", pl.Scale, pl.SendRate)
	}
}

func TestDeterministic(t *testing.T) {
	peers := clos(20, func(t int) int { return 3 + t%4 })
	peers = append(peers, Peer{Addr: netip.MustParseAddr("10.9.9.9")}) // unknown ToR
	shuffled := slices.Clone(peers)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	a := mustNew(t, peers[5], peers, DefaultSettings())
	b := mustNew(t, peers[5], shuffled, DefaultSettings())
	for r := range int64(10) {
		pa, pb := a.Plan(r), b.Plan(r)
		if len(pa.Targets) != len(pb.Targets) {
			t.Fatalf("round %d: %d and %d targets", r, len(pa.Targets), len(pb.Targets))
		}
		for i := range pa.Targets {
			x, y := pa.Targets[i], pb.Targets[i]
			if peers[x.Peer] != shuffled[y.Peer] || x.Kind != y.Kind || x.Rate != y.Rate || x.Sport(3) != y.Sport(3) {
				t.Fatalf("round %d target %d: %+v %v and %+v %v", r, i, x, peers[x.Peer], y, shuffled[y.Peer])
			}
		}
	}
	// The unknown-ToR peer is in the pool.
	if a.Pool() != 1 || a.Mates() == 0 || a.ToRs() != 19 {
		t.Errorf("pool %d mates %d tors %d", a.Pool(), a.Mates(), a.ToRs())
	}
}

func TestSettingsErrors(t *testing.T) {
	s := DefaultSettings()
	s.Rotation = 0
	var se *SettingsError
	if _, err := New(Peer{Addr: netip.MustParseAddr("10.0.0.1")}, nil, s, 0); !errors.As(err, &se) || se.Field != "Rotation" {
		t.Errorf("rotation 0: %v", err)
	}
	s = DefaultSettings()
	s.MateRate = math.NaN()
	if err := s.Validate(); !errors.As(err, &se) || se.Field != "MateRate" {
		t.Errorf("NaN rate: %v", err)
	}
	if _, err := New(Peer{}, nil, DefaultSettings(), 0); !errors.Is(err, ErrSelf) {
		t.Errorf("no self address: %v", err)
	}
	// No peers: an empty plan.
	p := mustNew(t, Peer{Addr: netip.MustParseAddr("10.0.0.1"), ToR: "a"}, nil, DefaultSettings())
	if pl := p.Plan(1); len(pl.Targets) != 0 || pl.SendRate != 0 {
		t.Errorf("empty fleet: %+v", pl)
	}
}

// TestIndexShared: planners taken from one Index for every agent of a
// fleet (ToRs of different sizes, peers of unknown ToR, an agent that is
// not in the list, one whose ToR the list does not know) plan what a
// Planner of a fresh New does for each: taking one does not change what
// the others share.
func TestIndexShared(t *testing.T) {
	peers := clos(9, func(t int) int { return 3 + 5*t })
	for i := range peers {
		if i%11 == 0 {
			peers[i].ToR = ""
		}
	}
	selves := append(slices.Clone(peers), Peer{Addr: netip.MustParseAddr("10.9.9.9"), ToR: "leaf003"},
		Peer{Addr: peers[5].Addr, ToR: "leaf999"}, Peer{Addr: peers[6].Addr})
	s := DefaultSettings()
	s.SampleToRs, s.SamplePeers = 3, 4
	x := NewIndex(peers)
	var got []*Planner
	for _, self := range selves {
		p, err := x.Planner(self, s, 42)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	for i, self := range selves {
		want := mustNew(t, self, peers, s)
		for r := range int64(3) {
			if g, w := got[i].Plan(r), want.Plan(r); !reflect.DeepEqual(g, w) {
				t.Fatalf("self %v round %d: from the shared index %+v, from New %+v", self, r, g, w)
			}
		}
	}
}
