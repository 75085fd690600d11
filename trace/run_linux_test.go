//go:build linux

package trace_test

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
)

func newFabric(t *testing.T) *fabric { return &fabric{netnstest.NewTwoPaths(t)} }

type fabric struct{ *netnstest.TwoPaths }

// listen runs a probe listener on D until the test ends.
func (f *fabric) listen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		netnstest.Do(f.D, func() error {
			close(started)
			_, err := probe.Listen(ctx, probe.ListenConfig{Netdevs: []string{"d0"}}, nil)
			return err
		})
	}()
	<-started
	time.Sleep(50 * time.Millisecond) // the socket is bound
	t.Cleanup(func() { cancel(); <-done })
}

func (f *fabric) endpoint(v6 bool) probe.Endpoint {
	src, dst, gw := "10.1.0.1", "10.4.0.1", "10.1.0.254"
	if v6 {
		src, dst, gw = "fd00:1::1", "fd00:4::1", "fd00:1::fe"
	}
	smac, _ := net.ParseMAC(f.MACs["s0"])
	dmac, _ := net.ParseMAC(f.MACs["l1s"])
	return probe.Endpoint{Netdev: "s0", Wire: "s0", SrcMAC: smac, DstMAC: dmac,
		Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), NextHop: netip.MustParseAddr(gw)}
}

func (f *fabric) trace(t *testing.T, cfg trace.Config) trace.Result {
	t.Helper()
	var res trace.Result
	err := netnstest.Do(f.S, func() error {
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err = trace.Run(ctx, cfg)
		return err
	})
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	return res
}

// The fabric's spine B rewrites DSCP to 0 on its port toward L2, spine A
// bleaches ECN on its own: a path search finds both spines, and each
// change is located right after the spine that made it, on the paths
// through it only — IPv4 and IPv6.
func TestRunLocatesRemarkingSpine(t *testing.T) {
	f := newFabric(t)
	netnstest.Remark(t, f.B, "b2", "dscp")
	netnstest.Remark(t, f.A, "a2", "ecn")
	f.listen(t)
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "IPv4", true: "IPv6"}[v6]
		t.Run(name, func(t *testing.T) {
			spineA, spineB := "10.2.0.2", "10.2.1.2"
			if v6 {
				spineA, spineB = "fd00:21::2", "fd00:22::2"
			}
			// IPv6 also asks for 16 ports at least before the stop rule.
			minPorts := map[bool]int{false: 0, true: 16}[v6]
			res := f.trace(t, trace.Config{Endpoint: f.endpoint(v6), Paths: 4, MinPorts: minPorts,
				Base: probe.Markings{DSCP: 26, ECN: probe.ECNECT0}, Timeout: 300 * time.Millisecond})
			t.Logf("%d ports tried, %d probes: %s", res.PortsTried, res.Probes, res.Stop)
			if res.PortsTried < minPorts {
				t.Errorf("%d ports tried, want at least MinPorts %d", res.PortsTried, minPorts)
			}
			if len(res.Paths) != 2 {
				t.Fatalf("found %d paths, want 2 (through A and through B): %+v", len(res.Paths), res.Paths)
			}
			if !strings.Contains(res.Stop, "no new path") {
				t.Errorf("stop: %q, want the search to stop for finding no new path", res.Stop)
			}
			seen := map[string]bool{}
			for _, p := range res.Paths {
				if len(p.Hops) != 4 || !trace.Reached(p.Hops) {
					t.Fatalf("path of port %d: %d hops, reached %v; want 4 hops ending at the destination: %+v", p.Sport, len(p.Hops), trace.Reached(p.Hops), p.Hops)
				}
				spine := p.Hops[1].Address.String()
				seen[spine] = true
				dst := p.Hops[3]
				if dst.Arrived == nil {
					t.Errorf("path through %s: the destination's listener reply is missing: %+v", spine, dst)
				}
				ch := res.PathChanges(p)
				var want trace.Change
				switch spine {
				case spineB:
					want = trace.Change{Field: "dscp", From: 26, To: 0, Before: 2, At: 3}
				case spineA:
					want = trace.Change{Field: "ecn", From: 2, To: 0, Before: 2, At: 3}
				default:
					t.Fatalf("hop 2 is %s: want spine A %s or B %s", spine, spineA, spineB)
				}
				if len(ch) != 1 || ch[0].Field != want.Field || ch[0].From != want.From || ch[0].To != want.To || ch[0].Before != want.Before || ch[0].At != want.At {
					t.Errorf("path through %s: changes %v, want exactly %v", spine, ch, want)
				}
				if d, ok := p.Hops[0].DSCP(); !ok || d != 26 {
					t.Errorf("path through %s: hop 1's quote shows DSCP %d (known %v), want 26", spine, d, ok)
				}
			}
			if !seen[spineA] || !seen[spineB] {
				t.Errorf("spines seen %v: want both %s and %s", seen, spineA, spineB)
			}
		})
	}
}

