//go:build linux

package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/roce"
)

const (
	macS = "02:00:00:77:00:01" // sender
	macL = "02:00:00:77:00:02" // listener
	macA = "02:00:00:77:00:0a" // middle namespace, sender side
	macB = "02:00:00:77:00:0b" // middle namespace, listener side
)

// listenerIn opens a Conn in namespace ns on dev and answers probes with a
// Responder until the test ends. It returns the responder.
func listenerIn(t *testing.T, ns, dev string, cfg ResponderConfig) *Responder {
	r, _ := listenerStop(t, ns, dev, cfg)
	return r
}

// listenerStop is listenerIn that also returns a function stopping the
// listener early (after which its responder may be read freely).
func listenerStop(t *testing.T, ns, dev string, cfg ResponderConfig) (*Responder, func()) {
	t.Helper()
	var c *Conn
	var err error
	netnstest.In(t, ns, func() { c, err = Open(dev, Incoming) })
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewResponder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			frame, _, err := c.Read()
			if err != nil {
				return
			}
			if frame == nil {
				continue
			}
			if reply, _ := r.Handle(frame); reply != nil {
				if err := c.Write(reply); err != nil {
					t.Errorf("listener write: %v", err)
				}
			}
		}
	}()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait(); c.Close() }) }
	t.Cleanup(stop)
	return r, stop
}

// sender opens the reply and egress Conns in namespace ns on dev.
type sender struct {
	rx, egress *Conn
}

func senderIn(t *testing.T, ns, dev string) *sender {
	t.Helper()
	var s sender
	var err1, err2 error
	netnstest.In(t, ns, func() {
		s.rx, err1 = Open(dev, Incoming)
		s.egress, err2 = Open(dev, Outgoing)
	})
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	t.Cleanup(func() { s.rx.Close(); s.egress.Close() })
	return &s
}

