package counters

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/qos"
)

// dscpDCB is a port under DSCP trust with DSCP 26 → priority 3 and DSCP
// 48 → priority 6, priority 3 in traffic class 1, everything else in
// traffic class 0 (ETS 50 % each), PFC enabled on pfcOn.
func dscpDCB(pfcOn ...uint8) *qos.DCB {
	d := &qos.DCB{Netdev: "eth1", Supported: true,
		PFC:  &qos.PFC{Cap: 8},
		ETS:  &qos.ETS{PrioTC: [8]uint8{0, 0, 0, 1, 0, 0, 0, 0}, TCTSA: [8]uint8{2, 2}, TCTxBW: [8]uint8{50, 50}},
		Apps: []qos.App{{Selector: qos.AppSelDSCP, Priority: 3, Protocol: 26}, {Selector: qos.AppSelDSCP, Priority: 6, Protocol: 48}}}
	for _, p := range pfcOn {
		d.PFC.Enabled |= 1 << p
	}
	return d
}

// pcpDCB is a port as mlx5 comes up: DCB supported, PCP trust (no DSCP
// APP entries), PFC off on every priority, no APP entry for RoCE.
func pcpDCB() *qos.DCB {
	return &qos.DCB{Netdev: "eth1", Supported: true, PFC: &qos.PFC{Cap: 8}}
}

func bp(b bool) *bool   { return &b }
func u8(v uint8) *uint8 { return &v }

type step struct {
	rdma    map[string]uint64 // mlx5_0 port 1 hw_counters
	ethtool map[string]uint64 // eth1
	driver  string            // eth1's ethtool driver
	ind     [8]uint64         // DCB PFC indications of eth1
}

func (s step) sample(t time.Time) *Sample {
	drv := s.driver
	if drv == "" {
		drv = "mlx5_core"
	}
	smp := &Sample{Time: t,
		RDMA:    []RDMAPort{{Device: "mlx5_0", Port: 1, Source: SourceNetlink, HWCounters: s.rdma}},
		Ethtool: []Ethtool{{Netdev: "eth1", Driver: drv, Stats: s.ethtool}},
		PFC:     []PFC{{Netdev: "eth1", Indications: s.ind}},
	}
	return smp
}

func codes(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Code)
	}
	sort.Strings(out)
	return out
}

