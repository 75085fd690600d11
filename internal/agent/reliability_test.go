package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/vlan"
)

func peerList(from, to int) []netip.Addr {
	var out []netip.Addr
	for i := from; i <= to; i++ {
		out = append(out, peerAddr(i))
	}
	return out
}

func hasStream(t *testing.T, ta *testAgent, peer netip.Addr) bool {
	_, ok := value(gather(t, ta.Registry()), metricProbesSent, "peer", peer.String(), "flow", "rdma")
	return ok
}

// Peers from DNS come and go with the answers; a failing lookup keeps the
// last good answer and is counted; a peer that goes has no series left.
func TestPeersDNS(t *testing.T) {
	h := &fakeHost{peers: 6}
	n := newFakeNet()
	n.addPeers(t, 6)
	cfg := testConfig()
	cfg.Peers.DNS = "roce-probe.test.svc"
	cfg.Peers.DNSInterval = time.Second
	ta := startAgent(t, cfg, h, n, func(d *Deps) {})
	ta.res.set(append(peerList(1, 3), mustAddr(agentIP)), nil)
	eventually(t, 5*time.Second, "peers 1..3 probed", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricPeers)
		return v == 3 && hasStream(t, ta, peerAddr(3))
	})
	eventually(t, 5*time.Second, "answers from peer 3", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricProbesAnswered, "peer", peerAddr(3).String())
		return v > 0
	})
	ta.res.set(peerList(1, 2), nil)
	eventually(t, 5*time.Second, "peer 3 gone", func() bool { return !hasStream(t, ta, peerAddr(3)) })
	f := gather(t, ta.Registry())
	for _, name := range []string{metricProbesAnswered, metricProbeRTT, metricProbeReceived, metricProbeSentMarking, metricProbesLost} {
		if _, ok := value(f, name, "peer", peerAddr(3).String()); ok {
			t.Errorf("%s of the gone peer is still there", name)
		}
	}
	calls := ta.res.calls.Load()
	ta.res.set(nil, errors.New("injected: SERVFAIL"))
	eventually(t, 5*time.Second, "a failed lookup", func() bool { return ta.res.calls.Load() >= calls+2 })
	f = gather(t, ta.Registry())
	if v, _ := value(f, metricReadErrors, "source", sourceDNS); v < 1 {
		t.Errorf("read errors of dns: %v", v)
	}
	if v, _ := value(f, metricPeers); v != 2 {
		t.Errorf("peers after a failed lookup: %v, want the last good 2", v)
	}
	if !strings.Contains(ta.logs.String(), "SERVFAIL") {
		t.Error("the DNS failure is not logged")
	}
	ta.res.set(peerList(1, 5), nil)
	eventually(t, 5*time.Second, "peers 1..5", func() bool { return hasStream(t, ta, peerAddr(5)) })
}

// The peers file is read again when it changes; a bad file keeps the last
// good list; its peers' names label the metrics.
func TestPeersFile(t *testing.T) {
	h := &fakeHost{peers: 4}
	n := newFakeNet()
	n.addPeers(t, 4)
	path := filepath.Join(t.TempDir(), "peers")
	write := func(s string) {
		tmp := path + ".tmp"
		os.WriteFile(tmp, []byte(s), 0o644)
		os.Rename(tmp, path)
	}
	write("# rack 1\nnode2=" + peerAddr(1).String() + "\n" + peerAddr(2).String() + "\n")
	cfg := testConfig()
	cfg.Peers.File, cfg.Peers.FileInterval = path, 100*time.Millisecond
	ta := startAgent(t, cfg, h, n)
	eventually(t, 5*time.Second, "file peers", func() bool {
		_, ok := value(gather(t, ta.Registry()), metricProbesSent, "peer", "node2")
		return ok && hasStream(t, ta, peerAddr(2))
	})
	write(peerAddr(3).String() + "\n")
	eventually(t, 5*time.Second, "the new file", func() bool { return hasStream(t, ta, peerAddr(3)) && !hasStream(t, ta, peerAddr(2)) })
	write("10.9.0.99\nnot-an-address\n")
	eventually(t, 5*time.Second, "the bad file counted", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricReadErrors, "source", sourcePeersFile)
		return v >= 1
	})
	if !hasStream(t, ta, peerAddr(3)) || hasStream(t, ta, mustAddr("10.9.0.99")) {
		t.Error("a bad file changed the peers")
	}
	if !strings.Contains(ta.logs.String(), `line 2: \"not-an-address\" is not a peer`) {
		t.Errorf("the bad line is not logged:\n%s", ta.logs.String())
	}
	os.Remove(path)
	eventually(t, 5*time.Second, "the missing file counted", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricReadErrors, "source", sourcePeersFile)
		return v >= 2
	})
	if !hasStream(t, ta, peerAddr(3)) {
		t.Error("a missing file dropped the peers")
	}
}