// probeAll sends one probe per markings and waits up to timeout for the
// replies and the egress copies.
func (s *sender) probeAll(t *testing.T, template Frame, ms []Markings, timeout time.Duration) []Result {
	t.Helper()
	p, err := NewProber(template)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range []*Conn{s.rx, s.egress} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				frame, _, err := c.Read()
				if err != nil {
					return
				}
				if frame != nil {
					mu.Lock()
					p.Match(frame, time.Now())
					mu.Unlock()
				}
			}
		}()
	}
	for _, m := range ms {
		mu.Lock()
		frame, _, err := p.Next(m, time.Now())
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.rx.Write(frame); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	// Wait until every probe has a reply and an egress copy, or timeout.
	for ctx.Err() == nil {
		mu.Lock()
		done := true
		for _, r := range p.Results() {
			if r.Received == nil || r.Egress == nil {
				done = false
			}
		}
		mu.Unlock()
		if done {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	return p.Results()
}

func mustMAC(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func template4(src, dst string, dstMAC string) Frame {
	return Frame{SrcMAC: mustMAC(macS), DstMAC: mustMAC(dstMAC),
		Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst)}
}

// The markings a sender puts on probes arrive unchanged over a plain veth
// pair, tagged or not, and the egress capture sees them leave as built.
func TestWireDirect(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := netnstest.New(t, "s"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", macS, nsL, "l0", macL)
	r := listenerIn(t, nsL, "l0", ResponderConfig{
		LocalMACs:  []net.HardwareAddr{mustMAC(macL)},
		LocalAddrs: []netip.Addr{netip.MustParseAddr("10.77.0.2"), netip.MustParseAddr("fd77::2")},
	})
	s := senderIn(t, nsS, "s0")
	ms := []Markings{
		{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc001},
		{DSCP: 46, ECN: ECNNotECT, TTL: 7, Sport: 0xffff},
		{Tagged: true, VLAN: 100, PCP: 3, DSCP: 24, ECN: ECNECT1, TTL: 64, Sport: 0xc0de},
		{Tagged: true, VLAN: 4094, PCP: 7, DSCP: 63, ECN: ECNECT0, TTL: 255, Sport: 49152},
		{Tagged: true, VLAN: 1, PCP: 0, DSCP: 0, ECN: ECNCE, TTL: 1, Sport: 50000},
		// TCI 0 (a priority tag with PCP 0): the kernel moves it out of
		// band like any tag and PACKET_AUXDATA says it was there
		// (TP_STATUS_VLAN_VALID), so it is not mistaken for no tag.
		{Tagged: true, VLAN: 0, PCP: 0, DSCP: 10, ECN: ECNECT0, TTL: 64, Sport: 50001},
	}
	for _, fam := range []struct {
		name     string
		src, dst string
	}{{"ipv4", "10.77.0.1", "10.77.0.2"}, {"ipv6", "fd77::1", "fd77::2"}} {
		t.Run(fam.name, func(t *testing.T) {
			results := s.probeAll(t, template4(fam.src, fam.dst, macL), ms, 3*time.Second)
			for i, res := range results {
				want := ms[i]
				want.IPv6 = fam.name == "ipv6"
				if res.Sent != want {
					t.Errorf("probe %d: sent %+v, want %+v", i, res.Sent, want)
				}
				if res.Egress == nil || *res.Egress != want {
					t.Errorf("probe %d: egress capture %+v, want %+v", i, res.Egress, want)
				}
				if res.Received == nil {
					t.Errorf("probe %d: no reply", i)
					continue
				}
				if *res.Received != want {
					t.Errorf("probe %d: listener reports %+v, want %+v", i, *res.Received, want)
				}
				if fs := res.Findings(); len(fs) != 0 {
					t.Errorf("probe %d: findings %v on an unchanged path", i, fs)
				}
			}
		})
	}
	c := r.Counters.Snapshot()
	if c.Answered != uint64(2*len(ms)) {
		t.Errorf("listener answered %d probes, want %d (counters %+v)", c.Answered, 2*len(ms), c)
	}
}

// middleSwitch builds sender ⇄ middle ⇄ listener: namespace nsM holds m0
// (peer of the sender's s0) and m1 (peer of the listener's l0) and forwards
// every frame between them at layer 2 with nftables netdev ingress chains,
// applying toL on the way to the listener. It acts as a misconfigured
// switch.
func middleSwitch(t *testing.T, toL string) (nsS, nsL string) {
	t.Helper()
	nsS, nsM, nsL := netnstest.New(t, "s"), netnstest.New(t, "m"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", macS, nsM, "m0", macA)
	netnstest.Veth(t, nsM, "m1", macB, nsL, "l0", macL)
	netnstest.RunStdin(t, `table netdev sw {
  chain to_l {
    type filter hook ingress device "m0" priority 0;
    `+toL+` fwd to "m1"
  }
  chain to_s {
    type filter hook ingress device "m1" priority 0;
    fwd to "m0"
  }
}
`, "ip", "netns", "exec", nsM, "nft", "-f", "-")
	return nsS, nsL
}

// A switch that rewrites DSCP or PCP is reported as remarking, with the
// values before and after; one that strips the tag as stripping it.
func TestWireRemarkingSwitch(t *testing.T) {
	netnstest.RequireNFTables(t)
	tagged := Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc123}
	for _, tc := range []struct {
		name     string
		rule     string
		want     Markings // what the listener must report
		findings []FindingKind
	}{
		{"dscp", "ip dscp set cs1", func() Markings { m := tagged; m.DSCP = 8; return m }(), []FindingKind{FindingDSCPRemarked}},
		// "vlan pcp set" writes one byte, which nf_tables cannot apply to a tag
		// the driver holds outside the frame (veth does); a 16-bit write of the
		// whole TCI can be: VID 100, PCP 5 = 0xa064.
		{"pcp", "vlan id 100 @ll,112,16 set 0xa064", func() Markings { m := tagged; m.PCP = 5; return m }(), []FindingKind{FindingPCPRemarked}},
		{"ecn-ce", "ip ecn set ce", func() Markings { m := tagged; m.ECN = ECNCE; return m }(), []FindingKind{FindingECNMarked}},
		{"vlan", "vlan id set 200", func() Markings { m := tagged; m.VLAN = 200; return m }(), []FindingKind{FindingVLANChanged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nsS, nsL := middleSwitch(t, tc.rule)
			r := listenerIn(t, nsL, "l0", ResponderConfig{})
			s := senderIn(t, nsS, "s0")
			defer func() { t.Logf("listener counters %+v", r.Counters.Snapshot()) }()
			res := s.probeAll(t, template4("10.77.0.1", "10.77.0.2", macL), []Markings{tagged}, 3*time.Second)[0]
			if res.Egress == nil || *res.Egress != tagged {
				t.Errorf("egress %+v, want %+v", res.Egress, tagged)
			}
			if res.Received == nil {
				t.Fatal("no reply through the middle namespace")
			}
			if *res.Received != tc.want {
				t.Errorf("listener reports %+v, want %+v", *res.Received, tc.want)
			}
			var kinds []FindingKind
			for _, f := range res.Findings() {
				kinds = append(kinds, f.Kind)
				t.Logf("finding: %s", f)
			}
			if len(kinds) != len(tc.findings) || (len(kinds) > 0 && kinds[0] != tc.findings[0]) {
				t.Errorf("findings %v, want %v", kinds, tc.findings)
			}
		})
	}
}

// A namespace routing between two subnets decrements the TTL: the probe
// reports one routed hop, and the reply finds its way back through it.
func TestWireRoutedHop(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsM, nsL := netnstest.New(t, "s"), netnstest.New(t, "r"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", macS, nsM, "m0", macA)
	netnstest.Veth(t, nsM, "m1", macB, nsL, "l0", macL)
	netnstest.Run(t, "ip", "-n", nsS, "addr", "add", "10.77.1.1/24", "dev", "s0")
	netnstest.Run(t, "ip", "-n", nsM, "addr", "add", "10.77.1.254/24", "dev", "m0")
	netnstest.Run(t, "ip", "-n", nsM, "addr", "add", "10.77.2.254/24", "dev", "m1")
	netnstest.Run(t, "ip", "-n", nsL, "addr", "add", "10.77.2.2/24", "dev", "l0")
	netnstest.Run(t, "ip", "netns", "exec", nsM, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	r := listenerIn(t, nsL, "l0", ResponderConfig{LocalAddrs: []netip.Addr{netip.MustParseAddr("10.77.2.2")}})
	s := senderIn(t, nsS, "s0")
	sent := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc555}
	res := s.probeAll(t, template4("10.77.1.1", "10.77.2.2", macA), []Markings{sent}, 3*time.Second)[0]
	if res.Received == nil {
		t.Fatalf("no reply through the router (listener counters %+v)", r.Counters.Snapshot())
	}
	want := sent
	want.TTL = 63
	if *res.Received != want {
		t.Errorf("listener reports %+v, want %+v", *res.Received, want)
	}
	fs := res.Findings()
	if len(fs) != 1 || fs[0].Kind != FindingRoutedHops || fs[0].Sent != 64 || fs[0].Received != 63 {
		t.Errorf("findings %v, want one routed-hops 64→63", fs)
	}
}

// floodFrames returns n frames of every kind a listener must not answer:
// garbage, non-RoCE UDP 4791, RoCE with a bad ICRC, RoCE without the
// signature, malformed probes, replies, probes to another address and
// probes from a multicast source.
func floodFrames(t *testing.T, n int) [][]byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	m := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	base := template4("10.77.0.1", "10.77.0.2", macL)
	base.PKey, base.DestQP, base.SrcQP, base.QKey = 0xffff, DefaultDestQP, DefaultSrcQP, DefaultQKey
	build := func(f Frame, payload []byte) []byte {
		f.Payload = payload
		b, err := f.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	probePayload := func(kind Kind) []byte {
		p := Payload{Kind: kind, Session: rng.Uint64(), Seq: rng.Uint32(), Sent: m}
		if kind == KindReply {
			p.Received = m
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var out [][]byte
	for i := 0; len(out) < n; i++ {
		var b []byte
		switch i % 8 {
		case 0: // garbage after a valid Ethernet header to our MAC
			b = make([]byte, 14+rng.IntN(200))
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			copy(b, mustMAC(macL))
			copy(b[6:], mustMAC(macS))
		case 1: // UDP 4791 with a truncated transport
			b = build(base, probePayload(KindProbe))
			b = b[:14+20+8+10]
			b[16], b[17] = 0, byte(len(b)-14) // IPv4 total length
			b[38], b[39] = 0, 18              // UDP length
			b[24], b[25] = 0, 0
			binary.BigEndian.PutUint16(b[24:], ipv4Checksum(b[14:34]))
		case 2: // bad ICRC
			b = build(base, probePayload(KindProbe))
			b[len(b)-1] ^= 0x5a
		case 3: // RoCE without the signature
			pl := make([]byte, 64)
			for j := range pl {
				pl[j] = byte(rng.Uint32())
			}
			b = build(base, pl)
		case 4: // signature, corrupt payload
			pl := probePayload(KindProbe)
			pl[32+rng.IntN(24)] ^= byte(1 + rng.IntN(255))
			pl[36] = 200 // DSCP out of range, in case the flip above was harmless
			b = build(base, pl)
		case 5: // a reply
			b = build(base, probePayload(KindReply))
		case 6: // a probe to another address
			f := base
			f.Dst = netip.MustParseAddr("10.77.0.99")
			b = build(f, probePayload(KindProbe))
		case 7: // a probe from a multicast source
			f := base
			f.Src = netip.MustParseAddr("239.1.2.3")
			b = build(f, probePayload(KindProbe))
		}
		out = append(out, b)
	}
	return out
}

// A flood of malformed and foreign frames gets no reply, leaves the
// listener answering valid probes, and keeps its memory bounded; a flood of
// valid probes from spoofed senders is answered at most at the global rate
// while the sender table stays at its fixed size.
func TestWireFlood(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := netnstest.New(t, "s"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", macS, nsL, "l0", macL)
	r, stopListener := listenerStop(t, nsL, "l0", ResponderConfig{
		LocalMACs: []net.HardwareAddr{mustMAC(macL)}, LocalAddrs: []netip.Addr{netip.MustParseAddr("10.77.0.2")},
		Rate: RateConfig{Slots: 512},
	})
	s := senderIn(t, nsS, "s0")

	// Count everything that comes back to the sender during the flood.
	var back atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			if f, _, err := s.rx.Read(); err != nil {
				return
			} else if f != nil {
				back.Add(1)
			}
		}
	}()

	frames := floodFrames(t, 40000)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for round := 0; round < 3; round++ {
		for _, f := range frames {
			if err := s.rx.Write(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(300 * time.Millisecond)
	cancel()
	wg.Wait()
	frames = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	c := r.Counters.Snapshot()
	t.Logf("after 120000 flood frames: listener counters %+v", c)
	if n := back.Load(); n != 0 || c.Answered != 0 {
		t.Errorf("the flood got %d frames back (%d answered): want none", n, c.Answered)
	}
	if c.Frames == 0 || c.BadICRC == 0 || c.Foreign == 0 || c.Malformed == 0 || c.Replies == 0 || c.NotForUs == 0 || c.BadSource == 0 || c.NotRoCE == 0 {
		t.Errorf("some kind of flood frame was not counted: %+v", c)
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 4<<20 {
		t.Errorf("heap in use grew by %d bytes during the flood", grew)
	}

	// Valid probes from 20000 spoofed senders.
	spoof := template4("10.77.0.1", "10.77.0.2", macL)
	p, err := NewProber(spoof)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; i < 20000; i++ {
		f, _, err := p.Next(Markings{TTL: 64}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		fr, _ := ParseFrame(f)
		fr.Src = netip.AddrFrom4([4]byte{10, 200, byte(i >> 8), byte(i)})
		b, _ := fr.Build()
		if err := s.rx.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	elapsed := time.Since(start).Seconds()

	// A real sender is still answered, once the listener has worked through
	// its socket buffer and the global bucket has refilled.
	for prev := uint64(0); ; {
		time.Sleep(200 * time.Millisecond)
		n := r.Counters.Frames.Load()
		if n == prev {
			break
		}
		prev = n
	}
	// Drain the sender's sockets, full of replies to the spoofed senders and
	// copies of the spoofed probes, so the real reply finds room.
	for _, c := range []*Conn{s.rx, s.egress} {
		for {
			f, _, err := c.Read()
			if err != nil || f == nil {
				break
			}
		}
	}
	res := s.probeAll(t, template4("10.77.0.1", "10.77.0.2", macL), []Markings{{DSCP: 10, TTL: 64, Sport: 0xc001}}, 2*time.Second)
	stopListener()
	c = r.Counters.Snapshot()
	if res[0].Received == nil {
		t.Errorf("valid probe not answered after the floods (counters %+v)", c)
	}
	lim := r.Limiter()
	if lim.Tracked() > lim.Capacity() || lim.Capacity() != 512 {
		t.Errorf("sender table holds %d of %d", lim.Tracked(), lim.Capacity())
	}
	// Answers: the global burst (100) and 1000/s over the flood, plus the real probe.
	if maxAnswers := 100 + 1000*(elapsed+0.5) + 1; float64(c.Answered) > maxAnswers {
		t.Errorf("answered %d spoofed probes in %.2fs: more than the global limit allows (%.0f)", c.Answered, elapsed, maxAnswers)
	}
	t.Logf("spoofed flood: %d answered, %d rate-limited in %.2fs, %d evictions", c.Answered, c.RateLimited, elapsed, lim.Evictions())
}

// A Read waits at most its timeout and then returns no frame and no error;
// with no timeout it waits until a frame comes, which carries its VLAN tag
// (put back from the kernel's metadata) and a receive time; Close ends a
// waiting Read at once with ErrClosed, and later Reads and Writes fail the
// same way.
func TestConnReadTimeoutAndClose(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := netnstest.New(t, "s"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", macS, nsL, "l0", macL)
	var rx, tx *Conn
	var err1, err2 error
	netnstest.In(t, nsL, func() { rx, err1 = Open("l0", Incoming) })
	netnstest.In(t, nsS, func() { tx, err2 = Open("s0", Incoming) })
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	defer tx.Close()

	start := time.Now()
	f, _, err := rx.Read()
	if d := time.Since(start); f != nil || err != nil || d < DefaultReadTimeout || d > 2*time.Second {
		t.Errorf("Read on a quiet socket: frame %x, err %v after %v: want nil, nil after %v", f, err, d, DefaultReadTimeout)
	}

	// The receiving kernel moves the tag of a tagged frame into the skb's
	// metadata before any packet socket sees it (skb_vlan_untag in
	// __netif_receive_skb_core): Read puts it back.
	p, err := NewProber(template4("10.77.0.1", "10.77.0.2", macL))
	if err != nil {
		t.Fatal(err)
	}
	probe, _, err := p.Next(Markings{Tagged: true, VLAN: 100, PCP: 5, DSCP: 26, TTL: 64, Sport: 0xc000}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rx.SetReadTimeout(0)
	type read struct {
		f   []byte
		at  time.Time
		err error
	}
	got := make(chan read, 1)
	go func() { f, at, err := rx.Read(); got <- read{f, at, err} }()
	time.Sleep(2 * DefaultReadTimeout) // longer than any timeout: the Read must still wait
	sent := time.Now()
	if err := tx.Write(probe); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		fr, err := ParseFrame(r.f)
		if r.err != nil || err != nil || len(fr.Tags) != 1 || fr.Tags[0] != (roce.VLANTag{TPID: 0x8100, ID: 100, PCP: 5}) {
			t.Fatalf("Read: %v, frame %x (%v, tags %+v): want the probe with tag 802.1Q VID 100 PCP 5", r.err, r.f, err, fr.Tags)
		}
		if r.at.Before(sent.Add(-time.Millisecond)) || r.at.After(time.Now()) {
			t.Errorf("receive time %v is not between the write (%v) and now", r.at, sent)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting Read did not return the frame written")
	}

	go func() { f, at, err := rx.Read(); got <- read{f, at, err} }()
	time.Sleep(2 * DefaultReadTimeout)
	start = time.Now()
	rx.Close()
	select {
	case r := <-got:
		if !errors.Is(r.err, ErrClosed) || r.f != nil {
			t.Errorf("Read ended by Close: %x, %v: want ErrClosed", r.f, r.err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Close ended a waiting Read after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Read")
	}
	if _, _, err := rx.Read(); !errors.Is(err, ErrClosed) {
		t.Errorf("Read after Close: %v, want ErrClosed", err)
	}
	if err := rx.Write(probe); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
}

// Over a veth pair, the kernel runs the selections' filters: a Replies
// Conn drains exactly the replies sent to it, tagged or not, a NoReplies
// Conn exactly the probes; Drain reads what waits and returns without
// waiting when nothing does, from a DrainOnly Conn (which no epoll
// instance of the process watches, by the kernel's fdinfo, and which
// refuses Read) and from one in the poller alike, at most as many frames
// as it is asked for (the rest stay for the next call, in order); the
// receive times are the kernel's, between the write and the read; a
// closed Conn's Drain says so, and a bound below 1 is refused.
func TestWireDrainSelection(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := netnstest.New(t, "s"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", macS, nsL, "l0", macL)
	var tx, rep, norep *Conn
	var err1, err2, err3 error
	netnstest.In(t, nsS, func() { tx, err1 = Open("s0", Outgoing) })
	netnstest.In(t, nsL, func() {
		rep, err2 = OpenWith("l0", Incoming, OpenOptions{Select: Replies, DrainOnly: true})
		norep, err3 = OpenWith("l0", Incoming, OpenOptions{Select: NoReplies})
	})
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	defer tx.Close()
	defer norep.Close()
	if w := epollWatched(t, rep); w {
		t.Error("an epoll instance watches the DrainOnly Conn's socket")
	}
	if w := epollWatched(t, norep); !w {
		t.Error("no epoll instance watches the polled Conn's socket (the check finds nothing)")
	}
	if _, _, err := rep.Read(); !errors.Is(err, ErrDrainOnly) {
		t.Errorf("Read of a DrainOnly Conn: %v, want ErrDrainOnly", err)
	}

	drained := func(c *Conn, max int) (seqs []uint32, kinds []Kind) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if n, err := c.Drain(max, func(frame []byte, at time.Time) {
				f, err := ParseFrame(frame)
				if err != nil {
					t.Errorf("drained frame does not parse: %v", err)
					return
				}
				p, err := ParsePayload(f.Payload)
				if err != nil {
					t.Errorf("drained payload does not parse: %v", err)
					return
				}
				if sent := time.Unix(0, p.SentNano); at.Before(sent) || at.After(time.Now()) {
					t.Errorf("frame %d received at %v: want between its write (%v) and now", p.Seq, at, sent)
				}
				seqs, kinds = append(seqs, p.Seq), append(kinds, p.Kind)
			}); err != nil {
				t.Errorf("Drain: %v", err)
			} else if n != len(seqs) || n > max {
				t.Errorf("Drain(%d) returned %d and handed %d frames", max, n, len(seqs))
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Drain waited")
		}
		return seqs, kinds
	}
	if seqs, _ := drained(rep, 64); len(seqs) != 0 {
		t.Fatalf("before any frame was sent, Drain read %v", seqs)
	}

	// Probes have even sequence numbers, replies odd ones; every third
	// frame is tagged.
	const frames = 30
	for i := uint32(0); i < frames; i++ {
		kind := KindProbe
		if i%2 == 1 {
			kind = KindReply
		}
		pl, err := Payload{Kind: kind, Session: 1, Seq: i, SentNano: time.Now().UnixNano(), Sent: Markings{TTL: 64}}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		f := template4("10.77.0.1", "10.77.0.2", macL)
		f.TTL, f.PKey, f.DestQP, f.SrcQP, f.QKey, f.PSN, f.Payload = 64, 0xffff, DefaultDestQP, DefaultSrcQP, DefaultQKey, i, pl
		if i%3 == 0 {
			f.Tags = []roce.VLANTag{{TPID: 0x8100, ID: 100}}
		}
		b, err := f.Build()
		if err != nil {
			t.Fatal(err)
		}
		if err := tx.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	var gotRep, gotNo []uint32
	for deadline := time.Now().Add(3 * time.Second); len(gotRep)+len(gotNo) < frames && time.Now().Before(deadline); {
		s, k := drained(rep, 4) // 15 replies: four calls at least
		for _, kind := range k {
			if kind != KindReply {
				t.Errorf("the Replies Conn read a %v", kind)
			}
		}
		gotRep = append(gotRep, s...)
		s, k = drained(norep, 64)
		for _, kind := range k {
			if kind != KindProbe {
				t.Errorf("the NoReplies Conn read a %v", kind)
			}
		}
		gotNo = append(gotNo, s...)
		time.Sleep(10 * time.Millisecond)
	}
	var wantRep, wantNo []uint32
	for i := uint32(0); i < frames; i++ {
		if i%2 == 1 {
			wantRep = append(wantRep, i)
		} else {
			wantNo = append(wantNo, i)
		}
	}
	if fmt.Sprint(gotRep) != fmt.Sprint(wantRep) || fmt.Sprint(gotNo) != fmt.Sprint(wantNo) {
		t.Errorf("drained replies %v and probes %v: want %v and %v", gotRep, gotNo, wantRep, wantNo)
	}
	if n, err := norep.Drain(0, func([]byte, time.Time) { t.Error("Drain(0) handed a frame") }); n != 0 || err == nil {
		t.Errorf("Drain(0): %d, %v: want an error", n, err)
	}
	rep.Close()
	if n, err := rep.Drain(1, func([]byte, time.Time) {}); n != 0 || !errors.Is(err, ErrClosed) {
		t.Errorf("Drain of a closed Conn: %d, %v: want 0, ErrClosed", n, err)
	}
}

// epollWatched says whether an epoll instance of this process watches c's
// socket: the kernel lists each watched file as a "tfd: N ... ino:INODE"
// line of the epoll descriptor's /proc/self/fdinfo entry (fs/eventpoll.c,
// ep_show_fdinfo); the inode tells this socket from an earlier one that
// had its descriptor number.
func epollWatched(t *testing.T, c *Conn) bool {
	t.Helper()
	var fd int
	var st unix.Stat_t
	var serr error
	if err := c.rc.Control(func(f uintptr) { fd = int(f); serr = unix.Fstat(fd, &st) }); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	ino := fmt.Sprintf("ino:%x", st.Ino)
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			var tfd int
			if _, err := fmt.Sscanf(line, "tfd: %d", &tfd); err == nil && tfd == fd && slices.Contains(strings.Fields(line), ino) {
				found = true
			}
		}
	}
	return found
}
