package agent

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/probe"
)

// BenchmarkAgent500Peers measures one `roce-probe agent` process in a test
// namespace probing 500 peers once a second with one flow (probing: 500
// probes out and 500 replies in a second), and the same while the 500
// peers probe it once a second each (full-mesh: the load of a 501-host
// full mesh on one host, 1,000 frames in and 1,000 out a second). The peers are simulated in a second namespace, joined by
// a veth pair, by this test process: 500 addresses on one netdev (the
// kernel there answers ARP for them), one AF_PACKET socket with a
// probe.Responder answering for all of them, and a sender probing the
// agent from each address once a second. What is measured is the agent
// process only:
//
//   - CPU: its utime+stime (/proc/PID/stat) over the window, as a
//     percentage of one core;
//   - memory: VmRSS at the end of the window and VmHWM (the peak);
//   - /metrics: the wall time of a GET on loopback inside its namespace,
//     from the request to the last byte, 20 in a row after the window
//     (median and maximum), plain and gzip.
//
// During the window both are scraped every 15 s, as Prometheus would.
// With NODE_EXPORTER set to a prometheus-node-exporter binary (Debian
// package prometheus-node-exporter; scripts/bench-agent.sh installs it),
// the node exporter runs beside it over the same window, with its
// default collectors, measured the same way. The window is
// ROCE_PROBE_BENCH_WINDOW (default 60s). Needs root; run with
// -benchtime 1x.
func BenchmarkAgent500Peers(b *testing.B) {
	b.Run("probing", func(b *testing.B) { benchAgentProcess(b, false) })
	b.Run("full-mesh", func(b *testing.B) { benchAgentProcess(b, true) })
}

