package agent

import (
	"cmp"
	"container/heap"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roce-probe/roce-probe/fleet"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/trace"
)

// Port is a raw socket of one netdev: *probe.Conn on Linux, a fake in
// tests. Each netdev has two, opened with their selection: the listener's
// (probe.NoReplies: peers' probes come in, its replies go out), which its
// reader goroutine waits on, and the mesh's (probe.Replies: probes go out,
// their replies come in), which the sender drains each time it wakes.
type Port interface {
	// Read waits for the next frame and returns it with the time it
	// arrived; it may also return nil and no error (a timeout: the caller
	// reads again). The frame is valid until the next Read. Close makes a
	// waiting Read return an error.
	Read() ([]byte, time.Time, error)
	// Drain hands fn the frames waiting, at most max, with the time each
	// arrived, without waiting for more, and returns how many it handed
	// (max: more may be waiting); the frame is valid during the call.
	Drain(max int, fn func(frame []byte, at time.Time)) (int, error)
	// Write sends one frame as it is (tags included).
	Write(frame []byte) error
	Close() error
}

// streamKey names one (peer, flow) pair.
type streamKey struct {
	peer netip.Addr
	flow string
}

// target is how probes of one (peer, flow) go out: the wire netdev, the
// frame template (MACs, tags, addresses) and the markings, or why they
// cannot go (a probe error reason).
type target struct {
	wire   string
	frame  probe.Frame
	marks  probe.Markings
	reason string
}

func sameTarget(a, b target) bool {
	return a.wire == b.wire && a.marks == b.marks && a.reason == b.reason &&
		string(a.frame.SrcMAC) == string(b.frame.SrcMAC) && string(a.frame.DstMAC) == string(b.frame.DstMAC) &&
		a.frame.Src == b.frame.Src && a.frame.Dst == b.frame.Dst && slices.Equal(a.frame.Tags, b.frame.Tags)
}

// streamSpec is a (peer, flow) the agent should probe, and how: the
// target of the probes and the plan's (kind, rate, UDP source ports).
type streamSpec struct {
	peer Peer
	flow string
	tgt  target
	plan fleet.Target
}

// stream is one (peer, flow) being probed.
type stream struct {
	key    streamKey
	peer   Peer
	fp     fleet.Peer // the peer as the plan and the aggregation know it
	flow   string
	tgt    target
	plan   fleet.Target
	prober *probe.Prober // nil while tgt cannot send
	next   uint32        // sequence number of the prober's next probe
	failed []uint32      // probes the socket refused: neither answered nor lost
	due    time.Time
	hi     int // index in the heap

	win fleet.Window // the counts of the current and the last round (worst pairs, /pairs)
	// faults are the UDP source ports that lost probes or saw them
	// remarked in the current and the last round (/pairs, the tracer).
	faults sportFaults
	// lostRun is the probes lost in a row since the peer's last answer,
	// answered whether the peer answered any probe of this stream
	// (peerDown; the peer answered the latest probe answered or lost when
	// answered and lostRun is 0: the tracer's test for a live peer).
	lostRun  uint32
	answered bool
	rtt      prometheus.Observer
	// A ToR-mate's own series (nil and false otherwise): the markings
	// received and sent, by field index, and the marking events made.
	recv   [5]prometheus.Gauge
	sentOK [5]bool
	events map[[2]string]bool
	// For /pairs: the last answered probe's markings and round-trip time.
	lastRecv *probe.Markings
	lastRTT  time.Duration
}

// mate says whether s has per-peer series: a ToR-mate's.
func (s *stream) mate() bool { return s.plan.Kind == fleet.Mate }

// Fields of the marking metrics.
var markingFields = [5]string{"vlan", "pcp", "dscp", "ecn", "ttl"}

// fieldValues are the marking fields' values, by field index; ok says
// which the markings have (vlan and pcp only when tagged). Values, not
// pointers: nothing is allocated per answered probe.
func fieldValues(m probe.Markings) (v [5]float64, ok [5]bool) {
	if m.Tagged {
		v[0], v[1], ok[0], ok[1] = float64(m.VLAN), float64(m.PCP), true, true
	}
	v[2], v[3], v[4] = float64(m.DSCP), float64(m.ECN), float64(m.TTL)
	ok[2], ok[3], ok[4] = true, true, true
	return v, ok
}

