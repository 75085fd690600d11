package validate

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
)

// evalFleet is a synthetic fleet for evaluating the dashboards' queries:
// four agents under two ToRs, every metric docs/metrics.md lists with
// every label it lists, counters rising, one host with another GID index.
var evalFleet = []struct{ host, tor string }{{"h1", "leaf-1"}, {"h2", "leaf-1"}, {"h3", "leaf-2"}, {"h4", "leaf-2"}}

// evalValues are the values a label takes in the synthetic series (a few
// where a panel groups by it); labels not here take "v".
var evalValues = map[string][]string{
	"direction": {"rx", "tx"}, "field": {"dscp", "ecn"}, "event": {"remarked", "ce_marked"},
	"meaning": {"cnp_sent", "out_of_sequence"}, "scope": {"tor", "inter_tor"}, "verdict": {"lossless", "lossy"},
	"prio": {"3"}, "type": {"RoCE v2"}, "family": {"ipv4"}, "network": {"10.0.0.0/24"}, "flow": {"f1"},
}

// evalSeries writes promqltest's load lines for the fleet.
func evalSeries(doc *MetricsDoc) string {
	var b strings.Builder
	b.WriteString("load 30s\n")
	names := make([]string, 0, len(doc.Metrics))
	for n := range doc.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, h := range evalFleet {
		for _, name := range names {
			own := doc.Metrics[name]
			if name == "ALERTS_FOR_STATE" {
				continue
			}
			var combos []map[string]string
			combos = append(combos, map[string]string{})
			for _, l := range sortedKeys(own) {
				var vals []string
				switch l {
				case "switch":
					vals = []string{h.tor}
				case "peer":
					for _, o := range evalFleet {
						if o.host != h.host {
							vals = append(vals, o.host)
						}
					}
				case "peer_tor":
					for _, o := range evalFleet {
						if o.tor != h.tor && (len(vals) == 0 || vals[len(vals)-1] != o.tor) {
							vals = append(vals, o.tor)
						}
					}
				case "le":
					vals = []string{"0.0001", "0.001", "+Inf"}
				case "alertname":
					vals = []string{"RoCEProbeRemarked"}
				case "alertstate":
					vals = []string{"firing"}
				default:
					vals = evalValues[l]
					if vals == nil {
						vals = []string{"v"}
					}
				}
				var next []map[string]string
				for _, c := range combos {
					for _, v := range vals {
						n := map[string]string{l: v}
						for k, x := range c {
							n[k] = x
						}
						next = append(next, n)
					}
				}
				combos = next
			}
			for _, c := range combos {
				c["job"], c["instance"], c["node"] = "roce-probe", h.host+":9469", h.host
				var ls []string
				for _, k := range sortedKeys(keySet(c)) {
					ls = append(ls, fmt.Sprintf("%s=%q", k, c[k]))
				}
				val := "1+0x40" // a gauge
				switch {
				case name == "roce_probe_gid_index":
					val = fmt.Sprintf("%d+0x40", 3+2*(i/3)) // h4 has another index
				case strings.HasSuffix(name, "_bucket"):
					val = map[string]string{"0.0001": "0+1x40", "0.001": "0+2x40", "+Inf": "0+3x40"}[c["le"]]
				case strings.Contains(name, "_lost_"):
					val = "0+1x40"
				case doc.Types[name] == "counter" || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count"):
					val = "0+10x40"
				}
				fmt.Fprintf(&b, "  %s{%s} %s\n", name, strings.Join(ls, ", "), val)
			}
		}
	}
	return b.String()
}

func keySet(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// Every panel query evaluates, in Prometheus's own engine, over a synthetic
// fleet that has every documented series: no error (a many-to-many join,
// two series with one label set after a label_replace, a histogram
// without le) and, but for the panels that show only what is wrong on a
// healthy fleet, some data.
func TestDashboardQueriesEvaluate(t *testing.T) {
	doc := metricsDoc(t, nil)
	st := promqltest.LoadedStorage(t, evalSeries(doc))
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, 10_000_000)
	at := time.Unix(0, 0).Add(15 * time.Minute)
	n := 0
	for _, f := range dashboards(t) {
		for _, p := range f.d.AllPanels() {
			for _, tg := range p.Targets {
				x, err := f.d.Expand(tg.Expr)
				if err != nil {
					t.Fatal(err)
				}
				q, err := engine.NewInstantQuery(context.Background(), st, nil, x, at)
				if err != nil {
					t.Errorf("%s %q %s: %v", f.name, p.Title, tg.RefID, err)
					continue
				}
				res := q.Exec(context.Background())
				n++
				if res.Err != nil {
					t.Errorf("%s %q %s: %v\n%s", f.name, p.Title, tg.RefID, res.Err, x)
				} else if empty(res.Value) {
					t.Errorf("%s %q %s: no data from the synthetic fleet\n%s", f.name, p.Title, tg.RefID, x)
				}
				q.Close()
			}
		}
	}
	if n < 30 {
		t.Errorf("%d queries evaluated: want every panel's", n)
	}
	// The engine refuses what Prometheus would: a join of many series to
	// many.
	q, err := engine.NewInstantQuery(context.Background(), st, nil, `roce_probe_probes_sent_total * on (instance) group_left () roce_probe_priority_packets_total`, at)
	if err != nil {
		t.Fatal(err)
	}
	if res := q.Exec(context.Background()); res.Err == nil || !strings.Contains(res.Err.Error(), "many-to-many") {
		t.Errorf("a many-to-many join: %v, want an error", res.Err)
	}
}

func empty(v any) bool {
	switch v := v.(type) {
	case promql.Vector:
		return len(v) == 0
	case promql.Matrix:
		return len(v) == 0
	}
	return false
}
