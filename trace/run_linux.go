//go:build linux

package trace

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/probe"
)

// icmpConn is a raw ICMP or ICMPv6 socket in Go's network poller: the
// kernel hands it a copy of every ICMP message the namespace receives.
type icmpConn struct {
	f    *os.File
	rc   syscall.RawConn
	ipv6 bool
	buf  []byte
	oob  []byte
}

// openICMP opens the raw socket of dst's family. It needs CAP_NET_RAW (a
// *probe.PermissionError says so).
func openICMP(netdev string, ipv6 bool) (*icmpConn, error) {
	fam, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if ipv6 {
		fam, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	fd, err := unix.Socket(fam, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, &probe.PermissionError{Netdev: netdev, Err: err}
		}
		return nil, fmt.Errorf("trace: opening a raw ICMP socket: %w", err)
	}
	if ipv6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVHOPLIMIT, 1); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("trace: asking for hop limits (IPV6_RECVHOPLIMIT): %w", err)
		}
	}
	f := os.NewFile(uintptr(fd), "icmp")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: raw ICMP socket: %w", err)
	}
	return &icmpConn{f: f, rc: rc, ipv6: ipv6, buf: make([]byte, 2048), oob: make([]byte, unix.CmsgSpace(4))}, nil
}

// icmpMsg is one ICMP message read: its body from the type byte, who sent
// it, the TTL / hop limit it arrived with (0: not known) and when.
type icmpMsg struct {
	body []byte
	from netip.Addr
	ttl  uint8
	at   time.Time
}

// read returns the next message, or a nil body when none came within d.
func (c *icmpConn) read(d time.Duration) (icmpMsg, error) {
	var m icmpMsg
	if err := c.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		return m, err
	}
	var n, oobn int
	var from unix.Sockaddr
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, from, rerr = unix.Recvmsg(int(fd), c.buf, c.oob, unix.MSG_DONTWAIT)
		return rerr != unix.EAGAIN && rerr != unix.EINTR
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return m, nil
	}
	if err == nil {
		err = rerr
	}
	if err != nil {
		return m, err
	}
	m.at = time.Now()
	b := c.buf[:n]
	if c.ipv6 {
		if sa, ok := from.(*unix.SockaddrInet6); ok {
			m.from = netip.AddrFrom16(sa.Addr)
		}
		if cms, err := unix.ParseSocketControlMessage(c.oob[:oobn]); err == nil {
			for _, cm := range cms {
				if cm.Header.Level == unix.IPPROTO_IPV6 && cm.Header.Type == unix.IPV6_HOPLIMIT && len(cm.Data) >= 4 {
					m.ttl = uint8(*(*int32)(unsafe.Pointer(&cm.Data[0])))
				}
			}
		}
	} else {
		// An IPv4 raw socket hands over the IP header too.
		if len(b) < 20 || int(b[0]&0x0f)*4 > len(b) {
			return m, nil
		}
		m.ttl = b[8]
		m.from = netip.AddrFrom4([4]byte(b[12:16]))
		b = b[int(b[0]&0x0f)*4:]
	}
	m.body = append([]byte(nil), b...)
	return m, nil
}

// sentProbe is one probe sent, for matching what comes back.
type sentProbe struct {
	id   ProbeID
	port int // index into run.ports
	ttl  int
	at   time.Time
}

// hopState is one TTL of one port.
type hopState struct {
	tries    int
	inflight bool
	deadline time.Time
	final    bool
	// provisional: the destination answered with Port Unreachable;
	// its listener's reply, with every marking, may still come until
	// deadline.
	provisional bool
	hop         Hop
}

// replyGrace is how long a destination that answered Port Unreachable
// is given for its listener's probe reply (the kernel's ICMP and the
// listener's reply leave at about the same time).
const replyGrace = 100 * time.Millisecond

// portState is the trace of one UDP source port.
type portState struct {
	sport   uint16
	hops    []hopState // by TTL-1
	end     int        // the TTL the trace ends at (destination or unreachable); 0 not yet known
	started bool
	done    bool
}

