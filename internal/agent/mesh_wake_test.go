package agent

import (
	"container/heap"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/roce-probe/roce-probe/probe"
)

// scriptPort is a mesh port whose Drain hands out the frames queued on it
// with the arrival times they were queued with.
type scriptPort struct {
	queue []fakeFrame
	err   error
}

func (p *scriptPort) Read() ([]byte, time.Time, error) { return nil, time.Time{}, nil }
func (p *scriptPort) Close() error                     { return nil }
func (p *scriptPort) Write([]byte) error               { return nil }
func (p *scriptPort) Drain(max int, fn func([]byte, time.Time)) (int, error) {
	n := min(len(p.queue), max)
	for _, f := range p.queue[:n] {
		fn(f.b, f.at)
	}
	p.queue = p.queue[n:]
	return n, p.err
}

// testMesh is a mesh on the fake clock *now with port on eth0, one stream
// "rdma" (DSCP 26, TTL 64) to each of n peers p1, p2, ... at 192.0.2.2,
// 192.0.2.3, ..., and a Responder that answers for all of them.
func testMesh(t *testing.T, now *time.Time, port Port, n int) (*mesh, *testMeshMetrics, *probe.Responder, []Peer) {
	t.Helper()
	cfg := ProbeConfig{Rate: 1, Timeout: 500 * time.Millisecond, MaxRate: 100}
	m, err := newMesh(cfg, 16, newMeshMetrics(), slog.New(slog.DiscardHandler), func() time.Time { return *now })
	if err != nil {
		t.Fatal(err)
	}
	mc := newMeshCollector(m, 10)
	mm := &testMeshMetrics{meshMetrics: m.m, sent: mc, answered: mc, lost: mc}
	m.setPort("eth0", port)
	var peers []Peer
	var specs []streamSpec
	var addrs []netip.Addr
	for i := 1; i <= n; i++ {
		peer := Peer{Name: fmt.Sprintf("p%d", i), Addr: netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + i)})}
		peers, addrs = append(peers, peer), append(addrs, peer.Addr)
		tmpl := targetFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, net.HardwareAddr{2, 0, 0, 0, 0, 2}, nil,
			netip.MustParseAddr("192.0.2.1"), peer.Addr)
		specs = append(specs, streamSpec{peer: peer, flow: "rdma", tgt: target{wire: "eth0", frame: tmpl, marks: probe.Markings{DSCP: 26, TTL: 64}}})
	}
	m.sync(specs, 0)
	resp, err := probe.NewResponder(probe.ResponderConfig{LocalMACs: []net.HardwareAddr{{2, 0, 0, 0, 0, 2}}, LocalAddrs: addrs})
	if err != nil {
		t.Fatal(err)
	}
	return m, mm, resp, peers
}