// markingEvent maps a probe finding to the (field, event) of
// roce_probe_probe_marking_events_total; ok false for findings that have
// none (UDP source port, family).
func markingEvent(k probe.FindingKind) (field, event string, ok bool) {
	switch k {
	case probe.FindingTagStripped:
		return "vlan", "stripped", true
	case probe.FindingTagAdded:
		return "vlan", "added", true
	case probe.FindingVLANChanged:
		return "vlan", "remarked", true
	case probe.FindingPCPRemarked:
		return "pcp", "remarked", true
	case probe.FindingDSCPRemarked:
		return "dscp", "remarked", true
	case probe.FindingECNMarked:
		return "ecn", "ce_marked", true
	case probe.FindingECNChanged:
		return "ecn", "remarked", true
	case probe.FindingRoutedHops:
		return "ttl", "decremented", true
	case probe.FindingTTLRaised:
		return "ttl", "raised", true
	}
	return "", "", false
}

// streamHeap orders streams by their next probe's time.
type streamHeap []*stream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].due.Before(h[j].due) }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].hi = i; h[j].hi = j }
func (h *streamHeap) Push(x any)        { s := x.(*stream); s.hi = len(*h); *h = append(*h, s) }
func (h *streamHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	s.hi = -1
	return s
}

// mesh probes every stream at its planned rate and accounts for the
// replies. One goroutine sends (run) and, each time it wakes, drains the
// replies waiting on its sockets first (drain); the control loop sets the
// streams (sync) and the sockets (setPort). sync's work is in the
// streams that change (a round's rotation changes the sampled ones only),
// never in all the series: a stream's series are deleted by their exact
// labels.
type mesh struct {
	cfg     ProbeConfig
	m       *meshMetrics
	log     *slog.Logger
	now     func() time.Time
	limiter *probe.RateLimiter
	wake    chan struct{}
	learned *learnedToRs // where the ToRs peers' replies tell go; nil: dropped
	// traced returns what the automatic traces found for a destination's
	// UDP source port (/pairs); nil: no tracer. Called with m.mu held
	// (the tracer never waits on m.mu while it holds its own lock).
	traced func(dst netip.Addr, sport uint16) (sportTrace, bool)

	// Held without m.mu: the number of streams (/healthz, /metrics), the
	// sender's wake-ups and the late ones (the Governor's sample), the
	// rate scale (the Governor's, as float64 bits).
	nstreams      atomic.Int64
	wakeups, late atomic.Int64
	scaleBits     atomic.Uint64

	mu       sync.Mutex
	agg      *fleet.Aggregator // probe counts per mate and per peer ToR
	round    int64
	streams  map[streamKey]*stream
	sessions map[uint64]*stream
	h        streamHeap
	ports    map[string]Port
	rng      *rand.Rand
	drainBuf []drainPort // drain's list of ports, kept between calls
	writes   []write     // due's batch, kept between calls

	// portFailed is told when draining a port fails (the capture closes
	// both sockets of the netdev and opens them again at its next sync).
	portFailed func(netdev string, p Port, err error)

	unmatched atomic.Uint64
}

type drainPort struct {
	netdev string
	p      Port
}

// The sender's batch window: probes due within it go out together, and it
// is the sender's shortest sleep. It is a tenth of the probe period within
// these bounds: at one probe per second to each peer, 500 peers wake the
// sender at most 10 times a second, and a probe leaves at most 100 ms
// before its time (the jitter spreads it by ±200 ms by default); at 10
// probes a second, 20 ms.
const (
	minBatch = 20 * time.Millisecond
	maxBatch = 100 * time.Millisecond
)

// batch is the sender's batch window at the configured rate.
func (m *mesh) batch() time.Duration { return min(max(m.period()/10, minBatch), maxBatch) }

// sleep is how long the sender sleeps when the next stream is due at next.
func (m *mesh) sleep(next time.Time) time.Duration { return max(next.Sub(m.now()), m.batch()) }

func newMesh(cfg ProbeConfig, maxToRs int, m *meshMetrics, log *slog.Logger, now func() time.Time) (*mesh, error) {
	burst := max(cfg.MaxRate/10, 10)
	lim, err := probe.NewRateLimiter(probe.RateConfig{Rate: cfg.MaxRate, Burst: burst, GlobalRate: cfg.MaxRate, GlobalBurst: burst, Slots: 64})
	if err != nil {
		return nil, err
	}
	lim.Now = now
	ms := &mesh{cfg: cfg, m: m, log: log, now: now, limiter: lim, wake: make(chan struct{}, 1),
		streams: map[streamKey]*stream{}, sessions: map[uint64]*stream{}, ports: map[string]Port{},
		rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), agg: fleet.NewAggregator(maxToRs)}
	ms.setScale(1)
	return ms, nil
}

// period is the probe period at the configured rate (probe.rate): the
// sender's batch window follows it.
func (m *mesh) period() time.Duration { return time.Duration(float64(time.Second) / m.cfg.Rate) }

// setScale sets the factor every stream's rate is multiplied by (the
// Governor's).
func (m *mesh) setScale(f float64) { m.scaleBits.Store(math.Float64bits(f)) }

