package probe_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
)

// RandomSport stays in the RoCE v2 range 0xC000..0xFFFF
// (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN..MAX) and spreads over it.
func TestRandomSport(t *testing.T) {
	seen := map[uint16]bool{}
	var low, high bool
	for i := 0; i < 2000; i++ {
		p := probe.RandomSport()
		if p < 0xc000 {
			t.Fatalf("RandomSport() = %#x, below 0xC000", p)
		}
		seen[p] = true
		low = low || p < 0xe000
		high = high || p >= 0xe000
	}
	if len(seen) < 1000 || !low || !high {
		t.Errorf("2000 ports: %d distinct, below 0xE000 %v, above %v", len(seen), low, high)
	}
}

// sl 11 → PCP 3 (3 bits); traffic class 106 = 0b011010_10 → DSCP 26,
// ECN 2 (ECT(0)).
func TestBaseMarkings(t *testing.T) {
	got := probe.BaseMarkings(11, 106, 9, 0xc001)
	want := probe.Markings{PCP: 3, DSCP: 26, ECN: 2, TTL: 9, Sport: 0xc001}
	if got != want {
		t.Errorf("BaseMarkings(11, 106, 9, 0xc001) = %+v, want %+v", got, want)
	}
}

// The rxe fixture's index 10 (10.10.10.1 on veth0.q1000.10: 802.1ad 1000
// without egress map outside 802.1Q 10; host/testdata/README.md) to
// 10.10.10.2 with traffic class 106 and hop limit 9: rxe copies the
// traffic class into the IP header (DSCP 26, ECN 2), the kernel replaces
// the hop limit with the route's when it resolves the destination MAC
// (ib_resolve_unicast_gid_dmac: the fixture's default TTL, 64), rxe
// ignores the sl and derives the UDP
// source port from the QPN (so the run's port stays, with a note); the
// outer tag's PCP is its map's for priority 0: 0. The snapshot has no
// neighbours: the *ah.NeighborError comes with the resolution.
func TestAHResolverRXE(t *testing.T) {
	s, err := host.Load("../host/testdata/rxe.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	r, err := probe.NewAHResolver(v, probe.AHFlow{Device: "rxe0", GIDIndex: 10, SL: 4, TrafficClass: 106, HopLimit: 9, Sport: 0xc0de})
	if err != nil {
		t.Fatal(err)
	}
	res, m, notes, err := r.Resolve(gid.MustParse("10.10.10.2"))
	var nerr *ah.NeighborError
	if !errors.As(err, &nerr) || res == nil {
		t.Fatalf("Resolve: %v (resolution %v), want an *ah.NeighborError with the resolution", err, res)
	}
	want := probe.Markings{PCP: 0, DSCP: 26, ECN: 2, TTL: 64, Sport: 0xc0de}
	if m != want || res.Wire.Netdev != "veth0.q1000.10" {
		t.Errorf("markings %+v on %s, want %+v on veth0.q1000.10", m, res.Wire.Netdev, want)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "probing with 49374") {
		t.Errorf("notes %q, want one on the UDP source port", notes)
	}
	// An entry that does not exist fails before resolving.
	if _, err := probe.NewAHResolver(v, probe.AHFlow{Device: "rxe9", GIDIndex: 10}); !errors.Is(err, host.ErrNoDevice) {
		t.Errorf("rxe9: %v, want host.ErrNoDevice", err)
	}
}

// A probe's source must be a RoCE v2 entry: mlx5_0 port 1's index 0 is
// its RoCE v1 default GID (the mlx5 fixture), index 1 the RoCE v2 one.
func TestNewAHResolverRefusesNonV2(t *testing.T) {
	v, err := fixture(t, "mlx5").View("")
	if err != nil {
		t.Fatal(err)
	}
	_, err = probe.NewAHResolver(v, probe.AHFlow{Device: "mlx5_0", Port: 1, GIDIndex: 0})
	if !errors.Is(err, probe.ErrSourceNotRoCEv2) || !strings.Contains(err.Error(), "GID index 0 of mlx5_0 port 1 is a RoCE v1 GID") {
		t.Errorf("RoCE v1 index 0: %v, want ErrSourceNotRoCEv2 naming it", err)
	}
	if _, err := probe.NewAHResolver(v, probe.AHFlow{Device: "mlx5_0", Port: 1, GIDIndex: 1}); err != nil {
		t.Errorf("RoCE v2 index 1: %v", err)
	}
}
