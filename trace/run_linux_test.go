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

// fabric is a small routed two-path fabric of network namespaces:
//
//	S ── L1 ─┬─ A ─┬─ L2 ── D
//	         └─ B ─┘
//
// L1 and L2 spread flows over A and B by the 5-tuple
// (fib_multipath_hash_policy 1); routers answer every expired probe
// (ICMP rate limits off) from the address of the port it came in on.
type fabric struct {
	s, l1, a, b, l2, d string
	macs               map[string]string
}

func mac(i int) string { return net.HardwareAddr{2, 0, 0, 0, 0, byte(i)}.String() }

func newFabric(t *testing.T) *fabric {
	t.Helper()
	netnstest.RequireRoot(t, "nft")
	f := &fabric{macs: map[string]string{}}
	f.s, f.l1, f.a, f.b, f.l2, f.d = netnstest.New(t, "s"), netnstest.New(t, "l1"), netnstest.New(t, "a"),
		netnstest.New(t, "b"), netnstest.New(t, "l2"), netnstest.New(t, "d")
	links := []struct{ ns1, d1, ns2, d2, v4a, v4b, v6a, v6b string }{
		{f.s, "s0", f.l1, "l1s", "10.1.0.1/24", "10.1.0.254/24", "fd00:1::1/64", "fd00:1::fe/64"},
		{f.l1, "l1a", f.a, "a1", "10.2.0.1/30", "10.2.0.2/30", "fd00:21::1/64", "fd00:21::2/64"},
		{f.l1, "l1b", f.b, "b1", "10.2.1.1/30", "10.2.1.2/30", "fd00:22::1/64", "fd00:22::2/64"},
		{f.a, "a2", f.l2, "l2a", "10.3.0.1/30", "10.3.0.2/30", "fd00:31::1/64", "fd00:31::2/64"},
		{f.b, "b2", f.l2, "l2b", "10.3.1.1/30", "10.3.1.2/30", "fd00:32::1/64", "fd00:32::2/64"},
		{f.l2, "l2d", f.d, "d0", "10.4.0.254/24", "10.4.0.1/24", "fd00:4::fe/64", "fd00:4::1/64"},
	}
	for i, l := range links {
		f.macs[l.d1], f.macs[l.d2] = mac(2*i+1), mac(2*i+2)
		netnstest.Veth(t, l.ns1, l.d1, f.macs[l.d1], l.ns2, l.d2, f.macs[l.d2])
		netnstest.Run(t, "ip", "-n", l.ns1, "addr", "add", l.v4a, "dev", l.d1)
		netnstest.Run(t, "ip", "-n", l.ns2, "addr", "add", l.v4b, "dev", l.d2)
		netnstest.Run(t, "ip", "-n", l.ns1, "addr", "add", l.v6a, "dev", l.d1, "nodad")
		netnstest.Run(t, "ip", "-n", l.ns2, "addr", "add", l.v6b, "dev", l.d2, "nodad")
	}
	for _, r := range []string{f.l1, f.a, f.b, f.l2} {
		for _, kv := range []string{"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
			"net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1",
			"net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0", "net.ipv4.icmp_errors_use_inbound_ifaddr=1"} {
			netnstest.Run(t, "ip", "netns", "exec", r, "sysctl", "-qw", kv)
		}
	}
	route := func(ns string, args ...string) {
		netnstest.Run(t, append([]string{"ip", "-n", ns, "route", "add"}, args...)...)
	}
	route6 := func(ns string, args ...string) {
		netnstest.Run(t, append([]string{"ip", "-6", "-n", ns, "route", "add"}, args...)...)
	}
	route(f.s, "default", "via", "10.1.0.254")
	route6(f.s, "default", "via", "fd00:1::fe")
	route(f.d, "default", "via", "10.4.0.254")
	route6(f.d, "default", "via", "fd00:4::fe")
	route(f.l1, "10.4.0.0/24", "nexthop", "via", "10.2.0.2", "nexthop", "via", "10.2.1.2")
	route6(f.l1, "fd00:4::/64", "nexthop", "via", "fd00:21::2", "nexthop", "via", "fd00:22::2")
	route(f.l2, "10.1.0.0/24", "nexthop", "via", "10.3.0.1", "nexthop", "via", "10.3.1.1")
	route6(f.l2, "fd00:1::/64", "nexthop", "via", "fd00:31::1", "nexthop", "via", "fd00:32::1")
	for _, x := range []struct{ ns, up, up6, down, down6 string }{
		{f.a, "10.2.0.1", "fd00:21::1", "10.3.0.2", "fd00:31::2"}, {f.b, "10.2.1.1", "fd00:22::1", "10.3.1.2", "fd00:32::2"}} {
		route(x.ns, "10.1.0.0/24", "via", x.up)
		route6(x.ns, "fd00:1::/64", "via", x.up6)
		route(x.ns, "10.4.0.0/24", "via", x.down)
		route6(x.ns, "fd00:4::/64", "via", x.down6)
	}
	// S knows its gateway's MAC (the endpoint is built by hand here).
	netnstest.Run(t, "ip", "-n", f.s, "neigh", "replace", "10.1.0.254", "lladdr", f.macs["l1s"], "dev", "s0", "nud", "permanent")
	netnstest.Run(t, "ip", "-n", f.s, "neigh", "replace", "fd00:1::fe", "lladdr", f.macs["l1s"], "dev", "s0", "nud", "permanent")
	return f
}

// remark makes router ns rewrite a field of the RoCE v2 packets it sends
// out of dev (nftables, postrouting: after the routing decision, as a
// switch port's egress remarking does): "dscp" to 0 or "ecn" to Not-ECT,
// IPv4 and IPv6.
func remark(t *testing.T, ns, dev, field string) {
	t.Helper()
	set := map[string]string{"dscp": "dscp set 0", "ecn": "ecn set not-ect"}[field]
	netnstest.RunStdin(t, `table inet remark {
	chain post {
		type filter hook postrouting priority 0;
		oifname "`+dev+`" udp dport 4791 ip `+set+`
		oifname "`+dev+`" udp dport 4791 ip6 `+set+`
	}
}
`, "ip", "netns", "exec", ns, "nft", "-f", "-")
}

// listen runs a probe listener on D until the test ends.
func (f *fabric) listen(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		netnstest.Do(f.d, func() error {
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
	smac, _ := net.ParseMAC(f.macs["s0"])
	dmac, _ := net.ParseMAC(f.macs["l1s"])
	return probe.Endpoint{Netdev: "s0", Wire: "s0", SrcMAC: smac, DstMAC: dmac,
		Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), NextHop: netip.MustParseAddr(gw)}
}

func (f *fabric) trace(t *testing.T, cfg trace.Config) trace.Result {
	t.Helper()
	var res trace.Result
	err := netnstest.Do(f.s, func() error {
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
	remark(t, f.b, "b2", "dscp")
	remark(t, f.a, "a2", "ecn")
	f.listen(t)
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "IPv4", true: "IPv6"}[v6]
		t.Run(name, func(t *testing.T) {
			spineA, spineB := "10.2.0.2", "10.2.1.2"
			if v6 {
				spineA, spineB = "fd00:21::2", "fd00:22::2"
			}
			res := f.trace(t, trace.Config{Endpoint: f.endpoint(v6), Paths: 4,
				Base: probe.Markings{DSCP: 26, ECN: probe.ECNECT0}, Timeout: 300 * time.Millisecond})
			t.Logf("%d ports tried, %d probes: %s", res.PortsTried, res.Probes, res.Stop)
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
