package probe

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/roce"
)

var (
	listenerMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	senderMAC   = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	listenerIP  = netip.MustParseAddr("192.0.2.2")
	senderIP    = netip.MustParseAddr("192.0.2.1")
)

// fakeClock is a manual clock for rate limits.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestResponder(t testing.TB, clk *fakeClock, rate RateConfig) *Responder {
	t.Helper()
	r, err := NewResponder(ResponderConfig{LocalMACs: []net.HardwareAddr{listenerMAC}, LocalAddrs: []netip.Addr{listenerIP},
		Rate: rate, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// probeFrom builds a probe as a sender would; arrived markings may differ
// from sent ones to simulate a path.
func probeFrom(t testing.TB, src netip.Addr, srcMAC net.HardwareAddr, sent, arrived Markings, payloadLen int) []byte {
	t.Helper()
	pl, err := Payload{Kind: KindProbe, Len: payloadLen, Session: 42, Seq: 7, SentNano: 99, Sent: sent}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f := Frame{DstMAC: listenerMAC, SrcMAC: srcMAC, Src: src, Dst: listenerIP, PKey: 0xffff,
		DestQP: DefaultDestQP, SrcQP: DefaultSrcQP, QKey: DefaultQKey, PSN: 7, Payload: pl}
	f.SetMarkings(arrived)
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResponderAnswers(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	r := newTestResponder(t, clk, RateConfig{})
	sent := Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc001}
	arrived := Markings{Tagged: true, VLAN: 100, PCP: 0, DSCP: 10, ECN: ECNCE, TTL: 62, Sport: 0xc001}
	probe := probeFrom(t, senderIP, senderMAC, sent, arrived, 0)
	reply, ev := r.Handle(probe)
	if reply == nil || ev == nil || ev.Action != ActionAnswered {
		t.Fatalf("valid probe not answered: reply %v, event %+v, counters %+v", reply != nil, ev, r.Counters.Snapshot())
	}
	if len(reply) > len(probe) {
		t.Errorf("reply is %d bytes, longer than the %d-byte probe", len(reply), len(probe))
	}
	f, err := ParseFrame(reply)
	if err != nil {
		t.Fatalf("reply does not parse: %v", err)
	}
	if !bytes.Equal(f.DstMAC, senderMAC) || !bytes.Equal(f.SrcMAC, listenerMAC) || f.Dst != senderIP || f.Src != listenerIP {
		t.Errorf("reply goes %s %v → %s %v: want back to the sender %s %v", f.SrcMAC, f.Src, f.DstMAC, f.Dst, senderMAC, senderIP)
	}
	if f.DestQP != DefaultSrcQP || f.SrcQP != DefaultDestQP || f.PSN != 7 {
		t.Errorf("reply QPs %x→%x PSN %d: want the probe's reversed and its PSN", f.SrcQP, f.DestQP, f.PSN)
	}
	if len(f.Tags) != 1 || f.Tags[0].ID != 100 {
		t.Errorf("reply tags %+v: want the VLAN it arrived on", f.Tags)
	}
	p, err := ParsePayload(f.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kind != KindReply || p.Session != 42 || p.Seq != 7 || p.SentNano != 99 || p.Sent != sent || p.Received != arrived {
		t.Errorf("reply payload %+v: want session 42 seq 7, sent %+v, received %+v", p, sent, arrived)
	}
	if ev.Received != arrived || ev.From != senderIP {
		t.Errorf("event %+v", ev)
	}
}

// A reply is never larger than the probe it answers, whatever the probe's
// encapsulation and padding.
func TestReplyNeverLarger(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	r := newTestResponder(t, clk, RateConfig{Rate: 1e9, Burst: 1e9, GlobalRate: 1e9, GlobalBurst: 1e9})
	for _, m := range []Markings{{TTL: 1}, {Tagged: true, VLAN: 4095, PCP: 7, TTL: 255}} {
		for _, n := range []int{PayloadLen, PayloadLen + 4, 1400} {
			probe := probeFrom(t, senderIP, senderMAC, m, m, n)
			reply, _ := r.Handle(probe)
			if reply == nil {
				t.Fatalf("not answered (%+v, %d)", m, n)
			}
			if len(reply) > len(probe) {
				t.Errorf("payload %d, %+v: reply %d bytes > probe %d bytes", n, m, len(reply), len(probe))
			}
		}
	}
}

func TestResponderIgnores(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	m := Markings{DSCP: 1, TTL: 64}
	good := probeFrom(t, senderIP, senderMAC, m, m, 0)
	ipOff := 14
	withPayload := func(pl []byte) []byte {
		f, err := ParseFrame(good)
		if err != nil {
			t.Fatal(err)
		}
		f.Payload = pl
		b, err := f.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	reply, _ := Payload{Kind: KindReply, Sent: m, Received: m}.Marshal()
	badICRC := bytes.Clone(good)
	badICRC[len(badICRC)-1] ^= 0xff
	toOther := bytes.Clone(good)
	toOther[ipOff+19]++ // destination 192.0.2.3: fix the checksum and ICRC by rebuilding
	otherDst, _ := ParseFrame(rebuildRaw(t, toOther))
	for _, tc := range []struct {
		name    string
		frame   []byte
		counter func(c CounterSnapshot) uint64
	}{
		{"garbage", []byte("not a frame at all"), func(c CounterSnapshot) uint64 { return c.NotRoCE }},
		{"bad icrc", badICRC, func(c CounterSnapshot) uint64 { return c.BadICRC }},
		{"foreign roce", withPayload(bytes.Repeat([]byte{0xab}, 64)), func(c CounterSnapshot) uint64 { return c.Foreign }},
		{"malformed probe", withPayload(append(Signature[:], 9, 9, 9)), func(c CounterSnapshot) uint64 { return c.Malformed }},
		{"reply", withPayload(reply), func(c CounterSnapshot) uint64 { return c.Replies }},
		{"other ip", mustBuild(t, otherDst), func(c CounterSnapshot) uint64 { return c.NotForUs }},
		{"other mac", probeTo(t, good, net.HardwareAddr{0x02, 9, 9, 9, 9, 9}), func(c CounterSnapshot) uint64 { return c.NotForUs }},
		{"multicast source ip", probeFrom(t, netip.MustParseAddr("224.0.0.1"), senderMAC, m, m, 0), func(c CounterSnapshot) uint64 { return c.BadSource }},
		{"loopback source ip", probeFrom(t, netip.MustParseAddr("127.0.0.1"), senderMAC, m, m, 0), func(c CounterSnapshot) uint64 { return c.BadSource }},
		{"broadcast source mac", probeFrom(t, senderIP, net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, m, m, 0), func(c CounterSnapshot) uint64 { return c.BadSource }},
	} {
		r := newTestResponder(t, clk, RateConfig{})
		reply, ev := r.Handle(tc.frame)
		c := r.Counters.Snapshot()
		if reply != nil || ev != nil {
			t.Errorf("%s: answered", tc.name)
		}
		if tc.counter(c) != 1 || c.Frames != 1 || c.Answered != 0 {
			t.Errorf("%s: counters %+v", tc.name, c)
		}
	}
}

func mustBuild(t *testing.T, f Frame) []byte {
	t.Helper()
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rebuildRaw recomputes the IPv4 checksum and ICRC of an untagged frame
// whose header bytes were edited.
func rebuildRaw(t *testing.T, b []byte) []byte {
	t.Helper()
	b = bytes.Clone(b)
	ip := b[14:]
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], ipv4Checksum(ip[:20]))
	total := int(binary.BigEndian.Uint16(ip[2:]))
	c, err := roce.ICRC(ip[:total-4])
	if err != nil {
		t.Fatal(err)
	}
	roce.PutICRC(ip[total-4:], c)
	return b
}

func probeTo(t *testing.T, frame []byte, mac net.HardwareAddr) []byte {
	b := bytes.Clone(frame)
	copy(b, mac)
	return b
}

func TestResponderRateLimit(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	r := newTestResponder(t, clk, RateConfig{Rate: 10, Burst: 5, GlobalRate: 1000, GlobalBurst: 1000})
	m := Markings{TTL: 64}
	probe := probeFrom(t, senderIP, senderMAC, m, m, 0)
	answered := 0
	for i := 0; i < 20; i++ {
		if reply, _ := r.Handle(probe); reply != nil {
			answered++
		}
	}
	if answered != 5 {
		t.Errorf("burst of 20 at one instant: %d answered, want the burst of 5", answered)
	}
	clk.advance(time.Second) // 10 tokens, capped at the burst of 5
	answered = 0
	for i := 0; i < 20; i++ {
		if reply, _ := r.Handle(probe); reply != nil {
			answered++
		}
	}
	if answered != 5 {
		t.Errorf("after 1 s: %d answered, want 5", answered)
	}
	if c := r.Counters.Snapshot(); c.RateLimited != 30 || c.Answered != 10 {
		t.Errorf("counters %+v: want 30 rate-limited, 10 answered", c)
	}
	// Another sender has its own bucket.
	other := probeFrom(t, netip.MustParseAddr("192.0.2.77"), senderMAC, m, m, 0)
	if reply, _ := r.Handle(other); reply == nil {
		t.Error("a second sender was refused because of the first")
	}
}

func TestRateLimiterGlobal(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	rl, err := NewRateLimiter(RateConfig{Rate: 100, Burst: 100, GlobalRate: 50, GlobalBurst: 10})
	if err != nil {
		t.Fatal(err)
	}
	rl.Now = clk.now
	allowed := 0
	for i := 0; i < 1000; i++ {
		if rl.Allow(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})) {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("1000 senders at one instant: %d allowed, want the global burst of 10", allowed)
	}
	clk.advance(time.Second)
	allowed = 0
	for i := 0; i < 1000; i++ {
		if rl.Allow(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})) {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("after 1 s: %d allowed, want 10 (50/s capped at the burst)", allowed)
	}
}

// A flood of distinct source addresses keeps the table at its fixed size:
// entries are evicted, nothing grows, and a real sender is still answered.
func TestRateLimiterBoundedUnderFlood(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	rl, err := NewRateLimiter(RateConfig{Slots: 256})
	if err != nil {
		t.Fatal(err)
	}
	rl.Now = clk.now
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 200000
	for i := 0; i < n; i++ {
		var a [16]byte
		binary.BigEndian.PutUint64(a[:], rng.Uint64())
		binary.BigEndian.PutUint64(a[8:], rng.Uint64())
		rl.Allow(netip.AddrFrom16(a))
		clk.advance(time.Microsecond)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if rl.Capacity() != 256 || rl.Tracked() > rl.Capacity() {
		t.Errorf("table holds %d of capacity %d", rl.Tracked(), rl.Capacity())
	}
	if rl.Evictions() < n-256 {
		t.Errorf("%d evictions for %d distinct senders in 256 slots", rl.Evictions(), n)
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 1<<20 {
		t.Errorf("heap grew by %d bytes over %d distinct senders", grew, n)
	}
	clk.advance(time.Second)
	if !rl.Allow(senderIP) {
		t.Error("a sender is refused after the flood")
	}
}

func TestNewRateLimiterRejects(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []RateConfig{{Rate: -1}, {Burst: -1}, {Slots: -1}, {Slots: 1 << 21},
		{Rate: nan}, {Burst: nan}, {GlobalRate: nan}, {GlobalBurst: nan}, {Rate: inf}, {GlobalRate: inf}, {GlobalBurst: -inf}} {
		if _, err := NewRateLimiter(c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// FuzzResponder: any frame at all is either answered with a reply no
// larger than it that parses as a reply, or counted and ignored.
func FuzzResponder(f *testing.F) {
	m := Markings{Tagged: true, VLAN: 7, PCP: 1, DSCP: 2, ECN: 2, TTL: 3, Sport: 4}
	f.Add(probeFrom(f, senderIP, senderMAC, m, m, 0))
	f.Add(probeFrom(f, senderIP, senderMAC, Markings{TTL: 9}, Markings{TTL: 8}, 128))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewResponder(ResponderConfig{Rate: RateConfig{Rate: 1e9, Burst: 1e9, GlobalRate: 1e9, GlobalBurst: 1e9}})
		if err != nil {
			t.Fatal(err)
		}
		reply, ev := r.Handle(b)
		c := r.Counters.Snapshot()
		// The agent's path decides the same.
		r2, err := NewResponder(ResponderConfig{Rate: RateConfig{Rate: 1e9, Burst: 1e9, GlobalRate: 1e9, GlobalBurst: 1e9}})
		if err != nil {
			t.Fatal(err)
		}
		if reply2 := r2.HandleReply(b); !bytes.Equal(reply2, reply) || (reply2 == nil) != (reply == nil) || r2.Counters.Snapshot() != c {
			t.Fatalf("HandleReply: reply %x, counters %+v; Handle: reply %x, counters %+v", reply2, r2.Counters.Snapshot(), reply, c)
		}
		sum := c.NotRoCE + c.BadICRC + c.Foreign + c.Malformed + c.Replies + c.NotForUs + c.BadSource + c.RateLimited + c.Answered
		if c.Frames != 1 || sum != 1 {
			t.Fatalf("one frame, counters %+v", c)
		}
		if reply == nil {
			return
		}
		if ev == nil || len(reply) > len(b) {
			t.Fatalf("reply of %d bytes to a %d-byte frame (event %v)", len(reply), len(b), ev)
		}
		f, err := ParseFrame(reply)
		if err != nil {
			t.Fatalf("reply does not parse: %v", err)
		}
		if p, err := ParsePayload(f.Payload); err != nil || p.Kind != KindReply {
			t.Fatalf("reply payload: %+v %v", p, err)
		}
	})
}

// HandleReply, the agent's path, makes Handle's decision frame by frame:
// the same reply (or none) and the same counters, rate limit included.
func TestHandleReplyDecidesAsHandle(t *testing.T) {
	m := Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	good := probeFrom(t, senderIP, senderMAC, m, m, 0)
	badICRC := bytes.Clone(good)
	badICRC[len(badICRC)-1] ^= 0xff
	reply, _ := Payload{Kind: KindReply, Sent: m, Received: m}.Marshal()
	f, err := ParseFrame(good)
	if err != nil {
		t.Fatal(err)
	}
	f.Payload = reply
	frames := [][]byte{good, good, []byte("not a frame at all"), badICRC, mustBuild(t, f), good,
		probeTo(t, good, net.HardwareAddr{0x02, 9, 9, 9, 9, 9}),
		probeFrom(t, netip.MustParseAddr("127.0.0.1"), senderMAC, m, m, 0), good, good}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	rate := RateConfig{Rate: 1, Burst: 3}
	listen, agent := newTestResponder(t, clk, rate), newTestResponder(t, clk, rate)
	answered := 0
	for i, fr := range frames {
		want, ev := listen.Handle(fr)
		got := agent.HandleReply(fr)
		if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Errorf("frame %d: HandleReply %x, Handle %x (event %+v)", i, got, want, ev)
		}
		if g, w := agent.Counters.Snapshot(), listen.Counters.Snapshot(); g != w {
			t.Errorf("frame %d: HandleReply's counters %+v, Handle's %+v", i, g, w)
		}
		if got != nil {
			answered++
		}
	}
	// The burst of 3 answers the first three good probes; the other two are
	// rate-limited; the five others are not probes to answer.
	if c := agent.Counters.Snapshot(); answered != 3 || c.Answered != 3 || c.RateLimited != 2 || c.Frames != uint64(len(frames)) {
		t.Errorf("%d answered, counters %+v: want 3 answered, 2 rate-limited", answered, c)
	}
}

// SetLocal changes which addresses the responder answers for, keeping its
// counters.
func TestResponderSetLocal(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	r := newTestResponder(t, clk, RateConfig{})
	m := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	probe := probeFrom(t, senderIP, senderMAC, m, m, 0)
	if reply, _ := r.Handle(probe); reply == nil {
		t.Fatal("not answered before SetLocal")
	}
	other := netip.MustParseAddr("192.0.2.77")
	r.SetLocal([]net.HardwareAddr{listenerMAC}, []netip.Addr{other})
	if reply, _ := r.Handle(probe); reply != nil {
		t.Error("answered a probe to an address that is no longer ours")
	}
	r.SetLocal([]net.HardwareAddr{listenerMAC}, []netip.Addr{other, listenerIP})
	if reply, _ := r.Handle(probe); reply == nil {
		t.Error("not answered after the address came back")
	}
	if c := r.Counters.Snapshot(); c.Answered != 2 || c.NotForUs != 1 {
		t.Errorf("counters %+v, want 2 answered and 1 not for us", c)
	}
}

// A burst left 0 follows its rate: Rate/5 (at least 5) per sender and
// GlobalRate/10 (at least 100) over all, as docs/probe.md says of
// `listen --rate`: a sender at one instant gets exactly its burst.
func TestRateLimiterDerivedBurst(t *testing.T) {
	for _, c := range []struct {
		cfg       RateConfig
		perSender int
	}{
		{RateConfig{}, 20}, // default rate 100
		{RateConfig{Rate: 500, GlobalRate: 1e6}, 100}, // 500/5
		{RateConfig{Rate: 10}, 5},                     // at least 5
	} {
		clk := &fakeClock{t: time.Unix(1000, 0)}
		rl, err := NewRateLimiter(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		rl.Now = clk.now
		n := 0
		for i := 0; i < 1000; i++ {
			if rl.Allow(senderIP) {
				n++
			}
		}
		if n != c.perSender {
			t.Errorf("%+v: one sender at one instant allowed %d, want %d", c.cfg, n, c.perSender)
		}
	}
	for _, c := range []struct {
		cfg    RateConfig
		global int
	}{{RateConfig{Rate: 1e6, Burst: 1e6}, 100}, {RateConfig{Rate: 1e6, Burst: 1e6, GlobalRate: 5000}, 500}} {
		clk := &fakeClock{t: time.Unix(1000, 0)}
		rl, err := NewRateLimiter(c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		rl.Now = clk.now
		n := 0
		for i := 0; i < 2000; i++ {
			if rl.Allow(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})) {
				n++
			}
		}
		if n != c.global {
			t.Errorf("%+v: 2000 senders at one instant allowed %d, want the global burst %d", c.cfg, n, c.global)
		}
	}
}
