package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
)

// TraceFunc runs one trace (trace.Run on Linux; a fake in tests).
type TraceFunc func(context.Context, trace.Config) (trace.Result, error)

// traceCandidate is an inter-ToR pair whose probes were lost or remarked
// on some UDP source ports: where a trace could go, and with what.
type traceCandidate struct {
	peer   string
	ep     probe.Endpoint
	base   probe.Markings
	faults []sportFault // the pair's faulty ports, worst first
}

// sportTrace is what a trace found for one UDP source port: the transit
// hops (trace.Transit: the spine) by name, and the first DSCP or ECN
// remark along the path (trace.Change.Remark: not a CE mark; nil: none).
type sportTrace struct {
	spine  string
	remark *trace.Change
}

// destTraces are a destination's traces within its cooldown: at most
// trace.ports ports in all, and what each found; and what the traces of
// the cooldown before found (last), shown until this cooldown's trace of
// a port replaces it — so that a port traced again every cooldown stays
// traced in between, instead of showing untraced while its next trace
// runs. A destination no trace found anything for in a whole cooldown
// is forgotten: results live at most two cooldowns.
type destTraces struct {
	at    time.Time // the start of the cooldown (its first trace, or the end of the one before)
	tried map[uint16]bool
	found map[uint16]sportTrace
	last  map[uint16]sportTrace
}

// maxTraceDests bounds the destinations whose traces the agent keeps
// (the oldest goes first); each holds at most trace.ports ports.
const maxTraceDests = 64

// traceCheck is how often the tracer looks for pairs to trace.
const traceCheck = time.Second

// traceRunTimeout bounds one trace, whatever its settings.
const traceRunTimeout = time.Minute

// tracer runs the agent's automatic traces: one at a time, at most
// MaxPerWindow in any Window, at most Ports source ports to one
// destination within a Cooldown (the pair's faulty ones, those not yet
// traced) — budgets that do not grow with the fleet (docs/fabric.md,
// "Automatic traces").
type tracer struct {
	cfg     TraceConfig
	run     TraceFunc
	now     func() time.Time
	log     *slog.Logger
	routers []routerName

	mu       sync.Mutex
	disabled string      // why no trace runs; "" when they do
	starts   []time.Time // the traces started within the last Window
	dests    map[netip.Addr]*destTraces
	runs     uint64 // traces run
	failures uint64 // traces that failed
}

// routerName names the routers whose addresses are in prefix.
type routerName struct {
	prefix netip.Prefix
	name   string
}

func newTracer(cfg TraceConfig, run TraceFunc, now func() time.Time, log *slog.Logger) *tracer {
	t := &tracer{cfg: cfg, run: run, now: now, log: log, dests: map[netip.Addr]*destTraces{}}
	for a, name := range cfg.Routers {
		if p, err := parseRouterKey(a); err == nil { // Validate checked them
			t.routers = append(t.routers, routerName{p, name})
		}
	}
	// The longest prefix first: an address names its router over a
	// prefix that holds it.
	slices.SortFunc(t.routers, func(a, b routerName) int {
		return cmp.Or(cmp.Compare(b.prefix.Bits(), a.prefix.Bits()), a.prefix.Addr().Compare(b.prefix.Addr()))
	})
	switch {
	case !cfg.Enabled:
		t.disabled = "turned off (trace.enabled: false)"
	case run == nil:
		t.disabled = "this agent cannot trace: it needs Linux and raw sockets"
	}
	return t
}