// benchAgentProcess is BenchmarkAgent500Peers; with mesh the peers probe
// the agent too.
func benchAgentProcess(b *testing.B, mesh bool) {
	netnstest.RequireRoot(b)
	const peers = 500
	window := 60 * time.Second
	if s := os.Getenv("ROCE_PROBE_BENCH_WINDOW"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			b.Fatalf("ROCE_PROBE_BENCH_WINDOW: %v", err)
		}
		window = d
	}
	nsA, nsB := netnstest.New(b, "a"), netnstest.New(b, "b")
	netnstest.Veth(b, nsA, "a0", macA, nsB, "b0", macB)
	netnstest.Run(b, "ip", "-n", nsA, "addr", "add", "10.81.0.1/16", "dev", "a0")
	var batch, list strings.Builder
	var addrs []netip.Addr
	for i := 0; i < peers; i++ {
		a := netip.AddrFrom4([4]byte{10, 81, byte(1 + i/250), byte(1 + i%250)})
		addrs = append(addrs, a)
		fmt.Fprintf(&batch, "addr add %s/16 dev b0\n", a)
		fmt.Fprintf(&list, "peer%d=%s\n", i+1, a)
	}
	netnstest.RunStdin(b, batch.String(), "ip", "-n", nsB, "-batch", "-")
	peersFile := filepath.Join(b.TempDir(), "peers")
	os.WriteFile(peersFile, []byte(list.String()), 0o644)

	// The simulated peers.
	var conn *probe.Conn
	if err := netnstest.Do(nsB, func() (err error) { conn, err = probe.Open("b0", probe.Incoming); return err }); err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	resp, err := probe.NewResponder(probe.ResponderConfig{LocalMACs: []net.HardwareAddr{mac(macB)}, LocalAddrs: addrs,
		Rate: probe.RateConfig{Rate: 10000, Burst: 1000, GlobalRate: 10000, GlobalBurst: 1000}}) // the agent is one sender of 500/s
	if err != nil {
		b.Fatal(err)
	}
	var answeredByPeers, repliesToPeers atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			frame, _, err := conn.Read()
			if err != nil {
				return
			}
			if frame == nil {
				continue
			}
			if reply, _ := resp.Handle(frame); reply != nil {
				conn.Write(reply)
				answeredByPeers.Add(1)
			} else if f, err := probe.ParseFrame(frame); err == nil {
				if pl, err := probe.ParsePayload(f.Payload); err == nil && pl.Kind == probe.KindReply {
					repliesToPeers.Add(1)
				}
			}
		}
	}()
	var probedAgent atomic.Int64
	go func() { // every peer probes the agent once a second
		var pr []*probe.Prober
		for _, a := range addrs {
			p, _ := probe.NewProber(probe.Frame{SrcMAC: mac(macB), DstMAC: mac(macA), Src: a, Dst: netip.MustParseAddr("10.81.0.1")})
			pr = append(pr, p)
		}
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for i := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if !mesh {
				continue
			}
			// Catch up to 500 a second whatever the ticker dropped.
			for due := int(time.Since(start).Seconds() * peers); i < due; i++ {
				p := pr[i%peers]
				frame, seq, err := p.Next(probe.Markings{DSCP: 26, ECN: 2, TTL: 64, Sport: 0xc000}, time.Now())
				p.Release(seq)
				if err == nil && conn.Write(frame) == nil {
					probedAgent.Add(1)
				}
			}
		}
	}()

	agent := startAgentIn(b, nsA, "--peers-file", peersFile, "--flow", "name=rdma,netdev=a0,tclass=106,sl=3")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		f := agent.metrics(b)
		n := 0
		if fam := f[metricProbesAnswered]; fam != nil {
			for _, m := range fam.GetMetric() {
				if m.GetCounter().GetValue() > 0 {
					n++
				}
			}
		}
		if n == peers {
			break
		}
		select {
		case <-agent.done:
			b.Fatalf("the agent exited: %v\n%s", agent.err, agent.out.String())
		default:
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 3 minutes %d of %d peers answered:\n%s", n, peers, agent.out.String())
		}
		time.Sleep(time.Second)
	}
	time.Sleep(10 * time.Second) // warm up: reads, scrapes, GC settle

	var ne *exec.Cmd
	neURL := "http://127.0.0.1:19100/metrics"
	if path := os.Getenv("NODE_EXPORTER"); path != "" {
		ne = exec.Command(path, "--web.listen-address=127.0.0.1:19100")
		ne.Stdout, ne.Stderr = io.Discard, io.Discard
		if err := ne.Start(); err != nil {
			b.Fatalf("node exporter: %v", err)
		}
		defer func() { ne.Process.Kill(); ne.Wait() }()
		for i := 0; ; i++ {
			if r, err := http.Get(neURL); err == nil {
				r.Body.Close()
				break
			}
			if i == 100 {
				b.Fatal("the node exporter does not answer")
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(5 * time.Second)
	}
	neGet := func(gz bool) (time.Duration, int, error) { return timedGet(http.DefaultClient, neURL, gz) }
	agentGet := func(gz bool) (time.Duration, int, error) {
		start := time.Now()
		req := "/metrics"
		code, body, err := agent.getEnc(req, gz)
		if err == nil && code != 200 {
			err = fmt.Errorf("HTTP %d", code)
		}
		return time.Since(start), len(body), err
	}

	b.ResetTimer()
	cpu0, neCPU0 := procCPU(b, agent.cmd.Process.Pid), 0.0
	if ne != nil {
		neCPU0 = procCPU(b, ne.Process.Pid)
	}
	sent0 := agent.value(b, metricProbesSent, "peer", "peer1")
	lis0 := agent.metrics(b)[metricListenerFrames]
	peerAns0, peerRep0, probed0 := answeredByPeers.Load(), repliesToPeers.Load(), probedAgent.Load()
	ctx0 := threadSwitches(b, agent.cmd.Process.Pid)
	if out := os.Getenv("ROCE_PROBE_BENCH_PERF"); out != "" { // a profile of the agent over the window
		perf := exec.Command("perf", "record", "-F", "999", "-g", "-o", out, "-p", strconv.Itoa(agent.cmd.Process.Pid), "--", "sleep", strconv.Itoa(int(window.Seconds())))
		if err := perf.Start(); err != nil {
			b.Fatalf("perf: %v", err)
		}
		defer perf.Wait()
	}
	start := time.Now()
	for time.Since(start) < window {
		agentGet(true)
		if ne != nil {
			neGet(true)
		}
		time.Sleep(min(15*time.Second, window-time.Since(start)))
	}
	elapsed := time.Since(start).Seconds()
	cpu := (procCPU(b, agent.cmd.Process.Pid) - cpu0) / elapsed * 100
	ctx1 := threadSwitches(b, agent.cmd.Process.Pid)
	rss, hwm := procMem(b, agent.cmd.Process.Pid)
	b.StopTimer()
	sent := agent.value(b, metricProbesSent, "peer", "peer1") - sent0
	b.ReportMetric(cpu, "agent-cpu-%")
	b.ReportMetric(rss/(1<<20), "agent-rss-MiB")
	b.ReportMetric(hwm/(1<<20), "agent-peak-rss-MiB")
	plain, size := renderTimes(b, agentGet, false)
	gz, gzSize := renderTimes(b, agentGet, true)
	b.ReportMetric(plain[len(plain)/2], "agent-metrics-ms")
	b.ReportMetric(plain[len(plain)-1], "agent-metrics-max-ms")
	b.ReportMetric(gz[len(gz)/2], "agent-metrics-gzip-ms")
	b.Logf("agent: %.3f %% CPU, RSS %.1f MiB (peak %.1f), /metrics %.1f ms median %.1f max (%d bytes), gzip %.1f ms (%d bytes); "+
		"peer1 got %.0f probes in %.0f s; the peers answered %d probes, sent %d and got %d replies from the agent in the window",
		cpu, rss/(1<<20), hwm/(1<<20), plain[len(plain)/2], plain[len(plain)-1], size, gz[len(gz)/2], gzSize,
		sent, elapsed, answeredByPeers.Load()-peerAns0, probedAgent.Load()-probed0, repliesToPeers.Load()-peerRep0)
	var switches []string
	for tid, n := range ctx1 {
		if d := float64(n-ctx0[tid]) / elapsed; d >= 10 {
			switches = append(switches, fmt.Sprintf("%s:%.0f", tid, d))
		}
	}
	sort.Strings(switches)
	b.Logf("agent's threads' voluntary context switches per second: %s", strings.Join(switches, " "))
	mf := agent.metrics(b)
	gov := func(n string) float64 { v, _ := value(mf, n); return v / (1 << 20) }
	b.Logf("agent's Go memory at the end of the window: heap in use %.1f MiB, heap objects %.1f MiB, stacks %.1f MiB, obtained from the OS %.1f MiB",
		gov("go_memstats_heap_inuse_bytes"), gov("go_memstats_heap_alloc_bytes"), gov("go_memstats_stack_inuse_bytes"), gov("go_memstats_sys_bytes"))
	lis1 := mf[metricListenerFrames]
	for i, m := range lis1.GetMetric() {
		if d := m.GetCounter().GetValue() - lis0.GetMetric()[i].GetCounter().GetValue(); d > 0 {
			b.Logf("agent's listener in the window: %s %.0f", m.GetLabel()[0].GetValue(), d)
		}
	}
	if ne != nil {
		neCPU := (procCPU(b, ne.Process.Pid) - neCPU0) / elapsed * 100
		neRSS, neHWM := procMem(b, ne.Process.Pid)
		nePlain, neSize := renderTimes(b, neGet, false)
		neGz, _ := renderTimes(b, neGet, true)
		b.ReportMetric(neCPU, "node-exporter-cpu-%")
		b.ReportMetric(neRSS/(1<<20), "node-exporter-rss-MiB")
		b.ReportMetric(nePlain[len(nePlain)/2], "node-exporter-metrics-ms")
		b.Logf("node exporter: %.3f %% CPU, RSS %.1f MiB (peak %.1f), /metrics %.1f ms median %.1f max (%d bytes), gzip %.1f ms",
			neCPU, neRSS/(1<<20), neHWM/(1<<20), nePlain[len(nePlain)/2], nePlain[len(nePlain)-1], neSize, neGz[len(neGz)/2])
	}
}

// procCPU is a process's user+system CPU time in seconds.
func procCPU(b *testing.B, pid int) float64 {
	s, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3; utime and stime are fields 14 and 15.
	f := strings.Fields(string(s[bytes.LastIndexByte(s, ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

// procMem is a process's VmRSS and VmHWM in bytes.
func procMem(b *testing.B, pid int) (rss, hwm float64) {
	s, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(s), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			v, _ := strconv.ParseFloat(f[1], 64)
			if f[0] == "VmRSS:" {
				rss = v * 1024
			} else {
				hwm = v * 1024
			}
		}
	}
	return rss, hwm
}

// renderTimes makes 20 GETs in a row and returns their times in ms,
// sorted, and the size of the last.
func renderTimes(b *testing.B, get func(bool) (time.Duration, int, error), gz bool) ([]float64, int) {
	var out []float64
	size := 0
	for i := 0; i < 20; i++ {
		d, n, err := get(gz)
		if err != nil {
			b.Fatalf("GET /metrics: %v", err)
		}
		out = append(out, float64(d.Microseconds())/1000)
		size = n
	}
	sort.Float64s(out)
	return out, size
}

func timedGet(c *http.Client, url string, gz bool) (time.Duration, int, error) {
	req, _ := http.NewRequest("GET", url, nil)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	start := time.Now()
	r, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	n, err := io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return time.Since(start), int(n), err
}

// threadSwitches returns the voluntary context switches of each thread of
// process pid.
func threadSwitches(b *testing.B, pid int) map[string]int64 {
	out := map[string]int64{}
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		s, err := os.ReadFile(dir + "/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(s), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "voluntary_ctxt_switches:" {
				out[e.Name()], _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	return out
}
