package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roce-probe/roce-probe/audit"
	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/fleet"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/vlan"
)

// Deps are what the agent reads, opens and asks: the live host by
// default (DefaultDeps), fakes in tests (faults, simulated peers).
type Deps struct {
	// Version is the roce-probe version (build info, snapshots).
	Version string
	// Log receives the agent's events (GID index moves, peers, errors).
	Log *slog.Logger
	// Collect reads the host snapshot (collect.Collect).
	Collect func(collect.Options) (*host.Snapshot, error)
	// Watch subscribes to link and address changes (collect.Watch of the
	// own namespace); nil: periodic reads only.
	Watch func(done <-chan struct{}) (*collect.Watcher, error)
	// Open opens a netdev's raw sockets (probe.OpenWith,
	// probe.Incoming): two per netdev, the listener's and the mesh's.
	Open Opener
	// CheckRaw fails when raw sockets cannot be opened at all (no
	// CAP_NET_RAW); nil: not checked.
	CheckRaw func() error
	// Kick makes the kernel resolve a next hop without waiting
	// (collect.SolicitNeighbor); nil: never.
	Kick func(src, dst netip.Addr, rr vlan.RouteResult)
	// Resolver resolves peers.dns (net.DefaultResolver).
	Resolver Resolver
	// Now is the clock (time.Now).
	Now func() time.Time
	// CPU is the CPU time (user + system) the process has used so far
	// (getrusage RUSAGE_SELF on Linux); nil: the agent's self-protection
	// judges by its late wake-ups alone.
	CPU func() time.Duration
	// ListenLLDP opens a netdev's LLDP listener (collect.ListenLLDP);
	// nil: the agent does not listen for LLDP (topology.lldp false too).
	ListenLLDP func(netdev string) (LLDPReader, error)
	// Trace runs the automatic traces (trace.Run); nil: the agent does
	// not trace (/pairs says so).
	Trace TraceFunc
	// Listener, when set, is the HTTP socket to serve on instead of
	// listening on Config.Listen.
	Listener net.Listener
	// Limits of the HTTP server; zero fields take the defaults.
	HTTP HTTPLimits
}

// HTTPLimits bound what the HTTP server holds at once and for how long.
type HTTPLimits struct {
	MaxConns          int           // open connections (more wait in the kernel's accept queue); 64
	MaxScrapes        int           // /metrics renders at once (more get 503); 4
	MaxSnapshots      int           // /snapshot answers at once (more get 503); 2
	ReadHeaderTimeout time.Duration // 5s
	WriteTimeout      time.Duration // 30s
	IdleTimeout       time.Duration // 30s
	ScrapeTimeout     time.Duration // a render taking longer gets 503; 10s
}

func (l *HTTPLimits) defaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxConns, 64)
	def(&l.MaxScrapes, 4)
	def(&l.MaxSnapshots, 2)
	defd(&l.ReadHeaderTimeout, 5*time.Second)
	defd(&l.WriteTimeout, 30*time.Second)
	defd(&l.IdleTimeout, 30*time.Second)
	defd(&l.ScrapeTimeout, 10*time.Second)
}

// Agent is one host's agent: it reads the host periodically and on link
// and address changes, probes its peers for every flow, answers their
// probes, and serves the results (Handler).
type Agent struct {
	cfg  Config
	d    Deps
	log  *slog.Logger
	reg  *prometheus.Registry
	mm   *meshMetrics
	mesh *mesh
	cap  *capture
	resp *probe.Responder
	lldp *lldpWatch  // nil: not listening for LLDP
	tors learnedToRs // the peers' ToRs, from their replies
	tr   *tracer     // the automatic traces

	hostC      *constCollector
	readErrors *prometheus.CounterVec
	lastRead   *prometheus.GaugeVec
	changes    prometheus.Counter
	gids       *gidTracker
	sports     map[string]uint16

	snap     atomic.Pointer[host.Snapshot]
	state    atomic.Pointer[agentState] // what the scrape-time metrics and /healthz show
	lastLoop atomic.Int64               // unix ns of the control loop's last turn
	kicking  atomic.Bool                // neighbour resolutions are running

	// Control-loop state.
	view  *host.View
	flows []*flowSource
	// prevCounters is the last read's counter sample: the audit's
	// interval starts there.
	prevCounters *counters.Sample
	peers        []Peer
	plan         *planner
	ownToRs      torOf     // this host's ToR by netdev, from the last read
	nextRound    time.Time // when the plan's next round starts
	gov          *fleet.Governor
	govAt        time.Time
	govCPU       time.Duration
	govUpkeep    time.Duration
	upkeep       *upkeep // the CPU of reads, planning and the peer list: not the Governor's
	pressure     *prometheus.CounterVec
	logged       map[string]logState
	logMu        sync.Mutex
}