// run is the state of one Run, owned by its loop goroutine.
type run struct {
	cfg    Config
	prober *probe.Prober
	sent   []sentProbe
	bySeq  map[uint32]int
	ports  []*portState
	res    Result
	tokens float64
	last   time.Time
	// What the last step left for later: a probe held back for want of
	// a token, ports started (their probes go at the next step).
	heldBack, startedPorts bool
}

// event is something a reader goroutine saw.
type event struct {
	icmp  *icmpMsg
	reply []byte
	at    time.Time
	err   error
}

// Run traces the paths from cfg.Endpoint to its destination (see the
// package doc) and returns what it found; ctx ends it early with what was
// found so far and ctx's error. It needs CAP_NET_RAW (a
// *probe.PermissionError says so). It keeps no state between calls and
// sends nothing but probes to cfg.Endpoint.Dst.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	ep := cfg.Endpoint
	base := cfg.Base
	base.Tagged = len(ep.Tags) > 0
	if base.Tagged {
		base.VLAN = ep.Tags[0].ID
	} else {
		base.VLAN, base.PCP = 0, 0
	}
	base.IPv6 = !ep.Dst.Unmap().Is4()
	tags := append(ep.Tags[:0:0], ep.Tags...)
	for i := range tags {
		tags[i].PCP = base.PCP
	}
	p, err := probe.NewProber(probe.Frame{SrcMAC: ep.SrcMAC, DstMAC: ep.DstMAC, Tags: tags, Src: ep.Src, Dst: ep.Dst})
	if err != nil {
		return Result{}, err
	}
	sports := cfg.Sports
	if len(sports) == 0 && cfg.Paths <= 1 {
		sports = []uint16{probe.RandomSport()}
	}
	n := len(sports)
	if cfg.Paths > 1 {
		n = max(n, cfg.MaxPorts)
	}
	r := &run{cfg: cfg, prober: p, bySeq: map[uint32]int{}, tokens: 1,
		res: Result{Src: ep.Src.Unmap(), Dst: ep.Dst.Unmap(), Sent: base}}
	for _, s := range Ports(sports, n) {
		r.ports = append(r.ports, &portState{sport: s})
	}
	r.res.Sent.TTL, r.res.Sent.Sport = uint8(cfg.MaxHops), r.ports[0].sport

	ic, err := openICMP(ep.Wire, base.IPv6)
	if err != nil {
		return Result{}, err
	}
	defer ic.f.Close()
	rx, err := probe.OpenWith(ep.Wire, probe.Incoming, probe.OpenOptions{Select: probe.Replies})
	if err != nil {
		return Result{}, err
	}
	defer rx.Close()

	events := make(chan event, 64)
	readCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	defer func() {
		stop()
		rx.Close()
		ic.f.Close()
		<-done
		<-done
	}()
	push := func(e event) bool {
		select {
		case events <- e:
			return true
		case <-readCtx.Done():
			return false
		}
	}
	go func() {
		defer func() { done <- struct{}{} }()
		for readCtx.Err() == nil {
			m, err := ic.read(50 * time.Millisecond)
			if err != nil {
				push(event{err: fmt.Errorf("trace: reading ICMP: %w", err)})
				return
			}
			if m.body != nil && !push(event{icmp: &m, at: m.at}) {
				return
			}
		}
	}()
	go func() {
		defer func() { done <- struct{}{} }()
		for readCtx.Err() == nil {
			frame, at, err := rx.Read()
			if err != nil {
				if !errors.Is(err, probe.ErrClosed) {
					push(event{err: err})
				}
				return
			}
			if frame != nil && !push(event{reply: frame, at: at}) {
				return
			}
		}
	}()

	// The loop wakes when step has something to do (a time-out, a token
	// for a waiting probe, a port to start) and soon after an answer, not
	// on a fixed tick: a trace of a destination that answers nothing
	// waits out its time-outs asleep (an agent runs traces in the
	// background: docs/performance.md).
	wake := time.NewTimer(0)
	defer wake.Stop()
	due := time.Now()
	r.last = due
	for {
		select {
		case <-ctx.Done():
			r.finish(time.Now(), "interrupted")
			return r.res, ctx.Err()
		case e := <-events:
			if e.err != nil {
				r.finish(time.Now(), "error")
				return r.res, e.err
			}
			var ours bool
			if e.icmp != nil {
				ours = r.onICMP(*e.icmp)
			} else {
				ours = r.onReply(e.reply, e.at)
			}
			// An answer may free a window slot or end a port: step soon
			// (answers in a burst share one step). Others' packets (the
			// mesh's replies, the host's ICMP errors) change nothing.
			if soon := time.Now().Add(answerStep); ours && soon.Before(due) {
				due = soon
				wake.Reset(answerStep)
			}
		case now := <-wake.C:
			over, err := r.step(now, rx)
			if err != nil || over {
				return r.res, err
			}
			due = r.nextStep(now)
			wake.Reset(due.Sub(now))
		}
	}
}

