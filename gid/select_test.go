package gid_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/gid"

	"github.com/roce-probe/roce-probe/vlan"
)

func port(t *testing.T, dir string, n int) gid.Port {
	t.Helper()
	return fixturePorts(t, dir)[n]
}

func reasonOf(s gid.Selection, idx int) gid.Reason {
	for _, r := range s.Reasons {
		if r.Index == idx {
			return r
		}
	}
	return gid.Reason{Index: -1}
}

// Expected choices were worked out by hand from the fixture tables
// (testdata/README.md) and the rules in Select's documentation.
func TestSelectRxe(t *testing.T) {
	p := port(t, "rxe", 0)
	router := loadSnap(t, "rxe")
	cases := []struct {
		dst   string
		prefs gid.Preferences
		want  int
	}{
		{"10.0.0.2", gid.Preferences{}, 1},
		{"10.0.100.2", gid.Preferences{}, 3},
		{"fd00:100::2", gid.Preferences{}, 4},
		{"10.10.10.2", gid.Preferences{}, 10},
		{"fe80::ff:fe00:2", gid.Preferences{}, 0},               // link-local: the default GID
		{"fe80::ff:fe00:2", gid.Preferences{VLAN: ptr(200)}, 8}, // link-local on VLAN 200
		{"fd00::2", gid.Preferences{Family: 6}, 2},
	}
	for _, c := range cases {
		s, err := gid.Select(p.Entries, gid.MustParse(c.dst), c.prefs, router)
		if err != nil {
			t.Errorf("%s: %v", c.dst, err)
			continue
		}
		if s.Entry.Index != c.want {
			t.Errorf("Select(%s, %+v) = index %d, want %d; reasons %+v", c.dst, c.prefs, s.Entry.Index, c.want, s.Reasons)
		}
		if r := reasonOf(s, c.want); r.Verdict != gid.Selected {
			t.Errorf("%s: reason for %d = %+v", c.dst, c.want, r)
		}
	}
	s, _ := gid.Select(p.Entries, gid.MustParse("10.0.100.2"), gid.Preferences{}, router)
	for idx, want := range map[int]string{
		0:  "IPv6 GID, destination 10.0.100.2 is IPv4",
		1:  "on veth0, but the route to 10.0.100.2 leaves through veth0.100",
		2:  "IPv6 GID, destination 10.0.100.2 is IPv4",
		3:  "the route's source address 10.0.100.1 on veth0.100",
		10: "leaves through veth0.100",
	} {
		if r := reasonOf(s, idx); !strings.Contains(r.Reason, want) {
			t.Errorf("10.0.100.2: reason for %d = %q, want it to mention %q", idx, r.Reason, want)
		}
	}
	s6, _ := gid.Select(p.Entries, gid.MustParse("fd00:100::2"), gid.Preferences{}, router)
	if r := reasonOf(s6, 0); r.Reason != "default GID (link-local fe80::ff:fe00:1): reaches only the local link, not fd00:100::2" {
		t.Errorf("fd00:100::2: reason for 0 = %q", r.Reason)
	}
	if r := reasonOf(s6, 5); r.Reason != "link-local address fe80::ff:fe00:1: reaches only the local link, not fd00:100::2" {
		t.Errorf("fd00:100::2: reason for 5 = %q", r.Reason)
	}
	if len(s.Reasons) != 13 {
		t.Errorf("%d reasons, want one per non-empty entry (13)", len(s.Reasons))
	}
	// Nothing reaches a destination no netdev routes to.
	if _, err := gid.Select(p.Entries, gid.MustParse("10.0.100.2"), gid.Preferences{Version: 1}, router); !errors.Is(err, gid.ErrNoEntry) {
		t.Errorf("RoCE v1 on an rxe table: err = %v, want ErrNoEntry", err)
	}
	if _, err := gid.Select(p.Entries, gid.MustParse("10.0.0.2"), gid.Preferences{Version: 3}, router); err == nil || !strings.Contains(err.Error(), "want 1, 2") {
		t.Errorf("bad version: %v", err)
	}
}

func ptr(v uint16) *uint16 { return &v }

