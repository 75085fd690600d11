package agent

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
)

// benchAgent is an agent on the fake host and fabric probing n simulated
// peers with one flow until every peer has answered and has every series
// (RTT histogram, received markings, a remark event on every tenth peer).
func benchAgent(b *testing.B, n int) *testAgent {
	h := &fakeHost{peers: n}
	f := newFakeNet()
	peers := f.addPeers(b, n)
	for i := 0; i < n; i += 10 {
		peers[i].dscp.Store(0)
	}
	cfg := testConfig()
	cfg.Probe.MaxRate = 100000
	for i := 1; i <= n; i++ {
		cfg.Peers.Static = append(cfg.Peers.Static, "peer"+strconv.Itoa(i)+"="+peerAddr(i).String())
	}
	ta := startAgent(b, cfg, h, f)
	eventually(b, 60*time.Second, "every peer answered", func() bool {
		fams := gather(b, ta.Registry())
		return fams[metricProbesAnswered] != nil && len(fams[metricProbesAnswered].GetMetric()) == n && func() bool {
			for _, m := range fams[metricProbesAnswered].GetMetric() {
				if m.GetCounter().GetValue() == 0 {
					return false
				}
			}
			return true
		}()
	})
	return ta
}

// BenchmarkMetricsRender500 renders /metrics of an agent probing 500 peers
// with one flow: the handler's time from request to the last byte of the
// response (Gather, the text format, and gzip when asked), in process.
func BenchmarkMetricsRender500(b *testing.B) {
	ta := benchAgent(b, 500)
	h := ta.Handler()
	for _, enc := range []string{"identity", "gzip"} {
		b.Run(enc, func(b *testing.B) {
			var size int
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest("GET", "/metrics", nil)
				req.Header.Set("Accept-Encoding", enc)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%d %s", w.Code, w.Body.String())
				}
				size = w.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/render")
		})
	}
	r, _ := http.Get(ta.url + "/metrics")
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
}

// discardPort is a listener socket that takes replies and drops them.
type discardPort struct {
	Port
	written int
}

func (p *discardPort) Write([]byte) error { p.written++; return nil }

// BenchmarkListenerAnswer is the agent's cost for answering one valid
// probe from a peer: capture.handle, the responder under its lock and the
// reply handed to the socket (a socket that drops it), in process. The
// rate limits are lifted so that every probe is answered.
func BenchmarkListenerAnswer(b *testing.B) {
	r, err := probe.NewResponder(probe.ResponderConfig{Rate: probe.RateConfig{Rate: 1e12, Burst: 1e12, GlobalRate: 1e12, GlobalBurst: 1e12}})
	if err != nil {
		b.Fatal(err)
	}
	r.SetLocal([]net.HardwareAddr{mac(agentMAC)}, []netip.Addr{mustAddr(agentIP)})
	pr, err := probe.NewProber(probe.Frame{SrcMAC: peerMAC(1), DstMAC: mac(agentMAC), Src: peerAddr(1), Dst: mustAddr(agentIP)})
	if err != nil {
		b.Fatal(err)
	}
	frame, _, err := pr.Next(probe.Markings{DSCP: 26, ECN: probe.ECNECT0, TTL: 64, Sport: 0xc000}, time.Unix(1000, 0))
	if err != nil {
		b.Fatal(err)
	}
	frame = bytes.Clone(frame)
	c := &capture{resp: r, onError: func(_ string, err error) { b.Fatal(err) }}
	dp := &discardPort{}
	cp := &capPort{name: "eth0", p: dp}
	b.ReportAllocs()
	for b.Loop() {
		c.handle(cp, frame)
	}
	if dp.written != b.N || r.Counters.Answered.Load() != uint64(b.N) {
		b.Fatalf("%d replies written, %d answered, for %d probes", dp.written, r.Counters.Answered.Load(), b.N)
	}
}

// BenchmarkPlan500x2 is one plan of the fake host's read (eth0, the
// predicted Soft-RoCE table, 500 reachable neighbours) for 500 peers and
// two flows from eth0: every (peer, flow) target, as each host read and
// each change of the peers makes it.
func BenchmarkPlan500x2(b *testing.B) {
	const n = 500
	snap, err := (&fakeHost{peers: n}).collect(collect.Options{})
	if err != nil {
		b.Fatal(err)
	}
	v, err := snap.View("")
	if err != nil {
		b.Fatal(err)
	}
	rows := gidRows(v)
	tc0, tc1, sl := 106, 0, 3
	var flows []*flowSource
	sports := map[string]uint16{}
	for i, f := range []FlowConfig{{Name: "rdma", Select: SelectConfig{Netdev: "eth0", Family: "ipv4"}, TClass: &tc0, SL: &sl},
		{Name: "bulk", Select: SelectConfig{Netdev: "eth0", Family: "ipv4"}, TClass: &tc1}} {
		fs := resolveFlow(v, f, rows)
		if fs.src == nil {
			b.Fatalf("flow %s: %v", f.Name, fs.err)
		}
		flows = append(flows, fs)
		sports[f.Name] = 0xc000 + uint16(i)
	}
	peers := make([]Peer, n)
	for i := range peers {
		peers[i] = Peer{Name: "peer" + strconv.Itoa(i+1), Addr: peerAddr(i + 1)}
	}
	b.ReportAllocs()
	for b.Loop() {
		p := makePlan(v, flows, peers, sports, nil)
		if len(p.specs) != 2*n || p.specs[0].tgt.reason != "" {
			b.Fatalf("%d streams, first %+v", len(p.specs), p.specs[0].tgt)
		}
	}
}

// BenchmarkReplan is the agent's planning with 10,000 and 100,000 peers
// in ToRs of 64 (this host the first NIC of the first), on the fake host
// (a neighbour for every peer): "peers" is what a change of the peers
// costs — indexing them again (fleet.New, the own-address filter, the
// learned ToRs) and the round's plan, address handles and streams —,
// "round" what each round costs (the plan's targets only). It reports the
// heap in use after the plan (runtime.MemStats.HeapInuse, with the fake
// host's snapshot of 100,000 neighbours) and the slowest /healthz
// answered meanwhile by the handler, asked in a loop from another
// goroutine.
func BenchmarkReplan(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		path := fleetPeersFile(b, n, 64)
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		peers, err := parsePeerFile(raw)
		if err != nil {
			b.Fatal(err)
		}
		a, err := New(testConfig(), Deps{Collect: fleetHost(n).collect, Open: newFakeNet().open})
		if err != nil {
			b.Fatal(err)
		}
		a.read()
		a.peers = peers
		h := a.Handler()
		for _, kind := range []string{"peers", "round"} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				stop := make(chan struct{})
				slowest := make(chan time.Duration)
				go func() {
					var worst time.Duration
					for {
						select {
						case <-stop:
							slowest <- worst
							return
						default:
						}
						t0 := time.Now()
						w := httptest.NewRecorder()
						h.ServeHTTP(w, httptest.NewRequest("GET", "/healthz", nil))
						worst = max(worst, time.Since(t0))
						time.Sleep(time.Millisecond)
					}
				}()
				b.ReportAllocs()
				for b.Loop() {
					if kind == "peers" {
						a.peers = slices.Clone(peers) // a new list: indexed again
					}
					a.replan()
				}
				close(stop)
				b.ReportMetric(float64((<-slowest).Microseconds()), "healthz-max-µs")
				if got := a.mesh.count(); got != 63+5 {
					b.Fatalf("%d streams, want 63 mates + 5 sampled ToRs", got)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
			})
		}
	}
}