// answerStep is how soon after an answer the run steps; maxStepGap is the
// longest it sleeps between steps whatever it waits for.
const (
	answerStep = 2 * time.Millisecond
	maxStepGap = 100 * time.Millisecond
)

// nextStep is when step has something to do next, after the step at now:
// at once when it started ports (their first probes) or once a token
// comes for a probe it held back, else at the earliest time-out of a probe
// in flight; at most maxStepGap away.
func (r *run) nextStep(now time.Time) time.Time {
	if r.startedPorts {
		return now.Add(time.Millisecond)
	}
	gap := maxStepGap
	if r.heldBack {
		gap = min(gap, time.Duration((1-r.tokens)/r.cfg.Rate*float64(time.Second)))
	}
	for _, ps := range r.ports {
		if !ps.started || ps.done {
			continue
		}
		for t := range ps.hops {
			if h := &ps.hops[t]; h.inflight && !h.final {
				gap = min(gap, h.deadline.Sub(now)+time.Millisecond) // step's test is After
			}
		}
	}
	return now.Add(max(gap, time.Millisecond))
}

// send builds and writes the probe of port pi at ttl.
func (r *run) send(now time.Time, pi, ttl int, w interface{ Write([]byte) error }) error {
	ps := r.ports[pi]
	m := r.res.Sent
	m.TTL, m.Sport = uint8(ttl), ps.sport
	// Each TTL's probe has its own length, so that a quote showing only
	// the IP and UDP headers still tells which TTL it quotes.
	r.prober.PayloadLen = probe.PayloadLen + 4*(ttl-1)
	frame, seq, err := r.prober.Next(m, now)
	if err != nil {
		return err
	}
	id, err := IDOf(frame, r.prober.Session(), seq)
	if err != nil {
		return err
	}
	if err := w.Write(frame); err != nil {
		return err
	}
	r.bySeq[seq] = len(r.sent)
	r.sent = append(r.sent, sentProbe{id: id, port: pi, ttl: ttl, at: now})
	h := &ps.hops[ttl-1]
	h.tries++
	h.inflight = true
	h.deadline = now.Add(r.cfg.Timeout << (h.tries - 1))
	r.res.Probes++
	return nil
}

// answer records an answer to probe i.
func (r *run) answer(i int, h Hop) {
	sp := r.sent[i]
	ps := r.ports[sp.port]
	hs := &ps.hops[sp.ttl-1]
	if ps.done || hs.final {
		return
	}
	h.TTL, h.Tries = sp.ttl, hs.tries
	if h.Status == HopDestination && h.Arrived == nil {
		if !hs.provisional {
			hs.provisional, hs.hop = true, h
			hs.inflight, hs.deadline = true, h.at(sp.at).Add(replyGrace)
		}
	} else {
		hs.final, hs.inflight, hs.provisional, hs.hop = true, false, false, h
	}
	switch h.Status {
	case HopDestination, HopUnreachable:
		if ps.end == 0 || sp.ttl < ps.end {
			ps.end = sp.ttl
		}
	}
}

