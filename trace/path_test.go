package trace_test

import (
	"math"
	"net/netip"
	"testing"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/trace"
)

func quoted(dscp, ecn uint8) *trace.Quote {
	return &trace.Quote{Kind: trace.TimeExceeded, HasTOS: true, DSCP: dscp, ECN: ecn, HasTTL: true, TTL: 1}
}

func addr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestChanges(t *testing.T) {
	sent := probe.Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: probe.ECNECT0}
	src := addr("10.1.0.1")
	arrived := probe.Markings{Tagged: true, VLAN: 200, PCP: 0, DSCP: 0, ECN: probe.ECNCE, TTL: 1}
	hops := []trace.Hop{
		{TTL: 1, Status: trace.HopTimeExceeded, Address: addr("10.1.0.254"), Quote: quoted(26, 2)},
		{TTL: 2, Status: trace.HopSilent},
		{TTL: 3, Status: trace.HopTimeExceeded, Address: addr("10.3.0.2"), Quote: quoted(0, 2)},
		{TTL: 4, Status: trace.HopTimeExceeded, Address: addr("10.3.9.2"), Quote: &trace.Quote{Kind: trace.TimeExceeded}}, // too short
		{TTL: 5, Status: trace.HopDestination, Address: addr("10.4.0.1"), Arrived: &arrived},
	}
	got := trace.Changes(sent, src, hops)
	want := []trace.Change{
		{Field: "dscp", From: 26, To: 0, Before: 1, At: 3, BeforeAddress: addr("10.1.0.254"), AtAddress: addr("10.3.0.2")},
		{Field: "ecn", From: 2, To: 3, Before: 3, At: 5, BeforeAddress: addr("10.3.0.2"), AtAddress: addr("10.4.0.1")},
		{Field: "vlan", From: 100, To: 200, Before: 0, At: 5, BeforeAddress: src, AtAddress: addr("10.4.0.1")},
		{Field: "pcp", From: 3, To: 0, Before: 0, At: 5, BeforeAddress: src, AtAddress: addr("10.4.0.1")},
	}
	if len(got) != len(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("change %d: %v, want %v", i, got[i], want[i])
		}
	}
	if s := got[0].String(); s != "dscp 26→0 between hop 1 (10.1.0.254) and hop 3 (10.3.0.2), 1 silent hop(s) between" {
		t.Errorf("String: %q", s)
	}
	if len(trace.Changes(sent, src, hops[:1])) != 0 {
		t.Errorf("a hop with the markings sent is a change")
	}
}

// TestChangeRemark: which changes a trace shows are remarks, by RFC 3168's
// ECN codepoints (section 5: 00 Not-ECT, 01 ECT(1), 10 ECT(0), 11 CE): a
// congested router sets CE in an ECN-capable packet instead of dropping
// it, which is no remark; each hop's probe is its own packet, so CE at one
// hop and ECT at the next is none either.
func TestChangeRemark(t *testing.T) {
	const notECT, ect1, ect0, ce = 0b00, 0b01, 0b10, 0b11
	for _, c := range []struct {
		field    string
		from, to int
		before   int
		want     bool
		why      string
	}{
		{"dscp", 26, 0, 2, true, "DSCP rewritten"},
		{"dscp", 26, 0, 0, true, "DSCP rewritten before the first hop"},
		{"pcp", 3, 0, 0, true, "PCP rewritten"},
		{"vlan", 100, 200, 0, true, "VLAN translated"},
		{"tagged", 1, 0, 0, true, "tag stripped"},
		{"ecn", ect0, ce, 0, false, "a congested queue marked CE"},
		{"ecn", ect0, ce, 2, false, "a congested queue after hop 2 marked CE"},
		{"ecn", ect1, ce, 1, false, "ECT(1) marked CE"},
		{"ecn", ce, ect0, 2, false, "hop 2's probe was marked CE, the next hop's was not"},
		{"ecn", ce, ect0, 0, true, "sent CE, arrived ECT(0): the mark cleared"},
		{"ecn", ect0, notECT, 2, true, "bleached"},
		{"ecn", ce, notECT, 2, true, "bleached after a CE mark"},
		{"ecn", notECT, ce, 0, true, "CE on a Not-ECT packet (a router drops those)"},
		{"ecn", notECT, ect0, 1, true, "ECT set on a Not-ECT packet"},
		{"ecn", ect0, ect1, 1, true, "ECT(0) rewritten ECT(1)"},
		{"ecn", ect0, ect0, 1, false, "no change"},
	} {
		ch := trace.Change{Field: c.field, From: c.from, To: c.to, Before: c.before, At: c.before + 1}
		if got := ch.Remark(); got != c.want {
			t.Errorf("%v: Remark() = %v, want %v (%s)", ch, got, c.want, c.why)
		}
	}
}