// Host reads that fail are counted and change nothing; a netdev that goes
// away stops its flow (no_source errors, its socket closed) and comes
// back; link changes make the agent read the host again, a storm of them
// at most about once a second; a subscription the kernel ends is renewed.
func TestHostFaults(t *testing.T) {
	h := &fakeHost{peers: 2}
	n := newFakeNet()
	n.addPeers(t, 2)
	cfg := testConfig()
	cfg.Interval = time.Hour // reads come from changes only
	cfg.Peers.Static = []string{peerAddr(1).String(), peerAddr(2).String()}
	ta := startAgent(t, cfg, h, n)
	p1 := peerAddr(1).String()
	answered := func() float64 { v, _ := value(gather(t, ta.Registry()), metricProbesAnswered, "peer", p1); return v }
	eventually(t, 5*time.Second, "answers", func() bool { return answered() > 0 })
	eventually(t, 5*time.Second, "subscribed", func() bool { return ta.watch.subs.Load() == 1 })

	// A storm of 500 changes in 0.5 s: a handful of reads, not 500.
	before := h.collects.Load()
	for i := 0; i < 500; i++ {
		ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2})
		time.Sleep(time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond)
	if reads := h.collects.Load() - before; reads < 1 || reads > 4 {
		t.Errorf("%d reads for a storm of 500 changes, want 1..4", reads)
	}

	// A failing read is counted; the probes go on.
	h.set(func(h *fakeHost) { h.failNext = 1 })
	ta.watch.send(collect.Change{Kind: collect.ChangeAddr, Ifindex: 2})
	eventually(t, 5*time.Second, "the failed read counted", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricReadErrors, "source", sourceHost)
		return v == 1
	})
	a := answered()
	eventually(t, 5*time.Second, "answers after a failed read", func() bool { return answered() > a })

	// eth0 goes away: the flow has no source, the socket is closed.
	h.set(func(h *fakeHost) { h.netdevOff = true })
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2, Deleted: true})
	eventually(t, 5*time.Second, "no_source errors", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricProbeErrors, "reason", reasonNoSource)
		return v > 0
	})
	eventually(t, 5*time.Second, "the socket closed", func() bool { return n.openPorts() == 0 })
	if v, _ := value(gather(t, ta.Registry()), metricFlowVerdict, "flow", "rdma", "verdict", "unknown"); v != 1 {
		t.Error("the flow without source is not unknown")
	}
	// ... and comes back.
	h.set(func(h *fakeHost) { h.netdevOff = false })
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2})
	a = answered()
	eventually(t, 5*time.Second, "answers after eth0 came back", func() bool { return answered() > a && n.openPorts() == 2 })

	// The kernel ends the subscription: counted, subscribed again.
	ta.watch.end()
	eventually(t, 5*time.Second, "subscribed again", func() bool { return ta.watch.subs.Load() == 2 })
	if v, _ := value(gather(t, ta.Registry()), metricReadErrors, "source", sourceNetlink); v != 1 {
		t.Errorf("netlink read errors %v, want 1", v)
	}

	// The socket fails (a netdev that went away under it): counted, and
	// opened again at the next read.
	opens := n.opens.Load()
	n.breakPorts()
	eventually(t, 5*time.Second, "the capture error counted", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricReadErrors, "source", sourceCapture)
		return v >= 1
	})
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2})
	eventually(t, 5*time.Second, "the socket opened again", func() bool { return n.opens.Load() > opens && n.openPorts() == 2 })
	a = answered()
	eventually(t, 5*time.Second, "answers on the new socket", func() bool { return answered() > a })

	// Only the socket the replies are drained from fails: counted, both
	// closed, both opened again at the next read.
	opens = n.opens.Load()
	n.breakReplyPorts()
	eventually(t, 5*time.Second, "the reply socket's error counted", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricReadErrors, "source", sourceCapture)
		return v >= 2
	})
	eventually(t, 5*time.Second, "both sockets closed", func() bool { return n.openPorts() == 0 })
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2})
	eventually(t, 5*time.Second, "both opened again", func() bool { return n.opens.Load() == opens+2 && n.openPorts() == 2 })
	a = answered()
	eventually(t, 5*time.Second, "answers on the new sockets", func() bool { return answered() > a })
}

