package audit

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/roce"
)

// load opens a snapshot fixture and its view.
func load(t *testing.T, path string) (*host.Snapshot, *host.View) {
	t.Helper()
	s, err := host.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	return s, v
}

// The fixtures (testdata/README.md): an application sends N RoCE packets
// in 1 s on priority 0 of a host whose RoCE priority is 3 (PFC on 3, DSCP
// 26 → 3), while TCP traffic adds TCP packets to priority 0.
var prio0Fixtures = []struct {
	host      string
	n, tcp    uint64
	rdmaNames string
}{
	{"mlx5", 2000000, 30000, "tx_vport_rdma_unicast_packets + tx_vport_rdma_multicast_packets"},
	{"bnxt", 1500000, 10000, "bnxt_re0 port 1 tx_pkts"},
}

func TestCountersPriority0(t *testing.T) {
	for _, fx := range prio0Fixtures {
		t.Run(fx.host, func(t *testing.T) {
			before, _ := load(t, "testdata/"+fx.host+"-prio0-before.json")
			after, v := load(t, "testdata/"+fx.host+"-prio0-after.json")
			r := Audit(Input{View: v, Prev: before.Counters, Cur: after.Counters})
			if len(r.Findings) != 1 {
				t.Fatalf("findings = %+v, want one", r.Findings)
			}
			f := r.Findings[0]
			if f.Severity != SeverityError || f.Code != CodeRDMAOffPriority || f.Priority == nil || *f.Priority != 0 || f.Netdev == nil || *f.Netdev != "enp1s0f0" {
				t.Errorf("finding = %+v, want an error rdma_off_priority on enp1s0f0 naming priority 0", f)
			}
			for _, w := range []string{fx.rdmaNames, "priority 0 grew by +" + itoa(fx.n+fx.tcp), "priority 0 has PFC off"} {
				if !strings.Contains(f.Message, w) {
					t.Errorf("message %q lacks %q", f.Message, w)
				}
			}
			if !r.HasFindings() {
				t.Error("HasFindings = false")
			}
			nd := r.Netdevs[0]
			if nd.Netdev != "enp1s0f0" || nd.ExpectedFrom != ExpectedFromRoCE || len(nd.Expected) != 1 || nd.Expected[0] != 3 ||
				*nd.RDMATx != fx.n || *nd.ExpectedTx != 0 || *nd.Unaccounted != fx.n || len(nd.Carriers) != 1 || nd.Carriers[0] != 0 {
				t.Errorf("netdev = %+v, want enp1s0f0 expecting [3]: %d RDMA packets, 0 on priority 3, all unaccounted, carried by 0", nd, fx.n)
			}
			p0 := r.Priorities[0]
			if p0.Netdev != "enp1s0f0" || p0.Prio != 0 || p0.Expected || *p0.TxPackets != fx.n+fx.tcp || p0.OffPackets == nil || *p0.OffPackets != fx.n || *p0.PFC {
				t.Errorf("priority 0 = %+v, want not expected, %d sent, %d off, PFC off", p0, fx.n+fx.tcp, fx.n)
			}
			if p3 := r.Priorities[3]; !p3.Expected || p3.OffPackets != nil || !*p3.PFC {
				t.Errorf("priority 3 = %+v, want expected, PFC on, nothing off", p3)
			}
			// The same traffic on priority 3: nothing to report.
			on3 := moveTx(t, before.Counters, after.Counters, fx.n)
			r = Audit(Input{View: v, Prev: before.Counters, Cur: on3})
			if len(r.Findings) != 0 || *r.Netdevs[0].Unaccounted != 0 {
				t.Errorf("RDMA on priority 3: findings %+v, unaccounted %d, want none", r.Findings, *r.Netdevs[0].Unaccounted)
			}
			// One sample: what the counters hold since reset, information only.
			r = Audit(Input{View: v, Cur: after.Counters})
			for _, f := range r.Findings {
				if f.Severity != SeverityInfo {
					t.Errorf("one sample: finding %+v, want information only", f)
				}
			}
			if r.HasFindings() {
				t.Error("one sample: HasFindings = true")
			}
		})
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// moveTx returns cur with n packets of priority 0's growth moved to
// priority 3 (the RDMA traffic where it belongs).
func moveTx(t *testing.T, prev, cur *counters.Sample, n uint64) *counters.Sample {
	t.Helper()
	c := *cur
	c.Ethtool = append([]counters.Ethtool(nil), cur.Ethtool...)
	e := &c.Ethtool[0]
	st := counters.Stats{}
	for k, v := range e.Stats {
		st[k] = v
	}
	p0, p3 := "tx_prio0_packets", "tx_prio3_packets"
	if e.Driver == "bnxt_en" {
		p0, p3 = "tx_packets_pri0", "tx_packets_pri3"
	}
	st[p0] -= n
	st[p3] += n
	e.Stats = st
	return &c
}

// Within Slack of the RDMA packets, or under MinPackets, a shortfall is
// the two reads' skew, not a finding.
func TestCountersSlack(t *testing.T) {
	before, _ := load(t, "testdata/mlx5-prio0-before.json")
	after, v := load(t, "testdata/mlx5-prio0-after.json")
	const n = 2000000
	for _, c := range []struct {
		onPrio3 uint64
		finding bool
	}{
		{n, false},
		{n - n/100, false}, // 1 %
		{n - n/50, false},  // 2 %
		{n - n/40, true},   // 2.5 %
	} {
		cur := moveTx(t, before.Counters, after.Counters, c.onPrio3)
		r := Audit(Input{View: v, Prev: before.Counters, Cur: cur})
		if got := len(r.Findings) > 0; got != c.finding {
			t.Errorf("%d of %d on priority 3: finding %v, want %v (%+v)", c.onPrio3, n, got, c.finding, r.Findings)
		}
	}
}

// With expectations, the counters compare with the flows' priority: on
// mlx5-dscp traffic class 106 (DSCP 26) lands on priority 3; traffic class
// 0 (DSCP 0, which the APP table does not map) on a priority the host
// cannot tell.
func TestCountersFlows(t *testing.T) {
	before, _ := load(t, "testdata/mlx5-prio0-before.json")
	after, v := load(t, "testdata/mlx5-prio0-after.json")
	r := Audit(Input{View: v, Prev: before.Counters, Cur: after.Counters, Expect: []Expectation{{GIDIndex: -1, Params: host.FlowParams{TrafficClass: 106}}}})
	nd := r.Netdevs[0]
	if nd.ExpectedFrom != ExpectedFromFlows || len(nd.Expected) != 1 || nd.Expected[0] != 3 || len(r.Findings) != 1 || *r.Findings[0].Priority != 0 {
		t.Errorf("tclass 106: netdev %+v, findings %+v; want the flows' priority 3 and priority 0 named", nd, r.Findings)
	}
	r = Audit(Input{View: v, Prev: before.Counters, Cur: after.Counters, Expect: []Expectation{{GIDIndex: -1, Params: host.FlowParams{TrafficClass: 0}}}})
	nd = r.Netdevs[0]
	if len(nd.Expected) != 0 || nd.Reason == nil || !strings.Contains(*nd.Reason, "unknown") || len(r.Findings) != 0 {
		t.Errorf("tclass 0: netdev %+v, findings %+v; want no expected priority, a reason, no finding", nd, r.Findings)
	}
}

// A counter that went backwards (a reset) gives no delta and no finding.
func TestCountersReset(t *testing.T) {
	before, _ := load(t, "testdata/mlx5-prio0-before.json")
	after, v := load(t, "testdata/mlx5-prio0-after.json")
	r := Audit(Input{View: v, Prev: after.Counters, Cur: before.Counters})
	if len(r.Findings) != 0 || r.Netdevs[0].Reason == nil {
		t.Errorf("reset: findings %+v, netdev %+v; want none and a reason", r.Findings, r.Netdevs[0])
	}
}

// frame builds a RoCE v2 frame from src to dst with one 802.1Q tag (vlan,
// pcp; vlan 0: untagged), tos, and BTH opcode op to destQP (with a DETH
// naming srcQP for UD).
func frame(t *testing.T, src, dst string, vlan uint16, pcp, tos uint8, op roce.Opcode, destQP, srcQP uint32) []byte {
	t.Helper()
	s := roce.FrameSpec{DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
		Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), TOS: tos, TTL: 64, SrcPort: 0xc000,
		BTH: roce.BTH{Opcode: op, PKey: 0xffff, DestQP: destQP, PSN: 1}, Payload: make([]byte, 16)}
	if vlan != 0 {
		s.VLANs = []roce.VLANTag{{TPID: 0x8100, ID: vlan, PCP: pcp}}
	}
	if op.Transport() == roce.TransportUD {
		s.Headers = append(s.Headers, &roce.DETH{QKey: 0x11111111, SrcQP: srcQP})
	}
	b, err := s.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// On the Soft-RoCE lab host (rxe.json: no DCB on veth0), two processes
// send on VLAN 100, whose egress-qos-map gives skb priority 0 (what rxe
// sends with) PCP 3: one with traffic class 106, one with 0. Expecting
// traffic class 106, the second differs (DSCP 0 where 26 is expected) and
// is named; the first is not.
func TestWireRXETwoProcesses(t *testing.T) {
	_, v := load(t, "../host/testdata/rxe.json")
	local := []netip.Addr{netip.MustParseAddr("10.0.100.1")}
	w := NewWire(local, DefaultLimits)
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		w.Add("veth0", frame(t, "10.0.100.1", "10.0.100.2", 100, 3, 106, roce.OpcodeRCSendOnly, 0x12, 0), at)
	}
	w.Add("veth0", frame(t, "10.0.100.1", "10.0.100.2", 100, 3, 0, roce.OpcodeRCRDMAWriteOnly, 0x13, 0), at.Add(time.Millisecond))
	w.Add("veth0", frame(t, "10.0.100.2", "10.0.100.1", 100, 3, 0, roce.OpcodeRCSendOnly, 0x11, 0), at) // received: not ours
	c := &census.Census{QPs: []census.QP{
		{Device: "rxe0", Port: 1, QPN: 0x11, DestQP: u32(0x12), Type: "RC", State: "RTS", Owner: census.OwnerProcess, PID: 100, Comm: "good"},
		{Device: "rxe0", Port: 1, QPN: 0x14, DestQP: u32(0x13), Type: "RC", State: "RTS", Owner: census.OwnerProcess, PID: 200, Comm: "bad"},
	}}
	r := Audit(Input{View: v, Wire: w, Owners: OwnersOf(c), Expect: []Expectation{{GIDIndex: -1, Params: host.FlowParams{TrafficClass: 106}}}})
	if r.Wire.Frames != 4 || r.Wire.Foreign != 1 || len(r.Wire.QPs) != 2 {
		t.Fatalf("wire = %+v, want 4 frames of 2 QPs and 1 foreign", r.Wire)
	}
	if len(r.Findings) != 1 {
		t.Fatalf("findings = %+v, want one", r.Findings)
	}
	f := r.Findings[0]
	if f.Code != CodeQPMarkings || f.QP == nil || f.QP.PID == nil || *f.QP.PID != 200 || *f.QP.QPN != 0x14 {
		t.Errorf("finding = %+v, want qp_markings_differ naming pid 200's QP 0x14", f)
	}
	for _, want := range []string{"pid 200 (bad) QP 0x14 on rxe0 port 1", "DSCP 0, PCP 3", "expects DSCP 26"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	if strings.Contains(f.Message, "pid 100") {
		t.Errorf("message %q names the process on the expected markings", f.Message)
	}
	good, bad := r.Wire.QPs[0], r.Wire.QPs[1]
	if *good.PID != 100 || good.Verdict != VerdictOK || good.DSCP != 26 || *good.PCP != 3 || good.Packets != 3 || good.Priority != nil {
		t.Errorf("good = %+v, want pid 100, ok, DSCP 26, PCP 3, 3 packets, priority unknown (no DCB)", good)
	}
	if *bad.PID != 200 || bad.Verdict != VerdictMarkings || bad.Expected == nil || *bad.Expected.DSCP != 26 || *bad.Expected.PCP != 3 {
		t.Errorf("bad = %+v, want pid 200, markings_differ, expected DSCP 26 PCP 3", bad)
	}
	if !r.HasFindings() {
		t.Error("HasFindings = false")
	}
}

func u32(v uint32) *uint32 { return &v }

// On an mlx5 host under PCP trust with PFC on priority 3 (mlx5-pcp.json),
// without expectations: a UD QP whose frames carry PCP 0 on VLAN 100 is
// off the RoCE priority, on a priority without PFC; one with PCP 3 is
// not. UD frames name their QP in the DETH.
func TestWireMLX5OffPriority(t *testing.T) {
	_, v := load(t, "../host/testdata/mlx5-pcp.json")
	w := NewWire([]netip.Addr{netip.MustParseAddr("10.100.0.10")}, DefaultLimits)
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	w.Add("enp1s0f0", frame(t, "10.100.0.10", "10.100.0.20", 100, 3, 106, roce.OpcodeUDSendOnly, 0x99, 0x21), at)
	w.Add("enp1s0f0", frame(t, "10.100.0.10", "10.100.0.20", 100, 0, 0, roce.OpcodeUDSendOnly, 0x99, 0x1a), at)
	c := &census.Census{QPs: []census.QP{
		{Device: "mlx5_0", Port: 1, QPN: 0x21, Type: "UD", Owner: census.OwnerProcess, PID: 11, Comm: "ok.py"},
		{Device: "mlx5_0", Port: 1, QPN: 0x1a, Type: "UD", Owner: census.OwnerProcess, PID: 4242, Comm: "train.py"},
	}}
	r := Audit(Input{View: v, Wire: w, Owners: OwnersOf(c)})
	if len(r.Findings) != 1 {
		t.Fatalf("findings = %+v, want one", r.Findings)
	}
	f := r.Findings[0]
	if f.Code != CodeQPOffPriority || f.Severity != SeverityError || *f.Priority != 0 || *f.QP.PID != 4242 {
		t.Errorf("finding = %+v, want an error qp_off_priority, priority 0, pid 4242", f)
	}
	for _, want := range []string{"pid 4242 (train.py) QP 0x1a on mlx5_0 port 1", "PCP 0, priority 0 — not lossless (PFC off)", "the RoCE priorities of enp1s0f0 are 3"} {
		if !strings.Contains(f.Message, want) {
			t.Errorf("message %q lacks %q", f.Message, want)
		}
	}
	// The per-priority table counts the sample's frames on 0 and 3.
	if p := r.Priorities; len(p) != 8 || p[0].WirePackets == nil || *p[0].WirePackets != 1 || p[3].WirePackets == nil || *p[3].WirePackets != 1 {
		t.Errorf("priorities = %+v, want one wire packet on 0 and one on 3", p)
	}
}

// The sample is bounded: Limits.Frames frames, Limits.Entries entries.
func TestWireLimits(t *testing.T) {
	local := []netip.Addr{netip.MustParseAddr("10.0.100.1")}
	w := NewWire(local, Limits{Frames: 5, Entries: 2})
	at := time.Now()
	more := true
	for i := 0; i < 8; i++ {
		more = w.Add("veth0", frame(t, "10.0.100.1", "10.0.100.2", 100, 3, 106, roce.OpcodeRCSendOnly, uint32(0x100+i), 0), at)
	}
	if more || !w.Full() || w.Frames != 5 || len(w.entries) != 2 || w.LeftOut != 3 {
		t.Errorf("after 8 frames of 8 QPs: more %v, full %v, frames %d, entries %d, left out %d; want false, true, 5, 2, 3", more, w.Full(), w.Frames, len(w.entries), w.LeftOut)
	}
	w = NewWire(local, Limits{})
	if w.Add("veth0", []byte("not a frame"), at); w.Undecodable != 1 || w.Frames != 0 {
		t.Errorf("garbage: undecodable %d, frames %d", w.Undecodable, w.Frames)
	}
}

// Live captures go on the wire device of Soft-RoCE ports (rxe.json: rxe0
// on veth0, its VLAN and QinQ devices on top); an mlx5 device offloads its
// traffic and is named instead.
func TestCaptureNetdevs(t *testing.T) {
	_, v := load(t, "../host/testdata/rxe.json")
	if nds, off := CaptureNetdevs(v); len(nds) != 1 || nds[0] != "veth0" || len(off) != 0 {
		t.Errorf("rxe: %v, offloaded %v; want [veth0], none", nds, off)
	}
	_, v = load(t, "../host/testdata/mlx5-dscp.json")
	if nds, off := CaptureNetdevs(v); len(nds) != 0 || len(off) != 1 || off[0] != "mlx5_0" {
		t.Errorf("mlx5: %v, offloaded %v; want none, [mlx5_0]", nds, off)
	}
}
