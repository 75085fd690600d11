package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/netutil"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

var errServerClosed = http.ErrServerClosed

// limitListener accepts at most n connections at once; more wait in the
// kernel's accept queue (no goroutine, no memory here).
func limitListener(ln net.Listener, n int) net.Listener { return netutil.LimitListener(ln, n) }

// Handler serves /metrics (Prometheus text format), /snapshot (the host
// snapshot of the last read, as `roce-probe collect` writes it, whole or
// its RoCE sections, or 404: Config.Snapshot), /pairs (the pairs probed
// this round, JSON) and /healthz, each GET or
// HEAD only, with bounded concurrency: a render or snapshot beyond the
// limit is answered 503 at once. TLS and basic auth are the server's
// (Config.WebConfigFile), around this handler.
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
	mode := a.cfg.Snapshot
	mux.HandleFunc("GET /snapshot", func(w http.ResponseWriter, r *http.Request) {
		if mode == SnapshotOff {
			http.Error(w, "not found: /snapshot is turned off on this agent (snapshot: off)", http.StatusNotFound)
			return
		}
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
		if mode == SnapshotRoCE {
			s = roceSections(s)
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
	mux.HandleFunc("GET /pairs", func(w http.ResponseWriter, r *http.Request) {
		select {
		case snapshots <- struct{}{}:
			defer func() { <-snapshots }()
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many /snapshot and /pairs requests at once: try again", http.StatusServiceUnavailable)
			return
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		st := a.state.Load()
		if err := enc.Encode(pairsJSON{Round: a.mesh.currentRound(), Scale: st.scale, Addresses: nonNil(st.addresses), ToR: st.tor,
			Trace: a.tr.status(), Pairs: a.mesh.pairs()}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		w.Write(b.Bytes())
	})
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		msg := "not found: the agent serves /metrics, /snapshot, /pairs and /healthz"
		if mode == SnapshotOff {
			msg = "not found: the agent serves /metrics, /pairs and /healthz"
		}
		http.Error(w, msg, http.StatusNotFound)
	})
	return mux
}

// roceSections is s with the RoCE-relevant sections only (SnapshotRoCE):
// s's RDMA, DCB, counters, settings and errors, and of each namespace
// the links that carry a GID, are an RDMA port's netdev or have DCB or
// counters in s — on a host without RDMA devices every Ethernet link,
// whose addresses the predicted Soft-RoCE tables are made of
// (host.PredictedPorts) —, with the devices below them
// (vlan.Namespace.Describe) and the bond or bridge they are enslaved to;
// no routes, no neighbours, and the IPv6 hop limits of the kept links
// only. s is not changed.
func roceSections(s *host.Snapshot) *host.Snapshot {
	keep := map[string]map[string]bool{} // netns → netdev
	add := func(netns, netdev string) {
		if netdev == "" {
			return
		}
		if keep[netns] == nil {
			keep[netns] = map[string]bool{}
		}
		keep[netns][netdev] = true
	}
	view := ""
	if len(s.Namespaces) > 0 {
		view = s.Namespaces[0].Netns // RDMA netdevs are looked up in the view
	}
	if s.RDMA != nil {
		for _, d := range s.RDMA.Devices {
			for _, p := range d.Ports {
				add(view, p.Netdev)
				for _, g := range p.GIDs {
					add(view, g.Netdev)
				}
			}
		}
	}
	for _, d := range s.DCB {
		add(d.Netns, d.Netdev)
	}
	if s.Counters != nil {
		for _, e := range s.Counters.Ethtool {
			add(e.Netns, e.Netdev)
		}
		for _, p := range s.Counters.PFC {
			add(p.Netns, p.Netdev)
		}
	}
	predicted := s.RDMA == nil || len(s.RDMA.Devices) == 0
	out := *s
	out.Namespaces = make([]*vlan.Namespace, len(s.Namespaces))
	for i, n := range s.Namespaces {
		if predicted {
			for _, l := range n.Links {
				if l.Ether {
					add(n.Netns, l.Name)
				}
			}
		}
		names := keep[n.Netns]
		for name := range names {
			if d, err := n.Describe(name); err == nil {
				for _, low := range d.Lowers {
					names[low] = true
				}
			}
		}
		masters := map[int]bool{}
		for _, l := range n.Links {
			if names[l.Name] && l.MasterIndex > 0 {
				masters[l.MasterIndex] = true
			}
		}
		m := &vlan.Namespace{Netns: n.Netns, Links: []vlan.Link{}, Routes: []vlan.Route{}, Neighbors: []vlan.Neighbor{},
			Sysctls: vlan.Sysctls{IPv4DefaultTTL: n.Sysctls.IPv4DefaultTTL}}
		for _, l := range n.Links {
			if names[l.Name] || masters[l.Index] {
				m.Links = append(m.Links, l)
				if h, ok := n.Sysctls.IPv6HopLimit[l.Name]; ok {
					if m.Sysctls.IPv6HopLimit == nil {
						m.Sysctls.IPv6HopLimit = map[string]int{}
					}
					m.Sysctls.IPv6HopLimit[l.Name] = h
				}
			}
		}
		for _, k := range []string{"default", "all"} {
			if h, ok := n.Sysctls.IPv6HopLimit[k]; ok {
				if m.Sysctls.IPv6HopLimit == nil {
					m.Sysctls.IPv6HopLimit = map[string]int{}
				}
				m.Sysctls.IPv6HopLimit[k] = h
			}
		}
		out.Namespaces[i] = m
	}
	return &out
}

// CheckWebConfig reads the web configuration file path (Config.
// WebConfigFile; the format of prometheus/exporter-toolkit, as
// node_exporter's --web.config.file) as the server will: its keys, the
// certificate and key files it names, the bcrypt hashes of
// basic_auth_users. A problem is a *ConfigError of field
// web_config_file. "" is valid (plain HTTP, no authentication).
func CheckWebConfig(path string) error {
	if path == "" {
		return nil
	}
	if _, err := readLimited(path, MaxConfigSize); err != nil {
		var big *tooLargeError
		if errors.As(err, &big) {
			return &ConfigError{Field: "web_config_file", Msg: fmt.Sprintf("%s is larger than %d bytes: want a web configuration file", path, big.max)}
		}
		return &ConfigError{Field: "web_config_file", Msg: fmt.Sprintf("%s cannot be read: %v", path, unwrapPath(err))}
	}
	if err := web.Validate(path); err != nil {
		return &ConfigError{Field: "web_config_file", Msg: fmt.Sprintf("%s: %s (the Prometheus exporters' web configuration format: docs/agent.md)", path, webConfigMessage(err))}
	}
	return nil
}

// webConfigMessage is err's message without what the YAML decoder says
// of the Go types it decodes into (" in type web.Config", " into
// []string"): a message names the file's keys, not the program's types.
func webConfigMessage(err error) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "crypto/bcrypt: ") {
		return "basic_auth_users: a password is not a bcrypt hash (" + strings.TrimPrefix(msg, "crypto/bcrypt: ") +
			"): want the hash of the password, e.g. what `htpasswd -nbBC 10 USER PASSWORD` prints after USER:"
	}
	for _, r := range [][2]string{{"!!seq", "a list"}, {"!!map", "a mapping"}, {"!!str", "text"}, {"!!int", "a number"}, {"!!bool", "a boolean"}} {
		msg = strings.ReplaceAll(msg, r[0], r[1])
	}
	words := strings.Fields(strings.TrimPrefix(msg, "yaml: "))
	out := words[:0]
	for i := 0; i < len(words); i++ {
		switch {
		case words[i] == "in" && i+2 < len(words) && words[i+1] == "type":
			i += 2 // "in type T"
			continue
		case words[i] == "into" && i+1 < len(words):
			i++ // "into T"
			continue
		}
		out = append(out, words[i])
	}
	return strings.Join(out, " ")
}