// A netdev that comes back comes with an empty neighbour table: the read
// after the change asks the kernel for the peer's next hop, and reads
// again a second later to pick up the answer — also when an earlier
// follow-up read came less than followUpGap ago (seen in CI: the agent
// waited for its next interval, 30 s, before probing again).
func TestFollowUpAfterNetdevBack(t *testing.T) {
	h := &fakeHost{} // no neighbour until the kernel is asked
	n := newFakeNet()
	n.addPeers(t, 1)
	cfg := testConfig()
	cfg.Interval = time.Hour // reads come from changes and follow-ups only
	cfg.Peers.Static = []string{peerAddr(1).String()}
	var kicks atomic.Int64
	ta := startAgent(t, cfg, h, n, func(d *Deps) {
		d.Kick = func(src, dst netip.Addr, rr vlan.RouteResult) {
			kicks.Add(1)
			if dst == peerAddr(1) {
				h.set(func(h *fakeHost) { h.peers = 1 }) // the kernel resolved it
			}
		}
	})
	p1 := peerAddr(1).String()
	answered := func() float64 { v, _ := value(gather(t, ta.Registry()), metricProbesAnswered, "peer", p1); return v }
	eventually(t, 5*time.Second, "answers after the first follow-up read", func() bool { return answered() > 0 })
	eventually(t, 5*time.Second, "subscribed", func() bool { return ta.watch.subs.Load() == 1 })

	// eth0 goes away and comes back within followUpGap of the first
	// follow-up, its neighbour forgotten.
	h.set(func(h *fakeHost) { h.netdevOff, h.peers = true, 0 })
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2, Deleted: true})
	eventually(t, 5*time.Second, "the socket closed", func() bool { return n.openPorts() == 0 })
	k := kicks.Load()
	h.set(func(h *fakeHost) { h.netdevOff = false })
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0", Ifindex: 2})
	eventually(t, 5*time.Second, "the next hop asked for again", func() bool { return kicks.Load() > k })
	a := answered()
	eventually(t, 5*time.Second, "answers again after eth0 came back", func() bool { return answered() > a })
}