func (m *mesh) scale() float64 { return math.Float64frombits(m.scaleBits.Load()) }

// streamPeriod is s's probe period: its planned rate times the scale.
func (m *mesh) streamPeriod(s *stream) time.Duration {
	r := s.plan.Rate * m.scale()
	if r <= 0 {
		r = m.cfg.Rate
	}
	return time.Duration(float64(time.Second) / r)
}

// jittered is one interval between s's probes: its period ± jitter.
func (m *mesh) jittered(s *stream) time.Duration {
	j := m.cfg.Jitter * (2*m.rng.Float64() - 1)
	return time.Duration(float64(m.streamPeriod(s)) * (1 + j))
}

func (m *mesh) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// setPort makes p the socket of netdev (nil: none).
func (m *mesh) setPort(netdev string, p Port) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == nil {
		delete(m.ports, netdev)
	} else {
		m.ports[netdev] = p
	}
}

// dropPort forgets netdev's socket if it is still p.
func (m *mesh) dropPort(netdev string, p Port) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ports[netdev] == p {
		delete(m.ports, netdev)
	}
}

// sync makes the streams those of specs for the plan's round: new ones
// start at a random point of their first period, gone ones are accounted
// for and their own series deleted (by their labels: O(1) each), a
// stream whose target changed gets a new prober (a new session; its
// probes in flight are neither answered nor lost), one whose plan changed
// takes the new rate and ports. A new round ends the worst pairs' window
// period. O(streams), whatever the number of series.
func (m *mesh) sync(specs []streamSpec, round int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if round != m.round {
		m.round = round
		for _, s := range m.streams {
			s.win.Roll()
			s.faults.roll()
		}
	}
	want := make(map[streamKey]bool, len(specs))
	for _, sp := range specs {
		k := streamKey{sp.peer.Addr, sp.flow}
		want[k] = true
		s := m.streams[k]
		if s != nil && (s.mate() != (sp.plan.Kind == fleet.Mate) || s.peer.Name != sp.peer.Name || s.fp.ToR != sp.peer.ToR) {
			m.remove(s, now) // its series change: start again
			s = nil
		}
		if s == nil {
			s = &stream{key: k, peer: sp.peer, fp: fleet.Peer{Addr: sp.peer.Addr, ToR: sp.peer.ToR}, flow: sp.flow, plan: sp.plan, hi: -1}
			s.rtt = m.m.rtt.WithLabelValues(sp.flow, sp.plan.Kind.String())
			m.streams[k] = s
			s.due = now.Add(time.Duration(m.rng.Int64N(int64(m.streamPeriod(s)) + 1)))
			heap.Push(&m.h, s)
			m.setTarget(s, sp.tgt, now)
			continue
		}
		if s.plan.Kind != sp.plan.Kind {
			s.rtt = m.m.rtt.WithLabelValues(sp.flow, sp.plan.Kind.String())
		}
		s.plan = sp.plan
		if !sameTarget(s.tgt, sp.tgt) {
			m.setTarget(s, sp.tgt, now)
		}
	}
	for k, s := range m.streams {
		if !want[k] {
			m.remove(s, now)
		}
	}
	m.nstreams.Store(int64(len(m.streams)))
	m.poke()
}

// remove ends stream s: its answered probes are accounted for, a mate's
// own series deleted. m.mu is held.
func (m *mesh) remove(s *stream, now time.Time) {
	m.flush(s, now)
	if s.prober != nil {
		delete(m.sessions, sessionOf(s))
	}
	heap.Remove(&m.h, s.hi)
	delete(m.streams, s.key)
	if s.mate() {
		m.agg.Forget(fleet.GroupOf(s.flow, s.fp, fleet.Mate))
		m.m.deleteMate(s)
	}
}

// add counts c for s: in its group (mate or peer ToR) and in its window.
// A peer ToR's group evicted to make room takes its event series along.
// m.mu is held.
func (m *mesh) add(s *stream, c fleet.Counts) {
	s.win.Add(c)
	if g, ok := m.agg.Add(s.flow, s.fp, s.plan.Kind, c); ok {
		m.m.torEvents.DeletePartialMatch(prometheus.Labels{"flow": g.Flow, "scope": g.Kind.String(), "peer_tor": g.ToR})
	}
}

// sessionOf is the session ID of a stream's prober (as its probes carry it).
func sessionOf(s *stream) uint64 { return s.prober.Session() }