// serve serves srv on ln (limited to MaxConns connections at once), with
// TLS and basic auth when the configuration names a web configuration
// file (exporter-toolkit's web.Serve, which re-reads the file for each
// connection and request, so that certificates and users can change
// without a restart).
func (a *Agent) serve(srv *http.Server, ln net.Listener) error {
	path := a.cfg.WebConfigFile
	return web.Serve(limitListener(ln, a.d.HTTP.MaxConns), srv, &web.FlagConfig{WebConfigFile: &path}, a.log)
}

// healthJSON is what /healthz answers (docs/json.md, "agent").
type healthJSON struct {
	Status        string  `json:"status"`
	LastRead      *string `json:"last_read"`
	LastReadError *string `json:"last_read_error"`
	Peers         int     `json:"peers"`
	Streams       int     `json:"streams"`
	// ProbeScale is the Governor's factor on the planned rate; Pressure
	// why it is below 1 (null at full rate).
	ProbeScale float64 `json:"probe_scale"`
	Pressure   *string `json:"pressure"`
}

// pairsJSON is what /pairs answers (docs/json.md, "agent_pairs"): the
// pairs the agent probes this round.
type pairsJSON struct {
	Round int64   `json:"round"`
	Scale float64 `json:"probe_scale"`
	// Addresses are the addresses the agent's probes leave from (its
	// flows' sources); ToR is its own ToR (nil: not known).
	Addresses []string        `json:"addresses"`
	ToR       *string         `json:"tor"`
	Trace     traceStatusJSON `json:"trace"`
	Pairs     []pairJSON      `json:"pairs"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// health reports the agent healthy while its control loop turns: it
// turns at least every interval.
func (a *Agent) health() (healthJSON, bool) {
	st := a.state.Load()
	h := healthJSON{Status: "ok", Peers: st.peers, Streams: a.mesh.count(), ProbeScale: st.scale}
	if st.pressure != "" {
		p := st.pressure
		h.Pressure = &p
	}
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