func TestSelectMlx5PrefersV2AndExplains(t *testing.T) {
	p := port(t, "mlx5", 0)
	router := loadSnap(t, "mlx5")
	s, err := gid.Select(p.Entries, gid.MustParse("10.100.0.99"), gid.Preferences{}, router)
	if err != nil {
		t.Fatal(err)
	}
	// Both enp1s0f0.100 and mv0 are in 10.100.0.0/24; the connected route
	// picks the first link holding the subnet, enp1s0f0.100 (ifindex 4).
	if s.Entry.Index != 5 {
		t.Errorf("selected %d, want 5 (v2, 10.100.0.10 on enp1s0f0.100)", s.Entry.Index)
	}
	if r := reasonOf(s, 4); r.Verdict != gid.Usable || !strings.Contains(r.Reason, "RoCE v2 is preferred") {
		t.Errorf("index 4 (v1 twin) = %+v", r)
	}
	s, _ = gid.Select(p.Entries, gid.MustParse("10.100.0.99"), gid.Preferences{Version: 1}, router)
	if s.Entry.Index != 4 {
		t.Errorf("--roce v1: selected %d, want 4", s.Entry.Index)
	}
	// Without a router, subnet and VLAN preferences steer the choice.
	s, _ = gid.Select(p.Entries, gid.MustParse("10.100.0.99"), gid.Preferences{Netdev: "mv0"}, nil)
	if s.Entry.Index != 9 {
		t.Errorf("--netdev mv0: selected %d, want 9", s.Entry.Index)
	}
	s, _ = gid.Select(p.Entries, gid.MustParse("192.168.1.77"), gid.Preferences{VLAN: ptr(gid.NoVLAN)}, nil)
	if s.Entry.Index != 3 {
		t.Errorf("untagged: selected %d, want 3", s.Entry.Index)
	}
	s, _ = gid.Select(p.Entries, gid.MustParse("10.1.1.1"), gid.Preferences{Subnet: netip.MustParsePrefix("10.100.0.16/28")}, nil)
	if s.Entry.Index != 9 {
		t.Errorf("subnet 10.100.0.16/28: selected %d, want 9", s.Entry.Index)
	}
}

func TestSelectOtherNetns(t *testing.T) {
	p := port(t, "rxe-churned", 0)
	s, _ := gid.Select(p.Entries, gid.MustParse("fe80::1"), gid.Preferences{VLAN: ptr(100)}, nil)
	if r := reasonOf(s, 5); r.Verdict != gid.Rejected || !strings.Contains(r.Reason, "not in this network namespace") {
		t.Errorf("index 5 = %+v", r)
	}
}

func TestRDMACM(t *testing.T) {
	p := port(t, "mlx5", 0)
	e, err := gid.RDMACM(p.Entries, p.Types, vlan.RouteResult{NextHop: netip.MustParseAddr("10.100.0.2"), Dev: "mv0", Src: netip.MustParseAddr("10.100.0.20")})
	if err != nil || e.Index != 9 {
		t.Errorf("RDMACM via mv0 = %d, %v; want 9 (v2 on mv0)", e.Index, err)
	}
	_, err = gid.RDMACM(p.Entries, p.Types, vlan.RouteResult{NextHop: netip.MustParseAddr("172.17.0.5"), Dev: "docker0", Src: netip.MustParseAddr("172.17.0.1")})
	if err == nil || !strings.Contains(err.Error(), "docker0") {
		t.Errorf("RDMACM via docker0 = %v, want an error naming the netdev", err)
	}
}