// setTarget gives s a new target: its probes in flight are accounted for
// or abandoned, a new prober starts, a mate's sent markings are
// published.
func (m *mesh) setTarget(s *stream, t target, now time.Time) {
	if s.prober != nil {
		m.flush(s, now)
		delete(m.sessions, sessionOf(s))
		s.prober = nil
	}
	s.tgt = t
	var vs [5]float64
	var oks [5]bool
	if t.reason == "" {
		vs, oks = fieldValues(t.marks)
	}
	if s.mate() {
		for i := range vs {
			switch {
			case oks[i]:
				m.m.sentMark.WithLabelValues(s.peer.Name, s.flow, markingFields[i]).Set(vs[i])
			case s.sentOK[i]:
				m.m.sentMark.DeleteLabelValues(s.peer.Name, s.flow, markingFields[i])
			}
			s.sentOK[i] = oks[i]
		}
	}
	if t.reason != "" {
		return
	}
	p, err := probe.NewProber(t.frame)
	if err != nil {
		s.tgt.reason = reasonBuildFailed
		m.log.Warn("cannot probe", "peer", s.peer.Name, "flow", s.flow, "err", err)
		return
	}
	p.PayloadLen = probe.TopologyPayloadLen // ask the peer for its ToR
	s.prober, s.next, s.failed = p, 0, nil
	m.sessions[p.Session()] = s
}

// finalize accounts, in order, for the probes of s that are answered or
// timed out, and releases them. A probe still waiting holds back the
// ones after it.
func (m *mesh) finalize(s *stream, now time.Time) {
	if s.prober == nil {
		return
	}
	seq := s.prober.Released()
	for ; seq != s.next; seq++ {
		if i := slices.Index(s.failed, seq); i >= 0 {
			s.failed = slices.Delete(s.failed, i, i+1)
			continue
		}
		r := s.prober.Result(seq)
		if r.Received != nil {
			m.answeredOrLate(s, r)
		} else if now.Sub(r.SentAt) >= m.cfg.Timeout {
			m.lost(s, r)
		} else {
			break
		}
	}
	s.prober.Release(seq)
}

// answeredOrLate accounts for a probe whose reply was read: answered if the
// reply arrived (kernel receive time) within the timeout, otherwise lost,
// its reply unmatched — whenever the sender happened to read it.
func (m *mesh) answeredOrLate(s *stream, r probe.Result) {
	if r.RTT > m.cfg.Timeout {
		m.lost(s, r)
		m.unmatched.Add(1)
		return
	}
	m.account(s, r)
}

// lost accounts for a lost probe of s: in its group and window, and its
// UDP source port among the pair's faulty ones.
func (m *mesh) lost(s *stream, r probe.Result) {
	m.add(s, fleet.Counts{Lost: 1})
	s.faults.add(r.Sent.Sport, 1, 0)
	s.lostRun++
}

// peerDownRun is the most probes lost in a row, each on its own UDP
// source port, that peerDown takes from a live peer: one behind a spine
// that loses every probe crossing it, of W spines, loses that many ports
// in a row with probability W^-16 (1 in 65,536 with 2 spines).
const peerDownRun = 16

// peerDown says s's peer, or every path to it, looks down: the stream
// never had an answer, or lost its latest probes on peerDownRun ports in
// a row (all of its ports, with fewer; a pair's probes cycle through its
// ports). Then no trace of its ports applies to its losses — one from
// before the peer went down names the spine its port took then, which
// says nothing of a dead NIC — and /pairs and roce_probe_traced_sports
// show its faulty ports untraced (the tracer does not trace such a pair
// either: traceCandidates). A new stream (the peer sampled again after a
// round without it) counts from its own first probe: the traces the
// agent keeps are by destination and port, the stream's counts are not.
func (s *stream) peerDown() bool {
	return !s.answered || s.lostRun >= uint32(min(max(s.plan.Sports, 1), peerDownRun))
}

// tracedPort is what the automatic trace of s's port sport found, when
// one applies to the pair's losses now (peerDown).
func (m *mesh) tracedPort(s *stream, sport uint16) (sportTrace, bool) {
	if m.traced == nil || s.peerDown() {
		return sportTrace{}, false
	}
	return m.traced(s.peer.Addr, sport)
}

// flush is finalize at the end of a prober: answered probes are accounted
// for, those still waiting abandoned.
func (m *mesh) flush(s *stream, now time.Time) {
	if s.prober == nil {
		return
	}
	m.finalize(s, now)
	for seq := s.prober.Released(); seq != s.next; seq++ {
		if slices.Contains(s.failed, seq) {
			continue
		}
		if r := s.prober.Result(seq); r.Received != nil {
			m.answeredOrLate(s, r)
		}
	}
	s.prober.Release(s.next)
	s.failed = nil
}