type agentState struct {
	peers     int
	flowPeers map[string]int
	lastRead  time.Time
	lastErr   string
	plan      planState
	scale     float64 // the Governor's
	pressure  string  // why the rate is lowered ("" at full rate)
	// What /pairs says the agent is: the addresses its flows' probes
	// leave from, and its ToR (nil: not known).
	addresses []string
	tor       *string
}

type logState struct {
	msg string
	at  time.Time
}

// New checks cfg (a *ConfigError names the field) and builds an agent
// that Run starts.
func New(cfg Config, d Deps) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckWebConfig(cfg.WebConfigFile); err != nil {
		return nil, err
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Collect == nil || d.Open == nil {
		return nil, errors.New("agent: Deps.Collect and Deps.Open are required (DefaultDeps has them)")
	}
	if d.Resolver == nil {
		d.Resolver = net.DefaultResolver
	}
	d.HTTP.defaults()
	a := &Agent{cfg: cfg, d: d, log: d.Log, reg: prometheus.NewRegistry(), mm: newMeshMetrics(), gids: newGIDTracker(),
		sports: map[string]uint16{}, logged: map[string]logState{}, gov: fleet.NewGovernor(cfg.Probe.CPUBudget), upkeep: &upkeep{cpu: d.CPU}}
	a.state.Store(&agentState{scale: 1})
	for _, f := range cfg.Flows {
		a.sports[f.Name] = probe.RandomSport() // one UDP source port per flow, as send picks one per run
	}
	var err error
	a.resp, err = probe.NewResponder(probe.ResponderConfig{Now: d.Now,
		Rate: probe.RateConfig{Rate: cfg.Listener.Rate, GlobalRate: cfg.Listener.GlobalRate}})
	if err != nil {
		return nil, err
	}
	if a.mesh, err = newMesh(cfg.Probe, cfg.Metrics.ToRs, a.mm, a.log, d.Now); err != nil {
		return nil, err
	}
	a.mesh.learned = &a.tors
	a.tr = newTracer(cfg.Trace, d.Trace, d.Now, a.log)
	a.mesh.traced = a.tr.lookup
	a.cap = newCapture(d.Open, a.mesh, a.resp, a.log, a.readError)
	if cfg.Topology.LLDP && d.ListenLLDP != nil {
		a.lldp = newLLDPWatch(d.ListenLLDP, a.readError)
	}
	md := descs()
	a.hostC = &constCollector{descs: []*prometheus.Desc{md.gidInfo, md.gidIndex, md.gidIndexChanges, md.flowVerdict,
		md.flowWarnings, md.flowSource, md.rdmaStatistic, md.prioPackets, md.prioBytes, md.prioPauseFrames,
		md.prioPauseSeconds, md.prioDiscards, md.rocePriority, md.snapshotErrors, md.auditOff, md.auditRDMA, md.topologyInfo}}
	a.readErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricReadErrors,
		Help: "Reads that failed, by source (host: the whole host snapshot; dns; peers_file; netlink; capture; and the kinds of the snapshot's own errors: dcb, ethtool, ...)."}, []string{"source"})
	a.lastRead = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricLastRead,
		Help: "When the source was last read successfully (host, dns, peers_file), Unix seconds."}, []string{"source"})
	a.changes = prometheus.NewCounter(prometheus.CounterOpts{Name: metricNetlinkChanges, Help: "Link and address changes the kernel announced (each makes the agent read the host again, at most once a second)."})
	a.pressure = prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricPressure,
		Help: "Periods (10 s) in which the agent found its host under pressure, by reason (cpu: its CPU over probe.cpu_budget; late_wakeups: over 20 % of its sender's wake-ups 50 ms late or more)."}, []string{"reason"})
	cs := []prometheus.Collector{newBuildInfo(d.Version), a.hostC, a.readErrors, a.lastRead, a.changes, a.pressure, a.scrapeCollector(),
		newMeshCollector(a.mesh, cfg.Metrics.WorstPairs), newTracedCollector(a.mesh)}
	cs = append(cs, a.mm.collectors()...)
	cs = append(cs, standardCollectors()...)
	for _, c := range cs {
		if err := a.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// scrapeCollector builds the metrics of live counters at each scrape.
func (a *Agent) scrapeCollector() prometheus.Collector {
	md := descs()
	return &funcCollector{
		descs: []*prometheus.Desc{md.peers, md.flowPeers, md.streams, md.listener, md.listenerSenders, md.unmatched, md.capture,
			md.planTargets, md.planRate, md.planToRs, md.planWindow, md.probeScale},
		collect: func(ch chan<- prometheus.Metric) {
			st := a.state.Load()
			ch <- prometheus.MustNewConstMetric(md.peers, prometheus.GaugeValue, float64(st.peers))
			for k, n := range st.plan.targets {
				ch <- prometheus.MustNewConstMetric(md.planTargets, prometheus.GaugeValue, float64(n), fleet.Kind(k).String())
			}
			ch <- prometheus.MustNewConstMetric(md.planRate, prometheus.GaugeValue, st.plan.send, "send")
			ch <- prometheus.MustNewConstMetric(md.planRate, prometheus.GaugeValue, st.plan.receive, "receive")
			ch <- prometheus.MustNewConstMetric(md.planToRs, prometheus.GaugeValue, float64(st.plan.tors))
			ch <- prometheus.MustNewConstMetric(md.planWindow, prometheus.GaugeValue, st.plan.torWindow.Seconds(), fleet.InterToR.String())
			ch <- prometheus.MustNewConstMetric(md.planWindow, prometheus.GaugeValue, st.plan.peerWindow.Seconds(), fleet.Sampled.String())
			ch <- prometheus.MustNewConstMetric(md.probeScale, prometheus.GaugeValue, st.scale)
			for f, n := range st.flowPeers {
				ch <- prometheus.MustNewConstMetric(md.flowPeers, prometheus.GaugeValue, float64(n), f)
			}
			ch <- prometheus.MustNewConstMetric(md.streams, prometheus.GaugeValue, float64(a.mesh.count()))
			c := a.resp.Counters.Snapshot()
			for _, x := range []struct {
				r string
				v uint64
			}{{"answered", c.Answered}, {"rate_limited", c.RateLimited}, {"not_roce", c.NotRoCE}, {"bad_icrc", c.BadICRC},
				{"foreign", c.Foreign}, {"malformed", c.Malformed}, {"not_for_us", c.NotForUs}, {"bad_source", c.BadSource}} {
				ch <- prometheus.MustNewConstMetric(md.listener, prometheus.CounterValue, float64(x.v), x.r)
			}
			a.cap.respMu.Lock()
			senders := a.resp.Limiter().Tracked()
			a.cap.respMu.Unlock()
			ch <- prometheus.MustNewConstMetric(md.listenerSenders, prometheus.GaugeValue, float64(senders))
			ch <- prometheus.MustNewConstMetric(md.unmatched, prometheus.CounterValue, float64(a.mesh.unmatched.Load()))
			ch <- prometheus.MustNewConstMetric(md.capture, prometheus.GaugeValue, float64(a.cap.count()))
		},
	}
}

// Registry is the agent's metrics registry (what /metrics serves).
func (a *Agent) Registry() *prometheus.Registry { return a.reg }

// readError counts a failed read and logs it (once per new message, or a
// minute after the last time).
func (a *Agent) readError(source string, err error) {
	a.readErrors.WithLabelValues(source).Inc()
	a.logOnce(source, slog.LevelWarn, "read failed", "source", source, "err", err)
}

func (a *Agent) logOnce(key string, level slog.Level, msg string, args ...any) {
	a.logMu.Lock()
	defer a.logMu.Unlock()
	text := fmt.Sprint(msg, args)
	now := a.d.Now()
	if l, ok := a.logged[key]; ok && l.msg == text && now.Sub(l.at) < time.Minute {
		return
	}
	a.logged[key] = logState{msg: text, at: now}
	a.log.Log(context.Background(), level, msg, args...)
}

// ListenError is an HTTP address the agent could not listen on.
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string {
	return fmt.Sprintf("listen %q: %v: want a free HOST:PORT", e.Addr, e.Err)
}

func (e *ListenError) Unwrap() error { return e.Err }

// debounce is how long the agent waits after a link or address change
// before reading the host, so that a burst of changes makes one read;
// minEventGap is the least time between two such reads.
const (
	debounce    = 200 * time.Millisecond
	minEventGap = time.Second
	followUpGap = 10 * time.Second
)

// Run runs the agent until ctx ends, then stops it: the sender, the
// peer and change watchers and the capture sockets at once, the HTTP
// server after the requests in progress (at most ShutdownTimeout). It
// returns an error only when the agent cannot start (the HTTP address, no
// raw sockets).
func (a *Agent) Run(ctx context.Context) error {
	if a.d.CheckRaw != nil {
		if err := a.d.CheckRaw(); err != nil {
			return err
		}
	}
	ln := a.d.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", a.cfg.Listen); err != nil {
			return &ListenError{Addr: a.cfg.Listen, Err: err}
		}
	}
	srv := a.newServer()
	var wg sync.WaitGroup
	serveErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveErr <- a.serve(srv, ln)
	}()
	a.log.Info("agent started", "listen", ln.Addr().String(), "flows", len(a.cfg.Flows), "interval", a.cfg.Interval)
	if a.cfg.Peers.Max != Default().Peers.Max {
		a.log.Warn("peers.max is no longer used: the probe plan bounds what is probed (probe.send_rate, probe.sample_tors, probe.sample_peers; docs/agent.md, \"Probe plan\")", "peers_max", a.cfg.Peers.Max)
	}

	stop := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); a.mesh.run(stop) }()
	tctx, cancelTraces := context.WithCancel(context.Background())
	defer cancelTraces()
	wg.Add(1)
	go func() { defer wg.Done(); a.tr.loop(tctx, a.mesh.traceCandidates) }()

	pctx, cancelPeers := context.WithCancel(context.Background())
	pw, err := newPeerWatcher(a.cfg.Peers, a.d.Resolver, a.readError, func(s string) { a.lastRead.WithLabelValues(s).SetToCurrentTime() })
	if pw != nil {
		pw.upkeep = a.upkeep
	}
	if err != nil {
		cancelPeers()
		cancelTraces()
		close(stop)
		srv.Close()
		wg.Wait()
		return err
	}
	wg.Add(1)
	go func() { defer wg.Done(); pw.run(pctx) }()

	a.loop(ctx, pw.out)

	// Stop: everything but the HTTP server at once, then the server.
	cancelPeers()
	cancelTraces()
	close(stop)
	a.cap.close()
	a.lldp.close()
	a.mesh.close()
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	wg.Wait()
	if err := <-serveErr; err != nil && !errors.Is(err, errServerClosed) {
		a.log.Warn("HTTP server", "err", err)
	}
	a.log.Info("agent stopped")
	return nil
}

