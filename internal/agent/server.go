package agent

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

var errServerClosed = http.ErrServerClosed

// limitListener accepts at most n connections at once; more wait in the
// kernel's accept queue (no goroutine, no memory here).
func limitListener(ln net.Listener, n int) net.Listener { return netutil.LimitListener(ln, n) }

// Handler serves /metrics (Prometheus text format), /snapshot (the host
// snapshot of the last read, as `roce-probe collect` writes it) and
// /healthz, each GET or HEAD only, with bounded concurrency: a render or
// snapshot beyond the limit is answered 503 at once.
func (a *Agent) Handler() http.Handler {
	l := a.d.HTTP
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: l.MaxScrapes,
		Timeout:             l.ScrapeTimeout,
	}))
	snapshots := make(chan struct{}, l.MaxSnapshots)
	mux.HandleFunc("GET /snapshot", func(w http.ResponseWriter, r *http.Request) {
		select {
		case snapshots <- struct{}{}:
			defer func() { <-snapshots }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many /snapshot requests at once: try again", http.StatusServiceUnavailable)
			return
		}
		s := a.snap.Load()
		if s == nil {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the host has not been read yet: try again", http.StatusServiceUnavailable)
			return
		}
		var b bytes.Buffer
		if err := s.Encode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.Write(b.Bytes())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		h, ok := a.health()
		w.Header().Set("Content-Type", "application/json")
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.Encode(h)
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not found: the agent serves /metrics, /snapshot and /healthz", http.StatusNotFound)
	})
	return mux
}

// healthJSON is what /healthz answers (docs/json.md, "agent").
type healthJSON struct {
	Status        string  `json:"status"`
	LastRead      *string `json:"last_read"`
	LastReadError *string `json:"last_read_error"`
	Peers         int     `json:"peers"`
	Streams       int     `json:"streams"`
}

// health reports the agent healthy while its control loop turns: it
// turns at least every interval.
func (a *Agent) health() (healthJSON, bool) {
	st := a.state.Load()
	h := healthJSON{Status: "ok", Peers: st.peers, Streams: a.mesh.count()}
	if !st.lastRead.IsZero() {
		s := st.lastRead.UTC().Format(time.RFC3339Nano)
		h.LastRead = &s
	}
	if st.lastErr != "" {
		e := st.lastErr
		h.LastReadError = &e
	}
	last := time.Unix(0, a.lastLoop.Load())
	if a.lastLoop.Load() != 0 && a.d.Now().Sub(last) > 3*a.cfg.Interval+10*time.Second {
		h.Status = "stalled"
		return h, false
	}
	return h, true
}

func (a *Agent) newServer() *http.Server {
	l := a.d.HTTP
	return &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadHeaderTimeout + 5*time.Second,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          log.New(slogWriter{a.log}, "", 0),
	}
}

// slogWriter puts net/http's own messages (TLS handshakes, accept
// errors) in the agent's log at debug level.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("http: " + string(bytes.TrimSpace(p)))
	return len(p), nil
}
