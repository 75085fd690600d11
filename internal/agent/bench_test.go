package agent

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
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