// loop is the control loop: periodic and change-driven reads, peer
// updates, the change subscription.
func (a *Agent) loop(ctx context.Context, peers <-chan []Peer) {
	tick := time.NewTicker(a.cfg.Interval)
	defer tick.Stop()
	soon := time.NewTimer(time.Hour) // a read after changes
	soon.Stop()
	defer soon.Stop()
	resub := time.NewTimer(0) // (re)subscribe to changes
	defer resub.Stop()
	roundT := time.NewTimer(time.Hour) // the plan's next round
	defer roundT.Stop()
	nextRound := func() {
		if d := a.nextRound.Sub(a.d.Now()); d > 0 { // none before the first plan
			roundT.Reset(d)
		}
	}
	var governC <-chan time.Time
	if a.cfg.Probe.CPUBudget > 0 {
		t := time.NewTicker(governPeriod)
		defer t.Stop()
		governC = t.C
		a.govAt = a.d.Now()
		if a.d.CPU != nil {
			a.govCPU = a.d.CPU()
		}
		a.govUpkeep = a.upkeep.spent()
	}
	backoff := time.Second
	var changes <-chan collect.Change
	var watcher *collect.Watcher
	var watchDone chan struct{}
	defer func() {
		if watchDone != nil {
			close(watchDone)
			for range changes { // until the subscription's goroutines end
			}
		}
	}()
	pending := false
	var lldpChanged <-chan struct{}
	if a.lldp != nil {
		lldpChanged = a.lldp.changed
	}
	var lastRead, lastFollowUp time.Time
	// After asking the kernel to resolve next hops, read again soon to
	// pick up the answers, at most once per followUpGap (a peer that
	// never answers ARP does not make the agent read every second).
	followUp := func(kicked int) {
		if kicked > 0 && !pending && a.d.Now().Sub(lastFollowUp) >= followUpGap {
			pending, lastFollowUp = true, a.d.Now()
			soon.Reset(time.Second)
		}
	}
	read := func() {
		pending = false
		n := a.read()
		lastRead = a.d.Now()
		followUp(n)
		nextRound()
	}
	read()
	for {
		a.lastLoop.Store(a.d.Now().UnixNano())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			read()
		case <-soon.C:
			read()
		case p := <-peers:
			a.peers = p
			followUp(a.startKicks(a.replan()))
			nextRound()
		case <-roundT.C:
			followUp(a.startKicks(a.replan()))
			nextRound()
		case <-governC:
			a.govern()
		case <-lldpChanged:
			// A switch said something new: read the host (and decide
			// the attachments) again soon.
			if !pending {
				pending = true
				soon.Reset(max(debounce, minEventGap-a.d.Now().Sub(lastRead)))
			}
		case c, ok := <-changes:
			if !ok {
				err := watcher.Err()
				if err == nil {
					err = errors.New("the subscription ended")
				}
				a.readError(sourceNetlink, err)
				changes, watcher, watchDone = nil, nil, nil
				resub.Reset(backoff)
				backoff = min(2*backoff, 30*time.Second)
				continue
			}
			a.changes.Inc()
			a.log.Debug("change", "kind", c.Kind, "netdev", c.Netdev, "ifindex", c.Ifindex, "deleted", c.Deleted)
			// The host changed: the next hops the read after it asks for
			// are new ones (a netdev back with an empty neighbour table),
			// and deserve their follow-up read even when an earlier one
			// came less than followUpGap ago.
			lastFollowUp = time.Time{}
			if !pending {
				pending = true
				soon.Reset(max(debounce, minEventGap-a.d.Now().Sub(lastRead)))
			}
		case <-resub.C:
			if a.d.Watch == nil {
				continue
			}
			done := make(chan struct{})
			w, err := a.d.Watch(done)
			if err != nil {
				close(done)
				a.readError(sourceNetlink, err)
				resub.Reset(backoff)
				backoff = min(2*backoff, 30*time.Second)
				continue
			}
			watcher, changes, watchDone = w, w.C, done
			if backoff > time.Second {
				read() // changes may have been missed while unsubscribed
			}
			backoff = time.Second
		}
	}
}