// account records one answered probe: in its group, the RTT of its
// scope, its marking events (a mate's own, or its peer ToR's), and a
// mate's received markings.
func (m *mesh) account(s *stream, r probe.Result) {
	m.add(s, fleet.Counts{Answered: 1})
	s.lostRun, s.answered = 0, true
	s.rtt.Observe(r.RTT.Seconds())
	recv := *r.Received
	s.lastRecv, s.lastRTT = &recv, r.RTT
	remarked := false
	for _, f := range probe.Compare(r.Sent, r.Received) {
		// DSCP or ECN other than sent (not CE: congestion): what a
		// trace of the port can locate.
		remarked = remarked || f.Kind == probe.FindingDSCPRemarked || f.Kind == probe.FindingECNChanged
		field, event, ok := markingEvent(f.Kind)
		switch {
		case !ok:
		case s.mate():
			if s.events == nil {
				s.events = map[[2]string]bool{}
			}
			s.events[[2]string{field, event}] = true
			m.m.events.WithLabelValues(s.peer.Name, s.flow, field, event).Inc()
		default:
			m.m.torEvents.WithLabelValues(s.flow, s.plan.Kind.String(), s.fp.ToR, field, event).Inc()
		}
	}
	if remarked {
		s.faults.add(r.Sent.Sport, 0, 1)
	}
	if !s.mate() {
		return
	}
	vs, oks := fieldValues(recv)
	for i, v := range vs {
		switch {
		case oks[i] && s.recv[i] == nil:
			s.recv[i] = m.m.received.WithLabelValues(s.peer.Name, s.flow, markingFields[i])
			fallthrough
		case oks[i]:
			s.recv[i].Set(v)
		case s.recv[i] != nil:
			m.m.received.DeleteLabelValues(s.peer.Name, s.flow, markingFields[i])
			s.recv[i] = nil
		}
	}
}

// Each wake-up reads, per port, every frame that arrived before it began
// (so a reply that came within probe.timeout is answered however late the
// sender reads it) and stops at the first batch holding one that arrived
// after: a flood of frames passing the socket's reply filter (forged
// replies) cannot keep the sender reading, since the frames that arrived
// before a wake-up are what the socket's bounded receive buffer held.
// drainMax bounds it again should the receive times say nothing. Frames
// are read drainBatch at a time with m.mu released in between (a scrape
// or a host read waits for one batch, not for the socket to empty).
const (
	drainBatch = 256
	drainMax   = 1 << 16
)

// drain reads the replies waiting on every port, those that arrived before
// it began, and accounts for them.
func (m *mesh) drain() {
	m.mu.Lock()
	from := m.now()
	ports := m.drainBuf[:0]
	for name, p := range m.ports {
		ports = append(ports, drainPort{name, p})
	}
	m.drainBuf = ports
	m.mu.Unlock()
	past := false // a frame that arrived after from was handled
	reply := func(frame []byte, at time.Time) {
		past = past || at.After(from)
		m.replyFrame(frame, at)
	}
	for _, dp := range ports {
		past = false
		for total := 0; total < drainMax; {
			m.mu.Lock()
			n, err := dp.p.Drain(min(drainBatch, drainMax-total), reply)
			m.mu.Unlock()
			total += n
			if err != nil {
				if m.portFailed != nil {
					m.portFailed(dp.netdev, dp.p, err)
				}
				break
			}
			if n < drainBatch || past {
				break
			}
		}
	}
	clear(ports) // no socket is held between wake-ups
}

// replyFrame is one captured frame of a mesh port (a reply, by the
// socket's filter); m.mu is held.
func (m *mesh) replyFrame(frame []byte, at time.Time) {
	f, err := probe.ParseFrame(frame)
	if err != nil {
		m.unmatched.Add(1)
		return
	}
	pl, err := probe.ParsePayload(f.Payload)
	if err != nil || pl.Kind != probe.KindReply {
		m.unmatched.Add(1)
		return
	}
	if at.IsZero() {
		at = m.now()
	}
	s := m.sessions[pl.Session]
	if s == nil {
		m.unmatched.Add(1)
		return
	}
	if _, ok := s.prober.MatchParsed(f, pl, at); !ok {
		m.unmatched.Add(1)
		return
	}
	if pl.ToR != "" && m.learned != nil {
		m.learned.set(s.peer.Addr, pl.ToR, s.peer.ToR)
	}
	m.finalize(s, m.now())
}

// write is one probe to send.
type write struct {
	s     *stream
	port  Port
	frame []byte
	seq   uint32
	at    time.Time // when send's write of it ended (zero: it failed)
}