func TestFindings(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		dcb       *qos.DCB
		dcqcn     *qos.DCQCN
		pause     *qos.Pause
		tc        *qos.TCOverride
		prev, cur step
		oneSample bool
		want      []string
		msgHas    []string
	}{
		{name: "quiet lossless host",
			dcb:  dscpDCB(3),
			prev: step{rdma: map[string]uint64{"out_of_sequence": 4, "np_cnp_sent": 2}, ethtool: map[string]uint64{"rx_prio3_pause": 9}},
			cur:  step{rdma: map[string]uint64{"out_of_sequence": 4, "np_cnp_sent": 2}, ethtool: map[string]uint64{"rx_prio3_pause": 9}},
			want: nil},
		{name: "pauses on a priority without RoCE (DCB indications)",
			dcb:    dscpDCB(3),
			prev:   step{ind: [8]uint64{1: 10}},
			cur:    step{ind: [8]uint64{1: 25}},
			want:   []string{"warning pause_without_roce"},
			msgHas: []string{"eth1 priority 1", "15 pause frames received", "RoCE is on priority 3"}},
		{name: "pauses on a priority without RoCE (bnxt_en names)",
			dcb:    dscpDCB(3),
			prev:   step{driver: "bnxt_en", ethtool: map[string]uint64{"tx_pfc_ena_frames_pri5": 1}},
			cur:    step{driver: "bnxt_en", ethtool: map[string]uint64{"tx_pfc_ena_frames_pri5": 4}},
			want:   []string{"warning pause_without_roce"},
			msgHas: []string{"priority 5", "3 sent"}},
		{name: "RoCE priority without PFC drops (mlx5 per priority)",
			dcb:    dscpDCB(),
			prev:   step{ethtool: map[string]uint64{"rx_prio3_buf_discard": 0, "rx_prio3_cong_discard": 1}},
			cur:    step{ethtool: map[string]uint64{"rx_prio3_buf_discard": 40, "rx_prio3_cong_discard": 1}},
			want:   []string{"error roce_without_pfc_discards"},
			msgHas: []string{"priority 3 carries RoCE (DSCP 26", "rx_prio3_buf_discard +40"}},
		{name: "RoCE priority without PFC drops (bnxt_en: port level)",
			dcb:    dscpDCB(),
			prev:   step{driver: "bnxt_en", ethtool: map[string]uint64{"rx_stat_discard": 3}},
			cur:    step{driver: "bnxt_en", ethtool: map[string]uint64{"rx_stat_discard": 8}},
			want:   []string{"error roce_without_pfc_discards"},
			msgHas: []string{"port-level rx_discards +5"}},
		{name: "long pause",
			dcb:    dscpDCB(3),
			prev:   step{ethtool: map[string]uint64{"rx_prio3_pause_duration": 1000}},
			cur:    step{ethtool: map[string]uint64{"rx_prio3_pause_duration": 201000}},
			want:   []string{"warning long_pause"},
			msgHas: []string{"the peer paused this port for 20% of the last 1s"}},
		{name: "pause storm by duration and by the NIC's storm counter",
			dcb:    dscpDCB(3),
			prev:   step{ethtool: map[string]uint64{"tx_prio3_pause_duration": 0, "tx_pause_storm_error_events": 0}},
			cur:    step{ethtool: map[string]uint64{"tx_prio3_pause_duration": 900000, "tx_pause_storm_error_events": 1}},
			want:   []string{"error pause_storm", "error pause_storm"},
			msgHas: []string{"this port paused its peer for 90%", "1 pause storm event(s)"}},
		{name: "loss on a lossless class",
			dcb:    dscpDCB(3),
			prev:   step{rdma: map[string]uint64{"out_of_sequence": 4, "local_ack_timeout_err": 0, "req_cqe_error": 0}},
			cur:    step{rdma: map[string]uint64{"out_of_sequence": 14, "local_ack_timeout_err": 2, "req_cqe_error": 5}},
			want:   []string{"error loss_on_lossless"},
			msgHas: []string{"local_ack_timeout_err +2", "out_of_sequence +10", "PFC on priorities [3]"}},
		{name: "loss without PFC",
			dcb:    dscpDCB(),
			prev:   step{rdma: map[string]uint64{"packet_seq_err": 0}},
			cur:    step{rdma: map[string]uint64{"packet_seq_err": 3}},
			want:   []string{"warning loss_without_pfc"},
			msgHas: []string{"packet_seq_err +3", "PFC off on every priority"}},
		{name: "ECN marks without CNPs, DCQCN notification point off",
			dcb:    dscpDCB(3),
			dcqcn:  &qos.DCQCN{Netdev: "eth1", Status: qos.SettingRead, NP: [8]*bool{3: bp(false)}, RP: [8]*bool{3: bp(true)}},
			prev:   step{rdma: map[string]uint64{"np_ecn_marked_roce_packets": 10, "np_cnp_sent": 0}},
			cur:    step{rdma: map[string]uint64{"np_ecn_marked_roce_packets": 110, "np_cnp_sent": 0}},
			want:   []string{"warning dcqcn_off", "warning ecn_without_cnp"},
			msgHas: []string{"100 ECN-marked", "notification point is off on RoCE priority 3 of eth1", "roce_np/enable/3 is 0"}},
		{name: "ECN marks answered with CNPs",
			dcb:  dscpDCB(3),
			prev: step{rdma: map[string]uint64{"np_ecn_marked_roce_packets": 10, "np_cnp_sent": 5}},
			cur:  step{rdma: map[string]uint64{"np_ecn_marked_roce_packets": 110, "np_cnp_sent": 50}},
			want: nil},
		{name: "CNPs on a priority with no PFC and no ETS share",
			dcb: func() *qos.DCB {
				d := dscpDCB(3)
				d.ETS.PrioTC[6] = 2         // TC 2:
				d.ETS.TCTSA[2] = qos.TSAETS // ETS with 0 % (a TSA of 0 would be strict)
				return d
			}(),
			dcqcn:  &qos.DCQCN{Netdev: "eth1", Status: qos.SettingRead, CNPDSCP: u8(48), CNPPrio: u8(6)},
			prev:   step{rdma: map[string]uint64{"np_cnp_sent": 5}},
			cur:    step{rdma: map[string]uint64{"np_cnp_sent": 50}},
			want:   []string{"warning cnp_priority_unprotected"},
			msgHas: []string{"45 CNPs sent", "priority 6 (cnp_dscp 48 → priority 6)", "traffic class 2 has no ETS share (ets, 0%)"}},
		{name: "CNPs on a priority with an ETS share",
			dcb:   dscpDCB(3),
			dcqcn: &qos.DCQCN{Netdev: "eth1", Status: qos.SettingRead, CNPDSCP: u8(48), CNPPrio: u8(6)},
			prev:  step{rdma: map[string]uint64{"np_cnp_sent": 5}},
			cur:   step{rdma: map[string]uint64{"np_cnp_sent": 50}},
			want:  nil},
		{name: "traffic class override",
			dcb:    dscpDCB(3),
			tc:     &qos.TCOverride{Device: "mlx5_0", Port: 1, Global: u8(96), Status: qos.SettingRead, Source: "/sys/class/infiniband/mlx5_0/tc/1/traffic_class"},
			want:   []string{"warning traffic_class_override"},
			msgHas: []string{"traffic class 96 (DSCP 24) for every connected QP"}},
		{name: "802.3x pause stalls the port for 60% of the interval (mlx5)",
			dcb:    pcpDCB(),
			prev:   step{ethtool: map[string]uint64{"tx_global_pause": 10, "tx_global_pause_duration": 1000}},
			cur:    step{ethtool: map[string]uint64{"tx_global_pause": 900, "tx_global_pause_duration": 601000}},
			want:   []string{"error pause_storm"},
			msgHas: []string{"802.3x pause: this port paused its peer for 60% of the last 1s (tx_global_pause_duration +600000 µs)"}},
		{name: "802.3x pause 20% of the interval: long pause",
			dcb:    pcpDCB(),
			prev:   step{ethtool: map[string]uint64{"rx_global_pause": 10, "rx_global_pause_duration": 0}},
			cur:    step{ethtool: map[string]uint64{"rx_global_pause": 30, "rx_global_pause_duration": 200000}},
			want:   []string{"warning long_pause"},
			msgHas: []string{"the peer paused this port for 20%"}},
		{name: "short 802.3x pause: information",
			dcb:    pcpDCB(),
			prev:   step{ethtool: map[string]uint64{"rx_global_pause": 10, "rx_global_pause_duration": 0}},
			cur:    step{ethtool: map[string]uint64{"rx_global_pause": 12, "rx_global_pause_duration": 300}},
			want:   []string{"info global_pause"},
			msgHas: []string{"the peer paused this port with rx_global_pause +2 frames for +300 µs"}},
		{name: "802.3x pause frames of bnxt_en (no duration)",
			dcb:    pcpDCB(),
			prev:   step{driver: "bnxt_en", ethtool: map[string]uint64{"rx_pause_frames": 1, "tx_pause_frames": 0}},
			cur:    step{driver: "bnxt_en", ethtool: map[string]uint64{"rx_pause_frames": 41, "tx_pause_frames": 0}},
			want:   []string{"info global_pause"},
			msgHas: []string{"rx_pause_frames +40 frames"}},
		{name: "bng_en has bnxt_en's names",
			dcb:    pcpDCB(),
			prev:   step{driver: "bng_en", ethtool: map[string]uint64{"tx_pause_frames": 0}},
			cur:    step{driver: "bng_en", ethtool: map[string]uint64{"tx_pause_frames": 7}},
			want:   []string{"info global_pause"},
			msgHas: []string{"this port paused its peer with tx_pause_frames +7 frames"}},
		{name: "802.3x pause read on, PFC on",
			dcb:    dscpDCB(3),
			pause:  &qos.Pause{Netdev: "eth1", RX: bp(true), TX: bp(false), Autoneg: bp(false), Status: qos.SettingRead, Source: qos.PauseSource},
			want:   []string{"warning global_pause_with_pfc"},
			msgHas: []string{"802.3x pause is on for rx", "PFC is on for priorities [3]", "ethtool -A eth1 rx off tx off"}},
		{name: "802.3x pause read off, PFC on",
			dcb:   dscpDCB(3),
			pause: &qos.Pause{Netdev: "eth1", RX: bp(false), TX: bp(false), Status: qos.SettingRead, Source: qos.PauseSource},
			want:  nil},
		{name: "802.3x pause settings not read, mlx5 lists its global pause counters, PFC on",
			dcb:    dscpDCB(3),
			prev:   step{ethtool: map[string]uint64{"rx_global_pause": 0}},
			cur:    step{ethtool: map[string]uint64{"rx_global_pause": 0}},
			want:   []string{"warning global_pause_with_pfc"},
			msgHas: []string{"mlx5 lists rx_global_pause only while it is"}},
		{name: "ice: link flow control counters, settings not read, PFC on: no evidence",
			dcb:  dscpDCB(3),
			prev: step{driver: "ice", ethtool: map[string]uint64{"link_xoff_rx.nic": 0}},
			cur:  step{driver: "ice", ethtool: map[string]uint64{"link_xoff_rx.nic": 0}},
			want: nil},
		{name: "RDMA out_of_buffer and the netdev's rx_out_of_buffer",
			dcb:    dscpDCB(3),
			prev:   step{rdma: map[string]uint64{"out_of_buffer": 5}, ethtool: map[string]uint64{"rx_out_of_buffer": 0}},
			cur:    step{rdma: map[string]uint64{"out_of_buffer": 25}, ethtool: map[string]uint64{"rx_out_of_buffer": 3}},
			want:   []string{"warning out_of_buffer", "warning out_of_buffer"},
			msgHas: []string{"mlx5_0 port 1: out_of_buffer +20", "RNR NAKs", "on UD the packets are dropped", "eth1: rx_out_of_buffer +3", "not the RDMA QPs"}},
		{name: "no RoCE priority configured: priority 0 under PCP trust, its discards",
			dcb:    pcpDCB(),
			prev:   step{ethtool: map[string]uint64{"rx_prio0_discards": 100, "rx_discards_phy": 100}},
			cur:    step{ethtool: map[string]uint64{"rx_prio0_discards": 150, "rx_discards_phy": 150}},
			want:   []string{"error roce_without_pfc_discards"},
			msgHas: []string{"eth1 priority 0 carries RoCE (no configuration names a RoCE priority", "untagged frames (or PCP 0) are received on priority 0", "rx_prio0_discards +50"}},
		{name: "one sample: counted since reset, information only",
			dcb:       dscpDCB(3),
			cur:       step{rdma: map[string]uint64{"out_of_sequence": 7}},
			oneSample: true,
			want:      []string{"info loss_on_lossless"},
			msgHas:    []string{"(out_of_sequence 7)", "one sample"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := Input{Cur: c.cur.sample(t0.Add(time.Second)),
				Ports:   []PortInfo{{Device: "mlx5_0", Port: 1, Driver: "mlx5", Netdev: "eth1", Real: "eth1", TCOverride: c.tc}},
				Netdevs: []NetdevInfo{{Netdev: "eth1", DCB: c.dcb, DCQCN: c.dcqcn, Pause: c.pause}}}
			if !c.oneSample {
				in.Prev = c.prev.sample(t0)
			}
			r := Analyze(in)
			want := append([]string(nil), c.want...)
			sort.Strings(want)
			if got := codes(r.Findings); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("findings %v, want %v\n%+v", got, want, r.Findings)
			}
			all := ""
			for _, f := range r.Findings {
				all += f.Message + "\n"
			}
			for _, m := range c.msgHas {
				if !strings.Contains(all, m) {
					t.Errorf("no finding says %q:\n%s", m, all)
				}
			}
		})
	}
}