// floodFrames are frames of every kind the agent must take without
// answering or growing: garbage, RoCE v2 frames with a bad ICRC, without
// the probe signature, with a corrupt payload, probes to other addresses,
// and replies of sessions it never started (forged or late).
func floodFrames(t testing.TB, n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	src := peerAddr(7)
	base := probe.Frame{SrcMAC: peerMAC(7), DstMAC: mac(agentMAC), Src: src, Dst: mustAddr(agentIP),
		PKey: 0xffff, DestQP: probe.DefaultDestQP, SrcQP: probe.DefaultSrcQP, QKey: probe.DefaultQKey}
	build := func(f probe.Frame, pl []byte) []byte {
		f.Payload = pl
		b, err := f.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	payload := func(kind probe.Kind) []byte {
		p := probe.Payload{Kind: kind, Session: rng.Uint64(), Seq: rng.Uint32(), Sent: probe.Markings{DSCP: 26, TTL: 64}}
		b, _ := p.Marshal()
		return b
	}
	var out [][]byte
	for i := 0; len(out) < n; i++ {
		var b []byte
		switch i % 6 {
		case 0:
			b = make([]byte, 14+rng.IntN(200))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
		case 1:
			b = build(base, payload(probe.KindProbe))
			b[len(b)-1] ^= 0x5a
		case 2:
			pl := make([]byte, 64)
			for j := range pl {
				pl[j] = byte(rng.Uint32())
			}
			b = build(base, pl)
		case 3:
			pl := payload(probe.KindProbe)
			pl[36] = 200
			b = build(base, pl)
		case 4:
			f := base
			f.Dst = peerAddr(200)
			b = build(f, payload(probe.KindProbe))
		case 5:
			b = build(base, payload(probe.KindReply))
		}
		out = append(out, b)
	}
	return out
}

// A flood of frames that are not probes for it, and of forged replies,
// gets no answer, is counted, and leaves the agent probing and answering.
func TestFlood(t *testing.T) {
	h := &fakeHost{peers: 2}
	n := newFakeNet()
	peers := n.addPeers(t, 2)
	cfg := testConfig()
	cfg.Peers.Static = []string{peerAddr(1).String()}
	ta := startAgent(t, cfg, h, n)
	eventually(t, 5*time.Second, "capture open", func() bool { return n.openPorts() == 2 })
	frames := floodFrames(t, 6000)
	for round := 0; round < 5; round++ {
		for _, f := range frames {
			for !n.offer(f) { // each frame goes to one of the two sockets: a retry duplicates nothing
				time.Sleep(time.Millisecond)
			}
		}
	}
	eventually(t, 10*time.Second, "the flood taken", func() bool {
		f := gather(t, ta.Registry())
		u, _ := value(f, metricUnmatchedReplies)
		return u >= 5000
	})
	f := gather(t, ta.Registry())
	for _, r := range []string{"not_roce", "bad_icrc", "foreign", "malformed", "not_for_us"} {
		if v, _ := value(f, metricListenerFrames, "result", r); v < 4000 {
			t.Errorf("listener %s: %v, want 5 × 1000", r, v)
		}
	}
	if v, _ := value(f, metricListenerFrames, "result", "answered"); v != 0 {
		t.Errorf("the flood got %v answers", v)
	}
	a, _ := value(f, metricProbesAnswered, "peer", peerAddr(1).String())
	n.probeAgent(t, peers[1])
	eventually(t, 5*time.Second, "still probing and answering", func() bool {
		f := gather(t, ta.Registry())
		a2, _ := value(f, metricProbesAnswered, "peer", peerAddr(1).String())
		l, _ := value(f, metricListenerFrames, "result", "answered")
		return a2 > a && l == 1
	})
}

// slowCollector makes every render of /metrics take d.
type slowCollector struct{ d time.Duration }

var slowDesc = prometheus.NewDesc("test_slow", "slow", nil, nil)

func (c slowCollector) Describe(ch chan<- *prometheus.Desc) { ch <- slowDesc }
func (c slowCollector) Collect(ch chan<- prometheus.Metric) {
	time.Sleep(c.d)
	ch <- prometheus.MustNewConstMetric(slowDesc, prometheus.GaugeValue, 1)
}

// Many concurrent scrapes: at most MaxScrapes render at once, the others
// get 503 at once; a render that takes too long gets 503 after
// ScrapeTimeout; connections that never finish their request are closed
// after ReadHeaderTimeout, and at most MaxConns are open at once: the
// goroutines stay bounded and the agent keeps answering.
func TestHTTPLimits(t *testing.T) {
	h := &fakeHost{}
	ta := startAgent(t, testConfig(), h, newFakeNet(), func(d *Deps) {
		d.HTTP = HTTPLimits{MaxConns: 16, MaxScrapes: 2, ReadHeaderTimeout: 300 * time.Millisecond, ScrapeTimeout: 2 * time.Second}
	})
	ta.Registry().MustRegister(slowCollector{300 * time.Millisecond})
	get := func(path string) (int, string) {
		c := &http.Client{Timeout: 10 * time.Second}
		r, err := c.Get(ta.url + path)
		if err != nil {
			return 0, err.Error()
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "roce_probe_build_info") {
		t.Fatalf("/metrics: %d %.200s", code, body)
	}
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := get("/metrics")
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[200] < 2 || codes[503] < 1 || codes[200]+codes[503] != 12 {
		t.Errorf("12 concurrent scrapes with room for 2: %v", codes)
	}
	for _, tc := range []struct {
		method, path string
		code         int
	}{{"POST", "/metrics", 405}, {"GET", "/nothing", 404}, {"HEAD", "/healthz", 200}, {"DELETE", "/snapshot", 405}} {
		req, _ := http.NewRequest(tc.method, ta.url+tc.path, nil)
		r, err := http.DefaultClient.Do(req)
		if err != nil || r.StatusCode != tc.code {
			t.Errorf("%s %s: %v %v, want %d", tc.method, tc.path, r, err, tc.code)
		}
		if r != nil {
			r.Body.Close()
		}
	}

	// 100 connections that send half a request and wait.
	base := runtime.NumGoroutine()
	var conns []net.Conn
	for i := 0; i < 100; i++ {
		c, err := net.Dial("tcp", strings.TrimPrefix(ta.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("GET /metrics HTTP/1.1\r\nHost: x\r\n"))
		conns = append(conns, c)
	}
	time.Sleep(100 * time.Millisecond)
	if g := runtime.NumGoroutine(); g > base+16+10 {
		t.Errorf("%d goroutines with 100 half-open requests (%d before): more than MaxConns", g, base)
	}
	// Their reads time out; every connection is closed by the server.
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Errorf("a half-open request was not closed by the server: %v", err)
			break
		}
		c.Close()
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz after the slow clients: %d", code)
	}
	eventually(t, 5*time.Second, "goroutines back", func() bool { return runtime.NumGoroutine() <= base+4 })
}

// /snapshot is the host snapshot of the last read as `collect` writes it
// (host.Snapshot.Encode), and decodes as one.
func TestSnapshotEndpoint(t *testing.T) {
	ta, _ := startFixtureAgent(t, testConfig(), "mlx5-counters")
	eventually(t, 5*time.Second, "first read", func() bool { return ta.snap.Load() != nil })
	r, err := http.Get(ta.url + "/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	got, _ := io.ReadAll(r.Body)
	s, err := host.Load(hostTestdata + "mlx5-counters.json")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	s.Encode(&want)
	if r.StatusCode != 200 || r.Header.Get("Content-Type") != "application/json" || !bytes.Equal(got, want.Bytes()) {
		t.Errorf("/snapshot: %d %s, %d bytes, want the fixture as Encode writes it (%d bytes)", r.StatusCode, r.Header.Get("Content-Type"), len(got), want.Len())
	}
	if _, err := host.Decode(bytes.NewReader(got)); err != nil {
		t.Errorf("/snapshot does not decode: %v", err)
	}
}

// Stopping ends every goroutine the agent started and closes its
// sockets and subscription, within the bound.
func TestStopClean(t *testing.T) {
	base := runtime.NumGoroutine()
	h := &fakeHost{peers: 20}
	n := newFakeNet()
	n.addPeers(t, 20)
	cfg := testConfig()
	cfg.Peers.DNS, cfg.Peers.DNSInterval = "x.test", time.Second
	ta := startAgent(t, cfg, h, n)
	ta.res.set(peerList(1, 20), nil)
	eventually(t, 5*time.Second, "20 peers answered", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricProbesAnswered, "peer", peerAddr(20).String())
		return v > 0
	})
	// A scrape in progress when the stop comes finishes.
	ta.Registry().MustRegister(slowCollector{500 * time.Millisecond})
	scrape := make(chan int, 1)
	go func() {
		r, err := http.Get(ta.url + "/metrics")
		if err != nil {
			scrape <- 0
			return
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		scrape <- r.StatusCode
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	ta.stop(t)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("stopping took %v", d)
	}
	if code := <-scrape; code != 200 {
		t.Errorf("the scrape in progress at the stop got %d", code)
	}
	if n.openPorts() != 0 {
		t.Errorf("%d sockets left open", n.openPorts())
	}
	if _, err := http.Get(ta.url + "/healthz"); err == nil {
		t.Error("the HTTP server still answers")
	}
	eventually(t, 5*time.Second, "goroutines back", func() bool { return runtime.NumGoroutine() <= base+2 })
}

func openFDs(t testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// An accelerated churn soak: for 8 s peers come and go every 100 ms (the
// file) and every second (DNS, failing every third time), eth0 goes away
// and comes back, reads fail, a change storm runs, the socket breaks, a
// flood arrives and /metrics is scraped, while 50 peers are probed at 10
// per second. Goroutines, open files and the heap in use after it are
// what they were after a warm-up round of the same.
func TestChurnSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	h := &fakeHost{peers: 60}
	n := newFakeNet()
	n.addPeers(t, 60)
	path := filepath.Join(t.TempDir(), "peers")
	writePeers := func(from, to int) {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintln(&b, peerAddr(i))
		}
		os.WriteFile(path+".tmp", []byte(b.String()), 0o644)
		os.Rename(path+".tmp", path)
	}
	writePeers(1, 30)
	cfg := testConfig()
	cfg.Interval = time.Second
	cfg.Peers.File, cfg.Peers.FileInterval = path, 100*time.Millisecond
	cfg.Peers.DNS, cfg.Peers.DNSInterval = "soak.test", time.Second
	ta := startAgent(t, cfg, h, n)
	flood := floodFrames(t, 300)
	round := func(d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var wg sync.WaitGroup
		var i atomic.Int64
		every := func(p time.Duration, f func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tk := time.NewTicker(p)
				defer tk.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tk.C:
						f()
					}
				}
			}()
		}
		every(100*time.Millisecond, func() { k := int(i.Add(1)); writePeers(1+k%20, 30+k%20) })
		every(time.Second, func() {
			k := i.Load()
			if k%3 == 0 {
				ta.res.set(nil, errors.New("injected: timeout"))
			} else {
				ta.res.set(peerList(40+int(k%10), 55), nil)
			}
		})
		every(700*time.Millisecond, func() { h.set(func(h *fakeHost) { h.netdevOff = !h.netdevOff }) })
		every(900*time.Millisecond, func() { h.set(func(h *fakeHost) { h.failNext = 1 }) })
		every(10*time.Millisecond, func() { ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0"}) })
		every(1300*time.Millisecond, n.breakPorts)
		every(50*time.Millisecond, func() {
			for _, f := range flood {
				n.deliver(f)
			}
		})
		every(200*time.Millisecond, func() {
			r, err := http.Get(ta.url + "/metrics")
			if err == nil {
				io.Copy(io.Discard, r.Body)
				r.Body.Close()
			}
		})
		wg.Wait()
		h.set(func(h *fakeHost) { h.netdevOff, h.failNext = false, 0 })
		ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "eth0"})
		time.Sleep(1500 * time.Millisecond) // settle: a read with eth0 back
	}
	round(3 * time.Second) // warm up: every path taken once, pools filled
	http.DefaultClient.CloseIdleConnections()
	g0, fd0, heap0 := runtime.NumGoroutine(), openFDs(t), heapInUse()
	round(8 * time.Second)
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(200 * time.Millisecond)
	g1, fd1, heap1 := runtime.NumGoroutine(), openFDs(t), heapInUse()
	t.Logf("after the soak: goroutines %d → %d, fds %d → %d, heap in use %d → %d KiB, %d reads", g0, g1, fd0, fd1, heap0>>10, heap1>>10, h.collects.Load())
	if g1 > g0+3 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
	}
	if fd1 > fd0+2 {
		t.Errorf("open files grew from %d to %d", fd0, fd1)
	}
	if heap1 > heap0+4<<20 {
		t.Errorf("heap in use grew from %d to %d KiB", heap0>>10, heap1>>10)
	}
	// Still serving and probing.
	a, _ := value(gather(t, ta.Registry()), metricProbesAnswered, "peer", peerAddr(30).String())
	eventually(t, 5*time.Second, "probing after the soak", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricProbesAnswered, "peer", peerAddr(30).String())
		return v > a
	})
}