// due takes the streams due by now (and within the batch window), builds
// their probes, schedules their next ones, and returns the probes (valid
// until the next call) and when the next stream is due.
func (m *mesh) due(now time.Time) ([]write, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.writes) // no stream or frame held from the last batch
	out := m.writes[:0]
	defer func() { m.writes = out }()
	horizon := now.Add(m.batch())
	for len(m.h) > 0 && !m.h[0].due.After(horizon) {
		s := m.h[0]
		if w, ok := m.probeOne(s, now); ok {
			out = append(out, w)
		}
		s.due = s.due.Add(m.jittered(s))
		if s.due.Before(now) { // fell behind (a stalled process): no burst
			s.due = now.Add(m.jittered(s))
		}
		heap.Fix(&m.h, 0)
	}
	next := now.Add(time.Hour)
	if len(m.h) > 0 {
		next = m.h[0].due
	}
	return out, next
}

// probeOne builds s's next probe, or counts why it cannot go.
func (m *mesh) probeOne(s *stream, now time.Time) (write, bool) {
	m.finalize(s, now)
	fail := func(reason string) (write, bool) {
		m.m.probeErrors.WithLabelValues(reason).Inc()
		return write{}, false
	}
	if s.tgt.reason != "" {
		return fail(s.tgt.reason)
	}
	port := m.ports[s.tgt.wire]
	if port == nil {
		return fail(reasonNoCapture)
	}
	if !m.limiter.Allow(s.peer.Addr) {
		return fail(reasonRateLimited)
	}
	marks := s.tgt.marks
	marks.Sport = s.plan.Sport(s.next) // each probe on the next of the target's ports: every ECMP path
	frame, seq, err := s.prober.Next(marks, now)
	if err != nil {
		return fail(reasonBuildFailed)
	}
	s.next = seq + 1
	return write{s: s, port: port, frame: frame, seq: seq}, true
}

// inFlight reports whether w's probe is still one its stream waits for:
// the stream is current and the probe neither released nor superseded.
// m.mu must be held.
func (m *mesh) inFlight(w write) bool {
	return m.streams[w.s.key] == w.s && w.s.prober != nil && w.s.prober.Released() <= w.seq && w.seq < w.s.next
}

// sendFailed records that the socket refused probe seq of s.
func (m *mesh) sendFailed(w write) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inFlight(w) {
		w.s.failed = append(w.s.failed, w.seq)
	}
	m.m.probeErrors.WithLabelValues(reasonSendFailed).Inc()
}

// wakeUp is what the sender does each time it wakes: it accounts for the
// replies waiting first (a probe answered in time is not counted lost
// because its reply was read late), then takes the probes due.
func (m *mesh) wakeUp() ([]write, time.Time) {
	m.drain()
	return m.due(m.now())
}

// send writes a batch of probes, then records when each one left: a
// probe's round-trip time is from the end of its own write, not from the
// start of the batch (tens of writes take tens of microseconds, the scale
// of a RoCE fabric's round trips).
func (m *mesh) send(ws []write) {
	for i := range ws {
		w := &ws[i]
		if err := w.port.Write(w.frame); err != nil {
			m.sendFailed(*w)
			continue
		}
		w.at = m.now()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range ws {
		if w.at.IsZero() || m.streams[w.s.key] != w.s {
			continue // failed, or its stream went meanwhile (its group too)
		}
		m.add(w.s, fleet.Counts{Sent: 1})
		if m.inFlight(w) {
			w.s.prober.SetSentAt(w.seq, w.at)
		}
	}
}

// run sends probes until stop is closed.
func (m *mesh) run(stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ws, next := m.wakeUp()
		m.send(ws)
		d := m.sleep(next)
		timer.Reset(d)
		asked := m.now().Add(d)
		select {
		case <-stop:
			return
		case <-timer.C:
			m.wakeups.Add(1)
			if m.now().Sub(asked) > lateWakeup {
				m.late.Add(1)
			}
		case <-m.wake:
		}
	}
}

// targets returns every stream's current target.
func (m *mesh) targets() map[streamKey]target {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[streamKey]target, len(m.streams))
	for k, s := range m.streams {
		out[k] = s.tgt
	}
	return out
}

// count returns the number of streams, without waiting for the mesh.
func (m *mesh) count() int { return int(m.nstreams.Load()) }

// lateWakeup is how much later than asked a timer wake-up of the sender
// may come before it counts as late (the Governor's Late).
const lateWakeup = 50 * time.Millisecond

// close accounts for every stream's answered probes.
func (m *mesh) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for _, s := range m.streams {
		m.flush(s, now)
	}
}

// targetFrame is the template of probes from src (MAC smac) with tags to
// dst (MAC dmac).
func targetFrame(smac, dmac net.HardwareAddr, tags []roce.VLANTag, src, dst netip.Addr) probe.Frame {
	return probe.Frame{SrcMAC: smac, DstMAC: dmac, Tags: tags, Src: src, Dst: dst}
}