// The RoCE priorities of a netdev, each with its reason.
func TestRoCEPriorities(t *testing.T) {
	d := dscpDCB(3)
	d.Apps = append(d.Apps, qos.App{Selector: qos.AppSelDSCP, Priority: 4, Protocol: 18}, qos.App{Selector: qos.AppSelDgram, Priority: 5, Protocol: 4791})
	tos := uint8(72) // DSCP 18
	ports := []PortInfo{{Device: "mlx5_0", Port: 1, Real: "eth1", RDMACM: &qos.RDMACMDefault{Status: qos.SettingRead, ToS: &tos}}}
	q := &qos.DCQCN{Status: qos.SettingRead, NP: [8]*bool{7: bp(true)}}
	got := RoCEPriorities(NetdevInfo{Netdev: "eth1", DCB: d, DCQCN: q}, ports)
	want := map[uint8]string{3: "PFC is on", 4: "default_roce_tos 72 (DSCP 18)", 5: "UDP 4791", 7: "DCQCN is enabled"}
	if len(got) != len(want) {
		t.Fatalf("RoCE priorities %v, want %v", got, want)
	}
	for p, w := range want {
		if !strings.Contains(strings.Join(got[p], "; "), w) {
			t.Errorf("priority %d: %v, want a reason with %q", p, got[p], w)
		}
	}
	if !strings.Contains(strings.Join(got[3], ";"), "DSCP 26") {
		t.Errorf("priority 3: %v: want DSCP 26 as a reason too", got[3])
	}
	if _, assumed := rocePriorities(NetdevInfo{Netdev: "eth1", DCB: d, DCQCN: q}, ports); assumed {
		t.Error("configured priorities reported as assumed")
	}
	// No DCB: nothing is known.
	if got := RoCEPriorities(NetdevInfo{Netdev: "veth0", DCB: &qos.DCB{Supported: false}}, nil); len(got) != 0 {
		t.Errorf("no DCB: %v", got)
	}
	// Nothing configured: the priority RoCE's defaults (sl 0, traffic
	// class 0) land on.
	for _, c := range []struct {
		name string
		dcb  *qos.DCB
		prio uint8
		ok   bool
		why  string
	}{
		{"PCP trust", pcpDCB(), 0, true, "untagged frames (or PCP 0) are received on priority 0"},
		{"PCP trust, default priority 2 (APP EtherType 0)", &qos.DCB{Supported: true, Apps: []qos.App{{Selector: qos.AppSelEthertype, Priority: 2, Protocol: 0}}}, 2, true, "the port's default priority"},
		{"DSCP trust, DSCP 0 → 1, DSCP 26 unmapped", &qos.DCB{Supported: true, Apps: []qos.App{{Selector: qos.AppSelDSCP, Priority: 1, Protocol: 0}, {Selector: qos.AppSelDSCP, Priority: 5, Protocol: 46}}}, 1, true, "maps DSCP 0 to this priority"},
		{"DSCP trust, DSCP 0 unmapped", &qos.DCB{Supported: true, Apps: []qos.App{{Selector: qos.AppSelDSCP, Priority: 5, Protocol: 46}}}, 0, false, ""},
	} {
		got, assumed := rocePriorities(NetdevInfo{Netdev: "eth1", DCB: c.dcb}, nil)
		if !c.ok {
			if len(got) != 0 || assumed {
				t.Errorf("%s: %v (assumed %v), want none", c.name, got, assumed)
			}
			continue
		}
		if len(got) != 1 || !assumed || !strings.Contains(strings.Join(got[c.prio], ";"), c.why) {
			t.Errorf("%s: %v (assumed %v), want priority %d assumed with %q", c.name, got, assumed, c.prio, c.why)
		}
	}
}