// lldpdMaxAge is how long a read of the host reuses lldpd's table
// (lldpcli) as an earlier read got it: a fork and exec at every read (every
// interval, and after changes) cost more CPU than the rest of the read on
// a small host, and lldpd learns a switch's frames every 30 s by default
// (the agent's own LLDP listener hears them as they come).
const lldpdMaxAge = time.Minute

// read reads the host and updates everything that follows from it. It
// returns how many next hops it asked the kernel to resolve.
func (a *Agent) read() int {
	a.upkeep.begin()
	defer a.upkeep.end()
	// Not the QP census: the kernel queries every QP for it (a firmware
	// command each on mlx5), and /snapshot would publish the host's
	// processes (docs/qps.md).
	snap, err := a.d.Collect(collect.Options{Tool: a.d.Version, Sections: collect.SectionAll &^ collect.SectionCensus,
		LLDPHeard: a.lldp.frames(), Switches: a.cfg.Topology.switches(), LLDPDMaxAge: lldpdMaxAge})
	var v *host.View
	if err == nil {
		v, err = snap.View("")
	}
	if err != nil {
		a.readError(sourceHost, err)
		st := *a.state.Load()
		st.lastErr = err.Error()
		a.state.Store(&st)
		return 0
	}
	a.snap.Store(snap)
	a.view = v
	now := a.d.Now()
	a.lastRead.WithLabelValues(sourceHost).Set(float64(now.UnixNano()) / 1e9)
	for _, e := range snap.Errors {
		a.readErrors.WithLabelValues(errorKind(e.Source)).Inc()
	}
	rows := gidRows(v)
	idx := usableIndex(rows)
	for _, m := range a.gids.update(idx) {
		a.log.Warn("GID index moved", "device", m.Key.Device, "port", m.Key.Port, "type", m.Key.Type.String(),
			"family", m.Key.Family, "network", m.Key.Network, "from", m.From, "to", m.To)
	}
	flows := make([]*flowSource, len(a.cfg.Flows))
	for i, f := range a.cfg.Flows {
		flows[i] = resolveFlow(v, f, rows)
		a.logFlow(flows[i])
	}
	a.flows = flows
	var rep *counters.Report
	if snap.Counters != nil {
		r := counters.Analyze(v.CountersInput(nil, snap.Counters))
		rep = &r
	}
	// The audit's counters cross-check of the interval since the last
	// read (no wire sample: the agent captures no application traffic).
	var aud *audit.Report
	if a.prevCounters != nil && snap.Counters != nil {
		exp := make([]audit.Expectation, len(a.cfg.Flows))
		for i, f := range a.cfg.Flows {
			exp[i] = f.Expectation()
		}
		r := audit.Audit(audit.Input{View: v, Prev: a.prevCounters, Cur: snap.Counters, Expect: exp})
		aud = &r
	}
	a.prevCounters = snap.Counters
	ms := append(hostMetrics(rows, idx, a.gids, flows, rep, snap.Errors), auditMetrics(aud)...)
	a.hostC.set(append(ms, topologyMetrics(snap.Topology)...))
	a.cap.setLocal(v.NS)
	a.ownToRs = newTorOf(snap.Topology)
	a.cap.setToRs(a.ownToRs)
	a.lldp.sync(attachmentNetdevs(snap.Topology))
	kicks := a.replan()
	a.log.Debug("host read", "gid_entries", len(rows), "errors", len(snap.Errors), "neighbours_to_resolve", len(kicks))
	st := *a.state.Load()
	st.lastRead, st.lastErr = now, ""
	a.state.Store(&st)
	return a.startKicks(kicks)
}

