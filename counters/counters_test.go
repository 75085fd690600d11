package counters

import (
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

type ethtoolFixture struct {
	Driver string            `json:"driver"`
	Stats  map[string]uint64 `json:"stats"`
}

func loadEthtool(t *testing.T, driver string) ethtoolFixture {
	t.Helper()
	b, err := os.ReadFile("testdata/ethtool-" + driver + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var f ethtoolFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

// The scenario every per-priority fixture encodes (testdata/README.md):
// priority 3 carries RoCE with PFC on.
var scenario3 = map[PrioCounter]uint64{
	PrioRxPackets: 1000, PrioTxPackets: 2000, PrioRxBytes: 1048576, PrioTxBytes: 2097152,
	PrioRxPause: 5, PrioTxPause: 7, PrioRxPauseDuration: 300, PrioTxPauseDuration: 400,
	PrioRxPauseTransition: 5, PrioTxPauseTransition: 7,
}

// mlx5, bnxt_en and ice fixtures, each with the driver's own names, parse
// to the same normalized names and values for what each driver counts.
func TestNormalizeSameNames(t *testing.T) {
	want := map[string][]PrioCounter{
		// mlx5 counts no tx pause transitions; bnxt_en no discards per
		// priority; ice only PFC frames (XOFF and XON).
		"mlx5_core": {PrioRxPackets, PrioTxPackets, PrioRxBytes, PrioTxBytes, PrioRxPause, PrioTxPause, PrioRxPauseDuration, PrioTxPauseDuration, PrioRxPauseTransition, PrioRxDiscards, PrioRxBufDiscard, PrioRxCongDiscard, PrioRxECNMarked},
		"bnxt_en":   {PrioRxPackets, PrioTxPackets, PrioRxBytes, PrioTxBytes, PrioRxPause, PrioTxPause, PrioRxPauseDuration, PrioTxPauseDuration, PrioRxPauseTransition, PrioTxPauseTransition},
		"ice":       {PrioRxPause, PrioTxPause, PrioRxXON, PrioTxXON},
		// ionic: frames and pause time per priority, no per-priority
		// pause frames or bytes.
		"ionic": {PrioRxPackets, PrioTxPackets, PrioRxPauseDuration, PrioTxPauseDuration},
	}
	for drv, names := range want {
		f := loadEthtool(t, drv)
		if f.Driver != drv {
			t.Fatalf("fixture of %s says driver %s", drv, f.Driver)
		}
		n := Normalize(drv, f.Stats)
		var got []PrioCounter
		for c := range n.Prio[3] {
			got = append(got, c)
		}
		sortC := func(s []PrioCounter) { sort.Slice(s, func(i, j int) bool { return s[i] < s[j] }) }
		sortC(got)
		w := append([]PrioCounter(nil), names...)
		sortC(w)
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s priority 3: counters %v, want %v", drv, got, w)
		}
		for c, v := range scenario3 {
			if x, ok := n.Prio[3][c]; ok && x.Value != v {
				t.Errorf("%s priority 3 %s (%s) = %d, want %d", drv, c, x.Counter, x.Value, v)
			}
		}
		// The pause frame counters of every driver that counts them per
		// priority agree (ionic counts PFC frames only per port).
		for _, c := range []PrioCounter{PrioRxPause, PrioTxPause} {
			if drv == "ionic" {
				if _, ok := n.Prio[3][c]; ok {
					t.Errorf("ionic priority 3 has %s", c)
				}
				continue
			}
			if n.Prio[3][c].Value != scenario3[c] {
				t.Errorf("%s priority 3 %s = %d, want %d", drv, c, n.Prio[3][c].Value, scenario3[c])
			}
		}
	}
	// mlx5 has pause counters only for priorities with PFC on: priority 0
	// has none, not a 0.
	n := Normalize("mlx5_core", loadEthtool(t, "mlx5_core").Stats)
	if _, ok := n.Prio[0][PrioRxPause]; ok {
		t.Error("mlx5 priority 0 has rx_pause: the fixture has PFC on priority 3 only")
	}
	if n.Prio[0][PrioRxPackets].Counter != "rx_prio0_packets" {
		t.Errorf("mlx5 priority 0 rx_packets from %q", n.Prio[0][PrioRxPackets].Counter)
	}
	// Port level.
	for drv, want := range map[string]map[PortCounter]string{
		"mlx5_core": {PortRxPauseFrames: "rx_pause_ctrl_phy", PortRxDiscards: "rx_discards_phy", PortStorm: "tx_pause_storm_error_events", PortStormWarning: "tx_pause_storm_warning_events"},
		"bnxt_en":   {PortRxPFCFrames: "rx_pfc_frames", PortStorm: "continuous_roce_pause_events", PortRxDiscards: "rx_stat_discard", PortRxGlobalPause: "rx_pause_frames", PortTxGlobalPause: "tx_pause_frames"},
		"ice":       {PortRxGlobalPause: "link_xoff_rx.nic", PortTxGlobalXON: "link_xon_tx.nic", PortRxDiscards: "rx_dropped.nic"},
		"ionic":     {PortRxGlobalPause: "frames_rx_pause", PortTxPFCFrames: "frames_tx_pripause", PortRxGlobalPauseDuration: "rx_pause_1us_count"},
	} {
		n := Normalize(drv, loadEthtool(t, drv).Stats)
		for c, name := range want {
			if n.Port[c].Counter != name {
				t.Errorf("%s %s from %q, want %q", drv, c, n.Port[c].Counter, name)
			}
		}
	}
	// A driver without tables (veth) has nothing normalized; the tables
	// of one driver do not apply to another's names.
	if n := Normalize("veth", map[string]uint64{"peer_ifindex": 4, "rx_prio3_pause": 1}); n.HasPrio() || n.Port != nil {
		t.Errorf("veth normalized to %+v", n)
	}
}

type rdmaNames map[string]struct {
	Source string   `json:"source"`
	Names  []string `json:"names"`
}

func loadRDMANames(t *testing.T) rdmaNames {
	b, err := os.ReadFile("testdata/rdma-names.json")
	if err != nil {
		t.Fatal(err)
	}
	var m rdmaNames
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Every name the meaning tables know is a name the driver has (the
// fixtures are the drivers' source lists), except those the table marks
// as from another kernel.
func TestRDMATablesAgainstSource(t *testing.T) {
	fx := loadRDMANames(t)
	have := map[string]map[string]bool{}
	for k, v := range fx {
		drv, _, _ := strings.Cut(k, "-")
		if have[drv] == nil {
			have[drv] = map[string]bool{}
		}
		for _, n := range v.Names {
			have[drv][n] = true
		}
	}
	for _, drv := range []string{"mlx5", "rxe", "bnxt_re", "irdma"} {
		for _, k := range RDMA(drv) {
			if !have[drv][k.Name] && !strings.Contains(k.Kernels, "mainline") {
				t.Errorf("%s: %s (%s) is in no fixture of the driver's names", drv, k.Name, k.Meaning)
			}
		}
	}
}

// rxe's names per kernel: both versions have packets, 7.x adds bytes;
// on 6.1 the byte meanings are absent, not zero.
func TestRXEKernels(t *testing.T) {
	fx := loadRDMANames(t)
	meanings := func(key string) map[Meaning]string {
		m := map[Meaning]string{}
		for _, n := range fx[key].Names {
			if mn := MeaningOf("rxe", n); mn != "" {
				m[mn] = n
			}
		}
		return m
	}
	m61, m7, old := meanings("rxe-6.1"), meanings("rxe-7"), meanings("rxe-old")
	for _, mn := range []Meaning{TxPackets, RxPackets, OutOfSequence, DuplicateRequest, SeqErrNAKReceived, Retransmissions, RetryExceeded, RNRNAKReceived} {
		if m61[mn] == "" || m7[mn] == "" || old[mn] == "" {
			t.Errorf("%s: 6.1 %q, 7.x %q, 4.14 %q: want a counter in every kernel", mn, m61[mn], m7[mn], old[mn])
		}
	}
	if m61[TxBytes] != "" || m61[RxBytes] != "" {
		t.Errorf("6.1 has byte counters %q %q", m61[TxBytes], m61[RxBytes])
	}
	if m7[TxBytes] != "sent_bytes" || m7[RxBytes] != "rcvd_bytes" {
		t.Errorf("7.x bytes from %q %q", m7[TxBytes], m7[RxBytes])
	}
	if old[OutOfSequence] != "out_of_sequence" || m61[OutOfSequence] != "out_of_seq_request" {
		t.Errorf("out of sequence: 4.14 %q, 6.1 %q", old[OutOfSequence], m61[OutOfSequence])
	}
	// Analyze of a 6.1 sample: a counter the driver lacks is absent.
	s := &Sample{RDMA: []RDMAPort{{Device: "rxe0", Port: 1, Source: SourceSysfs, HWCounters: map[string]uint64{}}}}
	for _, n := range fx["rxe-6.1"].Names {
		s.RDMA[0].HWCounters[n] = 1
	}
	r := Analyze(Input{Cur: s, Ports: []PortInfo{{Device: "rxe0", Port: 1, Driver: "rxe"}}})
	if _, ok := r.Ports[0].Counters["sent_bytes"]; ok || len(r.Ports[0].Counters) != 15 {
		t.Errorf("6.1 report has %d counters (sent_bytes present: %v)", len(r.Ports[0].Counters), ok)
	}
	if mn := r.Ports[0].Counters["out_of_seq_request"].Meaning; mn == nil || *mn != "out_of_sequence" {
		t.Errorf("out_of_seq_request meaning %v", mn)
	}
	if r.Ports[0].Counters["ack_deferred"].Meaning != nil {
		t.Error("ack_deferred has a meaning")
	}
}

// mlx5's switchdev names (vport_ prefix) mean what the plain ones do.
func TestMeaningOfVport(t *testing.T) {
	if MeaningOf("mlx5", "vport_out_of_sequence") != OutOfSequence || MeaningOf("rxe", "vport_out_of_sequence") != "" || MeaningOf("nope", "x") != "" {
		t.Error("vport_ prefix")
	}
}

func TestPrioJSONHasEveryCounter(t *testing.T) {
	b, err := json.Marshal(PrioReport{Netdev: "x", Values: map[PrioCounter]*PrioValue{}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, c := range PrioCounters {
		v, ok := m[string(c)]
		if !ok || v != nil {
			t.Errorf("key %s: %v present %v, want null", c, v, ok)
		}
	}
	for _, k := range []string{"netns", "netdev", "prio", "pfc_enabled", "roce", "pfc_requests", "pfc_indications"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no key %s", k)
		}
	}
}

func TestRates(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	prev := &Sample{Time: t0, RDMA: []RDMAPort{{Device: "rxe0", Port: 1, Source: SourceSysfs, HWCounters: map[string]uint64{"sent_pkts": 100, "rcvd_pkts": 50, "send_err": 9}}}}
	cur := &Sample{Time: t0.Add(2 * time.Second), RDMA: []RDMAPort{{Device: "rxe0", Port: 1, Source: SourceSysfs, HWCounters: map[string]uint64{"sent_pkts": 300, "rcvd_pkts": 50, "send_err": 2, "link_downed": 1}}}}
	r := Analyze(Input{Prev: prev, Cur: cur, Ports: []PortInfo{{Device: "rxe0", Port: 1, Driver: "rxe"}}})
	if r.Interval == nil || *r.Interval != 2 {
		t.Fatalf("interval %v", r.Interval)
	}
	c := r.Ports[0].Counters
	if c["sent_pkts"].Rate == nil || *c["sent_pkts"].Rate != 100 || *c["rcvd_pkts"].Rate != 0 {
		t.Errorf("rates %v %v", c["sent_pkts"].Rate, c["rcvd_pkts"].Rate)
	}
	if c["send_err"].Rate != nil || c["link_downed"].Rate != nil {
		t.Errorf("a counter that went back or is new has a rate: %v %v", c["send_err"].Rate, c["link_downed"].Rate)
	}
	if len(r.Findings) != 1 || r.Findings[0].Code != CodeCounterReset || !strings.Contains(r.Findings[0].Message, "rxe0 port 1 send_err") {
		t.Errorf("findings %+v", r.Findings)
	}
}

// rxe's PMA answers (Linux 7.x rxe_mad.c) fill four counters; the lab's
// 7.3.4 listing of counters/ after an RC exchange of 25 packets each way
// had exactly those four non-zero (port_xmit_packets 25, port_xmit_data
// 5400) and the 17 others at 0. Drivers without a list keep every name.
func TestPMACounted(t *testing.T) {
	for _, n := range []string{"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"} {
		if !PMACounted("rxe", n) {
			t.Errorf("rxe %s: not counted", n)
		}
	}
	for _, n := range []string{"link_downed", "symbol_error", "port_xmit_wait", "unicast_xmit_packets", "multicast_rcv_packets", "VL15_dropped"} {
		if PMACounted("rxe", n) {
			t.Errorf("rxe %s: counted, but rxe_mad.c never fills it (or, for link_downed, copies hw_counters' under the same name)", n)
		}
	}
	for _, d := range []string{"mlx5", "bnxt_re", "", "nosuchdriver"} {
		if !PMACounted(d, "port_xmit_wait") || !PMACounted(d, "unicast_xmit_packets") {
			t.Errorf("%q: a PMA counter left out of a driver without a list", d)
		}
	}
}