// onICMP takes a router's or the destination's ICMP answer; it reports
// whether it answered one of the run's probes.
func (r *run) onICMP(m icmpMsg) bool {
	q, err := ParseICMP(m.body, r.res.Sent.IPv6)
	if err != nil {
		return false
	}
	ids := make([]ProbeID, len(r.sent))
	for i, s := range r.sent {
		ids[i] = s.id
	}
	i, ok := Match(q, ids)
	if !ok {
		if q.HasAddrs && q.Src == r.res.Src && q.Dst == r.res.Dst {
			r.res.Unmatched++
		}
		return false
	}
	h := Hop{Address: m.from, RTT: m.at.Sub(r.sent[i].at), Quote: &q, ReplyTTL: m.ttl}
	switch {
	case q.Kind == TimeExceeded:
		h.Status = HopTimeExceeded
	case m.from == r.res.Dst:
		h.Status = HopDestination
	default:
		h.Status = HopUnreachable
	}
	r.answer(i, h)
	return true
}

// onReply takes a listener's reply; it reports whether it answered one of
// the run's probes.
func (r *run) onReply(frame []byte, at time.Time) bool {
	f, err := probe.ParseFrame(frame)
	if err != nil {
		return false
	}
	pl, err := probe.ParsePayload(f.Payload)
	if err != nil {
		return false
	}
	seq, ok := r.prober.MatchParsed(f, pl, at)
	if !ok {
		return false
	}
	i, ok := r.bySeq[seq]
	if !ok {
		return false
	}
	arrived := pl.Received
	r.answer(i, Hop{Status: HopDestination, Address: f.Src, RTT: at.Sub(r.sent[i].at), Arrived: &arrived, ReplyTTL: f.TTL})
	return true
}

// step does what is due at now: time-outs, retries, new TTLs and ports,
// within the rate. It reports whether the run is over.
func (r *run) step(now time.Time, w interface{ Write([]byte) error }) (bool, error) {
	r.tokens = min(r.tokens+now.Sub(r.last).Seconds()*r.cfg.Rate, max(1, r.cfg.Rate/10))
	r.last = now
	r.heldBack, r.startedPorts = false, false
	active := 0
	for pi, ps := range r.ports {
		if !ps.started || ps.done {
			continue
		}
		// Time-outs: try again (the longer wait is the back-off) or give up.
		for t := range ps.hops {
			h := &ps.hops[t]
			if h.inflight && !h.final && now.After(h.deadline) {
				h.inflight = false
				if h.provisional {
					h.final = true
				} else if h.tries >= r.cfg.Tries {
					h.final = true
					h.hop = Hop{TTL: t + 1, Status: HopSilent, Tries: h.tries}
				}
			}
		}
		limit := r.limit(ps)
		inflight, pending := 0, false
		for t := 0; t < limit && t < len(ps.hops); t++ {
			h := &ps.hops[t]
			if h.final {
				continue
			}
			pending = true
			if h.inflight {
				inflight++
			} else if r.tokens >= 1 { // a retry
				if err := r.send(now, pi, t+1, w); err != nil {
					return true, r.fail(now, err)
				}
				r.tokens--
				inflight++
			} else {
				r.heldBack = true
			}
		}
		// New TTLs, within the window.
		for len(ps.hops) < limit && inflight < r.cfg.Window && r.tokens >= 1 {
			ps.hops = append(ps.hops, hopState{})
			if err := r.send(now, pi, len(ps.hops), w); err != nil {
				return true, r.fail(now, err)
			}
			r.tokens--
			inflight++
			pending = true
		}
		if len(ps.hops) < limit && inflight < r.cfg.Window && r.tokens < 1 {
			r.heldBack = true
		}
		if !pending && len(ps.hops) >= limit {
			r.complete(ps)
			continue
		}
		active++
	}
	// Start ports while fewer than Parallel run and the search goes on.
	for _, ps := range r.ports {
		if active >= r.cfg.Parallel || r.res.Stop != "" {
			break
		}
		if !ps.started {
			ps.started, r.startedPorts = true, true
			r.res.PortsTried++
			active++
		}
	}
	if active == 0 {
		r.finish(now, "")
		return true, nil
	}
	return false, nil
}

