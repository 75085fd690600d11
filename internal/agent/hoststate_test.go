package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
)

const hostTestdata = "../../host/testdata/"

// fixtureCollect returns the snapshot fixtures in turn (the last one
// again and again).
type fixtureCollect struct {
	mu    sync.Mutex
	names []string
	n     int
}

func (f *fixtureCollect) collect(collect.Options) (*host.Snapshot, error) {
	f.mu.Lock()
	name := f.names[min(f.n, len(f.names)-1)]
	f.n++
	f.mu.Unlock()
	return host.Load(hostTestdata + name + ".json")
}

func startFixtureAgent(t *testing.T, cfg Config, names ...string) (*testAgent, *fixtureCollect) {
	fc := &fixtureCollect{names: names}
	ta := startAgent(t, cfg, &fakeHost{}, newFakeNet(), func(d *Deps) { d.Collect = fc.collect })
	return ta, fc
}

// The GID metrics of the mlx5 fixture (host/testdata/README.md):
// every used entry, and per (type, family, network) the lowest usable
// index — mv0's 10.100.0.20 (index 9) shares 10.100.0.0/24 with
// enp1s0f0.100's index 5, link-local entries have no index, and port 2
// (enp1s0f1 down, link-local only) none at all.
func TestGIDMetricsMLX5(t *testing.T) {
	cfg := testConfig()
	cfg.Flows = nil
	ta, _ := startFixtureAgent(t, cfg, "mlx5-dscp")
	eventually(t, 5*time.Second, "first read", func() bool { _, ok := value(gather(t, ta.Registry()), metricGIDIndex); return ok })
	f := gather(t, ta.Registry())
	for _, w := range []struct {
		typ, family, network string
		index                float64
	}{
		{"RoCE v2", "ipv4", "192.168.1.0/24", 3}, {"RoCE v1", "ipv4", "192.168.1.0/24", 2},
		{"RoCE v2", "ipv4", "10.100.0.0/24", 5}, {"RoCE v1", "ipv4", "10.100.0.0/24", 4},
		{"RoCE v2", "ipv6", "fd00:100::/64", 11}, {"RoCE v1", "ipv6", "fd00:100::/64", 10},
	} {
		if v, ok := value(f, metricGIDIndex, "device", "mlx5_0", "port", "1", "type", w.typ, "family", w.family, "network", w.network); !ok || v != w.index {
			t.Errorf("gid_index %s %s %s = %v (%v), want %v", w.typ, w.family, w.network, v, ok, w.index)
		}
	}
	if n := len(f[metricGIDIndex].GetMetric()); n != 6 {
		t.Errorf("%d gid_index series, want 6 (no link-local, nothing for port 2)", n)
	}
	if n := len(f[metricGIDInfo].GetMetric()); n != 16 {
		t.Errorf("%d gid_info series, want the 16 used entries", n)
	}
	if _, ok := value(f, metricGIDInfo, "device", "mlx5_0", "port", "1", "index", "5", "gid", "::ffff:10.100.0.10", "type", "RoCE v2",
		"family", "ipv4", "netdev", "enp1s0f0.100", "vlan", "100", "network", "10.100.0.0/24"); !ok {
		t.Error("gid_info of index 5 missing or wrong")
	}
	if _, ok := value(f, metricGIDInfo, "index", "1", "netdev", "enp1s0f0", "vlan", "", "network", "link-local"); !ok {
		t.Error("gid_info of the link-local index 1 missing or wrong")
	}
}

