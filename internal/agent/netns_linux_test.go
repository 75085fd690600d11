package agent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// These tests run `roce-probe agent` processes in test network namespaces
// joined by veth pairs (and a middle namespace that forwards frames with
// nftables, rewriting DSCP one way): real raw sockets, real netlink
// changes, real signals. They need root; they build the binary once.

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// roceProbeBinary builds cmd/roce-probe into a temporary directory.
func roceProbeBinary(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "roce-probe-agent-test")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "roce-probe")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/roce-probe/roce-probe/cmd/roce-probe").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// agentProc is a `roce-probe agent` running in a namespace.
type agentProc struct {
	ns     string // "" for this process's own namespace
	addr   string // its --listen address; 127.0.0.1:9469 when ""
	dialNS string // where to connect to addr from; ns when ""
	cmd    *exec.Cmd
	out    *syncBuf
	done   chan struct{}
	err    error
}

func startAgentIn(t testing.TB, ns string, args ...string) *agentProc {
	t.Helper()
	bin := roceProbeBinary(t)
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin, "agent", "--listen", "127.0.0.1:9469", "--log-level", "debug"}, args...)...)
	if e := os.Getenv("ROCE_PROBE_AGENT_ENV"); e != "" { // extra environment of the agent (benchmarks)
		cmd.Env = append(os.Environ(), strings.Fields(e)...)
	}
	return runAgentProc(t, ns, cmd, (*exec.Cmd).Start)
}

// runAgentProc starts cmd, an agent in namespace ns, with start, and
// kills it when the test ends (printing its log if the test failed).
func runAgentProc(t testing.TB, ns string, cmd *exec.Cmd, start func(*exec.Cmd) error) *agentProc {
	t.Helper()
	p := &agentProc{ns: ns, cmd: cmd, out: &syncBuf{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := start(p.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if t.Failed() {
			var ms []string
			if _, b, err := p.get("/metrics"); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					if strings.HasPrefix(l, "roce_probe_") && !strings.Contains(l, "_bucket") && !strings.HasPrefix(l, "roce_probe_gid_info") {
						ms = append(ms, l)
					}
				}
			}
			p.cmd.Process.Kill()
			<-p.done
			failureDump(t, "agent in "+ns, "agent-"+ns+".log", p.out.String()+"\n"+strings.Join(ms, "\n"))
		}
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// failureDump keeps a failed test's long diagnostics (a process's
// output, its metrics) where they do not bury the failure: under the lab
// (LAB_ARTIFACTS set, scripts/lab.sh brings the directory back and lists
// it) in the file name there, with one log line naming it; elsewhere
// in the log as before. The lab's report
// shows a failing test's output, and CI only the report's last lines: the
// test's own failure message must be near the end.
func failureDump(t testing.TB, what, name, dump string) {
	t.Helper()
	dir := os.Getenv("LAB_ARTIFACTS")
	if dir == "" {
		t.Logf("%s:\n%s", what, dump)
		return
	}
	f := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()+"."+name))
	if err := os.MkdirAll(dir, 0o755); err != nil || os.WriteFile(f, []byte(dump), 0o644) != nil {
		t.Logf("%s:\n%s", what, dump)
		return
	}
	lines := strings.Split(strings.TrimRight(dump, "\n"), "\n")
	t.Logf("%s: %d lines in %s", what, len(lines), f)
}

// stop sends SIGTERM and waits up to limit for the exit.
func (p *agentProc) stop(t testing.TB, limit time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return time.Since(start), p.err
	case <-time.After(limit):
		return time.Since(start), fmt.Errorf("still running %v after SIGTERM", limit)
	}
}

func (p *agentProc) fds(t testing.TB) int {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/fd")
	if err != nil {
		t.Fatalf("fds of the agent: %v", err)
	}
	return len(ents)
}

// get fetches path from the agent's HTTP server inside its namespace.
func (p *agentProc) get(path string) (int, []byte, error) { return p.getEnc(path, false) }

// getEnc is get, asking for a gzip-compressed body when gz (returned as
// sent, compressed).
func (p *agentProc) getEnc(path string, gz bool) (int, []byte, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: 2 * time.Second}
		ns := p.ns
		if p.dialNS != "" {
			ns = p.dialNS
		}
		if ns == "" {
			return d.DialContext(ctx, network, addr)
		}
		var c net.Conn
		err := netnstest.Do(ns, func() (err error) {
			c, err = d.DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	tr.DisableCompression = true
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:9469"
	}
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	r, err := cl.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	return r.StatusCode, b, err
}

// metrics parses the agent's /metrics (Prometheus text format).
func (p *agentProc) metrics(t testing.TB) map[string]*dto.MetricFamily {
	t.Helper()
	code, b, err := p.get("/metrics")
	if err != nil || code != 200 {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v", err)
	}
	return fams
}