// A real ConnectX-6 Dx (mlx5_core, Linux 5.15) `ethtool -S` published on
// netdev/bpf (testdata/README.md): 771 s of 802.3x pause sent, 58 G
// frames dropped on priority 0, 990 M packets without a receive buffer.
// Its DCB state was not published; the port is taken as mlx5 brings it
// up (PCP trust, PFC off), which is what the unconfigured host runs.
func TestRealMLX5PauseAndPriority0Discards(t *testing.T) {
	f := loadEthtool(t, "mlx5_core-cx6dx-lore")
	smp := &Sample{Time: time.Date(2024, 6, 19, 15, 17, 59, 0, time.UTC),
		Ethtool: []Ethtool{{Netdev: "ens2f0np0", Driver: f.Driver, Stats: f.Stats}}}
	for _, c := range []struct {
		name   string
		dcb    *qos.DCB
		want   []string
		msgHas []string
	}{
		{name: "DCB as mlx5 comes up",
			dcb:  &qos.DCB{Netdev: "ens2f0np0", Supported: true, PFC: &qos.PFC{Cap: 8}},
			want: []string{"info global_pause", "info out_of_buffer", "info roce_without_pfc_discards"},
			msgHas: []string{"this port paused its peer with tx_global_pause 5745042 frames for 771103810 µs (tx_global_pause_duration, 771.1 s)",
				"ens2f0np0 priority 0 carries RoCE (no configuration names a RoCE priority", "rx_prio0_discards 58591314012",
				"rx_out_of_buffer 990473555", "one sample"}},
		{name: "DCB not read: the pause and the empty rings, no RoCE priority",
			want:   []string{"info global_pause", "info out_of_buffer"},
			msgHas: []string{"771.1 s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Analyze(Input{Cur: smp, Netdevs: []NetdevInfo{{Netdev: "ens2f0np0", DCB: c.dcb}}})
			if got := codes(r.Findings); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("findings %v, want %v\n%+v", got, c.want, r.Findings)
			}
			all := ""
			for _, f := range r.Findings {
				all += f.Message + "\n"
			}
			for _, m := range c.msgHas {
				if !strings.Contains(all, m) {
					t.Errorf("no finding says %q:\n%s", m, all)
				}
			}
			if c.dcb == nil {
				if len(r.RoCEPriorities) != 0 {
					t.Errorf("RoCE priorities without DCB: %+v", r.RoCEPriorities)
				}
				return
			}
			if len(r.RoCEPriorities) != 1 || r.RoCEPriorities[0].Prio != 0 || !r.RoCEPriorities[0].Assumed || r.RoCEPriorities[0].PFC == nil || *r.RoCEPriorities[0].PFC {
				t.Errorf("RoCE priorities %+v: want priority 0, assumed, PFC off", r.RoCEPriorities)
			}
		})
	}
}