// counts returns, for a scrape, the aggregator's groups, the peer names of
// the streams and the k worst pairs: O(groups + streams) under m.mu.
func (m *mesh) counts(k int) ([]fleet.GroupCounts, map[streamKey]string, []fleet.PairStat) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make(map[streamKey]string, len(m.streams))
	pairs := make([]fleet.PairStat, 0, len(m.streams))
	for key, s := range m.streams {
		names[key] = s.peer.Name
		pairs = append(pairs, fleet.PairStat{Flow: s.flow, Peer: s.fp, Kind: s.plan.Kind, Counts: s.win.Total()})
	}
	return m.agg.Groups(), names, fleet.Worst(pairs, k)
}

// pairJSON is one probed pair on /pairs (docs/json.md, "agent_pair").
type pairJSON struct {
	Peer      string              `json:"peer"`
	Address   string              `json:"address"`
	ToR       *string             `json:"tor"`
	Flow      string              `json:"flow"`
	Scope     string              `json:"scope"`
	Rate      float64             `json:"rate"`
	Sports    int                 `json:"sports"`
	Probes    uint64              `json:"probes"`
	Answered  uint64              `json:"answered"`
	Lost      uint64              `json:"lost"`
	LossRatio *float64            `json:"loss_ratio"`
	RTT       *float64            `json:"rtt_us"`
	SentMarks *probe.MarkingsJSON `json:"sent"`
	Received  *probe.MarkingsJSON `json:"received"`
	Error     *string             `json:"error"`
	// SportFaults are its UDP source ports that lost probes or saw them
	// remarked, with what a trace of each found.
	SportFaults []sportFaultJSON `json:"sport_faults"`
}

// sportFaultJSON is one faulty UDP source port of a pair on /pairs
// (docs/json.md, "agent_sport_fault").
type sportFaultJSON struct {
	Sport    uint16        `json:"udp_sport"`
	Lost     uint64        `json:"lost"`
	Remarked uint64        `json:"remarked"`
	Traced   bool          `json:"traced"`
	Spine    *string       `json:"spine"`
	Remark   *trace.Change `json:"remark"`
}

// pairs returns every stream as /pairs shows it, by peer address and
// flow: the counts of the current and the last round (sent: as the
// window holds them), the last answered probe's RTT and markings.
func (m *mesh) pairs() []pairJSON {
	m.mu.Lock()
	defer m.mu.Unlock()
	scale := m.scale()
	out := make([]pairJSON, 0, len(m.streams))
	for _, s := range m.streams {
		t := s.win.Total()
		p := pairJSON{Peer: s.peer.Name, Address: s.peer.Addr.String(), Flow: s.flow, Scope: s.plan.Kind.String(),
			Rate: s.plan.Rate * scale, Sports: s.plan.Sports, Probes: t.Sent, Answered: t.Answered, Lost: t.Lost}
		if s.fp.ToR != "" {
			tor := s.fp.ToR
			p.ToR = &tor
		}
		if t.Answered+t.Lost > 0 {
			r := fleet.PairStat{Counts: t}.LossRatio()
			p.LossRatio = &r
		}
		if s.lastRecv != nil {
			rtt := float64(s.lastRTT.Nanoseconds()) / 1e3
			p.RTT, p.Received = &rtt, s.lastRecv.JSON(nil)
		}
		p.SportFaults = []sportFaultJSON{}
		for _, f := range s.faults.total() {
			j := sportFaultJSON{Sport: f.sport, Lost: f.lost, Remarked: f.remarked}
			if st, ok := m.tracedPort(s, f.sport); ok {
				j.Traced, j.Remark = true, st.remark
				if st.spine != "" {
					sp := st.spine
					j.Spine = &sp
				}
			}
			p.SportFaults = append(p.SportFaults, j)
		}
		if s.tgt.reason == "" {
			m := s.tgt.marks
			m.Sport = s.plan.Sport(max(s.next, 1) - 1) // the last probe's port
			p.SentMarks = m.JSON(nil)
		} else {
			e := s.tgt.reason
			p.Error = &e
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b pairJSON) int {
		return cmp.Or(netip.MustParseAddr(a.Address).Compare(netip.MustParseAddr(b.Address)), cmp.Compare(a.Flow, b.Flow))
	})
	return out
}