func (p *agentProc) value(t testing.TB, name string, labels ...string) float64 {
	v, _ := value(p.metrics(t), name, labels...)
	return v
}

// skipInLab skips a namespace test inside the lab's VM (scripts/lab.sh
// sets LAB): it builds the binary with go and runs on the machine itself.
func skipInLab(t *testing.T) {
	if os.Getenv("LAB") != "" {
		t.Skip("runs on the machine, not in the lab's VM (no go toolchain there)")
	}
}

const (
	macA = "02:00:00:79:00:01"
	macB = "02:00:00:79:00:02"
)

// threeNS builds namespaces a and b on 10.79.0.0/24 and fd79::/64, joined
// through m, which forwards every frame and rewrites DSCP 26 to 0 on the
// way from a to b.
func threeNS(t *testing.T) (a, b string) {
	a, b = netnstest.New(t, "a"), netnstest.New(t, "b")
	m := netnstest.New(t, "m")
	netnstest.Veth(t, a, "a0", macA, m, "m0", "02:00:00:79:00:0a")
	netnstest.Veth(t, m, "m1", "02:00:00:79:00:0b", b, "b0", macB)
	netnstest.RunStdin(t, `table netdev sw {
  chain to_b {
    type filter hook ingress device "m0" priority 0;
    ip dscp 26 ip dscp set 0
    ip6 dscp 26 ip6 dscp set 0
    fwd to "m1"
  }
  chain to_a {
    type filter hook ingress device "m1" priority 0;
    fwd to "m0"
  }
}
`, "ip", "netns", "exec", m, "nft", "-f", "-")
	addrs(t, a, "a0", "10.79.0.1/24", "fd79::1/64")
	addrs(t, b, "b0", "10.79.0.2/24", "fd79::2/64")
	return a, b
}

func addrs(t *testing.T, ns, dev string, as ...string) {
	for _, a := range as {
		args := []string{"ip", "-n", ns, "addr", "add", a, "dev", dev}
		if strings.Contains(a, ":") {
			args = append(args, "nodad")
		}
		netnstest.Run(t, args...)
	}
}

func flowArgs(dev string) []string {
	return []string{"--interval", "2s", "--probe-rate", "5", "--probe-timeout", "500ms",
		"--flow", "name=v4,netdev=" + dev + ",family=ipv4,tclass=106,sl=3",
		"--flow", "name=v6,netdev=" + dev + ",family=ipv6,tclass=106,sl=3"}
}

