package fabric

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
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
	if p := find("10.0.1.1", "10.0.1.2"); p == nil || p.Lost != 300 || p.SrcToR != "leaf-a" || p.DstToR != "leaf-a" {
		t.Errorf("a1 → a2: %+v", p)
	}
	if p := find("10.0.2.1", "10.0.1.2"); p == nil || p.Lost != 30 || p.Sent != 30 || p.DstToR != "leaf-a" {
		t.Errorf("b1 → a2: %+v", p)
	}
	if p := find("10.0.3.1", "10.0.3.2"); p == nil || p.Lost != 6 {
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
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	m := ProbeMetrics{
		GIDInfo:    []Sample{{Labels: l("node", "h1", "device", "mlx5_0", "port", "1", "index", "3", "gid", "::ffff:10.0.0.1"), Value: 1}},
		FlowSource: []Sample{{Labels: l("node", "h1", "flow", "rdma", "device", "mlx5_0", "port", "1", "index", "3", "netdev", "eth0"), Value: 1}},
		MateLost: []Sample{
			{Labels: l("node", "h1", "flow", "rdma", "peer", "h2"), Value: 10},                        // no address label
			{Labels: l("node", "h2", "flow", "rdma", "peer", "h1", "address", "10.0.0.1"), Value: 10}, // h2 has no flow source
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