// traceCandidates are the inter-ToR pairs that can be probed and lost
// probes or saw them remarked on some UDP source ports and whose peer
// answered its latest probe (not a dead peer's), with the
// endpoint and markings their probes go with: O(streams) under m.mu.
func (m *mesh) traceCandidates() []traceCandidate {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []traceCandidate
	for _, s := range m.streams {
		if s.plan.Kind != fleet.InterToR || s.tgt.reason != "" {
			continue
		}
		faults := s.faults.total()
		if len(faults) == 0 {
			continue
		}
		if !s.answered || s.lostRun > 0 {
			// Its latest probe was lost: only a pair whose peer still
			// answers is traced. A peer that went down (or every path to
			// it) loses every port from then on, which a trace of its
			// paths cannot pin on a spine; its probes in every direction
			// name it (fabric.Localize). A pair that loses some ports
			// answers on the others, and is a candidate again at its
			// next answer.
			continue
		}
		f := s.tgt.frame
		ep := probe.Endpoint{Netdev: s.tgt.wire, Wire: s.tgt.wire, Tags: slices.Clone(f.Tags), SrcMAC: slices.Clone(f.SrcMAC),
			DstMAC: slices.Clone(f.DstMAC), Src: f.Src, Dst: f.Dst}
		out = append(out, traceCandidate{peer: s.peer.Name, ep: ep, base: s.tgt.marks, faults: faults})
	}
	return out
}

// currentRound is the plan's round of the last sync.
func (m *mesh) currentRound() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.round
}

// maxTracedSeries bounds each of the traced-fault metrics
// (roce_probe_traced_sports, roce_probe_traced_remarks) to this many
// label sets per agent, whatever the fleet, its spines or its faults: the
// ones with the most ports are kept (then in label order), the others'
// ports are left out (/pairs has them all).
const maxTracedSeries = 16

// tracedSports is one label set of roce_probe_traced_sports: a pair's
// faulty UDP source ports of one event whose trace crossed spine.
type tracedSports struct {
	flow, peer, address, peerToR, spine, event string
}

// tracedRemark is one label set of roce_probe_traced_remarks: a pair's
// remarked UDP source ports whose trace saw the same change.
type tracedRemark struct {
	flow, peer, address, peerToR, spine string
	field                               string
	from, to                            int
	before, at                          string
	beforeTTL, atTTL                    int
}

// tracedFaults counts, for a scrape, the faulty UDP source ports of the
// current window (the pairs' sport_faults, as /pairs shows them) whose
// automatic trace found a spine (by pair, spine and event: lost,
// remarked) or a DSCP or ECN change (by pair and change), each at most
// maxTracedSeries label sets, the most ports first: O(streams) under
// m.mu.
func (m *mesh) tracedFaults() (map[tracedSports]int, map[tracedRemark]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	sports, remarks := map[tracedSports]int{}, map[tracedRemark]int{}
	if m.traced == nil {
		return sports, remarks
	}
	for _, s := range m.streams {
		for _, f := range s.faults.total() {
			st, ok := m.tracedPort(s, f.sport)
			if !ok {
				continue
			}
			if st.spine != "" {
				k := tracedSports{s.flow, s.peer.Name, s.peer.Addr.String(), s.fp.ToR, st.spine, ""}
				if f.lost > 0 {
					k.event = "lost"
					sports[k]++
				}
				if f.remarked > 0 {
					k.event = "remarked"
					sports[k]++
				}
			}
			if r := st.remark; r != nil && f.remarked > 0 {
				k := tracedRemark{flow: s.flow, peer: s.peer.Name, address: s.peer.Addr.String(), peerToR: s.fp.ToR, spine: st.spine,
					field: r.Field, from: r.From, to: r.To, before: addrLabel(r.BeforeAddress), at: addrLabel(r.AtAddress),
					beforeTTL: r.Before, atTTL: r.At}
				remarks[k]++
			}
		}
	}
	return keepMost(sports, maxTracedSeries, func(a, b tracedSports) int {
			return cmp.Or(cmp.Compare(a.flow, b.flow), cmp.Compare(a.address, b.address), cmp.Compare(a.spine, b.spine), cmp.Compare(a.event, b.event))
		}), keepMost(remarks, maxTracedSeries, func(a, b tracedRemark) int {
			return cmp.Or(cmp.Compare(a.flow, b.flow), cmp.Compare(a.address, b.address), cmp.Compare(a.spine, b.spine),
				cmp.Compare(a.field, b.field), cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to),
				cmp.Compare(a.before, b.before), cmp.Compare(a.at, b.at), cmp.Compare(a.beforeTTL, b.beforeTTL), cmp.Compare(a.atTTL, b.atTTL))
		})
}

// addrLabel is an address as a label value: "" when not known.
func addrLabel(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.Unmap().String()
}

// keepMost keeps the n keys of counts with the most, ties by cmpKey.
func keepMost[K comparable](counts map[K]int, n int, cmpKey func(a, b K) int) map[K]int {
	if len(counts) <= n {
		return counts
	}
	keys := make([]K, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), cmpKey(a, b)) })
	out := make(map[K]int, n)
	for _, k := range keys[:n] {
		out[k] = counts[k]
	}
	return out
}