// Two agents probe each other through a switch that rewrites DSCP 26 to
// 0 from a to b: a's probes arrive at b with DSCP 0 (remark events at a,
// for both families), b's arrive at a as sent; a stopped agent (SIGTERM:
// exit 0, promptly) shows as loss at the other.
func TestAgentsInNamespaces(t *testing.T) {
	skipInLab(t)
	netnstest.RequireRoot(t, "nft")
	a, b := threeNS(t)
	pa := startAgentIn(t, a, append(flowArgs("a0"), "--peer", "10.79.0.2", "--peer", "fd79::2")...)
	pb := startAgentIn(t, b, append(flowArgs("b0"), "--peer", "hostA=10.79.0.1", "--peer", "hostA6=fd79::1")...)
	ok := func(p *agentProc, peer, flow string) func() bool {
		return func() bool { return p.value(t, metricProbesAnswered, "peer", peer, "flow", flow) >= 3 }
	}
	eventually(t, 30*time.Second, "a's v4 probes answered", ok(pa, "10.79.0.2", "v4"))
	eventually(t, 30*time.Second, "a's v6 probes answered", ok(pa, "fd79::2", "v6"))
	eventually(t, 30*time.Second, "b's v4 probes answered", ok(pb, "hostA", "v4"))
	eventually(t, 30*time.Second, "b's v6 probes answered", ok(pb, "hostA6", "v6"))

	fa, fb := pa.metrics(t), pb.metrics(t)
	for _, c := range []struct {
		fams        map[string]*dto.MetricFamily
		peer, flow  string
		wantDSCP    float64
		wantRemarks bool
	}{
		{fa, "10.79.0.2", "v4", 0, true}, {fa, "fd79::2", "v6", 0, true},
		{fb, "hostA", "v4", 26, false}, {fb, "hostA6", "v6", 26, false},
	} {
		if v, ok := value(c.fams, metricProbeSentMarking, "peer", c.peer, "flow", c.flow, "field", "dscp"); !ok || v != 26 {
			t.Errorf("%s %s: sent DSCP %v (%v), want 26", c.peer, c.flow, v, ok)
		}
		if v, ok := value(c.fams, metricProbeReceived, "peer", c.peer, "flow", c.flow, "field", "dscp"); !ok || v != c.wantDSCP {
			t.Errorf("%s %s: received DSCP %v (%v), want %v", c.peer, c.flow, v, ok, c.wantDSCP)
		}
		if v, ok := value(c.fams, metricProbeReceived, "peer", c.peer, "flow", c.flow, "field", "ecn"); !ok || v != 2 {
			t.Errorf("%s %s: received ECN %v (%v), want 2 (ECT(0))", c.peer, c.flow, v, ok)
		}
		remarks, _ := value(c.fams, metricMarkingEvents, "peer", c.peer, "flow", c.flow, "field", "dscp", "event", "remarked")
		if (remarks > 0) != c.wantRemarks {
			t.Errorf("%s %s: %v DSCP remark events, want some: %v", c.peer, c.flow, remarks, c.wantRemarks)
		}
	}
	// b's listener answered a's probes, and the other way round.
	if v, _ := value(fb, metricListenerFrames, "result", "answered"); v < 6 {
		t.Errorf("b answered %v probes", v)
	}
	// /healthz and /snapshot.
	if code, body, err := pa.get("/healthz"); err != nil || code != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Errorf("/healthz: %d %s %v", code, body, err)
	}
	if code, body, err := pa.get("/snapshot"); err != nil || code != 200 || !strings.Contains(string(body), `"name":"a0"`) {
		t.Errorf("/snapshot: %d %.200s %v", code, body, err)
	}

	// b stops: SIGTERM ends it cleanly, a sees loss.
	took, err := pb.stop(t, 10*time.Second)
	if err != nil {
		t.Fatalf("b after SIGTERM: %v", err)
	}
	t.Logf("b stopped %v after SIGTERM", took.Round(time.Millisecond))
	if !strings.Contains(pb.out.String(), `msg="agent stopped"`) {
		t.Errorf("b's log has no clean stop:\n%s", pb.out.String())
	}
	lost := pa.value(t, metricProbesLost, "peer", "10.79.0.2", "flow", "v4")
	eventually(t, 10*time.Second, "a's probes to the stopped b lost", func() bool {
		return pa.value(t, metricProbesLost, "peer", "10.79.0.2", "flow", "v4") >= lost+3
	})
}

// A netdev removed and added again (both ends of the veth pair, three
// times) does not stop the agents: they read the host on the link
// changes, open the new sockets and probe again, and hold no more files
// than before.
func TestAgentNetdevChurn(t *testing.T) {
	skipInLab(t)
	netnstest.RequireRoot(t)
	a, b := netnstest.New(t, "a"), netnstest.New(t, "b")
	mk := func() {
		netnstest.Veth(t, a, "a0", macA, b, "b0", macB)
		addrs(t, a, "a0", "10.79.0.1/24")
		addrs(t, b, "b0", "10.79.0.2/24")
	}
	mk()
	pa := startAgentIn(t, a, "--interval", "30s", "--probe-rate", "5", "--probe-timeout", "500ms", "--peer", "10.79.0.2",
		"--flow", "name=v4,netdev=a0,tclass=106,sl=3")
	pb := startAgentIn(t, b, "--interval", "30s", "--peer", "10.79.0.1", "--serve-only")
	answered := func() float64 { return pa.value(t, metricProbesAnswered, "peer", "10.79.0.2", "flow", "v4") }
	eventually(t, 30*time.Second, "answers", func() bool { return answered() >= 3 })
	fdA, fdB := pa.fds(t), pb.fds(t)
	for i := 0; i < 3; i++ {
		netnstest.Run(t, "ip", "-n", a, "link", "del", "a0")
		time.Sleep(1500 * time.Millisecond)
		if code, _, err := pa.get("/healthz"); err != nil || code != 200 {
			t.Fatalf("a without its netdev: /healthz %d %v", code, err)
		}
		if v := pa.value(t, metricCaptureNetdevs); v != 0 {
			t.Errorf("round %d: a captures on %v netdevs without a0", i, v)
		}
		mk()
		n := answered()
		eventually(t, 30*time.Second, fmt.Sprintf("round %d: answers again", i), func() bool { return answered() >= n+3 })
	}
	if f := pa.fds(t); f > fdA+1 {
		t.Errorf("a holds %d files after 3 rounds, %d before", f, fdA)
	}
	if f := pb.fds(t); f > fdB+1 {
		t.Errorf("b holds %d files after 3 rounds, %d before", f, fdB)
	}
	if v := pa.value(t, metricNetlinkChanges); v < 3 {
		t.Errorf("a saw %v link changes", v)
	}
}