// ICMP off on L2 (it answers no expired probe): hop 3 is silent on every
// path, and the trace goes on past it to the destination. Without a
// listener there, the destination answers Port Unreachable, whose quote
// still shows what arrived. Every frame the trace sends goes to the
// destination.
func TestRunSilentHopAndNoListener(t *testing.T) {
	f := newFabric(t)
	netnstest.RunStdin(t, `table inet quiet {
	chain out {
		type filter hook output priority 0;
		icmp type time-exceeded drop
		icmpv6 type time-exceeded drop
	}
}
`, "ip", "netns", "exec", f.L2, "nft", "-f", "-")
	// Capture what leaves S while the trace runs.
	var egress *probe.Conn
	if err := netnstest.Do(f.S, func() (err error) { egress, err = probe.Open("s0", probe.Outgoing); return }); err != nil {
		t.Fatal(err)
	}
	defer egress.Close()
	var frames [][]byte
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			b, _, err := egress.Read()
			if err != nil {
				return
			}
			if b != nil {
				frames = append(frames, b)
			}
		}
	}()
	ep := f.endpoint(false)
	res := f.trace(t, trace.Config{Endpoint: ep, Sports: []uint16{0xc001}, Base: probe.Markings{DSCP: 26, ECN: probe.ECNECT0},
		Timeout: 100 * time.Millisecond, Tries: 2})
	egress.Close()
	<-done
	if len(res.Paths) != 1 {
		t.Fatalf("%d paths, want 1 (one port)", len(res.Paths))
	}
	hops := res.Paths[0].Hops
	if len(hops) != 4 {
		t.Fatalf("%d hops, want 4: %+v", len(hops), hops)
	}
	if h := hops[2]; h.Status != trace.HopSilent || h.Tries != 2 || h.Address.IsValid() {
		t.Errorf("hop 3 (L2, ICMP off): %+v, want silent after 2 tries", h)
	}
	d := hops[3]
	if d.Status != trace.HopDestination || d.Address != ep.Dst || d.Arrived != nil || d.Quote == nil || d.Quote.Kind != trace.PortUnreachable {
		t.Fatalf("hop 4: %+v, want the destination's Port Unreachable", d)
	}
	if dscp, ok := d.DSCP(); !ok || dscp != 26 {
		t.Errorf("the destination's quote shows DSCP %d (%v), want 26", dscp, ok)
	}
	if ch := res.PathChanges(res.Paths[0]); len(ch) != 0 {
		t.Errorf("changes %v on a fabric that changes nothing", ch)
	}
	if len(frames) != res.Probes {
		t.Errorf("captured %d frames leaving S, the trace says it sent %d probes", len(frames), res.Probes)
	}
	for _, b := range frames {
		pf, err := probe.ParseFrame(b)
		if err != nil || pf.Dst != ep.Dst || pf.Src != ep.Src || pf.Sport != 0xc001 {
			t.Errorf("a frame left S that is not a probe to %s from port 0xc001: %v %v → %v port %d", ep.Dst, err, pf.Src, pf.Dst, pf.Sport)
		}
	}
}

// L1 rate-limits its ICMP errors (Linux's default rule, 1 per
// icmp_ratelimit after a burst of 6, here every 400 ms): hops it does not
// answer at once are tried again with longer waits, and every hop 1
// answers in the end.
func TestRunICMPRateLimit(t *testing.T) {
	f := newFabric(t)
	netnstest.Run(t, "ip", "netns", "exec", f.L1, "sysctl", "-qw", "net.ipv4.icmp_ratelimit=400")
	f.listen(t)
	res := f.trace(t, trace.Config{Endpoint: f.endpoint(false), Sports: trace.Ports(nil, 10), Parallel: 5,
		Base: probe.Markings{DSCP: 26, ECN: probe.ECNECT0}, Timeout: 200 * time.Millisecond, Tries: 5})
	retried := 0
	n := 0
	for _, p := range res.Traces {
		for _, h := range p.Hops {
			if h.TTL != 1 {
				continue
			}
			n++
			if h.Status != trace.HopTimeExceeded {
				t.Errorf("port %d: hop 1 %s after %d tries, want answered", p.Sport, h.Status, h.Tries)
			}
			if h.Tries > 1 {
				retried++
			}
		}
	}
	if retried == 0 {
		t.Errorf("no hop 1 needed a second try: the rate limit was not met (%d ports)", n)
	}
	if n != 10 {
		t.Errorf("%d ports traced, want 10", n)
	}
	t.Logf("%d probes, %d of 10 ports' hop 1 needed more than one try", res.Probes, retried)
}