// The four automatic choices on the same tables (docs/gid-selection.md).
// Expected indices were worked out by hand from the tools' source: NCCL's
// ncclIbGetGidIndex, UCX's uct_ib_device_select_gid, perftest's
// get_best_gid_index (versions in docs/sources.md).
func TestAutoSelectionComparison(t *testing.T) {
	thor := []gid.Entry{ // an IPv6-only table (the Broadcom Thor-2 case of uccl-project/uccl PR #803)
		{Index: 0, GID: gid.MustParse("fe80::1"), Type: gid.TypeRoCEv1},
		{Index: 1, GID: gid.MustParse("fe80::1"), Type: gid.TypeRoCEv2},
		{Index: 2, GID: gid.MustParse("fd93::7"), Type: gid.TypeRoCEv1},
		{Index: 3, GID: gid.MustParse("fd93::7"), Type: gid.TypeRoCEv2},
	}
	cases := []struct {
		name               string
		table              []gid.Entry
		nccl, ucx, pt, pt6 int
	}{
		{"mlx5", port(t, "mlx5", 0).Entries, 3, 3, 3, 11},
		{"rxe", port(t, "rxe", 0).Entries, 1, 1, 1, 2},
		{"rxe-churned", port(t, "rxe-churned", 0).Entries, 3, 3, 3, 2},
		{"ipv6-only", thor, 0, 3, 3, 3},
	}
	for _, c := range cases {
		if got := gid.NCCL(c.table, gid.NCCLOptions{}); got != c.nccl {
			t.Errorf("%s: NCCL = %d, want %d", c.name, got, c.nccl)
		}
		if got := gid.UCX(c.table); got != c.ucx {
			t.Errorf("%s: UCX = %d, want %d", c.name, got, c.ucx)
		}
		if got := gid.Perftest(c.table, false); got != c.pt {
			t.Errorf("%s: perftest = %d, want %d", c.name, got, c.pt)
		}
		if got := gid.Perftest(c.table, true); got != c.pt6 {
			t.Errorf("%s: perftest --ipv6 = %d, want %d", c.name, got, c.pt6)
		}
	}
	// NCCL_IB_ADDR_RANGE steers NCCL to the VLAN 100 subnet.
	if got := gid.NCCL(port(t, "mlx5", 0).Entries, gid.NCCLOptions{Range: netip.MustParsePrefix("10.100.0.0/24")}); got != 5 {
		t.Errorf("NCCL with NCCL_IB_ADDR_RANGE=10.100.0.0/24 = %d, want 5", got)
	}
}

// The rows of the comparison table in docs/gid-selection.md: for a
// destination, Select and the rdma_cm model versus the automatic choices.
func TestSelectionDocTable(t *testing.T) {
	thor := []gid.Entry{
		{Index: 0, GID: gid.MustParse("fe80::1"), Type: gid.TypeRoCEv1, Kind: gid.KindLinkLocal, IP: gid.MustParse("fe80::1").Addr()},
		{Index: 1, GID: gid.MustParse("fe80::1"), Type: gid.TypeRoCEv2, Kind: gid.KindLinkLocal, IP: gid.MustParse("fe80::1").Addr()},
		{Index: 2, GID: gid.MustParse("fd93::7"), Type: gid.TypeRoCEv1, Kind: gid.KindULA, IP: gid.MustParse("fd93::7").Addr()},
		{Index: 3, GID: gid.MustParse("fd93::7"), Type: gid.TypeRoCEv2, Kind: gid.KindULA, IP: gid.MustParse("fd93::7").Addr()},
	}
	rows := []struct {
		fixture, dst                 string
		table                        []gid.Entry
		sel, cm, nccl, ucx, perftest int
	}{
		{"mlx5", "192.168.1.20", nil, 3, 3, 3, 3, 3},
		{"mlx5", "10.100.0.2", nil, 5, 5, 3, 3, 3},
		{"rxe", "10.0.100.2", nil, 3, 3, 1, 1, 1},
		{"rxe-churned", "10.0.0.2", nil, 13, 13, 3, 3, 3},
		{"", "fd93::8", thor, 3, -1, 0, 3, 3},
	}
	if got := gid.NCCL(thor, gid.NCCLOptions{Family: 6}); got != 3 {
		t.Errorf("IPv6-only table, NCCL_IB_ADDR_FAMILY=AF_INET6: NCCL = %d, want 3", got)
	}
	for _, r := range rows {
		var router *vlan.Namespace
		var types []gid.Type = []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2}
		table := r.table
		if r.fixture != "" {
			p := port(t, r.fixture, 0)
			table, types = p.Entries, p.Types
			router = loadSnap(t, r.fixture)
		}
		s, err := gid.Select(table, gid.MustParse(r.dst), gid.Preferences{}, router)
		if err != nil || s.Entry.Index != r.sel {
			t.Errorf("%s %s: Select = %d (%v), want %d", r.fixture, r.dst, s.Entry.Index, err, r.sel)
		}
		if r.cm >= 0 {
			e, err := gid.RDMACM(table, types, *s.Route)
			if err != nil || e.Index != r.cm {
				t.Errorf("%s %s: rdma_cm = %d (%v), want %d", r.fixture, r.dst, e.Index, err, r.cm)
			}
		}
		if n, u, p := gid.NCCL(table, gid.NCCLOptions{}), gid.UCX(table), gid.Perftest(table, false); n != r.nccl || u != r.ucx || p != r.perftest {
			t.Errorf("%s %s: NCCL %d UCX %d perftest %d, want %d %d %d", r.fixture, r.dst, n, u, p, r.nccl, r.ucx, r.perftest)
		}
	}
}

