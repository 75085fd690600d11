//go:build lab

package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/internal/lab"
)

// startLabAgent runs the lab's roce-probe binary (LAB_ROCE_PROBE) as an
// agent in fabric host h's namespace, listening on listen, with its own
// UTS namespace whose hostname is h's name (the hosts of the lab share the
// VM's hostname otherwise; fabric tells hosts apart by it, as Kubernetes
// nodes are).
func startLabAgent(t *testing.T, h lab.Host, listen string, args ...string) *agentProc {
	t.Helper()
	bin, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	// unshare execs sh, which sets the name and execs the agent: the
	// process is the agent (SIGTERM reaches it).
	cmd := exec.Command("unshare", append([]string{"--uts", "sh", "-c", `hostname "$0" && exec "$@"`, h.Name,
		bin, "agent", "--listen", listen, "--log-level", "debug"}, args...)...)
	p := runAgentProc(t, h.Name, cmd, func(c *exec.Cmd) error { return lab.StartIn(h.Name, c) })
	p.addr = listen
	return p
}

// promTimeout bounds every wait for Prometheus (scrapes and rule
// evaluations every promInterval, under TCG).
const (
	promInterval = 2 * time.Second
	promTimeout  = 2 * time.Minute
)

// prom is a Prometheus server running in a fabric host's namespace.
type prom struct {
	ns, base string
	proc     *lab.Proc
	client   *http.Client
}

// startPrometheus runs the prometheus of the Debian package in namespace
// ns: file-based discovery of targets (each labelled node=NAME, job
// roce-probe), scrapes and rule evaluations every promInterval, and
// deploy/prometheus/rules.yml itself. It returns when /-/ready answers.
func startPrometheus(t *testing.T, ns string, targets map[string]string) *prom {
	t.Helper()
	return startPrometheusEvery(t, ns, targets, promInterval)
}