// A table that re-registers an address at another index (rxe-churned:
// 10.0.0.1 went from index 1 to 13, README.md) is a move: counted on the
// port and logged; 10.0.0.5 at 14, an address no netdev has, is stale and
// never the index.
func TestGIDIndexMove(t *testing.T) {
	cfg := testConfig()
	cfg.Flows = nil
	ta, fc := startFixtureAgent(t, cfg, "rxe", "rxe-churned")
	key := []string{"device", "rxe0", "port", "1", "type", "RoCE v2", "family", "ipv4", "network", "10.0.0.0/24"}
	eventually(t, 5*time.Second, "first read", func() bool { v, ok := value(gather(t, ta.Registry()), metricGIDIndex, key...); return ok && v == 1 })
	eventually(t, 5*time.Second, "the churned table read", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricGIDIndex, key...)
		return v == 13
	})
	f := gather(t, ta.Registry())
	if v, _ := value(f, metricGIDIndexChanges, "device", "rxe0", "port", "1"); v != 1 {
		t.Errorf("changes %v, want 1", v)
	}
	if !strings.Contains(ta.logs.String(), `msg="GID index moved" device=rxe0 port=1 type="RoCE v2" family=ipv4 network=10.0.0.0/24 from=1 to=13`) {
		t.Errorf("no move in the log:\n%s", ta.logs.String())
	}
	// Reading the same table again is no move.
	n := fc.n
	eventually(t, 5*time.Second, "another read", func() bool { fc.mu.Lock(); defer fc.mu.Unlock(); return fc.n > n+1 })
	if v, _ := value(gather(t, ta.Registry()), metricGIDIndexChanges, "device", "rxe0", "port", "1"); v != 1 {
		t.Errorf("changes %v after reading the same table again, want 1", v)
	}
}

// A flow's verdict is `roce-probe check`'s: mlx5_0 index 5 with tclass
// 106 and sl 3 on the DSCP-trusting, PFC-on-3 port of mlx5-dscp is
// lossless (cmd/roce-probe TestCheckMLX5Lossless); the select rule for
// enp1s0f0.100 finds index 5; DSCP 48 maps to priority 6, whose PFC is
// off: lossy; DSCP 0 has no APP entry: unknown (as `check` says); a flow
// whose netdev does not exist is unknown, with no warnings series.
func TestFlowVerdict(t *testing.T) {
	cfg := testConfig()
	tc, sl := 106, 3
	cfg.Flows = []FlowConfig{
		{Name: "byindex", Select: SelectConfig{Device: "mlx5_0", GIDIndex: intp(5)}, TClass: &tc, SL: &sl},
		{Name: "byrule", Select: SelectConfig{Netdev: "enp1s0f0.100"}, TClass: &tc, SL: &sl},
		{Name: "lossy", Select: SelectConfig{Netdev: "enp1s0f0.100"}, TClass: intp(194), SL: intp(0)},  // DSCP 48 → priority 6, PFC off
		{Name: "unmapped", Select: SelectConfig{Netdev: "enp1s0f0.100"}, TClass: intp(0), SL: intp(0)}, // DSCP 0: no APP entry
		{Name: "nonetdev", Select: SelectConfig{Netdev: "eth9"}, TClass: &tc, SL: &sl},
	}
	ta, _ := startFixtureAgent(t, cfg, "mlx5-dscp")
	eventually(t, 5*time.Second, "first read", func() bool { _, ok := value(gather(t, ta.Registry()), metricFlowVerdict); return ok })
	f := gather(t, ta.Registry())
	for flow, want := range map[string]string{"byindex": "lossless", "byrule": "lossless", "lossy": "lossy", "unmapped": "unknown", "nonetdev": "unknown"} {
		for _, v := range []string{"lossless", "lossy", "unknown"} {
			got, ok := value(f, metricFlowVerdict, "flow", flow, "verdict", v)
			if wantV := map[bool]float64{true: 1, false: 0}[v == want]; !ok || got != wantV {
				t.Errorf("flow %s verdict %s = %v (%v), want %v", flow, v, got, ok, wantV)
			}
		}
	}
	if v, ok := value(f, metricFlowWarnings, "flow", "byindex"); !ok || v != 0 {
		t.Errorf("byindex warnings %v %v, want 0", v, ok)
	}
	if _, ok := value(f, metricFlowWarnings, "flow", "nonetdev"); ok {
		t.Error("an unresolved flow has a warnings series")
	}
	if _, ok := value(f, metricFlowSource, "flow", "byrule", "device", "mlx5_0", "port", "1", "index", "5", "netdev", "enp1s0f0.100"); !ok {
		t.Error("byrule does not send from mlx5_0 port 1 index 5")
	}
}

