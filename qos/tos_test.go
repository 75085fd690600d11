package qos

import "testing"

// The expected priorities were worked out by hand from include/net/route.h,
// rt_tos2priority, and net/ipv4/route.c, ip_tos2prio (Linux 6.1): the index
// (tos & 0x1E) >> 1 into {0,0,0,0,2,2,2,2,6,6,6,6,4,4,4,4} makes the
// priority depend only on tos & 0x18: 0x00→0, 0x08→2, 0x10→6, 0x18→4; older
// kernels' ip_tos2prio had ECN_OR_COST(FILLER) in entry 1 (tos & 0x1E ==
// 0x02 → FILLER, 1).
var refTOS2Prio = map[uint8]uint8{0x00: 0, 0x08: 2, 0x10: 6, 0x18: 4}

func TestTOSToPriorityWholeRange(t *testing.T) {
	for i := 0; i < 256; i++ {
		tos := uint8(i)
		want := refTOS2Prio[tos&0x18]
		if got := TOSToPriority(tos); got != want {
			t.Errorf("TOSToPriority(0x%02x) = %d, want %d", tos, got, want)
		}
		if got := TOSToPriorityWith(TOSTableCurrent, tos); got != want {
			t.Errorf("current table: TOSToPriorityWith(0x%02x) = %d, want %d", tos, got, want)
		}
		wantOld := want
		if tos&0x1E == 0x02 {
			wantOld = TCPrioFiller
		}
		if got := TOSToPriorityWith(TOSTableOld, tos); got != wantOld {
			t.Errorf("old table: TOSToPriorityWith(0x%02x) = %d, want %d", tos, got, wantOld)
		}
	}
}

func TestTOSToPriorityReferenceExamples(t *testing.T) {
	// Worked out by hand from net/ipv4/route.c, ip_tos2prio (Linux 6.1).
	for _, c := range []struct{ tos, prio uint8 }{
		{0x68, 2}, {0x6A, 2}, {106, 2}, {0xB8, 4}, {0x60, 0}, {0xE0, 0},
		// Intel Ethernet 800 Series Linux Flow Control Configuration Guide for
		// RDMA (document 635330), "Step 2": ToS 0/8/24/16 → sk_prio 0/2/4/6.
		{0, 0}, {8, 2}, {24, 4}, {16, 6},
	} {
		if got := TOSToPriority(c.tos); got != c.prio {
			t.Errorf("TOSToPriority(0x%02x) = %d, want %d", c.tos, got, c.prio)
		}
	}
}

func TestDSCPAndECNWholeRange(t *testing.T) {
	for i := 0; i < 256; i++ {
		b := uint8(i)
		d, e := DSCP(b), ECNOf(b)
		if int(d) != i/4 || int(e) != i%4 {
			t.Fatalf("byte %d: DSCP %d ECN %d, want %d %d", i, d, e, i/4, i%4)
		}
		back, err := TrafficClass(d, e)
		if err != nil || back != b {
			t.Fatalf("TrafficClass(%d, %v) = %d, %v; want %d", d, e, back, err, b)
		}
	}
	for d := 64; d < 256; d++ {
		if _, err := TrafficClass(uint8(d), NotECT); err == nil {
			t.Errorf("TrafficClass(dscp %d) accepted an out-of-range DSCP", d)
		}
	}
	for e := 4; e < 256; e++ {
		if _, err := TrafficClass(0, ECN(e)); err == nil {
			t.Errorf("TrafficClass(ecn %d) accepted an out-of-range ECN", e)
		}
	}
}

func TestTrafficClassKnownValues(t *testing.T) {
	// RFC 2474 (DSCP: the top 6 bits), RFC 2597 (AF31 = 26), RFC 3168 §5
	// (ECN: the low 2 bits, 10 = ECT(0)): 106 = 0x6a = DSCP 26 (AF31) +
	// ECT(0); 104 = DSCP 26, Not-ECT.
	if DSCP(106) != 26 || ECNOf(106) != ECT0 {
		t.Errorf("106 → DSCP %d %v, want 26 ECT(0)", DSCP(106), ECNOf(106))
	}
	if DSCP(104) != 26 || ECNOf(104) != NotECT {
		t.Errorf("104 → DSCP %d %v, want 26 Not-ECT", DSCP(104), ECNOf(104))
	}
	if DSCP(0xB8) != 46 { // EF
		t.Errorf("0xB8 → DSCP %d, want 46", DSCP(0xB8))
	}
	names := map[ECN]string{NotECT: "Not-ECT", ECT1: "ECT(1)", ECT0: "ECT(0)", CE: "CE"}
	for e, n := range names {
		if e.String() != n {
			t.Errorf("%d.String() = %q, want %q", e, e.String(), n)
		}
		if e.IsECT() != (e == ECT0 || e == ECT1) {
			t.Errorf("%v.IsECT() wrong", e)
		}
	}
}