func TestGroup(t *testing.T) {
	a := []trace.Hop{{TTL: 1, Address: addr("10.0.0.1"), Status: trace.HopTimeExceeded}, {TTL: 2, Address: addr("10.0.1.1"), Status: trace.HopTimeExceeded}, {TTL: 3, Address: addr("10.4.0.1"), Status: trace.HopDestination}}
	b := []trace.Hop{a[0], {TTL: 2, Address: addr("10.0.2.1"), Status: trace.HopTimeExceeded}, a[2]}
	aSilent := []trace.Hop{a[0], {TTL: 2, Status: trace.HopSilent}, a[2]}
	var paths []trace.Path
	var isNew bool
	for _, c := range []struct {
		sport uint16
		hops  []trace.Hop
		isNew bool
	}{{0xc001, aSilent, true}, {0xc003, a, false}, {0xc002, b, true}, {0xc004, aSilent, false}, {0xc005, a[:2], true}} {
		paths, isNew = trace.Group(paths, c.sport, c.hops)
		if isNew != c.isNew {
			t.Errorf("port %#x: new path %v, want %v", c.sport, isNew, c.isNew)
		}
	}
	// The silent hop of the first path is filled in by port 0xc003, so b
	// (another hop 2) is a path of its own; a later trace with hop 2
	// silent joins the first path it fits.
	if len(paths) != 3 || len(paths[0].Sports) != 3 || paths[0].Sports[1] != 0xc003 || paths[0].Sports[2] != 0xc004 || len(paths[1].Sports) != 1 {
		t.Fatalf("paths: %+v", paths)
	}
	if paths[0].Hops[1].Address != addr("10.0.1.1") {
		t.Errorf("the silent hop of the first path was not filled in from port 0xc003: %+v", paths[0].Hops[1])
	}
	if fl := paths[0].FlowLabels(); len(fl) != 3 || fl[0] != 1 || fl[1] != 3 || fl[2] != 4 {
		t.Errorf("flow labels %v, want [1 3 4]", fl)
	}
}

// FlowLabelFor is the smallest non-zero label of each port, checked
// against every label the fold takes.
func TestFlowLabelFor(t *testing.T) {
	first := map[uint16]uint32{}
	for l := uint32(1); l <= 0xfffff; l++ {
		p := roce.FlowLabelToUDPSourcePort(l)
		if _, ok := first[p]; !ok {
			first[p] = l
		}
	}
	for p := 0; p <= 0xffff; p++ {
		l, ok := trace.FlowLabelFor(uint16(p))
		want, has := first[uint16(p)]
		if ok != has || l != want {
			t.Fatalf("port %#x: label %#x %v, want %#x %v", p, l, ok, want, has)
		}
	}
	// Vectors of rdma_flow_label_to_udp_sport: 0x04000 → 0xC001, so
	// 0xC001's smallest label is 1; 0xC000 has none below 0x4001.
	if l, _ := trace.FlowLabelFor(0xc000); l != 0x4001 {
		t.Errorf("0xc000: %#x", l)
	}
}

func TestPorts(t *testing.T) {
	got := trace.Ports([]uint16{0xc002, 0x1234, 0xc002}, 5)
	want := []uint16{0xc002, 0x1234, 0xc001, 0xc003, 0xc004}
	if len(got) != len(want) {
		t.Fatalf("%#x, want %#x", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%#x, want %#x", got, want)
		}
	}
}

func TestPortsWithoutNewPath(t *testing.T) {
	for found, want := range map[int]int{1: 5, 2: 8, 3: 11, 4: 14, 8: 26} {
		m := trace.PortsWithoutNewPath(found)
		if m != want {
			t.Errorf("after %d paths: %d ports, want %d", found, m, want)
		}
		// The defining property: m misses in a row are ≤ 5% likely, m-1 are not.
		p := float64(found) / float64(found+1)
		if math.Pow(p, float64(m)) > 0.05 || math.Pow(p, float64(m-1)) <= 0.05 {
			t.Errorf("after %d paths: %d is not the smallest m with (%d/%d)^m ≤ 5%%", found, m, found, found+1)
		}
	}
}

// Two traces whose spine is silent differ only by what the next hop's
// quote shows: different paths.
func TestSamePathMarkings(t *testing.T) {
	silent := trace.Hop{TTL: 2, Status: trace.HopSilent}
	leaf := func(dscp uint8) trace.Hop {
		return trace.Hop{TTL: 3, Status: trace.HopTimeExceeded, Address: addr("10.31.21.1"), Quote: quoted(dscp, 2)}
	}
	first := trace.Hop{TTL: 1, Status: trace.HopTimeExceeded, Address: addr("10.30.5.1"), Quote: quoted(26, 2)}
	a := []trace.Hop{first, silent, leaf(0)}
	b := []trace.Hop{first, {TTL: 2, Status: trace.HopTimeExceeded, Address: addr("10.31.12.2"), Quote: quoted(26, 2)}, leaf(26)}
	if trace.SamePath(a, b) {
		t.Errorf("traces whose hop 3 saw DSCP 0 and 26 are the same path")
	}
	if !trace.SamePath(a, []trace.Hop{first, silent, leaf(0)}) {
		t.Errorf("equal traces are not the same path")
	}
}

// The hops an answer came back over, from its TTL and the usual initial
// TTLs: Linux sends ICMP with 64 (ip_default_ttl), many routers with 255.
func TestReturnHops(t *testing.T) {
	for ttl, want := range map[uint8]int{64: 0, 62: 2, 128: 0, 120: 8, 253: 2, 255: 0} {
		if got, ok := (trace.Hop{ReplyTTL: ttl}).ReturnHops(); !ok || got != want {
			t.Errorf("reply TTL %d: %d hops (%v), want %d", ttl, got, ok, want)
		}
	}
	if _, ok := (trace.Hop{}).ReturnHops(); ok {
		t.Errorf("an unknown reply TTL gave a hop count")
	}
}