// A pod's port (its real netdev behind a network namespace boundary,
// PortInfo.Boundary) losing RC packets: whether it is lossless is unknown
// because of the boundary, said as such — not "no DCB".
func TestLossBehindNetnsBoundary(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	rdma := func(v uint64) *Sample {
		return &Sample{Time: t0.Add(time.Duration(v) * time.Second),
			RDMA: []RDMAPort{{Device: "mlx5_0", Port: 1, Source: SourceNetlink, HWCounters: map[string]uint64{"out_of_sequence": v}}}}
	}
	why := "the lower device of net1 is in another network namespace"
	r := Analyze(Input{Prev: rdma(1), Cur: rdma(10),
		Ports: []PortInfo{{Device: "mlx5_0", Port: 1, Driver: "mlx5", Netdev: "net1", Boundary: why}}})
	var msg string
	for _, f := range r.Findings {
		if f.Code == CodeLossWithoutPFC {
			msg = f.Message
		}
	}
	if !strings.Contains(msg, why) || strings.Contains(msg, "no DCB") {
		t.Errorf("loss finding %q: want the boundary as the reason, not \"no DCB\"", msg)
	}
}

// RoCE LAG: the port's real netdev is a bond, which has no DCB (mlx5 keeps
// PFC per physical port), and its frames leave through the slaves. RC
// loss is judged by the slaves' PFC: on both → loss_on_lossless (an
// error); on one only → a warning naming both sides; never "no DCB".
func TestLossOnLAGJudgesSlaves(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	rdma := func(v uint64) *Sample {
		return &Sample{Time: t0.Add(time.Duration(v) * time.Second),
			RDMA: []RDMAPort{{Device: "mlx5_bond_0", Port: 1, Source: SourceNetlink, HWCounters: map[string]uint64{"out_of_sequence": v}}}}
	}
	slave := func(name string, pfcOn ...uint8) NetdevInfo {
		d := dscpDCB(pfcOn...)
		d.Netdev = name
		return NetdevInfo{Netdev: name, DCB: d}
	}
	lag := PortInfo{Device: "mlx5_bond_0", Port: 1, Driver: "mlx5", Netdev: "bond0", Real: "bond0", Slaves: []string{"enp1s0f0", "enp1s0f1"}}
	for _, c := range []struct {
		name   string
		slaves []NetdevInfo
		code   string
		msgHas []string
	}{
		{"PFC on both slaves", []NetdevInfo{slave("enp1s0f0", 3), slave("enp1s0f1", 3)}, CodeLossOnLossless, []string{"enp1s0f0, enp1s0f1 is meant to be lossless", "[3]"}},
		{"PFC on one slave", []NetdevInfo{slave("enp1s0f0", 3), slave("enp1s0f1")}, CodeLossWithoutPFC, []string{"PFC on for enp1s0f0", "off on every priority for enp1s0f1"}},
	} {
		r := Analyze(Input{Prev: rdma(1), Cur: rdma(10), Ports: []PortInfo{lag},
			Netdevs: append([]NetdevInfo{{Netdev: "bond0"}}, c.slaves...)})
		var got *Finding
		for i, f := range r.Findings {
			if f.Code == CodeLossOnLossless || f.Code == CodeLossWithoutPFC {
				got = &r.Findings[i]
			}
		}
		if got == nil || got.Code != c.code {
			t.Errorf("%s: findings %v, want %s", c.name, codes(r.Findings), c.code)
			continue
		}
		for _, h := range c.msgHas {
			if !strings.Contains(got.Message, h) {
				t.Errorf("%s: %q lacks %q", c.name, got.Message, h)
			}
		}
		if strings.Contains(got.Message, "no DCB") {
			t.Errorf("%s: %q says no DCB", c.name, got.Message)
		}
	}
}