func TestEgressPCPExactMatch(t *testing.T) {
	// The lab's VLAN 100 map (internal/lab/topology.go): {0:3 2:5 4:6 6:7}.
	m := map[uint32]uint32{0: 3, 2: 5, 4: 6, 6: 7}
	want := []uint8{3, 0, 5, 0, 6, 0, 7, 0}
	for prio := uint32(0); prio < 4096; prio++ {
		w := uint8(0)
		if prio < 8 {
			w = want[prio]
		}
		if got := EgressPCP(m, prio); got != w {
			t.Errorf("EgressPCP(lab map, %d) = %d, want %d", prio, got, w)
		}
	}
	// Same hash bucket (skprio & 0xF) but not the same priority: exact
	// match means no PCP (include/linux/if_vlan.h,
	// vlan_dev_get_egress_qos_mask; Linux 6.1).
	for _, p := range []uint32{16, 32, 0x10000, 0xFFFFFFF0, 0xFFFFFFFF} {
		if got := EgressPCP(m, p); got != 0 {
			t.Errorf("EgressPCP(lab map, %d) = %d, want 0 (no exact entry)", p, got)
		}
	}
	// An entry for a large priority is matched exactly.
	if got := EgressPCP(map[uint32]uint32{0x10002: 4}, 0x10002); got != 4 {
		t.Errorf("EgressPCP({0x10002:4}, 0x10002) = %d, want 4", got)
	}
	// Only three bits of PCP exist.
	if got := EgressPCP(map[uint32]uint32{1: 9}, 1); got != 1 {
		t.Errorf("EgressPCP({1:9}, 1) = %d, want 1", got)
	}
	if EgressPCP(nil, 0) != 0 || HasEgressEntry(nil, 0) {
		t.Error("nil map must give PCP 0 and no entry")
	}
	if HasEgressEntry(map[uint32]uint32{0: 0}, 0) {
		t.Error("an explicit 0 entry is the same as no entry")
	}
}

// TestCongestionMark: every ECN transition, by RFC 3168's codepoints
// (section 5: 00 Not-ECT, 01 ECT(1), 10 ECT(0), 11 CE). A router sets CE
// in an ECN-capable packet instead of dropping it; CE → ECT is that mark
// only across two packets (two hops of a trace), a cleared mark on one.
func TestCongestionMark(t *testing.T) {
	const notECT, ect1, ect0, ce = 0b00, 0b01, 0b10, 0b11
	for _, c := range []struct {
		from, to   ECN
		one, other bool // on one packet; across two
		why        string
	}{
		{ect0, ce, true, true, "congestion: ECT(0) marked CE"},
		{ect1, ce, true, true, "congestion: ECT(1) marked CE"},
		{ce, ect0, false, true, "CE cleared on one packet; another packet not marked"},
		{ce, ect1, false, true, "CE cleared on one packet; another packet not marked"},
		{notECT, ce, false, false, "CE set on a Not-ECT packet: a router drops those"},
		{notECT, ect0, false, false, "ECT set on a Not-ECT packet"},
		{notECT, ect1, false, false, "ECT set on a Not-ECT packet"},
		{ect0, notECT, false, false, "bleached"},
		{ect1, notECT, false, false, "bleached"},
		{ce, notECT, false, false, "bleached"},
		{ect0, ect1, false, false, "ECT(0) rewritten ECT(1)"},
		{ect1, ect0, false, false, "ECT(1) rewritten ECT(0)"},
		{ect0, ect0, false, false, "no change"},
		{ce, ce, false, false, "no change"},
		{notECT, notECT, false, false, "no change"},
	} {
		if got := CongestionMark(c.from, c.to, true); got != c.one {
			t.Errorf("CongestionMark(%v, %v, same packet) = %v, want %v (%s)", c.from, c.to, got, c.one, c.why)
		}
		if got := CongestionMark(c.from, c.to, false); got != c.other {
			t.Errorf("CongestionMark(%v, %v, two packets) = %v, want %v (%s)", c.from, c.to, got, c.other, c.why)
		}
	}
}

// TestRemark: a remark is any change of a marking but a congested queue's
// ECN mark (RFC 3168 codepoints as in TestCongestionMark).
func TestRemark(t *testing.T) {
	for _, c := range []struct {
		field      string
		from, to   int
		one, other bool // on one packet; across two
	}{
		{"dscp", 26, 0, true, true},
		{"dscp", 26, 26, false, false},
		{"pcp", 3, 0, true, true},
		{"vlan", 32, 0, true, true},
		{"ecn", 0b10, 0b11, false, false}, // ECT(0) → CE: congestion
		{"ecn", 0b11, 0b10, true, false},  // CE → ECT(0): cleared, or another packet
		{"ecn", 0b10, 0b00, true, true},   // bleached
		{"ecn", 0b00, 0b11, true, true},   // CE on a Not-ECT packet
		{"ecn", 0b01, 0b01, false, false},
	} {
		if got := Remark(c.field, c.from, c.to, true); got != c.one {
			t.Errorf("Remark(%s, %d, %d, same packet) = %v, want %v", c.field, c.from, c.to, got, c.one)
		}
		if got := Remark(c.field, c.from, c.to, false); got != c.other {
			t.Errorf("Remark(%s, %d, %d, two packets) = %v, want %v", c.field, c.from, c.to, got, c.other)
		}
	}
}