// parseRouterKey reads a key of trace.routers: an address or a prefix.
func parseRouterKey(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

// name is what the agent calls a hop's address: its router's name by
// trace.routers, else the address.
func (t *tracer) name(a netip.Addr) string {
	a = a.Unmap()
	for _, r := range t.routers {
		if r.prefix.Contains(a) {
			return r.name
		}
	}
	return a.String()
}

// spine names the transit hops of a port's trace (trace.Transit), joined
// by " > " ("*" for a silent one); "" when there are none or all are
// silent.
func (t *tracer) spine(hops []trace.Hop) string {
	var names []string
	answered := false
	for _, h := range trace.Transit(hops) {
		if !h.Address.IsValid() {
			names = append(names, "*")
			continue
		}
		answered = true
		names = append(names, t.name(h.Address))
	}
	if !answered {
		return ""
	}
	return strings.Join(names, " > ")
}

// lookup returns what the last trace of dst found for port sport.
func (t *tracer) lookup(dst netip.Addr, sport uint16) (sportTrace, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.dests[dst]
	if d == nil {
		return sportTrace{}, false
	}
	st, ok := d.found[sport]
	if !ok {
		st, ok = d.last[sport]
	}
	return st, ok
}

// traceStatusJSON is the tracer's state on /pairs (docs/json.md,
// "agent_trace_status").
type traceStatusJSON struct {
	Enabled  bool    `json:"enabled"`
	Reason   *string `json:"reason"`
	Runs     uint64  `json:"runs"`
	Failures uint64  `json:"failures"`
	Left     int     `json:"window_left"`
}

// status is the tracer's state as /pairs shows it.
func (t *tracer) status() traceStatusJSON {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := traceStatusJSON{Enabled: t.disabled == "", Runs: t.runs, Failures: t.failures}
	if t.disabled != "" {
		r := t.disabled
		s.Reason = &r
	} else {
		t.expire(t.now())
		s.Left = t.cfg.MaxPerWindow - len(t.starts)
	}
	return s
}

// expire forgets the starts older than the window; a destination whose
// cooldown is over starts another, its results kept as the last ones, or
// is forgotten when that cooldown found nothing. t.mu is held.
func (t *tracer) expire(now time.Time) {
	i := 0
	for i < len(t.starts) && now.Sub(t.starts[i]) >= t.cfg.Window {
		i++
	}
	t.starts = slices.Delete(t.starts, 0, i)
	for a, d := range t.dests {
		if now.Sub(d.at) < t.cfg.Cooldown {
			continue
		}
		if len(d.found) == 0 {
			delete(t.dests, a)
			continue
		}
		d.at, d.tried, d.last, d.found = now, map[uint16]bool{}, d.found, map[uint16]sportTrace{}
	}
}

// canStart says whether the budget lets a trace start now (next says
// which, if any).
func (t *tracer) canStart() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expire(t.now())
	return t.disabled == "" && len(t.starts) < t.cfg.MaxPerWindow
}

// next picks the trace to run now, if the budget allows one (the
// candidates are pairs whose peer answered its latest probe:
// mesh.traceCandidates): the one with the most faulty ports not yet
// traced within its destination's cooldown, at most what is left of
// trace.ports for it (the most lost and remarked probes on them next,
// then the lowest address), and those ports. ok false: none.
func (t *tracer) next(cands []traceCandidate) (traceCandidate, []uint16, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.disabled != "" {
		return traceCandidate{}, nil, false
	}
	now := t.now()
	t.expire(now)
	if len(t.starts) >= t.cfg.MaxPerWindow {
		return traceCandidate{}, nil, false
	}
	var best traceCandidate
	var bestPorts []uint16
	var bestBad uint64
	for _, c := range cands {
		d := t.dests[c.ep.Dst]
		left := t.cfg.Ports
		if d != nil {
			left -= len(d.tried)
		}
		var ports []uint16
		var bad uint64
		for _, f := range c.faults {
			if len(ports) >= left {
				break
			}
			if d != nil && d.tried[f.sport] {
				continue
			}
			ports = append(ports, f.sport)
			bad += f.lost + f.remarked
		}
		if len(ports) == 0 {
			continue
		}
		if bestPorts == nil || len(ports) > len(bestPorts) || len(ports) == len(bestPorts) &&
			(bad > bestBad || bad == bestBad && c.ep.Dst.Less(best.ep.Dst)) {
			best, bestPorts, bestBad = c, ports, bad
		}
	}
	if bestPorts == nil {
		return traceCandidate{}, nil, false
	}
	t.starts = append(t.starts, now)
	d := t.dest(best.ep.Dst, now)
	for _, p := range bestPorts {
		d.tried[p] = true
	}
	return best, bestPorts, true
}