// The sender reads replies when it wakes, before it takes the probes due:
// a reply that arrived within the timeout but is read after it is
// answered, not lost, and its RTT is the one of its arrival time, not of
// the read; replies of unknown sessions and other frames on the port are
// counted unmatched; a port whose Drain fails is reported.
func TestMeshDrainsRepliesFirst(t *testing.T) {
	now := time.Unix(1000, 0)
	port := &scriptPort{}
	m, mm, resp, _ := testMesh(t, &now, port, 1)
	var failed []error
	m.portFailed = func(netdev string, p Port, err error) { failed = append(failed, err) }

	// The first probe goes within the first period.
	var sent []byte
	for i := 0; i < 20 && sent == nil; i++ {
		if ws, _ := m.wakeUp(); len(ws) > 0 {
			sent = ws[0].frame
		}
		now = now.Add(100 * time.Millisecond)
	}
	if sent == nil {
		t.Fatal("no probe within 2 s")
	}
	sentAt := now.Add(-100 * time.Millisecond)
	reply, _ := resp.Handle(sent)
	if reply == nil {
		t.Fatal("the responder does not answer the probe")
	}
	forged := append([]byte(nil), reply...)
	forged[len(forged)-30] ^= 0xff // a bad ICRC: does not parse
	// a well-formed reply of a session the mesh does not have
	f, err := probe.ParseFrame(reply)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := probe.ParsePayload(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	pl.Session ^= 0xffff
	if f.Payload, err = pl.Marshal(); err != nil {
		t.Fatal(err)
	}
	stranger, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	// The reply came 3 ms after the probe; the sender wakes 1.5 s later,
	// past the timeout and when the next probe is due.
	port.queue = []fakeFrame{{reply, sentAt.Add(3 * time.Millisecond)}, {forged, sentAt.Add(4 * time.Millisecond)}, {sent, sentAt},
		{stranger, sentAt.Add(5 * time.Millisecond)}}
	now = sentAt.Add(1500 * time.Millisecond)
	m.wakeUp()

	get := func(c prometheus.Collector, name string) float64 {
		v, _ := value(gatherFrom(t, c), name, "peer", "p1")
		return v
	}
	if a, l := get(mm.answered, metricProbesAnswered), get(mm.lost, metricProbesLost); a != 1 || l != 0 {
		t.Errorf("answered %v, lost %v: want 1 and 0", a, l)
	}
	if u := m.unmatched.Load(); u != 3 {
		t.Errorf("unmatched %d: want 3 (a frame that does not parse, a probe, a reply of another session)", u)
	}
	h := gatherFrom(t, mm.rtt)[metricProbeRTT].GetMetric()[0].GetHistogram()
	if got := time.Duration(h.GetSampleSum() * float64(time.Second)); h.GetSampleCount() != 1 || got != 3*time.Millisecond {
		t.Errorf("RTT %d samples, sum %v: want 1 of 3ms (the arrival time, not the read's)", h.GetSampleCount(), got)
	}

	port.err = errors.New("injected: recvmsg failed")
	m.wakeUp()
	if len(failed) != 1 || failed[0] != port.err {
		t.Errorf("port failures reported %v: want the injected one", failed)
	}
}

// A reply that arrived after probe.timeout is a lost probe and an
// unmatched reply, however soon the sender reads it: a 700 ms reply read at
// 800 ms with a 500 ms timeout, and the one after it, in time, answered.
func TestMeshLateReplyIsLost(t *testing.T) {
	now := time.Unix(1000, 0)
	port := &scriptPort{}
	m, mm, resp, _ := testMesh(t, &now, port, 1)
	// next sends the next probe (bounded: 3 s of 10 ms steps) and returns
	// its reply and when it was sent.
	next := func() ([]byte, time.Time) {
		t.Helper()
		for i := 0; i < 300; i++ {
			if ws, _ := m.wakeUp(); len(ws) > 0 {
				reply, _ := resp.Handle(ws[0].frame)
				if reply == nil {
					t.Fatal("the responder does not answer the probe")
				}
				return reply, now
			}
			now = now.Add(10 * time.Millisecond)
		}
		t.Fatal("no probe within 3 s")
		return nil, time.Time{}
	}
	get := func(c prometheus.Collector, name string) float64 {
		v, _ := value(gatherFrom(t, c), name, "peer", "p1")
		return v
	}

	reply, sentAt := next()
	port.queue = []fakeFrame{{reply, sentAt.Add(700 * time.Millisecond)}}
	now = sentAt.Add(800 * time.Millisecond)
	m.wakeUp()
	if a, l := get(mm.answered, metricProbesAnswered), get(mm.lost, metricProbesLost); a != 0 || l != 1 {
		t.Errorf("a reply 700 ms late, timeout 500 ms: answered %v, lost %v; want 0 and 1", a, l)
	}
	if u := m.unmatched.Load(); u != 1 {
		t.Errorf("unmatched %d: want 1 (the late reply)", u)
	}

	reply, sentAt = next()
	port.queue = []fakeFrame{{reply, sentAt.Add(20 * time.Millisecond)}}
	now = sentAt.Add(800 * time.Millisecond)
	m.wakeUp()
	if a, l := get(mm.answered, metricProbesAnswered), get(mm.lost, metricProbesLost); a != 1 || l != 1 {
		t.Errorf("then a reply in 20 ms: answered %v, lost %v; want 1 and 1", a, l)
	}
	h := gatherFrom(t, mm.rtt)[metricProbeRTT].GetMetric()[0].GetHistogram()
	if got := time.Duration(h.GetSampleSum() * float64(time.Second)); h.GetSampleCount() != 1 || got != 20*time.Millisecond {
		t.Errorf("RTT %d samples, sum %v: want 1 of 20ms (none for the late reply)", h.GetSampleCount(), got)
	}
}

// slowPort is a scriptPort whose every write takes 1 ms of the test's
// clock.
type slowPort struct {
	scriptPort
	now *time.Time
}

func (p *slowPort) Write([]byte) error { *p.now = p.now.Add(time.Millisecond); return nil }

// A batch's probes are written one after another; each probe's round-trip
// time is from the end of its own write: three probes written at +1, +2
// and +3 ms, each answered 5 ms after it left, are three 5 ms samples, not
// 6, 7 and 8 ms from the start of the batch.
func TestMeshRTTFromEachWrite(t *testing.T) {
	now := time.Unix(1000, 0)
	port := &slowPort{now: &now}
	m, mm, resp, _ := testMesh(t, &now, port, 3)
	// All three due now: one batch (sync spreads first probes over the
	// first period).
	m.mu.Lock()
	for _, st := range m.h {
		st.due = now
	}
	heap.Init(&m.h)
	m.mu.Unlock()
	ws, _ := m.due(now)
	if len(ws) != 3 {
		t.Fatalf("%d probes due, want 3 in one batch", len(ws))
	}
	start := now
	m.send(ws)
	for i, w := range ws {
		left := start.Add(time.Duration(i+1) * time.Millisecond)
		reply, _ := resp.Handle(w.frame)
		if reply == nil {
			t.Fatal("the responder does not answer a probe")
		}
		port.queue = append(port.queue, fakeFrame{reply, left.Add(5 * time.Millisecond)})
	}
	now = start.Add(50 * time.Millisecond)
	m.drain()
	m.mu.Lock()
	for _, s := range m.streams {
		m.flush(s, now)
	}
	m.mu.Unlock()
	h := gatherFrom(t, mm.rtt)[metricProbeRTT].GetMetric()
	var n uint64
	var sum float64
	for _, x := range h {
		n += x.GetHistogram().GetSampleCount()
		sum += x.GetHistogram().GetSampleSum()
	}
	if got := time.Duration(sum * float64(time.Second)); n != 3 || got != 15*time.Millisecond {
		t.Errorf("RTT %d samples, sum %v: want 3 of 5ms each (15ms), each from the end of its own write", n, got)
	}
}

// testMeshMetrics are a test mesh's metrics: its meshMetrics, and its
// probe counts (the mesh's collector) as sent, answered and lost.
type testMeshMetrics struct {
	*meshMetrics
	sent, answered, lost prometheus.Collector
}

// gatherFrom gathers one collector by family name.
func gatherFrom(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	return gather(t, reg)
}

// 500 peers probed once a second wake the sender at most 10 times a
// second (probes due within 100 ms go out together), and every peer still
// gets a probe a second on average, each interval within the jitter
// (0.8 to 1.2 s) and the batch window (100 ms) — and spread over it: below
// 0.85 s and above 1.15 s, which batching alone (0.9 to 1.1 s) never gives.
func TestMeshBatches(t *testing.T) {
	now := time.Unix(1000, 0)
	cfg := ProbeConfig{Rate: 1, Timeout: 500 * time.Millisecond, Jitter: 0.2, MaxRate: 2000}
	m, err := newMesh(cfg, 16, newMeshMetrics(), slog.New(slog.DiscardHandler), func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	m.setPort("eth0", &scriptPort{})
	var specs []streamSpec
	for i := 1; i <= 500; i++ {
		peer := Peer{Name: fmt.Sprint("p", i), Addr: peerAddr(i)}
		tmpl := targetFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}, peerMAC(i), nil, netip.MustParseAddr("192.0.2.1"), peer.Addr)
		specs = append(specs, streamSpec{peer: peer, flow: "rdma", tgt: target{wire: "eth0", frame: tmpl, marks: probe.Markings{TTL: 64}}})
	}
	m.sync(specs, 0)
	const seconds = 20
	end := now.Add(seconds * time.Second)
	wakes, sent := 0, map[string]int{}
	last := map[string]time.Time{}
	shortest, longest := time.Hour, time.Duration(0)
	for now.Before(end) {
		ws, next := m.wakeUp()
		wakes++
		for _, w := range ws {
			name := w.s.peer.Name
			sent[name]++
			if l, ok := last[name]; ok {
				d := now.Sub(l)
				shortest, longest = min(shortest, d), max(longest, d)
				if d < 700*time.Millisecond || d > 1300*time.Millisecond {
					t.Errorf("peer %s: %v between probes: want 0.8 to 1.2 s, give or take the 100 ms batch window", name, d)
				}
			}
			last[name] = now
		}
		now = now.Add(m.sleep(next))
	}
	if wakes > seconds*10+1 {
		t.Errorf("%d wake-ups in %d s: want at most 10 a second", wakes, seconds)
	}
	total := 0
	for i := 1; i <= 500; i++ {
		n := sent[fmt.Sprint("p", i)]
		total += n
		// Intervals of 0.8 to 1.2 s, the first within the first second.
		if n < seconds*5/6 || n > seconds*5/4+1 {
			t.Errorf("peer %d got %d probes in %d s", i, n, seconds)
		}
	}
	if total < 500*seconds*95/100 || total > 500*seconds*105/100 {
		t.Errorf("%d probes in %d s to 500 peers: want about %d", total, seconds, 500*seconds)
	}
	if shortest >= 850*time.Millisecond || longest <= 1150*time.Millisecond {
		t.Errorf("intervals between probes %v to %v: want them spread by the 0.2 jitter, below 0.85 s and above 1.15 s", shortest, longest)
	}
	t.Logf("%d wake-ups, %d probes in %d s, intervals %v to %v", wakes, total, seconds, shortest, longest)
}

