package fabric

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
)

func readProm(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name+".prom"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fakePrometheus scrapes the rxe and rxe-churned agents' metrics.
func fakePrometheus(t testing.TB) *httptest.Server {
	t.Helper()
	srv, err := fabrictest.Prometheus([]fabrictest.Target{
		{Metrics: readProm(t, "rxe"), Labels: map[string]string{"instance": "10.0.0.1:9469", "job": "roce-probe", "node": "fixture-rxe"}},
		{Metrics: readProm(t, "rxe-churned"), Labels: map[string]string{"instance": "10.0.0.2:9469", "job": "roce-probe", "node": "fixture-rxe-churned"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func agent(t testing.TB, fixture string) *httptest.Server {
	t.Helper()
	srv, err := fabrictest.Agent(filepath.Join(hostTestdata, fixture+".json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// summary is what a report says, for comparing two sources: each
// finding's check, network, type and groups (value and hosts).
func summary(r *Report) []string {
	var out []string
	for _, f := range r.Findings {
		s := f.Check + " " + f.Network + " " + f.Type.String() + ":"
		for _, g := range f.Groups {
			s += " " + g.Text + "="
			for _, p := range g.Ports {
				s += p.Host + "/" + p.Device + "/" + p.Netdev + ","
			}
		}
		out = append(out, s)
	}
	return out
}

// The Prometheus source reads the agents' GID metrics back: the same
// usable indexes, netdevs and VLANs as the snapshots, so --prometheus and
// --agents report the same GID index finding, naming the hosts alike
// (hosts named by the node label).
func TestPrometheusEqualsAgents(t *testing.T) {
	prom := fakePrometheus(t)
	ph, err := ReadPrometheus(context.Background(), prom.URL, PrometheusOptions{HostLabel: "node"})
	if err != nil {
		t.Fatal(err)
	}
	pr, err := Analyze(ph, SourcePrometheus)
	if err != nil {
		t.Fatal(err)
	}
	ah, err := ReadAgents(context.Background(), []string{agent(t, "rxe").URL, strings.TrimPrefix(agent(t, "rxe-churned").URL, "http://")}, AgentOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ar, err := Analyze(ah, SourceAgents)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(pr), summary(ar); !reflect.DeepEqual(got, want) || len(got) != 1 {
		t.Errorf("prometheus %q\nagents     %q", got, want)
	}
	if !reflect.DeepEqual(pr.Networks, ar.Networks) {
		t.Errorf("networks: prometheus %+v, agents %+v", pr.Networks, ar.Networks)
	}
	// The facts the metrics carry, per attachment.
	for i := range ph {
		if ph[i].Name != ah[i].Name || len(ph[i].Attachments) != len(ah[i].Attachments) {
			t.Fatalf("host %d: %s %d attachments vs %s %d", i, ph[i].Name, len(ph[i].Attachments), ah[i].Name, len(ah[i].Attachments))
		}
		for j, pa := range ph[i].Attachments {
			aa := ah[i].Attachments[j]
			if pa.Network != aa.Network || pa.Netdev != aa.Netdev || *pa.Index[gid.TypeRoCEv2] != *aa.Index[gid.TypeRoCEv2] ||
				!reflect.DeepEqual(pa.VLANs, aa.VLANs[:min(1, len(aa.VLANs))]) {
				t.Errorf("%s %s: prometheus %+v, snapshot %+v", ph[i].Name, pa.Network, pa, aa)
			}
		}
	}
	// Only the checks metrics carry.
	for _, c := range pr.Checks {
		want := c.Check == CheckGIDIndex || c.Check == CheckRoCEVersion || c.Check == CheckVLAN
		if c.Available != want || (c.Reason == "") != want {
			t.Errorf("prometheus check %+v", c)
		}
	}
	if ph[0].Origin != "10.0.0.1:9469" {
		t.Errorf("origin %q: want the instance", ph[0].Origin)
	}
}

// Hosts are named by the instance label unless told otherwise.
func TestPrometheusHostLabel(t *testing.T) {
	prom := fakePrometheus(t)
	hs, err := ReadPrometheus(context.Background(), prom.URL, PrometheusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Name != "10.0.0.1:9469" || hs[1].Name != "10.0.0.2:9469" {
		t.Errorf("%+v", hs)
	}
	if _, err := ReadPrometheus(context.Background(), prom.URL, PrometheusOptions{HostLabel: "pod"}); err == nil || !strings.Contains(err.Error(), "no pod label to name its host") {
		t.Errorf("missing host label: %v", err)
	}
}

// Bad answers of the Prometheus API are errors that say what is wrong.
func TestDecodeVector(t *testing.T) {
	good := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"roce_probe_gid_index","device":"mlx5_0"},"value":[1700000000.5,"3"]}]}}`
	s, err := DecodeVector(strings.NewReader(good))
	if err != nil || len(s) != 1 || s[0].Value != 3 || s[0].Labels["device"] != "mlx5_0" {
		t.Fatalf("%+v %v", s, err)
	}
	for in, want := range map[string]string{
		``:                     "not a Prometheus API response",
		`[]`:                   "not a Prometheus API response",
		`{}`:                   `no "status"`,
		`{"status":"weird"}`:   `status "weird"`,
		`{"status":"success"}`: `without "data"`,
		`{"status":"error","errorType":"bad_data","error":"parse error at char 3"}`:                      "bad_data: parse error at char 3",
		`{"status":"success","data":{"resultType":"matrix","result":[]}}`:                                `result type "matrix"`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}`:       "value has 1 elements",
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,3]}]}}`:     "value 3 is not a string",
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}`:   `value "x" is not a number`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["t","1"]}]}}`: "time \"t\" is not a number",
		`{"status":"success","data":{"resultType":"vector","result":[7]}}`:                               "result[0]",
	} {
		if _, err := DecodeVector(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	_, err = DecodeVector(strings.NewReader(`{"status":"error","errorType":"timeout","error":"query timed out"}`))
	if !errors.Is(err, ErrPrometheus) {
		t.Errorf("error status: %v does not wrap ErrPrometheus", err)
	}
}

// Series whose labels are out of range, and one port with two indexes for
// one network, are errors naming the series.
func TestHostsFromMetricsBad(t *testing.T) {
	idx := func(labels map[string]string, v float64) Sample {
		l := map[string]string{"__name__": MetricGIDIndex, "instance": "h:9469", "device": "mlx5_0", "port": "1", "type": "RoCE v2", "family": "ipv4", "network": "10.0.0.0/24"}
		for k, x := range labels {
			l[k] = x
		}
		return Sample{Labels: l, Value: v}
	}
	for _, c := range []struct {
		in   []Sample
		want string
	}{
		{[]Sample{idx(map[string]string{"port": "0"}, 3)}, `port "0": want 1..255`},
		{[]Sample{idx(map[string]string{"device": ""}, 3)}, "no device label"},
		{[]Sample{idx(map[string]string{"type": "IB"}, 3)}, `type "IB"`},
		{[]Sample{idx(map[string]string{"family": "inet"}, 3)}, `family "inet"`},
		{[]Sample{idx(map[string]string{"network": ""}, 3)}, "no network label"},
		{[]Sample{idx(nil, 3.5)}, "value 3.5: want a GID index"},
		{[]Sample{idx(nil, -1)}, "value -1"},
		{[]Sample{idx(nil, 3), idx(map[string]string{"job": "other"}, 5)}, "one port with two indexes"},
	} {
		_, err := HostsFromMetrics(c.in, nil, "instance")
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), MetricGIDIndex+"{") {
			t.Errorf("%v: %v, want an InputError naming the series and %q", c.in[len(c.in)-1].Labels, err, c.want)
		}
	}
	// The same series from two jobs with one value is one fact.
	hs, err := HostsFromMetrics([]Sample{idx(nil, 3), idx(map[string]string{"job": "other"}, 3)}, nil, "instance")
	if err != nil || len(hs) != 1 || len(hs[0].Attachments) != 1 {
		t.Errorf("%+v %v", hs, err)
	}
}

// Prometheus that fails: unreachable, an error status, no agents' series.
func TestReadPrometheusErrors(t *testing.T) {
	ctx := context.Background()
	empty, err := fabrictest.Prometheus(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer empty.Close()
	if _, err := ReadPrometheus(ctx, empty.URL, PrometheusOptions{}); err == nil || !strings.Contains(err.Error(), "no roce_probe_gid_index series") {
		t.Errorf("empty: %v", err)
	}
	if _, err := Query(ctx, empty.URL, "sum(x)", PrometheusOptions{}); !errors.Is(err, ErrPrometheus) || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("bad query: %v", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	if _, err := ReadPrometheus(ctx, down.URL, PrometheusOptions{}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("down: %v", err)
	}
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>bad gateway</html>"))
	}))
	defer html.Close()
	if _, err := ReadPrometheus(ctx, html.URL, PrometheusOptions{}); err == nil || !strings.Contains(err.Error(), "HTTP 502 Bad Gateway: <html>bad gateway</html>") {
		t.Errorf("proxy error: %v", err)
	}
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	if _, err := ReadPrometheus(ctx, slow.URL, PrometheusOptions{Timeout: 100 * time.Millisecond}); err == nil || !strings.Contains(err.Error(), "within 100ms") {
		t.Errorf("slow: %v", err)
	}
	for _, bad := range []string{"prometheus:9090", "ftp://x", "http://"} {
		if _, err := ReadPrometheus(ctx, bad, PrometheusOptions{}); err == nil || !strings.Contains(err.Error(), "want the server's URL") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Agents that fail are each named: down, slow, 404, not a snapshot, too
// large; the good ones are not.
func TestReadAgentsErrors(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"format":"pcap"}`)) }))
	defer garbage.Close()
	good := agent(t, "rxe")
	_, err := ReadAgents(context.Background(), []string{good.URL, down.URL, slow.URL, notFound.URL, garbage.URL}, AgentOptions{Timeout: 200 * time.Millisecond, Concurrency: 2})
	var ie *InputError
	if !errors.As(err, &ie) || len(ie.Errs) != 4 {
		t.Fatalf("%v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"agent " + down.URL + "/snapshot: dial tcp", "connection refused",
		"agent " + slow.URL + "/snapshot: no answer within 200ms",
		"agent " + notFound.URL + "/snapshot: HTTP 404 Not Found: 404 page not found",
		"agent " + garbage.URL + `/snapshot: snapshot: not a roce-probe snapshot: format "pcap"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nlacks %q", msg, want)
		}
	}
	if strings.Contains(msg, good.URL+"/") {
		t.Errorf("the good agent is named: %s", msg)
	}
	if _, err := ReadAgents(context.Background(), []string{good.URL}, AgentOptions{MaxBytes: 1000}); err == nil || !strings.Contains(err.Error(), "larger than 1000 bytes") {
		t.Errorf("too large: %v", err)
	}
	for _, bad := range []string{"ftp://h:1", "http://", "h:1:2:3/%zz"} {
		if _, err := ReadAgents(context.Background(), []string{bad}, AgentOptions{}); err == nil || !strings.Contains(err.Error(), "agent ") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// Agents are asked at most Concurrency at a time.
func TestReadAgentsConcurrency(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(hostTestdata, "rxe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cur, peak int32
	mu := make(chan struct{}, 1)
	mu <- struct{}{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-mu
		cur++
		if cur > peak {
			peak = cur
		}
		mu <- struct{}{}
		time.Sleep(20 * time.Millisecond)
		<-mu
		cur--
		mu <- struct{}{}
		// Each answer is another host.
		w.Write([]byte(strings.Replace(string(raw), `"fixture-rxe"`, `"`+r.URL.Query().Get("h")+`"`, 1)))
	}))
	defer srv.Close()
	var urls []string
	for i := 0; i < 12; i++ {
		urls = append(urls, srv.URL+"/snapshot?h=host-"+string(rune('a'+i)))
	}
	hs, err := ReadAgents(context.Background(), urls, AgentOptions{Concurrency: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 12 || hs[11].Name != "host-l" {
		t.Errorf("%d hosts, last %q", len(hs), hs[len(hs)-1].Name)
	}
	if peak > 3 || peak < 2 {
		t.Errorf("peak concurrency %d, want at most 3 (and more than 1)", peak)
	}
}

func TestSnapshotURL(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:9469":                "http://10.0.0.1:9469/snapshot",
		"http://node1:9469":            "http://node1:9469/snapshot",
		"https://node1:9469/":          "https://node1:9469/snapshot",
		"http://node1:9469/x/snapshot": "http://node1:9469/x/snapshot",
		"[fd00::1]:9469":               "http://[fd00::1]:9469/snapshot",
	} {
		if got, err := SnapshotURL(in); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
}

// DecodeVector survives any input: an error or samples.
func FuzzDecodeVector(f *testing.F) {
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"roce_probe_gid_index","instance":"h:1","device":"d","port":"1","type":"RoCE v2","family":"ipv4","network":"10.0.0.0/24"},"value":[1.5,"3"]}]}}`))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"x"}`))
	f.Add([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"NaN"]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeVector(strings.NewReader(string(b)))
		if err != nil {
			if s != nil {
				t.Fatal("samples with an error")
			}
			return
		}
		for _, x := range s {
			if x.Labels == nil {
				t.Fatal("nil labels")
			}
		}
		// Whatever decodes, the hosts' facts are built or refused.
		hs, err := HostsFromMetrics(s, s, "instance")
		if err == nil {
			if _, err := Analyze(hs, SourcePrometheus); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// Pair detail that fails is named per agent; an agent without /pairs
// (HTTP 404: older than it) is not an error, only marked Missing.
func TestReadAgentPairsErrors(t *testing.T) {
	body := []byte(`{"round":1,"probe_scale":0.5,"pairs":[{"peer":"n1","address":"10.0.0.2","tor":"leaf-a","flow":"f","scope":"tor","probes":10,"answered":7,"lost":3,"sent":{"dscp":26},"received":{"dscp":0}}]}`)
	good := fabrictest.AgentWithPairs(nil, body)
	defer good.Close()
	old := agent(t, "rxe") // serves /snapshot only
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"format":"pcap"}`)) }))
	defer garbage.Close()
	wrong := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"pairs":[{"lost":"3"}]}`)) }))
	defer wrong.Close()
	ps, err := ReadAgentPairs(context.Background(), []string{good.URL, old.URL + "/snapshot"}, AgentOptions{})
	if err != nil || len(ps) != 2 || ps[1].Missing != true || ps[0].Missing || ps[0].Scale != 0.5 || len(ps[0].Pairs) != 1 ||
		ps[0].Pairs[0].Lost != 3 || *ps[0].Pairs[0].ToR != "leaf-a" || ps[0].Pairs[0].Received.DSCP != 0 || ps[0].Origin != good.URL+"/pairs" {
		t.Fatalf("%+v %v", ps, err)
	}
	_, err = ReadAgentPairs(context.Background(), []string{good.URL, garbage.URL, wrong.URL}, AgentOptions{})
	msg := fmt.Sprint(err)
	for _, want := range []string{
		"agent " + garbage.URL + `/pairs: not an agent's pair detail (GET /pairs, docs/json.md "agent_pairs"): no "pairs"`,
		"agent " + wrong.URL + `/pairs: not an agent's pair detail`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nlacks %q", msg, want)
		}
	}
	if strings.Contains(msg, good.URL+"/") {
		t.Errorf("the good agent is named: %s", msg)
	}
	if _, err := ReadAgentPairs(context.Background(), []string{good.URL}, AgentOptions{MaxBytes: 100}); err == nil || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Errorf("too large: %v", err)
	}
}

