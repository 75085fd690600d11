package agent

import (
	"container/heap"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
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

// streamSpec is a (peer, flow) the agent should probe, and how.
type streamSpec struct {
	peer Peer
	flow string
	tgt  target
}

// stream is one (peer, flow) being probed.
type stream struct {
	key    streamKey
	peer   Peer
	flow   string
	tgt    target
	prober *probe.Prober // nil while tgt cannot send
	next   uint32        // sequence number of the prober's next probe
	failed []uint32      // probes the socket refused: neither answered nor lost
	due    time.Time
	hi     int // index in the heap

	sent, answered, lost prometheus.Counter
	rtt                  prometheus.Observer
	recv                 [5]prometheus.Gauge // by field index; nil when absent
}

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

// mesh probes every stream at the configured rate and accounts for the
// replies. One goroutine sends (run) and, each time it wakes, drains the
// replies waiting on its sockets first (drain); the control loop sets the
// streams (sync) and the sockets (setPort).
type mesh struct {
	cfg     ProbeConfig
	m       *meshMetrics
	log     *slog.Logger
	now     func() time.Time
	limiter *probe.RateLimiter
	wake    chan struct{}
	learned *learnedToRs // where the ToRs peers' replies tell go; nil: dropped

	mu       sync.Mutex
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

func newMesh(cfg ProbeConfig, m *meshMetrics, log *slog.Logger, now func() time.Time) (*mesh, error) {
	burst := max(cfg.MaxRate/10, 10)
	lim, err := probe.NewRateLimiter(probe.RateConfig{Rate: cfg.MaxRate, Burst: burst, GlobalRate: cfg.MaxRate, GlobalBurst: burst, Slots: 64})
	if err != nil {
		return nil, err
	}
	lim.Now = now
	ms := &mesh{cfg: cfg, m: m, log: log, now: now, limiter: lim, wake: make(chan struct{}, 1),
		streams: map[streamKey]*stream{}, sessions: map[uint64]*stream{}, ports: map[string]Port{},
		rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
	return ms, nil
}

func (m *mesh) period() time.Duration { return time.Duration(float64(time.Second) / m.cfg.Rate) }

// jittered is one interval between probes: the period ± jitter.
func (m *mesh) jittered() time.Duration {
	j := m.cfg.Jitter * (2*m.rng.Float64() - 1)
	return time.Duration(float64(m.period()) * (1 + j))
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

// sync makes the streams those of specs: new ones start at a random point
// of their first period, gone ones are accounted for and their series
// deleted, and a stream whose target changed gets a new prober (a new
// session; its probes in flight are neither answered nor lost).
func (m *mesh) sync(specs []streamSpec) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	want := make(map[streamKey]bool, len(specs))
	for _, sp := range specs {
		k := streamKey{sp.peer.Addr, sp.flow}
		want[k] = true
		s := m.streams[k]
		if s == nil {
			s = &stream{key: k, peer: sp.peer, flow: sp.flow, hi: -1}
			s.sent = m.m.sent.WithLabelValues(sp.peer.Name, sp.flow)
			s.answered = m.m.answered.WithLabelValues(sp.peer.Name, sp.flow)
			s.lost = m.m.lost.WithLabelValues(sp.peer.Name, sp.flow)
			s.rtt = m.m.rtt.WithLabelValues(sp.peer.Name, sp.flow)
			m.streams[k] = s
			s.due = now.Add(time.Duration(m.rng.Int64N(int64(m.period()) + 1)))
			heap.Push(&m.h, s)
			m.setTarget(s, sp.tgt, now)
			continue
		}
		if !sameTarget(s.tgt, sp.tgt) {
			m.setTarget(s, sp.tgt, now)
		}
	}
	for k, s := range m.streams {
		if want[k] {
			continue
		}
		m.flush(s, now)
		if s.prober != nil {
			delete(m.sessions, sessionOf(s))
		}
		heap.Remove(&m.h, s.hi)
		delete(m.streams, k)
		m.m.deleteStream(s.peer.Name, s.flow)
	}
	m.poke()
}

// sessionOf is the session ID of a stream's prober (as its probes carry it).
func sessionOf(s *stream) uint64 { return s.prober.Session() }

// setTarget gives s a new target: its probes in flight are accounted for
// or abandoned, a new prober starts, the sent markings are published.
func (m *mesh) setTarget(s *stream, t target, now time.Time) {
	if s.prober != nil {
		m.flush(s, now)
		delete(m.sessions, sessionOf(s))
		s.prober = nil
	}
	s.tgt = t
	m.m.sentMark.DeletePartialMatch(prometheus.Labels{"peer": s.peer.Name, "flow": s.flow})
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
	vs, oks := fieldValues(t.marks)
	for i, v := range vs {
		if oks[i] {
			m.m.sentMark.WithLabelValues(s.peer.Name, s.flow, markingFields[i]).Set(v)
		}
	}
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
			s.lost.Inc()
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
		s.lost.Inc()
		m.unmatched.Add(1)
		return
	}
	m.account(s, r)
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

// account records one answered probe.
func (m *mesh) account(s *stream, r probe.Result) {
	s.answered.Inc()
	s.rtt.Observe(r.RTT.Seconds())
	for _, f := range probe.Compare(r.Sent, r.Received) {
		if field, event, ok := markingEvent(f.Kind); ok {
			m.m.events.WithLabelValues(s.peer.Name, s.flow, field, event).Inc()
		}
	}
	vs, oks := fieldValues(*r.Received)
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
		m.learned.set(s.peer.Addr, pl.ToR)
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
		s.due = s.due.Add(m.jittered())
		if s.due.Before(now) { // fell behind (a stalled process): no burst
			s.due = now.Add(m.jittered())
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
		m.m.probeErrors.WithLabelValues(s.peer.Name, reason).Inc()
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
	frame, seq, err := s.prober.Next(s.tgt.marks, now)
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
	m.m.probeErrors.WithLabelValues(w.s.peer.Name, reasonSendFailed).Inc()
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
		w.s.sent.Inc()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range ws {
		if !w.at.IsZero() && m.inFlight(w) {
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
		timer.Reset(m.sleep(next))
		select {
		case <-stop:
			return
		case <-timer.C:
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

// count returns the number of streams.
func (m *mesh) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.streams)
}

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