// Unusable: the kernel's and rdma_cm's reasons an entry cannot source
// traffic to another host, one entry each (built by hand, not read).
func TestUnusable(t *testing.T) {
	v4 := func(mut func(*gid.Entry)) gid.Entry {
		g := gid.MustParse("10.0.100.1")
		e := gid.Entry{Index: 3, GID: g, Type: gid.TypeRoCEv2, Kind: g.Kind(), IP: g.Addr().Unmap(), Netdev: "eth0", State: "up", Netns: gid.NetnsCurrent}
		if mut != nil {
			mut(&e)
		}
		return e
	}
	ll := gid.MustParse("fe80::ff:fe00:1")
	cases := []struct {
		name    string
		e       gid.Entry
		exclude map[int]string
		want    string // "" or a word the reason must hold
	}{
		{"RoCE v2 on an up netdev", v4(nil), nil, ""},
		{"RoCE v1 on an up netdev", v4(func(e *gid.Entry) { e.Type = gid.TypeRoCEv1 }), nil, ""},
		{"operstate unknown (no carrier reporting)", v4(func(e *gid.Entry) { e.State = "unknown" }), nil, ""},
		{"operstate not read", v4(func(e *gid.Entry) { e.State = "" }), nil, ""},
		{"empty", gid.Entry{Index: 7, Empty: true}, nil, "empty"},
		{"InfiniBand", v4(func(e *gid.Entry) { e.Type = gid.TypeIB }), nil, "InfiniBand"},
		{"other namespace", v4(func(e *gid.Entry) { e.Netns = gid.NetnsOther }), nil, "not in this network namespace"},
		{"netdev down", v4(func(e *gid.Entry) { e.State = "down" }), nil, "is down"},
		{"lower layer down", v4(func(e *gid.Entry) { e.State = "lowerlayerdown" }), nil, "down below"},
		{"stale", v4(nil), map[int]string{3: "stale: gone"}, "stale: gone"},
		{"another index stale", v4(nil), map[int]string{4: "stale: gone"}, ""},
		{"link-local", v4(func(e *gid.Entry) { e.GID, e.Kind, e.IP = ll, ll.Kind(), ll.Addr() }), nil, "reaches only the local link"},
		{"default GID", v4(func(e *gid.Entry) { e.GID, e.Kind, e.IP, e.Default, e.Index = ll, ll.Kind(), ll.Addr(), true, 0 }), nil, "default GID"},
		{"IPv4 link-local", v4(func(e *gid.Entry) {
			g := gid.MustParse("169.254.0.7")
			e.GID, e.Kind, e.IP = g, g.Kind(), g.Addr().Unmap()
		}), nil, "reaches only the local link"},
		{"multicast", v4(func(e *gid.Entry) { e.GID = gid.MustParse("ff02::1") }), nil, "multicast"},
	}
	for _, c := range cases {
		got := gid.Unusable(c.e, c.exclude)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: Unusable = %q, want %q", c.name, got, c.want)
		}
	}
}

// Select refuses, for a destination on another host with no route to go
// by, exactly the entries Unusable refuses (of the destination's family):
// the one rule, applied by both.
func TestSelectAppliesUnusable(t *testing.T) {
	for _, fx := range []string{"rxe", "mlx5", "rxe-churned"} {
		p := port(t, fx, 0)
		for _, dst := range []string{"198.51.100.7", "2001:db8::7"} {
			d := gid.MustParse(dst)
			s, _ := gid.Select(p.Entries, d, gid.Preferences{}, nil)
			for _, e := range p.Entries {
				if e.Empty || e.GID.IsIPv4Mapped() != d.IsIPv4Mapped() {
					continue
				}
				r := reasonOf(s, e.Index)
				if refused := gid.Unusable(e, nil) != ""; refused != (r.Verdict == gid.Rejected) {
					t.Errorf("%s index %d to %s: Unusable %q, Select %+v", fx, e.Index, dst, gid.Unusable(e, nil), r)
				}
			}
		}
	}
}