// dest returns dst's traces, new ones (its cooldown starting now) when
// it has none, the oldest destination forgotten when maxTraceDests are
// kept. t.mu is held.
func (t *tracer) dest(dst netip.Addr, now time.Time) *destTraces {
	if d := t.dests[dst]; d != nil {
		return d
	}
	if len(t.dests) >= maxTraceDests {
		var oldest netip.Addr
		for a, x := range t.dests {
			if !oldest.IsValid() || x.at.Before(t.dests[oldest].at) {
				oldest = a
			}
		}
		delete(t.dests, oldest)
	}
	d := &destTraces{at: now, tried: map[uint16]bool{}, found: map[uint16]sportTrace{}}
	t.dests[dst] = d
	return d
}

// traceOne runs the trace of c's ports and keeps what it found.
func (t *tracer) traceOne(ctx context.Context, c traceCandidate, ports []uint16) {
	ctx, cancel := context.WithTimeout(ctx, traceRunTimeout)
	defer cancel()
	res, err := t.run(ctx, trace.Config{Endpoint: c.ep, Base: c.base, Sports: ports, MaxHops: t.cfg.MaxHops,
		Tries: t.cfg.Tries, Timeout: t.cfg.Timeout, Rate: t.cfg.Rate})
	t.mu.Lock()
	defer t.mu.Unlock()
	t.runs++
	if err != nil && ctx.Err() == nil {
		t.failures++
		var perm *probe.PermissionError
		if errors.As(err, &perm) || errors.Is(err, collect.ErrNotLinux) {
			t.disabled = fmt.Sprintf("cannot trace: %v", err)
			t.log.Warn("automatic traces off: a trace needs CAP_NET_RAW (raw ICMP and packet sockets)", "err", err)
			return
		}
		t.log.Warn("trace failed", "peer", c.peer, "dst", c.ep.Dst, "err", err)
	}
	if len(res.Traces) == 0 {
		return
	}
	// dst's traces may have been forgotten meanwhile (a first cooldown
	// that ended before this trace did): these results start them again.
	d := t.dest(c.ep.Dst, t.now())
	for _, tr := range res.Traces {
		// Only the ports asked (their cooldown may have ended meanwhile:
		// the results are still this trace's, the newest).
		if !slices.Contains(ports, tr.Sport) {
			continue
		}
		d.tried[tr.Sport] = true // traced: in this cooldown's budget
		st := sportTrace{spine: t.spine(tr.Hops)}
		for _, ch := range trace.Changes(res.Sent, res.Src, tr.Hops) {
			// The first DSCP or ECN remark: a CE mark on the way is a
			// congested queue's (trace.Change.Remark), not the remark
			// the mesh counted (probe.FindingECNMarked is not one either).
			if (ch.Field == "dscp" || ch.Field == "ecn") && ch.Remark() {
				ch := ch
				st.remark = &ch
				break
			}
		}
		d.found[tr.Sport] = st
	}
	t.log.Info("traced", "peer", c.peer, "dst", c.ep.Dst, "ports", len(ports), "probes", res.Probes)
}

// loop runs traces until ctx ends: every traceCheck it asks candidates
// for the pairs that could be traced and runs at most one trace, to its
// end, before it looks again.
func (t *tracer) loop(ctx context.Context, candidates func() []traceCandidate) {
	if t.disabledNow() {
		return
	}
	tick := time.NewTicker(traceCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !t.canStart() {
			continue // the window's traces spent: no look at the pairs
		}
		c, ports, ok := t.next(candidates())
		if ok {
			t.traceOne(ctx, c, ports)
		}
		if t.disabledNow() {
			return
		}
	}
}

func (t *tracer) disabledNow() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.disabled != ""
}
