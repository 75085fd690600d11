package validate

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"

	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/fabric/fabrictest"
)

// fabric --prometheus's queries read only metrics and labels
// docs/metrics.md lists, and Prometheus's own engine answers them over the
// fault fixture (fabric/testdata/faults*.prom: the two expositions 5
// minutes apart, counters rising evenly between) as fabrictest's fake
// Prometheus does, which fabric's and the CLI's tests use — and Localize
// names the same two injected faults from the engine's answers.
func TestFabricProbeQueries(t *testing.T) {
	doc := metricsDoc(t, nil)
	queries := fabric.ProbeQueries("node", fabric.DefaultWindow)
	for f, q := range queries {
		if err := doc.CheckExpr(q); err != nil {
			t.Errorf("%s: %s: %v", f, q, err)
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", "fabric", "testdata", name+".prom"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	now, before := read("faults"), read("faults-before")
	// The engine's storage: a sample a minute from 0 to 5m, from the
	// earlier value to the later (a series only in the later exposition:
	// its one sample at 5m).
	series := func(text string) map[string]fabrictest.Series {
		ss, err := fabrictest.ParseExposition(text)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]fabrictest.Series{}
		for _, s := range ss {
			out[selector(s)] = s
		}
		return out
	}
	was := series(before)
	var load strings.Builder
	load.WriteString("load 1m\n")
	for sel, s := range series(now) {
		var v float64
		fmt.Sscan(s.Value, &v)
		if b, ok := was[sel]; ok {
			var w float64
			fmt.Sscan(b.Value, &w)
			fmt.Fprintf(&load, "  %s %g+%gx5\n", sel, w, (v-w)/5)
		} else {
			fmt.Fprintf(&load, "  %s _x5 %g\n", sel, v)
		}
	}
	st := promqltest.LoadedStorage(t, load.String())
	engine := promqltest.NewTestEngine(t, false, 5*time.Minute, 10_000_000)
	at := time.Unix(0, 0).Add(fabric.DefaultWindow)
	fake, err := fabrictest.Prometheus([]fabrictest.Target{{Metrics: now, Before: before}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()

	var m fabric.ProbeMetrics
	fields := reflect.ValueOf(&m).Elem()
	for f, q := range queries {
		pq, err := engine.NewInstantQuery(context.Background(), st, nil, q, at)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		res := pq.Exec(context.Background())
		if res.Err != nil {
			t.Fatalf("%s: %v", q, res.Err)
		}
		vec, ok := res.Value.(promql.Vector)
		if !ok {
			t.Fatalf("%s: %T, want an instant vector", q, res.Value)
		}
		var got []fabric.Sample
		for _, s := range vec {
			got = append(got, fabric.Sample{Labels: s.Metric.Map(), Value: math.Round(s.F*1e6) / 1e6})
		}
		pq.Close()
		fields.FieldByName(f).Set(reflect.ValueOf(got))
		want, err := fabric.Query(context.Background(), fake.URL, q, fabric.PrometheusOptions{})
		if err != nil {
			t.Fatalf("the fake: %s: %v", q, err)
		}
		if g, w := samples(got), samples(want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: Prometheus's engine:\n%s\nthe fake:\n%s", q, strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
	}
	var kinds []string
	for _, s := range fabric.Localize(fabricObservations(m)) {
		kinds = append(kinds, fmt.Sprintf("%s %s %s %d", s.Kind, s.NIC, s.ToR, s.Pairs))
	}
	if want := []string{"nic 10.0.1.2 leaf-a 9", "tor  leaf-c 12"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("suspects from the engine's answers: %q, want %q", kinds, want)
	}
}

func fabricObservations(m fabric.ProbeMetrics) fabric.LocalizeInput {
	in, _ := fabric.ObservationsFromMetrics(m, "node")
	return in
}

// selector writes a parsed series as promqltest loads it.
func selector(s fabrictest.Series) string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, s.Labels[k])
	}
	return s.Name + "{" + strings.Join(parts, ", ") + "}"
}

// samples writes a vector's series sorted, for comparing.
func samples(ss []fabric.Sample) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		keys := make([]string, 0, len(s.Labels))
		for k := range s.Labels {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%q ", k, s.Labels[k])
		}
		fmt.Fprintf(&b, "%g", s.Value)
		out = append(out, b.String())
	}
	sort.Strings(out)
	return out
}