func TestPairsURL(t *testing.T) {
	for in, want := range map[string]string{
		"10.0.0.1:9469":                "http://10.0.0.1:9469/pairs",
		"https://node1:9469/":          "https://node1:9469/pairs",
		"http://node1:9469/x/snapshot": "http://node1:9469/x/pairs",
	} {
		if got, err := PairsURL(in); err != nil || got != want {
			t.Errorf("%s: %s %v, want %s", in, got, err, want)
		}
	}
}

// DecodeAgentPairs survives any input, and what it decodes localises.
func FuzzDecodeAgentPairs(f *testing.F) {
	f.Add([]byte(`{"round":1,"probe_scale":1,"pairs":[{"peer":"n1","address":"10.0.0.2","tor":"leaf-a","flow":"f","scope":"tor","probes":10,"answered":7,"lost":3,"sent":{"dscp":26},"received":{"dscp":0}}]}`))
	f.Add([]byte(`{"pairs":[]}`))
	f.Add([]byte(`{"pairs":[{"address":"::ffff:10.0.0.1","tor":null}]}`))
	base, err := os.ReadFile(filepath.Join(hostTestdata, "rxe.json"))
	if err != nil {
		f.Fatal(err)
	}
	s, err := host.Decode(bytes.NewReader(base))
	if err != nil {
		f.Fatal(err)
	}
	h, err := FromSnapshot(s, "rxe")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeAgentPairs(bytes.NewReader(b), 1<<16)
		if err != nil {
			return
		}
		LocalizeAgents([]Host{h}, []AgentPairs{p, p})
	})
}