// boundPort is a scriptPort that records the bound of each Drain call.
type boundPort struct {
	scriptPort
	maxes []int
}

func (p *boundPort) Drain(max int, fn func([]byte, time.Time)) (int, error) {
	p.maxes = append(p.maxes, max)
	return p.scriptPort.Drain(max, fn)
}

// A wake-up reads every frame that arrived before it began — a reply in
// time is never lost to a late read, however many wait — and stops at the
// first batch holding one that arrived after: a flood of frames passing
// the reply filter (forged replies) cannot keep the sender reading. Reads
// come drainBatch at a time (mesh.drain releases its lock between them);
// frames without a receive time stop at drainMax.
func TestMeshDrainStopsAtWakeUp(t *testing.T) {
	now := time.Unix(1000, 0)
	port := &boundPort{}
	m, _, _, _ := testMesh(t, &now, port, 1)
	const before, after = 5000, 3000
	junk := []byte("not a reply")
	for i := 0; i < before; i++ {
		port.queue = append(port.queue, fakeFrame{junk, now.Add(-time.Millisecond)})
	}
	for i := 0; i < after; i++ { // arriving while the sender reads
		port.queue = append(port.queue, fakeFrame{junk, now.Add(time.Millisecond)})
	}
	m.wakeUp()
	drained := before + after - len(port.queue)
	if drained < before || drained >= before+drainBatch {
		t.Errorf("the first wake-up read %d frames: want the %d that arrived before it and at most the rest of their batch (%d)", drained, before, drainBatch)
	}
	for j, mx := range port.maxes {
		if mx > drainBatch || mx < 1 {
			t.Errorf("Drain call %d asked for %d frames: want 1..%d", j, mx, drainBatch)
		}
	}
	now = now.Add(100 * time.Millisecond)
	m.wakeUp() // the rest arrived before this one
	if u := m.unmatched.Load(); u != before+after || len(port.queue) != 0 {
		t.Errorf("unmatched %d, %d frames left after two wake-ups: want %d, 0", u, len(port.queue), before+after)
	}

	// No receive times: drainMax frames per wake-up.
	for i := 0; i < drainMax+10; i++ {
		port.queue = append(port.queue, fakeFrame{junk, time.Time{}})
	}
	m.wakeUp()
	if len(port.queue) != 10 {
		t.Errorf("frames without a receive time: %d left of %d after a wake-up, want 10 (drainMax %d read)", len(port.queue), drainMax+10, drainMax)
	}
}