// startKicks has the kernel resolve next hops in the background; it
// returns how many.
func (a *Agent) startKicks(kicks []neighborKick) int {
	if a.d.Kick == nil || len(kicks) == 0 {
		return 0
	}
	go a.kick(kicks)
	return len(kicks)
}

// maxKicks bounds the neighbour resolutions one read starts (one
// datagram each).
const maxKicks = 1024

func (a *Agent) kick(ks []neighborKick) {
	if !a.kicking.CompareAndSwap(false, true) {
		return // the last read's are still going
	}
	defer a.kicking.Store(false)
	for i, k := range ks {
		if i == maxKicks {
			break
		}
		a.d.Kick(k.src, k.dst, k.route)
	}
}

func (a *Agent) logFlow(fs *flowSource) {
	key := "flow " + fs.cfg.Name
	if fs.src == nil {
		a.logOnce(key, slog.LevelWarn, "flow has no source", "flow", fs.cfg.Name, "err", fs.err)
		return
	}
	verdict := "unknown"
	if fs.check != nil {
		verdict = string(fs.check.Verdict)
	}
	a.logOnce(key, slog.LevelInfo, "flow source", "flow", fs.cfg.Name, "device", fs.src.Port.Device, "port", fs.src.Port.Port,
		"gid_index", fs.index, "netdev", fs.netdev(), "verdict", verdict)
}