// limit is how many TTLs port ps traces: up to where it ends, at most
// MaxHops, and no further than SilentLimit silent hops past its last
// answer.
func (r *run) limit(ps *portState) int {
	if ps.end > 0 {
		return ps.end
	}
	silent := 0
	for t := len(ps.hops) - 1; t >= 0; t-- {
		h := ps.hops[t]
		if !h.final || h.hop.Status != HopSilent {
			break
		}
		silent++
	}
	if silent >= r.cfg.SilentLimit {
		return len(ps.hops)
	}
	return r.cfg.MaxHops
}

// complete ends port ps's trace and adds it to the paths; it decides
// whether the search goes on.
func (r *run) complete(ps *portState) {
	ps.done = true
	n := len(ps.hops)
	if ps.end > 0 {
		n = ps.end
	}
	hops := make([]Hop, 0, n)
	for t := 0; t < n; t++ {
		hops = append(hops, ps.hops[t].hop)
	}
	r.res.Traces = append(r.res.Traces, Trace{Sport: ps.sport, Hops: hops})
	r.res.Paths, _ = Group(r.res.Paths, ps.sport, hops)
	r.decide()
}

// decide sets Result.Stop once the search is over.
func (r *run) decide() {
	if r.res.Stop != "" {
		return
	}
	var done []*portState
	for _, ps := range r.ports {
		if ps.done {
			done = append(done, ps)
		}
	}
	found := len(r.res.Paths)
	switch {
	case r.cfg.Paths <= 1 && len(done) >= len(r.cfg.Sports) && len(r.cfg.Sports) > 0,
		r.cfg.Paths <= 1 && len(r.cfg.Sports) == 0:
		r.res.Stop = "traced every port asked for"
	case r.cfg.Paths > 1 && found >= r.cfg.Paths:
		r.res.Stop = fmt.Sprintf("found the %d paths asked for", r.cfg.Paths)
	case r.cfg.Paths > 1:
		// The ports finished last, in the order they finished: how many
		// in a row found no new path.
		if m := r.sinceNew(); m >= PortsWithoutNewPath(found) && len(done) >= r.cfg.MinPorts {
			r.res.Stop = fmt.Sprintf("%d ports in a row found no new path (with %d paths, %.0f%% sure none is missed if ECMP spreads evenly)",
				m, found, Confidence*100)
		}
	}
	if r.res.Stop == "" && len(done) == len(r.ports) {
		r.res.Stop = fmt.Sprintf("tried the most ports (%d)", len(r.ports))
	}
}

// sinceNew is how many finished ports since the last one that found a new
// path (ports in the order they were tried).
func (r *run) sinceNew() int {
	first := map[uint16]bool{}
	for _, p := range r.res.Paths {
		first[p.Sport] = true
	}
	m := 0
	for _, ps := range r.ports {
		if !ps.done {
			continue
		}
		if first[ps.sport] {
			m = 0
		} else {
			m++
		}
	}
	return m
}

func (r *run) fail(now time.Time, err error) error {
	r.finish(now, "error")
	return err
}

// finish puts the traces of ports not complete into the result.
func (r *run) finish(now time.Time, why string) {
	for _, ps := range r.ports {
		if ps.started && !ps.done && why != "" {
			for t := range ps.hops {
				if !ps.hops[t].final {
					ps.hops[t].hop = Hop{TTL: t + 1, Status: HopSilent, Tries: ps.hops[t].tries}
					ps.hops[t].final = true
				}
			}
			r.complete(ps)
		}
	}
	if why != "" {
		r.res.Stop = why
	}
}

// at is when the answer came: sent plus the round trip.
func (h Hop) at(sent time.Time) time.Time { return sent.Add(h.RTT) }