// startPrometheusEvery is startPrometheus with scrapes (and their
// timeout) and rule evaluations every interval.
func startPrometheusEvery(t *testing.T, ns string, targets map[string]string, interval time.Duration) *prom {
	t.Helper()
	rules, err := filepath.Abs("../../deploy/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rules); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var sd bytes.Buffer
	names := make([]string, 0, len(targets))
	for n := range targets {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&sd, "- targets: [%q]\n  labels:\n    node: %s\n", targets[n], n)
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
rule_files:
  - %[2]s
scrape_configs:
  - job_name: roce-probe
    file_sd_configs:
      - files:
          - %[3]s/targets/*.yml
        refresh_interval: %[1]s
`, interval, rules, dir)
	if err := os.MkdirAll(filepath.Join(dir, "targets"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"prometheus.yml": []byte(cfg), "targets/agents.yml": sd.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("promtool", "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}
	p := &prom{ns: ns, base: "http://127.0.0.1:9090"}
	p.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := lab.InNetns(ns, func() (err error) {
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}}
	p.proc = lab.Start(t, ns, "prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address=127.0.0.1:9090", "--log.level=warn")
	t.Cleanup(func() {
		if t.Failed() {
			failureDump(t, "prometheus in "+ns, "prometheus-"+ns+".log", p.proc.Output())
		}
	})
	deadline := time.Now().Add(promTimeout)
	for {
		code, _, err := p.get("/-/ready")
		if err == nil && code == http.StatusOK {
			return p
		}
		if p.proc.Exited() {
			t.Fatalf("prometheus exited before it was ready:\n%s", p.proc.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready within %v: %d %v\n%s", promTimeout, code, err, p.proc.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *prom) get(path string) (int, []byte, error) {
	r, err := p.client.Get(p.base + path)
	if err != nil {
		return 0, nil, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	return r.StatusCode, b, err
}

// query asks the instant-query API, as roce-probe fabric --prometheus does.
func (p *prom) query(t *testing.T, q string) []fabric.Sample {
	t.Helper()
	s, err := fabric.Query(context.Background(), p.base, q, fabric.PrometheusOptions{Client: p.client, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	return s
}

// alert is one element of /api/v1/alerts.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
	Value  string            `json:"value"`
}

// alerts returns the active (pending or firing) alerts of name.
func (p *prom) alerts(t *testing.T, name string) []alert {
	t.Helper()
	code, b, err := p.get("/api/v1/alerts")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/api/v1/alerts: %d %v: %s", code, err, b)
	}
	var doc struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Status != "success" {
		t.Fatalf("/api/v1/alerts: %v: %.300s", err, b)
	}
	var out []alert
	for _, a := range doc.Data.Alerts {
		if a.Labels["alertname"] == name {
			out = append(out, a)
		}
	}
	return out
}

// wait polls cond every second until it holds, for at most promTimeout;
// cond returns what it saw, for the failure message.
func wait(t *testing.T, what string, cond func() (bool, string)) string {
	t.Helper()
	deadline := time.Now().Add(promTimeout)
	for {
		ok, saw := cond()
		if ok {
			return saw
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last seen: %s", what, promTimeout, saw)
		}
		time.Sleep(time.Second)
	}
}

// key names a series by some of its labels: "node=h1 peer=h2 ...".
func key(l map[string]string, names ...string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + l[n]
	}
	return strings.Join(parts, " ")
}

// byKey indexes samples by key.
func byKey(ss []fabric.Sample, names ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range ss {
		out[key(s.Labels, names...)] = s.Value
	}
	return out
}

func alertKeys(as []alert, state string, names ...string) []string {
	var out []string
	for _, a := range as {
		if state == "" || a.State == state {
			out = append(out, key(a.Labels, names...))
		}
	}
	sort.Strings(out)
	return out
}

// runIn runs roce-probe in a fabric host's namespace and returns its
// standard output and exit status.
func runIn(t *testing.T, ns string, args ...string) (string, int) {
	t.Helper()
	bin, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := lab.StartIn(ns, cmd); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("roce-probe %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("roce-probe %s: %s", strings.Join(args, " "), stderr.String())
	}
	return stdout.String(), cmd.ProcessState.ExitCode()
}

// fabricReport is fabric -o json (docs/json.md, fabric_report), decoded
// generically: the lab test compares sources on the whole findings.
type fabricReport map[string]any

func (r fabricReport) list(k string) []map[string]any {
	var out []map[string]any
	for _, v := range r[k].([]any) {
		out = append(out, v.(map[string]any))
	}
	return out
}

// findings returns the report's findings of the given checks without the
// ports' real_netdev (which Prometheus does not carry), and each as one
// line: check, network, family, type, and each group's text and ports.
func (r fabricReport) findings(checks map[string]bool) ([]any, []string) {
	var all []any
	var lines []string
	for _, f := range r.list("findings") {
		if !checks[f["check"].(string)] {
			continue
		}
		s := fmt.Sprintf("%s %s %s %v", f["check"], f["network"], f["family"], f["type"])
		for _, g := range f["groups"].([]any) {
			g := g.(map[string]any)
			s += " | " + g["text"].(string) + ":"
			for _, p := range g["ports"].([]any) {
				p := p.(map[string]any)
				delete(p, "real_netdev")
				s += fmt.Sprintf(" %s/%s/%v/%v", p["host"], p["device"], p["port"], p["netdev"])
			}
		}
		for _, p := range f["unknown"].([]any) {
			delete(p.(map[string]any), "real_netdev")
		}
		all = append(all, f)
		lines = append(lines, s)
	}
	return all, lines
}

// An agent in every host of the 7.x fabric (its own hostname, listening on
// its untagged address), probing the others on the untagged network and
// on VLAN 100 with traffic class 106 (Soft-RoCE puts the traffic class on
// the wire as is, and the PCP of VLAN 100 from the sender's egress-qos-map
// entry for priority 0, lab.Hosts), and a real Prometheus (the Debian
// package) in h1 scraping them through file-based discovery with
// deploy/prometheus/rules.yml. Asked through Prometheus's HTTP API:
//   - every target is up;
//   - the markings that arrive (roce_probe_probe_received) are, per pair
//     and field, what the sender's flow and egress map put on the wire;
//   - h3's switch port remarking DSCP 26 to 0 fires RoCEProbeRemarked for
//     exactly the pairs through it (sender, peer h3, flow, field dscp);
//   - h2's GID table laid out otherwise (10.200.0.2 removed, an address
//     of another network added, 10.200.0.2 added again: its usable index
//     on 10.200.0.0/24 moves past the others') makes
//     RoCEProbeGIDIndexInconsistent name h2 and only h2, with the index
//     the kernel shows — pending: the rule's `for: 5m` is longer than the
//     test, and the rules are used as they are;
//   - fabric --prometheus URL --host-label node and fabric --agents report
//     the same findings of the checks Prometheus carries;
//   - h4's agent stopped (its listener with it): its peers lose their
//     probes to it, RoCEProbePeerLoss (for: 2m) and RoCEProbeDown (for: 5m)
//     pend for exactly those pairs and for h4.
func TestLabAgentFabricPrometheus(t *testing.T) {
	sw := lab.UseFabric(t)
	untagged, err := lab.FabricNetByName("untagged")
	if err != nil {
		t.Fatal(err)
	}
	v100, err := lab.FabricNetByName("vlan100")
	if err != nil {
		t.Fatal(err)
	}
	v200, err := lab.FabricNetByName("vlan200")
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]*agentProc{}
	targets := map[string]string{} // node → instance (the agent's address)
	for _, h := range lab.Hosts {
		listen := netip.AddrPortFrom(h.Addr(untagged, false), 9469).String()
		args := []string{"--interval", "5s", "--probe-rate", "1", "--probe-timeout", "3s",
			"--flow", "name=untagged,netdev=" + untagged.Netdev + ",family=ipv4,tclass=106,sl=3",
			"--flow", "name=vlan100,netdev=" + v100.Netdev + ",family=ipv4,tclass=106,sl=3"}
		for _, o := range lab.Hosts {
			if o.Name != h.Name {
				args = append(args, "--peer", o.Name+"="+o.Addr(untagged, false).String(), "--peer", o.Name+".100="+o.Addr(v100, false).String())
			}
		}
		agents[h.Name] = startLabAgent(t, h, listen, args...)
		targets[h.Name] = listen
	}
	p := startPrometheus(t, "h1", targets)

	// Every target up.
	saw := wait(t, "every agent scraped", func() (bool, string) {
		up := byKey(p.query(t, `up{job="roce-probe"}`), "node", "instance")
		ok := len(up) == len(lab.Hosts)
		for n, inst := range targets {
			ok = ok && up["node="+n+" instance="+inst] == 1
		}
		return ok, fmt.Sprint(up)
	})
	t.Logf("up: %s", saw)

	// Every pair answered on both networks, then the markings.
	wait(t, "every pair answered twice on both networks", func() (bool, string) {
		ans := byKey(p.query(t, "roce_probe_probes_answered_total"), "node", "peer", "flow")
		var missing []string
		for _, h := range lab.Hosts {
			for _, o := range lab.Hosts {
				if o.Name == h.Name {
					continue
				}
				for _, k := range []string{"node=" + h.Name + " peer=" + o.Name + " flow=untagged", "node=" + h.Name + " peer=" + o.Name + ".100 flow=vlan100"} {
					if ans[k] < 2 {
						missing = append(missing, k)
					}
				}
			}
		}
		return len(missing) == 0, fmt.Sprintf("%d pairs short: %v", len(missing), missing)
	})
	names := []string{"node", "peer", "flow", "field"}
	received := byKey(p.query(t, `roce_probe_probe_received{job="roce-probe"}`), names...)
	sent := byKey(p.query(t, `roce_probe_probe_sent_marking{job="roce-probe"}`), names...)
	want := map[string]float64{}
	for _, h := range lab.Hosts {
		pcp := float64(h.EgressMap(v100)[0]) // the sender's egress map, priority 0 (0 without a map)
		for _, o := range lab.Hosts {
			if o.Name == h.Name {
				continue
			}
			// tclass 106: DSCP 26, ECN 2 (ECT(0)); TTL 64, the
			// namespaces' net.ipv4.ip_default_ttl (no router between).
			for f, v := range map[string]float64{"dscp": 26, "ecn": 2, "ttl": 64} {
				want[key(map[string]string{"node": h.Name, "peer": o.Name, "flow": "untagged", "field": f}, names...)] = v
				want[key(map[string]string{"node": h.Name, "peer": o.Name + ".100", "flow": "vlan100", "field": f}, names...)] = v
			}
			want[key(map[string]string{"node": h.Name, "peer": o.Name + ".100", "flow": "vlan100", "field": "vlan"}, names...)] = 100
			want[key(map[string]string{"node": h.Name, "peer": o.Name + ".100", "flow": "vlan100", "field": "pcp"}, names...)] = pcp
		}
	}
	if !reflect.DeepEqual(received, want) {
		t.Errorf("roce_probe_probe_received:\n got  %v\n want %v", received, want)
	}
	if !reflect.DeepEqual(sent, want) {
		t.Errorf("roce_probe_probe_sent_marking:\n got  %v\n want %v", sent, want)
	}
	t.Logf("markings received (%d series) as configured: DSCP 26, ECN 2, TTL 64; VLAN 100 with PCP h1 %d, h2 %d, h3 %d, h4 %d",
		len(received), lab.Hosts[0].EgressMap(v100)[0], lab.Hosts[1].EgressMap(v100)[0], lab.Hosts[2].EgressMap(v100)[0], lab.Hosts[3].EgressMap(v100)[0])
	if r := p.alerts(t, "RoCEProbeRemarked"); len(r) != 0 {
		t.Errorf("RoCEProbeRemarked before any remarking: %v", alertKeys(r, "", "node", "peer", "flow", "field"))
	}

	// h3's switch port remarks DSCP 26 → 0 on what it sends to h3: the
	// probes of h1, h2 and h4 to h3 arrive remarked, on both networks.
	sw.Port("h3").RemarkDSCP(26, 0)
	var wantRemarked []string
	for _, from := range []string{"h1", "h2", "h4"} {
		wantRemarked = append(wantRemarked, "node="+from+" peer=h3 flow=untagged field=dscp event=remarked",
			"node="+from+" peer=h3.100 flow=vlan100 field=dscp event=remarked")
	}
	sort.Strings(wantRemarked)
	saw = wait(t, "RoCEProbeRemarked firing for the pairs through h3's port", func() (bool, string) {
		got := alertKeys(p.alerts(t, "RoCEProbeRemarked"), "firing", "node", "peer", "flow", "field", "event")
		return reflect.DeepEqual(got, wantRemarked), fmt.Sprint(got)
	})
	t.Logf("RoCEProbeRemarked firing: %s", saw)
	if all := p.alerts(t, "RoCEProbeRemarked"); len(all) != len(wantRemarked) {
		t.Errorf("RoCEProbeRemarked: %v, want only %v", alertKeys(all, "", "node", "peer", "flow", "field", "state"), wantRemarked)
	}
	rec := byKey(p.query(t, `roce_probe_probe_received{field="dscp", peer=~"h3|h3.100"}`), "node", "peer")
	for _, from := range []string{"h1", "h2", "h4"} {
		for _, peer := range []string{"h3", "h3.100"} {
			if v, ok := rec["node="+from+" peer="+peer]; !ok || v != 0 {
				t.Errorf("%s → %s: received DSCP %v (%v), want 0", from, peer, v, ok)
			}
		}
	}

	// h2's GID table laid out otherwise.
	if g := p.alerts(t, "RoCEProbeGIDIndexInconsistent"); len(g) != 0 {
		t.Fatalf("RoCEProbeGIDIndexInconsistent before the change: %v", alertKeys(g, "", "node", "network", "gid_index"))
	}
	h2, _ := lab.HostByName("h2")
	addr := h2.IPv4(v200)
	before := map[string]int{}
	for _, h := range lab.Hosts {
		i, err := lab.GIDIndex(h.RDMADevice, h.Addr(v200, false), v200.Netdev)
		if err != nil {
			t.Fatal(err)
		}
		before[h.Name] = i
	}
	other := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 201, 0, 2}), 24) // a network no other host has
	ip := func(args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, err := lab.RunIn(ctx, "h2", "ip", args...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	t.Cleanup(func() {
		// The original layout: 10.200.0.2 back at its index.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		lab.RunIn(ctx, "h2", "ip", "addr", "del", other.String(), "dev", v200.Netdev)
		lab.RunIn(ctx, "h2", "ip", "addr", "del", addr.String(), "dev", v200.Netdev)
		lab.RunIn(ctx, "h2", "ip", "addr", "add", addr.String(), "dev", v200.Netdev)
		deadline := time.Now().Add(20 * time.Second)
		for {
			i, err := lab.GIDIndex(h2.RDMADevice, addr.Addr(), v200.Netdev)
			if err == nil && i == before["h2"] {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("h2's GID of %s is at %d (%v) after the restore, was %d", addr, i, err, before["h2"])
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	ip("addr", "del", addr.String(), "dev", v200.Netdev)
	ip("addr", "add", other.String(), "dev", v200.Netdev)
	ip("addr", "add", addr.String(), "dev", v200.Netdev)
	var moved int
	wait(t, "h2's GID of "+addr.Addr().String()+" at another index (sysfs)", func() (bool, string) {
		i, err := lab.GIDIndex(h2.RDMADevice, addr.Addr(), v200.Netdev)
		moved = i
		return err == nil && i != before["h2"], fmt.Sprint(i, err)
	})
	t.Logf("GID indexes of the hosts' %s addresses before: %v; h2's now %d (the kernel's table)", v200.Name, before, moved)
	netw := addr.Masked().String()
	wait(t, "Prometheus has h2's new index", func() (bool, string) {
		idx := byKey(p.query(t, `roce_probe_gid_index{network="`+netw+`", type="RoCE v2"}`), "node")
		ok := idx["node=h2"] == float64(moved)
		for _, h := range []string{"h1", "h3", "h4"} {
			ok = ok && idx["node="+h] == float64(before[h])
		}
		return ok, fmt.Sprint(idx)
	})
	wantGID := []string{fmt.Sprintf("node=h2 instance=%s device=%s port=1 type=RoCE v2 family=ipv4 network=%s gid_index=%d",
		targets["h2"], h2.RDMADevice, netw, moved)}
	saw = wait(t, "RoCEProbeGIDIndexInconsistent pending for h2", func() (bool, string) {
		got := alertKeys(p.alerts(t, "RoCEProbeGIDIndexInconsistent"), "pending", "node", "instance", "device", "port", "type", "family", "network", "gid_index")
		return reflect.DeepEqual(got, wantGID), fmt.Sprint(got)
	})
	t.Logf("RoCEProbeGIDIndexInconsistent pending (its for: 5m is longer than this test): %s", saw)
	if all := p.alerts(t, "RoCEProbeGIDIndexInconsistent"); len(all) != 1 {
		t.Errorf("RoCEProbeGIDIndexInconsistent: %v, want h2 only", alertKeys(all, "", "node", "network", "gid_index", "state"))
	}

	// fabric from Prometheus and from the agents: the same findings.
	pout, code := runIn(t, "h1", "fabric", "--prometheus", p.base, "--host-label", "node", "-o", "json")
	if code != 1 {
		t.Fatalf("fabric --prometheus: exit %d, want 1 (findings):\n%s", code, pout)
	}
	var urls []string
	for _, h := range lab.Hosts {
		urls = append(urls, targets[h.Name])
	}
	aout, code := runIn(t, "h1", "fabric", "--agents", strings.Join(urls, ","), "-o", "json")
	if code != 1 {
		t.Fatalf("fabric --agents: exit %d, want 1 (findings):\n%s", code, aout)
	}
	var pr, ar fabricReport
	if err := json.Unmarshal([]byte(pout), &pr); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(aout), &ar); err != nil {
		t.Fatal(err)
	}
	fromMetrics := map[string]bool{}
	for _, c := range pr.list("checks") {
		if c["available"] == true {
			fromMetrics[c["check"].(string)] = true
		}
	}
	if len(fromMetrics) != 3 {
		t.Errorf("checks from Prometheus: %v, want gid_index, roce_version, vlan", fromMetrics)
	}
	pf, plines := pr.findings(fromMetrics)
	af, _ := ar.findings(fromMetrics)
	if !reflect.DeepEqual(pf, af) {
		t.Errorf("fabric findings differ:\n --prometheus %v\n --agents     %v", pf, af)
	}
	wantFinding := fmt.Sprintf("gid_index %s ipv4 RoCE v2 | %d: h1/rxe1/1/%s h3/rxe3/1/%[3]s h4/rxe4/1/%[3]s | %d: h2/rxe2/1/%[3]s",
		netw, before["h1"], v200.Netdev, moved)
	if !reflect.DeepEqual(plines, []string{wantFinding}) {
		t.Errorf("fabric --prometheus findings %q, want one: %s", plines, wantFinding)
	}
	hosts := func(r fabricReport) (out []string) {
		for _, h := range r.list("hosts") {
			out = append(out, h["host"].(string))
		}
		return out
	}
	if !reflect.DeepEqual(hosts(pr), []string{"h1", "h2", "h3", "h4"}) || !reflect.DeepEqual(hosts(ar), hosts(pr)) {
		t.Errorf("hosts: --prometheus %v, --agents %v", hosts(pr), hosts(ar))
	}
	if !reflect.DeepEqual(pr["networks"], ar["networks"]) {
		t.Errorf("networks differ:\n --prometheus %v\n --agents     %v", pr["networks"], ar["networks"])
	}
	var others []string
	for _, f := range ar.list("findings") {
		if !fromMetrics[f["check"].(string)] {
			others = append(others, fmt.Sprint(f["check"], " ", f["network"]))
		}
	}
	t.Logf("fabric --prometheus and --agents: %q; --agents also (checks Prometheus does not carry): %v", plines, others)

	// h4's agent (and its listener) stops: its peers lose their probes
	// to it.
	lost := byKey(p.query(t, `roce_probe_probes_lost_total{peer=~"h4|h4.100"}`), "node", "peer")
	took, err := agents["h4"].stop(t, 30*time.Second)
	if err != nil {
		t.Fatalf("h4's agent after SIGTERM: %v", err)
	}
	t.Logf("h4's agent stopped %v after SIGTERM", took.Round(time.Millisecond))
	saw = wait(t, "h1, h2, h3 lose their probes to h4", func() (bool, string) {
		now := byKey(p.query(t, `roce_probe_probes_lost_total{peer=~"h4|h4.100"}`), "node", "peer")
		ok := true
		for _, from := range []string{"h1", "h2", "h3"} {
			for _, peer := range []string{"h4", "h4.100"} {
				k := "node=" + from + " peer=" + peer
				ok = ok && now[k] >= lost[k]+2
			}
		}
		return ok, fmt.Sprintf("before %v, now %v", lost, now)
	})
	t.Logf("probes lost to h4: %s", saw)
	var wantLoss []string
	for _, from := range []string{"h1", "h2", "h3"} {
		wantLoss = append(wantLoss, "instance="+targets[from]+" peer=h4", "instance="+targets[from]+" peer=h4.100")
	}
	sort.Strings(wantLoss)
	saw = wait(t, "RoCEProbePeerLoss pending for the pairs to h4", func() (bool, string) {
		got := alertKeys(p.alerts(t, "RoCEProbePeerLoss"), "pending", "instance", "peer")
		return reflect.DeepEqual(got, wantLoss), fmt.Sprint(got)
	})
	t.Logf("RoCEProbePeerLoss pending (for: 2m): %s", saw)
	if all := p.alerts(t, "RoCEProbePeerLoss"); len(all) != len(wantLoss) {
		t.Errorf("RoCEProbePeerLoss: %v, want only %v", alertKeys(all, "", "instance", "peer", "state"), wantLoss)
	}
	wantDown := []string{"node=h4 instance=" + targets["h4"]}
	saw = wait(t, "RoCEProbeDown pending for h4", func() (bool, string) {
		got := alertKeys(p.alerts(t, "RoCEProbeDown"), "pending", "node", "instance")
		return reflect.DeepEqual(got, wantDown), fmt.Sprint(got)
	})
	t.Logf("RoCEProbeDown pending (for: 5m): %s", saw)
	for _, a := range p.alerts(t, "RoCEProbePeerLoss") {
		if v, err := strconv.ParseFloat(a.Value, 64); err != nil || v <= 0.01 {
			t.Errorf("RoCEProbePeerLoss %v: loss ratio %q", a.Labels, a.Value)
		}
	}
}