// The counters of the mlx5-counters fixture: every RDMA port counter with
// its value and meaning, the per-priority counters the driver has (mlx5
// counts pause frames only on priority 3, where PFC is on) in base units,
// DCB's PFC frames where it has none.
func TestCounterMetrics(t *testing.T) {
	cfg := testConfig()
	cfg.Flows = nil
	ta, _ := startFixtureAgent(t, cfg, "mlx5-counters")
	eventually(t, 5*time.Second, "first read", func() bool { _, ok := value(gather(t, ta.Registry()), metricRDMAStatistic); return ok })
	f := gather(t, ta.Registry())
	var doc struct {
		Counters struct {
			RDMA []struct {
				Device     string            `json:"device"`
				Port       int               `json:"port"`
				HWCounters map[string]uint64 `json:"hw_counters"`
			} `json:"rdma"`
			Ethtool []struct {
				Netdev string            `json:"netdev"`
				Stats  map[string]uint64 `json:"stats"`
			} `json:"ethtool"`
			PFC []struct {
				Netdev      string    `json:"netdev"`
				Indications [8]uint64 `json:"indications"`
			} `json:"pfc"`
		} `json:"counters"`
	}
	b, err := os.ReadFile(hostTestdata + "mlx5-counters.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range doc.Counters.RDMA {
		for name, v := range p.HWCounters {
			got, ok := value(f, metricRDMAStatistic, "device", p.Device, "port", strconv.Itoa(p.Port), "counter", name)
			if !ok || got != float64(v) {
				t.Errorf("%s port %d %s = %v (%v), want %d", p.Device, p.Port, name, got, ok, v)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("the fixture has no RDMA counters")
	}
	// Meanings (docs/counters.md): mlx5's names.
	for name, meaning := range map[string]string{"out_of_sequence": "out_of_sequence", "local_ack_timeout_err": "local_ack_timeout", "rx_write_requests": ""} {
		if _, ok := value(f, metricRDMAStatistic, "device", "mlx5_0", "port", "1", "counter", name, "meaning", meaning); !ok {
			t.Errorf("%s: no series with meaning %q", name, meaning)
		}
	}
	st := doc.Counters.Ethtool[0].Stats
	nd := doc.Counters.Ethtool[0].Netdev
	for _, c := range []struct {
		metric, prio, label, stat string
		scale                     float64
	}{
		{metricPrioPackets, "3", "rx", "rx_prio3_packets", 1}, {metricPrioBytes, "3", "rx", "rx_prio3_bytes", 1},
		{metricPrioPauseFrames, "3", "rx", "rx_prio3_pause", 1},
		{metricPrioPauseSeconds, "3", "rx", "rx_prio3_pause_duration", 1e-6},
		{metricPrioDiscards, "3", "buffer", "rx_prio3_buf_discard", 1},
		{metricPrioDiscards, "3", "congestion", "rx_prio3_cong_discard", 1},
	} {
		want, ok := st[c.stat]
		if !ok {
			t.Fatalf("the fixture has no %s", c.stat)
		}
		lk := "direction"
		if c.metric == metricPrioDiscards {
			lk = "reason"
		}
		if got, ok := value(f, c.metric, "netdev", nd, "prio", c.prio, lk, c.label); !ok || got != float64(want)*c.scale {
			t.Errorf("%s{prio=%s,%s=%s} = %v (%v), want %v", c.metric, c.prio, lk, c.label, got, ok, float64(want)*c.scale)
		}
	}
	// Priority 0 has no mlx5 pause counter: DCB's PFC indications stand in.
	if _, has := st["rx_prio0_pause"]; has {
		t.Fatal("the fixture has rx_prio0_pause")
	}
	if got, ok := value(f, metricPrioPauseFrames, "netdev", nd, "prio", "0", "direction", "rx"); !ok || got != float64(doc.Counters.PFC[0].Indications[0]) {
		t.Errorf("prio 0 rx pause = %v (%v), want DCB's %d", got, ok, doc.Counters.PFC[0].Indications[0])
	}
	if _, ok := value(f, metricPrioPauseSeconds, "netdev", nd, "prio", "0"); ok {
		t.Error("prio 0 has a pause duration the driver does not count")
	}
	// The RoCE priorities (README: PFC on 3 only, DSCP 26 → 3, rdma_cm ToS
	// 106 = DSCP 26, DCQCN on 3 only; DSCP 48 → 6 is the CNPs', not a
	// RoCE priority): priority 3 of enp1s0f0, and only it.
	var roce []string
	for _, m := range f[metricRoCEPriority].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		roce = append(roce, fmt.Sprintf("%s/%s=%v", l["netdev"], l["prio"], m.GetGauge().GetValue()))
	}
	if want := []string{nd + "/3=1"}; !reflect.DeepEqual(roce, want) {
		t.Errorf("%s: %q, want %q", metricRoCEPriority, roce, want)
	}
}

// samples turns a gathered metric family into the samples Prometheus
// would answer an instant query with: the series' labels plus the ones a
// scrape adds.
func samples(f map[string]*dto.MetricFamily, name string, extra map[string]string) []fabric.Sample {
	var out []fabric.Sample
	for _, m := range f[name].GetMetric() {
		l := map[string]string{"__name__": name}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		for k, v := range extra {
			l[k] = v
		}
		out = append(out, fabric.Sample{Labels: l, Value: m.GetGauge().GetValue()})
	}
	return out
}

// One rule for the GID index a workload should use: the agent's
// roce_probe_gid_index (and roce_probe_gid_info's netdev and VLAN), read
// back as `fabric --prometheus` reads them, is what the fabric report
// derives from the same snapshot (`fabric --from`), for every fixture and
// for a host without RDMA devices (the predicted Soft-RoCE tables); and a
// report over the rxe host and its churned table finds the same GID index
// finding from both. Known answers (the fixtures' README): rxe's
// 10.0.0.0/24 is index 1, rxe-churned's 13, mlx5's 10.100.0.0/24 RoCE v2
// 5.
func TestGIDIndexEqualsFabric(t *testing.T) {
	noRDMA := func() (*host.Snapshot, error) {
		s, err := host.Load(hostTestdata + "rxe.json")
		if err == nil {
			s.RDMA = &host.RDMA{}
			s.Hostname = "fixture-no-rdma"
		}
		return s, err
	}
	type fixture struct {
		name string
		load func() (*host.Snapshot, error)
	}
	var fixtures []fixture
	for _, n := range []string{"rxe", "rxe-churned", "mlx5", "mlx5-dscp", "mlx5-pcp", "mlx5-counters", "mlx5-tcoverride"} {
		fixtures = append(fixtures, fixture{n, func() (*host.Snapshot, error) { return host.Load(hostTestdata + n + ".json") }})
	}
	fixtures = append(fixtures, fixture{"no-rdma", noRDMA})
	known := map[string]struct {
		network, typ string
		index        int
	}{
		"rxe": {"10.0.0.0/24", "RoCE v2", 1}, "rxe-churned": {"10.0.0.0/24", "RoCE v2", 13}, "mlx5": {"10.100.0.0/24", "RoCE v2", 5},
	}
	var fromMetrics, fromSnapshots []fabric.Host
	for _, fx := range fixtures {
		cfg := testConfig()
		cfg.Flows = nil
		ta := startAgent(t, cfg, &fakeHost{}, newFakeNet(), func(d *Deps) { d.Collect = func(collect.Options) (*host.Snapshot, error) { return fx.load() } })
		eventually(t, 5*time.Second, fx.name+": first read", func() bool { _, ok := value(gather(t, ta.Registry()), metricGIDIndex); return ok })
		f := gather(t, ta.Registry())
		ta.stop(t)
		s, err := fx.load()
		if err != nil {
			t.Fatal(err)
		}
		scrape := map[string]string{"instance": fx.name + ":9469", "job": "roce-probe", "node": s.Hostname}
		mh, err := fabric.HostsFromMetrics(samples(f, metricGIDIndex, scrape), samples(f, metricGIDInfo, scrape), "node")
		if err != nil {
			t.Fatalf("%s: the agent's metrics: %v", fx.name, err)
		}
		sh, err := fabric.FromSnapshot(s, fx.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(mh) != 1 {
			t.Fatalf("%s: %d hosts from the metrics", fx.name, len(mh))
		}
		got, want := mh[0].Attachments, sh.Attachments
		if len(got) == 0 || len(got) != len(want) {
			t.Fatalf("%s: %d attachments from the agent's metrics, %d from the snapshot", fx.name, len(got), len(want))
		}
		for i := range got {
			g, w := got[i], want[i]
			for _, typ := range []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2} {
				gi, wi := g.Index[typ], w.Index[typ]
				if (gi == nil) != (wi == nil) || (gi != nil && *gi != *wi) {
					t.Errorf("%s %s/%d %s %s: agent index %v, fabric %v", fx.name, w.Device, w.Port, w.Network, typ, ptrText(gi), ptrText(wi))
				}
			}
			if g.Device != w.Device || g.Port != w.Port || g.Network != w.Network || g.Family != w.Family || g.Netdev != w.Netdev ||
				!reflect.DeepEqual(g.VLANs, w.VLANs[:min(1, len(w.VLANs))]) {
				t.Errorf("%s: agent %s/%d %s %s %s %v, fabric %s/%d %s %s %s %v", fx.name, g.Device, g.Port, g.Network, g.Family, g.Netdev, g.VLANs,
					w.Device, w.Port, w.Network, w.Family, w.Netdev, w.VLANs)
			}
			if k, ok := known[fx.name]; ok && w.Network == k.network {
				typ, _ := gid.ParseType(k.typ)
				if p := g.Index[typ]; p == nil || *p != k.index {
					t.Errorf("%s %s %s: index %s, want %d", fx.name, k.network, k.typ, ptrText(p), k.index)
				}
			}
		}
		if fx.name == "rxe" || fx.name == "rxe-churned" {
			fromMetrics = append(fromMetrics, mh[0])
			fromSnapshots = append(fromSnapshots, sh)
		}
	}
	pr, err := fabric.Analyze(fromMetrics, fabric.SourcePrometheus)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := fabric.Analyze(fromSnapshots, fabric.SourceFiles)
	if err != nil {
		t.Fatal(err)
	}
	findings := func(r *fabric.Report) []string {
		var out []string
		for _, f := range r.Findings {
			if f.Check != fabric.CheckGIDIndex {
				continue
			}
			s := f.Network + " " + f.Type.String()
			for _, g := range f.Groups {
				s += " " + g.Text + "=" + fabric.HostList(g.Ports, 10)
			}
			out = append(out, s)
		}
		return out
	}
	want := []string{"10.0.0.0/24 RoCE v2 1=fixture-rxe 13=fixture-rxe-churned"}
	if got := findings(pr); !reflect.DeepEqual(got, want) {
		t.Errorf("from the agents' metrics: %q, want %q", got, want)
	}
	if got := findings(fr); !reflect.DeepEqual(got, want) {
		t.Errorf("from the snapshots: %q, want %q", got, want)
	}
}

func ptrText(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}
