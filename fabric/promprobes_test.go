package fabric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/internal/bound"
)

// faultsPrometheus serves testdata/faults.prom (now) and
// faults-before.prom (5 minutes earlier): 12 agents under leaf-a, leaf-b
// and leaf-c, NIC 10.0.1.2 (a2) dead and leaf-c losing 2 % of the probes
// between its NICs (testdata/README.md).
func faultsPrometheus(t *testing.T) string {
	t.Helper()
	srv, err := fabrictest.Prometheus([]fabrictest.Target{{Metrics: readProm(t, "faults"), Before: readProm(t, "faults-before")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv.URL
}

// From Prometheus, the injected faults are localised as --agents
// localises them: the dead NIC by its address under its ToR, with every
// peer it lost probes with (its 3 ToR-mates, the 4 NICs of other ToRs
// that probed it in the agents' last two rounds and the 2 more it probed
// itself), and leaf-c by the loss among its 4 NICs (all 12 directed
// pairs); nothing else — the inter-ToR losses are all the dead NIC's. The
// HTML report shows both, and the matrix cells the faults lost in.
func TestPrometheusSuspects(t *testing.T) {
	url := faultsPrometheus(t)
	o := PrometheusOptions{HostLabel: "node"}
	hosts, err := ReadPrometheus(context.Background(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 12 {
		t.Fatalf("%d hosts, want 12", len(hosts))
	}
	in, ok, err := ReadPrometheusProbes(context.Background(), url, hosts, o)
	if err != nil || !ok {
		t.Fatalf("ok %v, %v", ok, err)
	}
	// Each ToR's NICs: 4 (testdata/README.md), from the agents'
	// roce_probe_topology_info.
	if want := map[string]int{"leaf-a": 4, "leaf-b": 4, "leaf-c": 4}; !reflect.DeepEqual(in.ToRNICs, want) {
		t.Errorf("ToRNICs %v, want %v", in.ToRNICs, want)
	}
	got := Localize(in)
	want := []Suspect{
		{Kind: SuspectNIC, NIC: "10.0.1.2", ToR: "leaf-a", Pairs: 9,
			Evidence: "its probes failed in every direction: with 9 peers, 3 of them ToR-mates, while its ToR-mates lost nothing among themselves"},
		{Kind: SuspectToR, ToR: "leaf-c", Pairs: 12,
			Evidence: "ToR-mesh loss: 12 pairs of 4 of its NICs lost probes between ToR-mates, no NIC to blame"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("suspects:\n%+v\nwant\n%+v", got, want)
	}
	for _, h := range hosts {
		if len(h.Notes) > 0 {
			t.Errorf("%s: notes %q", h.Name, h.Notes)
		}
	}
	// Pairs: a mate of the dead NIC lost each of its 300 probes of the
	// window; one that probed it from leaf-b lost the 30 of a round.
	find := func(src, dst string) *PairObservation {
		for i := range in.Pairs {
			if in.Pairs[i].Src == src && in.Pairs[i].Dst == dst {
				return &in.Pairs[i]
			}
		}
		return nil
	}
	if p := find("10.0.1.1", "10.0.1.2"); p == nil || p.Lost != 300 || p.Sent != 300 || p.SrcToR != "leaf-a" || p.DstToR != "leaf-a" {
		t.Errorf("a1 → a2: %+v", p)
	}
	if p := find("10.0.2.1", "10.0.1.2"); p == nil || p.Lost != 30 || p.Sent != 30 || p.DstToR != "leaf-a" {
		t.Errorf("b1 → a2: %+v", p)
	}
	if p := find("10.0.3.1", "10.0.3.2"); p == nil || p.Lost != 6 || p.Sent != 300 {
		t.Errorf("c1 → c2: %+v", p)
	}

	r, err := Analyze(hosts, SourcePrometheus)
	if err != nil {
		t.Fatal(err)
	}
	r.Suspects, r.Localized = got, true
	var b bytes.Buffer
	if err := WriteHTML(&b, HTMLInput{Report: r, Hosts: hosts, Pairs: in.Pairs, Suspects: got}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// Each agent sends 300 probes a window to each of its 3 mates and to
	// each other ToR: a ToR's cell to itself is 4 · 3 · 300 = 3600 probes,
	// to another ToR 4 · 300 = 1200.
	for _, s := range []string{
		`<td class="name">10.0.1.2</td>`, `<td class="name">leaf-c</td>`,
		`title="leaf-a → leaf-a: 3600 sent, 1800 lost, 0 remarked"`, // a2 both ways with its 3 mates
		`title="leaf-b → leaf-a: 1200 sent, 60 lost, 0 remarked"`,   // b1 and b2 probed a2 a round each
		`title="leaf-a → leaf-c: 1200 sent, 60 lost, 0 remarked"`,   // a2 probed c2 and c3
		`title="leaf-c → leaf-c: 3600 sent, 72 lost, 0 remarked"`,   // 12 pairs, 6 each
		`title="leaf-b → leaf-c: 1200 sent, 0 lost, 0 remarked"`,
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the HTML report has no %s", s)
		}
	}
}

// A ToR of 2 NICs (the lab's leaf-spine): testdata/faults.prom without
// a3 and a4 (their agents' series and every series naming their
// addresses) leaves leaf-a with a1 and the dead a2. roce_probe_topology_info
// says leaf-a has 2 NICs, so a2's one ToR-mate losing with it is all the
// nic rule can ask for: a2 is named, with its 7 peers (a1, the 4 NICs of
// other ToRs that probed it and the 2 more it probed), beside leaf-c's
// mesh loss.
func TestPrometheusSuspectsToROfTwo(t *testing.T) {
	drop := func(prom string) string {
		var keep []string
		for _, l := range strings.Split(prom, "\n") {
			gone := false
			for _, x := range []string{`node="a3"`, `node="a4"`, `address="10.0.1.3"`, `address="10.0.1.4"`} {
				gone = gone || strings.Contains(l, x)
			}
			if !gone {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	srv, err := fabrictest.Prometheus([]fabrictest.Target{{Metrics: drop(readProm(t, "faults")), Before: drop(readProm(t, "faults-before"))}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	o := PrometheusOptions{HostLabel: "node"}
	hosts, err := ReadPrometheus(context.Background(), srv.URL, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(hosts) != 10 {
		t.Fatalf("%d hosts, want 10", len(hosts))
	}
	in, ok, err := ReadPrometheusProbes(context.Background(), srv.URL, hosts, o)
	if err != nil || !ok {
		t.Fatalf("ok %v, %v", ok, err)
	}
	if want := map[string]int{"leaf-a": 2, "leaf-b": 4, "leaf-c": 4}; !reflect.DeepEqual(in.ToRNICs, want) {
		t.Errorf("ToRNICs %v, want %v", in.ToRNICs, want)
	}
	got := names(Localize(in))
	if want := "nic nic=10.0.1.2 tor=leaf-a spine=; tor nic= tor=leaf-c spine="; got != want {
		t.Errorf("suspects %q, want %q", got, want)
	}
	for _, s := range Localize(in) {
		if s.Kind == SuspectNIC && s.Pairs != 7 {
			t.Errorf("%s: %d pairs, want 7 peers: %s", s.NIC, s.Pairs, s.Evidence)
		}
	}
	// Without the ToR sizes (--prometheus before it read them) the rule
	// asks for 2 lossy ToR-mates, a2 has 1: it is not named, and its
	// losses with the other ToRs, untraced, pass for one of leaf-a's
	// uplinks — the wrong suspect the sizes avoid.
	in.ToRNICs = nil
	if got := names(Localize(in)); got != "link nic= tor=leaf-a spine=; tor nic= tor=leaf-c spine=" {
		t.Errorf("without ToRNICs: suspects %q", got)
	}
}

// The queries ask for the window given, in seconds, and name hosts by the
// label given.
func TestProbeQueries(t *testing.T) {
	q := ProbeQueries("node", 90*time.Second)
	if q["MateSent"] != "sum by (node, flow) (increase(roce_probe_probes_sent_total[90s]))" ||
		q["MateLost"] != "increase(roce_probe_probes_lost_total[90s]) > 0" ||
		q["WorstLost"] != `roce_probe_worst_pair_lost_probes{scope!="tor"}` {
		t.Errorf("%q", q)
	}
}

// Agents without the address label (older) and flows without a source:
// left out with a note on their host, never a wrong pair.
func TestObservationsFromMetricsNotes(t *testing.T) {
	m := ProbeMetrics{
		GIDInfo:    []Sample{{Labels: sampleLabels("node", "h1", "device", "mlx5_0", "port", "1", "index", "3", "gid", "::ffff:10.0.0.1"), Value: 1}},
		FlowSource: []Sample{{Labels: sampleLabels("node", "h1", "flow", "rdma", "device", "mlx5_0", "port", "1", "index", "3", "netdev", "eth0"), Value: 1}},
		MateLost: []Sample{
			{Labels: sampleLabels("node", "h1", "flow", "rdma", "peer", "h2"), Value: 10},                        // no address label
			{Labels: sampleLabels("node", "h2", "flow", "rdma", "peer", "h1", "address", "10.0.0.1"), Value: 10}, // h2 has no flow source
		},
	}
	in, notes := ObservationsFromMetrics(m, "node")
	if len(in.Pairs) != 0 {
		t.Errorf("pairs %+v, want none", in.Pairs)
	}
	if len(notes["h1"]) != 1 || !strings.Contains(notes["h1"][0], "without an address label") ||
		len(notes["h2"]) != 1 || !strings.Contains(notes["h2"][0], "no roce_probe_flow_source_info") {
		t.Errorf("notes %q", notes)
	}
}

// One fleet, two sources, one decision: 12 agents under leaf-a, leaf-b
// and leaf-c (NIC i 10.0.0.(1+i), 4 a ToR), each probing its 3 ToR-mates
// (100 probes) and the 8 NICs of the other ToRs (20 each), with faults
// injected — NIC 1 dead, leaf-b's mesh losing 6 in 100, leaf-c's uplinks
// 3 in 20, leaf-b's uplinks remarking DSCP, agent 9 busy (its rate
// scale 0.5) and losing 2 in 100 with its mates — written as the agents'
// pair detail (/pairs) and as the series Prometheus holds of the same
// agents. Both give Localize the same suspects; the remark's pair count
// differs, by design: /pairs has a pair per NIC, the series a group per
// peer ToR.
func TestPrometheusEqualsAgentsSuspects(t *testing.T) {
	const n = 12
	tor := func(i int) string { return []string{"leaf-a", "leaf-b", "leaf-c"}[i/4] }
	addr := func(i int) string { return fmt.Sprintf("10.0.0.%d", 1+i) }
	lost := func(i, j int, probes uint64) uint64 {
		switch {
		case i == 1 || j == 1:
			return probes
		case tor(i) == tor(j) && tor(i) == "leaf-b":
			return 6
		case tor(i) != tor(j) && (tor(i) == "leaf-c" || tor(j) == "leaf-c"):
			return 3
		case i == 9 && tor(j) == "leaf-c":
			return 2
		}
		return 0
	}
	remarked := func(i, j int) bool {
		return tor(i) != tor(j) && (tor(i) == "leaf-b" || tor(j) == "leaf-b") && lost(i, j, 20) < 20
	}
	var hosts []Host
	var pairs []AgentPairs
	var m ProbeMetrics
	for i := 0; i < n; i++ {
		h := fmt.Sprintf("node-%d", i)
		hosts = append(hosts, Host{Name: h, Attachments: []Attachment{{Network: "10.0.0.0/16", Addr: netip.MustParseAddr(addr(i)), Switch: tor(i)}}})
		ap := AgentPairs{Scale: 1}
		scale := 1.0
		if i == 9 {
			ap.Scale, scale = 0.5, 0.5
		}
		m.GIDInfo = append(m.GIDInfo, Sample{Labels: sampleLabels("node", h, "device", "mlx5_0", "port", "1", "index", "3", "gid", "::ffff:"+addr(i))})
		m.FlowSource = append(m.FlowSource, Sample{Labels: sampleLabels("node", h, "flow", "rdma", "device", "mlx5_0", "port", "1", "index", "3", "netdev", "eth0")})
		m.Topology = append(m.Topology, Sample{Labels: sampleLabels("node", h, "netdev", "eth0", "switch", tor(i))})
		m.Scale = append(m.Scale, Sample{Labels: sampleLabels("node", h), Value: scale})
		mateSent := 0.0
		torSent := map[string]float64{}
		torRemarked := map[string]float64{}
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			probes, scope := uint64(20), "inter_tor"
			if tor(i) == tor(j) {
				probes, scope = 100, "tor"
			}
			lo := lost(i, j, probes)
			p := AgentPair{Peer: fmt.Sprintf("node-%d", j), Address: addr(j), Flow: "rdma", Scope: scope, Probes: probes, Answered: probes - lo, Lost: lo}
			if lo < probes {
				p.Sent, p.Received = &PairMarkings{DSCP: 26}, &PairMarkings{DSCP: 26}
				if remarked(i, j) {
					p.Received.DSCP = 0
				}
			}
			ap.Pairs = append(ap.Pairs, p)
			peer := sampleLabels("node", h, "flow", "rdma", "peer", p.Peer, "address", addr(j), "scope", scope, "peer_tor", tor(j))
			if scope == "tor" {
				mateSent += float64(probes)
				if lo > 0 {
					m.MateLost = append(m.MateLost, Sample{Labels: peer, Value: float64(lo)})
					m.MateLossySent = append(m.MateLossySent, Sample{Labels: peer, Value: float64(probes)})
				}
				continue
			}
			torSent[tor(j)] += float64(probes)
			if remarked(i, j) {
				torRemarked[tor(j)] += float64(probes - lo)
			}
			if lo > 0 { // 8 NICs of other ToRs: all fit in the 10 worst pairs
				m.WorstLoss = append(m.WorstLoss, Sample{Labels: peer, Value: float64(lo) / float64(probes)})
				m.WorstLost = append(m.WorstLost, Sample{Labels: peer, Value: float64(lo)})
			}
		}
		pairs = append(pairs, ap)
		m.MateSent = append(m.MateSent, Sample{Labels: sampleLabels("node", h, "flow", "rdma"), Value: mateSent})
		for t, v := range torSent {
			m.ToRSent = append(m.ToRSent, Sample{Labels: sampleLabels("node", h, "flow", "rdma", "scope", "inter_tor", "peer_tor", t), Value: v})
		}
		for t, v := range torRemarked {
			m.ToRRemarked = append(m.ToRRemarked, Sample{Labels: sampleLabels("node", h, "flow", "rdma", "scope", "inter_tor", "peer_tor", t, "field", "dscp", "event", "remarked"), Value: v})
		}
	}
	agentsIn := AgentObservations(hosts, pairs)
	fromAgents := Localize(agentsIn)
	in, notes := ObservationsFromMetrics(m, "node")
	// The matrix's probes sent and lost, ToR by ToR, are the same too.
	cells := func(in LocalizeInput) map[[2]string][2]uint64 {
		c := map[[2]string][2]uint64{}
		for _, p := range in.Pairs {
			k := [2]string{p.SrcToR, p.DstToR}
			c[k] = [2]uint64{c[k][0] + p.Sent, c[k][1] + p.Lost}
		}
		return c
	}
	if a, p := cells(agentsIn), cells(in); !reflect.DeepEqual(a, p) {
		t.Errorf("ToR × ToR (sent, lost)\nfrom /pairs:     %v\nfrom Prometheus: %v", a, p)
	}
	if want := map[string]int{"leaf-a": 4, "leaf-b": 4, "leaf-c": 4}; !reflect.DeepEqual(agentsIn.ToRNICs, want) || !reflect.DeepEqual(in.ToRNICs, want) {
		t.Errorf("ToRNICs from /pairs %v, from Prometheus %v, want %v", agentsIn.ToRNICs, in.ToRNICs, want)
	}
	fromProm := Localize(in)
	if len(notes) > 0 {
		t.Errorf("notes %q", notes)
	}
	names := func(ss []Suspect) []string {
		var out []string
		for _, s := range ss {
			p := fmt.Sprint(s.Pairs)
			if s.Kind == SuspectRemark {
				p = "-"
			}
			out = append(out, fmt.Sprintf("%s nic=%s tor=%s spine=%s pairs=%s", s.Kind, s.NIC, s.ToR, s.Spine, p))
		}
		return out
	}
	want := []string{
		// Its 3 mates and the 8 NICs of other ToRs; its pairs are set
		// aside before the rest is judged.
		"host_noise nic=10.0.0.10 tor= spine= pairs=11",
		// Leaf-c's NICs but the busy one (3) with the other ToRs' but the
		// dead one (7), both ways.
		"link nic= tor=leaf-c spine= pairs=42",
		// Its 11 peers but the busy one.
		"nic nic=10.0.0.2 tor=leaf-a spine= pairs=10",
		"remark nic= tor=leaf-b spine= pairs=-",
		"tor nic= tor=leaf-b spine= pairs=12",
	}
	if a, p := names(fromAgents), names(fromProm); !reflect.DeepEqual(a, want) || !reflect.DeepEqual(p, want) {
		t.Errorf("suspects\nfrom /pairs:\n%s\nfrom Prometheus:\n%s\nwant:\n%s", strings.Join(a, "\n"), strings.Join(p, "\n"), strings.Join(want, "\n"))
	}
}

// The probes sent to other ToRs are the one query whose answer grows with
// F · T series per agent: over the answer limit, the report goes on
// without them (the matrix's healthy cells between ToRs), and the suspects
// are the same; any other query over it is an error.
func TestPrometheusProbesTooLarge(t *testing.T) {
	fake := faultsPrometheus(t)
	big := func(what string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.FormValue("query"), what) {
				w.Write(bytes.Repeat([]byte(" "), 2<<20)) // over MaxBytes below
				return
			}
			http.Redirect(w, r, fake+r.URL.RequestURI(), http.StatusTemporaryRedirect)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	o := PrometheusOptions{HostLabel: "node", MaxBytes: 1 << 20}
	url := big(MetricToRProbesSent)
	hosts, err := ReadPrometheus(context.Background(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	in, ok, err := ReadPrometheusProbes(context.Background(), url, hosts, o)
	if err != nil || !ok {
		t.Fatalf("ok %v, %v", ok, err)
	}
	got := Localize(in)
	if len(got) != 2 || got[0].NIC != "10.0.1.2" || got[1].ToR != "leaf-c" {
		t.Errorf("suspects %+v, want the NIC 10.0.1.2 and the ToR leaf-c", got)
	}
	for _, p := range in.Pairs {
		if strings.HasPrefix(p.Dst, "(NICs of") {
			t.Errorf("%+v: a ToR group without its query", p)
		}
	}
	if _, _, err := ReadPrometheusProbes(context.Background(), big(MetricWorstPairLost), hosts, o); !errors.Is(err, bound.ErrTooLarge) {
		t.Errorf("worst pairs over the limit: %v, want an error wrapping bound.ErrTooLarge", err)
	}
}

// The leaf-spine lab's faults (2 ToRs of 2 NICs, internal/agent's
// TestLabAgentLeafSpine) as the agents' /pairs give them and as their
// series give them: spine1's port toward leaf2 drops RoCE (leaf1's
// probes to leaf2 lose the ports through spine1, 3 and 2 of them traced
// there; leaf2's lose replies, their ports' traces crossing spine1 or
// spine2), then remarks DSCP 26 → 0 (leaf1's ports through spine1 arrive
// remarked; the traces saw it change between spine1, 10.31.11.2 at TTL
// 2, and leaf2, 10.31.21.1 at TTL 3). From Prometheus, Localize names
// what it names from /pairs: spine1, then the hop between spine1 and
// leaf2.
func TestPrometheusTracedEqualsAgents(t *testing.T) {
	nics := []struct{ name, addr, tor string }{
		{"h5", "10.30.5.2", "leaf1"}, {"h6", "10.30.6.2", "leaf1"}, {"h7", "10.30.7.2", "leaf2"}, {"h8", "10.30.8.2", "leaf2"},
	}
	// fault is one traced faulty port of a pair (from, to: indexes).
	type fault struct {
		from, to       int
		sport          uint16
		lost, remarked uint64
		spine          string
		remark         bool
	}
	sp1, sp2 := "spine1", "spine2"
	before, at := "10.31.11.2", "10.31.21.1"
	for _, c := range []struct {
		name   string
		faults []fault
		want   []string
	}{
		{"lossy spine1", []fault{
			{0, 3, 50001, 1, 0, sp1, false}, {0, 3, 50002, 1, 0, sp1, false}, {0, 3, 50003, 1, 0, sp1, false},
			{1, 3, 50004, 1, 0, sp1, false}, {1, 3, 50005, 1, 0, sp1, false},
			{2, 0, 50006, 1, 0, sp1, false}, {3, 1, 50007, 1, 0, sp2, false},
		}, []string{"spine tor= spine=spine1"}},
		{"remarking spine1", []fault{
			{0, 2, 50011, 0, 1, sp1, true}, {0, 2, 50012, 0, 1, sp1, true}, {1, 3, 50013, 0, 1, sp1, true}, {1, 3, 50014, 0, 1, sp1, false},
		}, []string{"remark tor=leaf2 spine=spine1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var hosts []Host
			var pairs []AgentPairs
			var m ProbeMetrics
			for i, h := range nics {
				hosts = append(hosts, Host{Name: h.name, Attachments: []Attachment{{Network: "10.30.0.0/16", Addr: netip.MustParseAddr(h.addr), Switch: h.tor}}})
				tor := h.tor
				ap := AgentPairs{Scale: 1, Addresses: []string{h.addr}, ToR: &tor}
				m.GIDInfo = append(m.GIDInfo, Sample{Labels: sampleLabels("node", h.name, "device", "rxe0", "port", "1", "index", "1", "gid", "::ffff:"+h.addr)})
				m.FlowSource = append(m.FlowSource, Sample{Labels: sampleLabels("node", h.name, "flow", "v4", "device", "rxe0", "port", "1", "index", "1", "netdev", "eth0")})
				m.Topology = append(m.Topology, Sample{Labels: sampleLabels("node", h.name, "netdev", "eth0", "switch", h.tor)})
				m.Scale = append(m.Scale, Sample{Labels: sampleLabels("node", h.name), Value: 1})
				mateSent := 0.0
				for j, o := range nics {
					if j == i {
						continue
					}
					scope, probes := "tor", uint64(20)
					if o.tor != h.tor {
						scope = "inter_tor"
					}
					p := AgentPair{Peer: o.name, Address: o.addr, Flow: "v4", Scope: scope, Probes: probes, SportFaults: []AgentSportFault{}}
					type sk struct{ spine, event string }
					sports := map[sk]float64{}
					type rk struct{ spine string }
					remarks := map[rk]float64{}
					for _, f := range c.faults {
						if f.from != i || f.to != j {
							continue
						}
						spine := f.spine
						sf := AgentSportFault{Sport: f.sport, Lost: f.lost, Remarked: f.remarked, Spine: &spine}
						if f.remark {
							b, a := before, at
							sf.Remark = &PairChange{Field: "dscp", From: 26, To: 0, BeforeAddress: &b, AtAddress: &a, BeforeTTL: 2, AtTTL: 3}
							remarks[rk{spine}]++
						}
						p.SportFaults = append(p.SportFaults, sf)
						p.Lost += f.lost
						if f.lost > 0 {
							sports[sk{spine, "lost"}]++
						}
						if f.remarked > 0 {
							sports[sk{spine, "remarked"}]++
						}
					}
					p.Answered = p.Probes - p.Lost
					remarked := uint64(0)
					for _, f := range p.SportFaults {
						remarked += f.Remarked
					}
					p.Sent, p.Received = &PairMarkings{DSCP: 26}, &PairMarkings{DSCP: 26}
					if remarked > 0 {
						p.Received.DSCP = 0
					}
					ap.Pairs = append(ap.Pairs, p)
					base := []string{"node", h.name, "flow", "v4", "peer", o.name, "address", o.addr, "peer_tor", o.tor}
					if scope == "tor" {
						mateSent += float64(probes)
						continue
					}
					m.ToRSent = append(m.ToRSent, Sample{Labels: sampleLabels("node", h.name, "flow", "v4", "scope", scope, "peer_tor", o.tor), Value: float64(probes)})
					if remarked > 0 {
						m.ToRRemarked = append(m.ToRRemarked, Sample{Labels: sampleLabels("node", h.name, "flow", "v4", "scope", scope, "peer_tor", o.tor, "field", "dscp", "event", "remarked"), Value: float64(remarked)})
					}
					if p.Lost > 0 {
						w := sampleLabels(append(base, "scope", scope)...)
						m.WorstLoss = append(m.WorstLoss, Sample{Labels: w, Value: float64(p.Lost) / float64(probes)})
						m.WorstLost = append(m.WorstLost, Sample{Labels: w, Value: float64(p.Lost)})
					}
					for k, v := range sports {
						m.TracedSports = append(m.TracedSports, Sample{Labels: sampleLabels(append(base, "spine", k.spine, "event", k.event)...), Value: v})
					}
					for k, v := range remarks {
						m.TracedRemarks = append(m.TracedRemarks, Sample{Labels: sampleLabels(append(base, "spine", k.spine, "field", "dscp", "from_value", "26", "to_value", "0",
							"before_address", before, "before_ttl", "2", "at_address", at, "at_ttl", "3")...), Value: v})
					}
				}
				pairs = append(pairs, ap)
				m.MateSent = append(m.MateSent, Sample{Labels: sampleLabels("node", h.name, "flow", "v4"), Value: mateSent})
			}
			fromAgents := Localize(AgentObservations(hosts, pairs))
			in, notes := ObservationsFromMetrics(m, "node")
			fromProm := Localize(in)
			if len(notes) > 0 {
				t.Errorf("notes %q", notes)
			}
			names := func(ss []Suspect) []string {
				var out []string
				for _, s := range ss {
					out = append(out, fmt.Sprintf("%s tor=%s spine=%s", s.Kind, s.ToR, s.Spine))
				}
				return out
			}
			if a, p := names(fromAgents), names(fromProm); !reflect.DeepEqual(a, c.want) || !reflect.DeepEqual(p, c.want) {
				t.Errorf("suspects\nfrom /pairs:     %v\nfrom Prometheus: %v\nwant:            %v", a, p, c.want)
			}
			// The same evidence, ports and probers.
			if len(fromAgents) == len(fromProm) {
				for i := range fromAgents {
					if fromAgents[i].Evidence != fromProm[i].Evidence || fromAgents[i].Pairs != fromProm[i].Pairs {
						t.Errorf("suspect %d:\nfrom /pairs:     %+v\nfrom Prometheus: %+v", i, fromAgents[i], fromProm[i])
					}
				}
			}
		})
	}
}

// sampleLabels makes a sample's label set from name, value pairs.
func sampleLabels(kv ...string) map[string]string {
	m := map[string]string{}
	for k := 0; k < len(kv); k += 2 {
		m[kv[k]] = kv[k+1]
	}
	return m
}

// A traced-port series is outside input: a value no agent can have (it
// keeps at most 8 faulty ports a pair, docs/json.md sport_faults) counts
// as 8 with a note, and a huge one allocates nothing more (it used to
// append one port per unit of the value).
func TestObservationsFromMetricsTracedPortsBounded(t *testing.T) {
	m := ProbeMetrics{
		GIDInfo:    []Sample{{Labels: sampleLabels("node", "h1", "device", "mlx5_0", "port", "1", "index", "3", "gid", "::ffff:10.0.0.1"), Value: 1}},
		FlowSource: []Sample{{Labels: sampleLabels("node", "h1", "flow", "v4", "device", "mlx5_0", "port", "1", "index", "3", "netdev", "eth0"), Value: 1}},
		TracedSports: []Sample{
			{Labels: sampleLabels("node", "h1", "flow", "v4", "peer", "h2", "address", "10.0.0.2", "peer_tor", "leaf2", "spine", "spine1", "event", "lost"), Value: 1e15},
			{Labels: sampleLabels("node", "h1", "flow", "v4", "peer", "h2", "address", "10.0.0.2", "peer_tor", "leaf2", "spine", "spine2", "event", "lost"), Value: 3},
		},
	}
	in, notes := ObservationsFromMetrics(m, "node")
	var sports, lost int
	for _, p := range in.Pairs {
		if p.Dst == "10.0.0.2" {
			sports += len(p.Sports)
			lost += int(p.Lost)
		}
	}
	if sports != 8 || lost != 8 {
		t.Errorf("h1 → 10.0.0.2: %d ports, %d lost; want 8 and 8 (the most an agent keeps a pair)", sports, lost)
	}
	if len(notes["h1"]) != 2 || !strings.Contains(notes["h1"][0], "more than an agent keeps a pair (8): only 8 counted") ||
		!strings.Contains(notes["h1"][1], "only 0 counted") {
		t.Errorf("notes %q, want the two series' ports said to be cut", notes["h1"])
	}
}

// roce_probe_traced_remarks from an agent from before trace.Change.Remark,
// whose trace of a remarked port saw a congested queue's CE mark (ECN
// ECT(0) → CE, RFC 3168) first: the port is remarked and traced through
// its spine, but the CE mark is no remark — no hop is located by it. A
// DSCP change of another port is.
func TestObservationsFromMetricsCEMarkIsNoRemark(t *testing.T) {
	remark := func(field, from, to, bt, at string) Sample {
		return Sample{Labels: sampleLabels("node", "h1", "flow", "v4", "peer", "h2", "address", "10.0.0.2", "peer_tor", "leaf2", "spine", "spine1",
			"field", field, "from_value", from, "to_value", to, "before_address", "10.1.0.1", "before_ttl", bt, "at_address", "10.2.0.1", "at_ttl", at), Value: 1}
	}
	m := ProbeMetrics{
		GIDInfo:       []Sample{{Labels: sampleLabels("node", "h1", "device", "mlx5_0", "port", "1", "index", "3", "gid", "::ffff:10.0.0.1"), Value: 1}},
		FlowSource:    []Sample{{Labels: sampleLabels("node", "h1", "flow", "v4", "device", "mlx5_0", "port", "1", "index", "3", "netdev", "eth0"), Value: 1}},
		TracedRemarks: []Sample{remark("ecn", "2", "3", "1", "2"), remark("dscp", "26", "0", "2", "3")},
	}
	in, _ := ObservationsFromMetrics(m, "node")
	var got []string
	for _, p := range in.Pairs {
		for _, sp := range p.Sports {
			got = append(got, fmt.Sprintf("remarked %d spine %s remark %q ttl %d→%d", sp.Remarked, sp.Spine, sp.Remark, sp.RemarkBeforeTTL, sp.RemarkAtTTL))
		}
	}
	slices.Sort(got)
	want := []string{`remarked 1 spine spine1 remark "" ttl 0→0`, `remarked 1 spine spine1 remark "dscp 26→0 between 10.1.0.1 and 10.2.0.1" ttl 2→3`}
	if !slices.Equal(got, want) {
		t.Errorf("ports %q, want %q", got, want)
	}
}
