//go:build linux

package netnstest

import (
	"fmt"
	"testing"
)

// TwoPaths is a small routed two-path fabric of network namespaces:
//
//	S ── L1 ─┬─ A ─┬─ L2 ── D
//	         └─ B ─┘
//
// L1 and L2 spread flows over A and B by the 5-tuple
// (fib_multipath_hash_policy 1); routers answer every expired probe
// (ICMP rate limits off) from the address of the port it came in on.
type TwoPaths struct {
	// S, L1, A, B, L2 and D are the namespaces.
	S, L1, A, B, L2, D string
	// MACs are the MAC addresses by netdev name: s0 (S), l1s, l1a, l1b
	// (L1), a1, a2 (A), b1, b2 (B), l2a, l2b, l2d (L2), d0 (D).
	MACs map[string]string
}

// NewTwoPaths builds the fabric TwoPaths describes. Addresses (IPv4 and
// IPv6 on every link, S 10.1.0.1 and fd00:1::1, D 10.4.0.1 and
// fd00:4::1): S–L1 10.1.0.0/24 (L1 .254), L1–A 10.2.0.0/30 (A .2), L1–B
// 10.2.1.0/30 (B .2), A–L2 10.3.0.0/30 (L2 .2), B–L2 10.3.1.0/30 (L2
// .2), L2–D 10.4.0.0/24 (L2 .254); IPv6 fd00:1::/64, fd00:21::/64,
// fd00:22::/64, fd00:31::/64, fd00:32::/64, fd00:4::/64 with the same
// host numbers (::1 and ::2 on the /30 links, ::fe for .254). S has a
// permanent neighbour entry for its gateway.
func NewTwoPaths(t testing.TB) *TwoPaths {
	t.Helper()
	RequireRoot(t, "nft")
	f := &TwoPaths{MACs: map[string]string{}}
	f.S, f.L1, f.A, f.B, f.L2, f.D = New(t, "s"), New(t, "l1"), New(t, "a"), New(t, "b"), New(t, "l2"), New(t, "d")
	links := []struct{ ns1, d1, ns2, d2, v4a, v4b, v6a, v6b string }{
		{f.S, "s0", f.L1, "l1s", "10.1.0.1/24", "10.1.0.254/24", "fd00:1::1/64", "fd00:1::fe/64"},
		{f.L1, "l1a", f.A, "a1", "10.2.0.1/30", "10.2.0.2/30", "fd00:21::1/64", "fd00:21::2/64"},
		{f.L1, "l1b", f.B, "b1", "10.2.1.1/30", "10.2.1.2/30", "fd00:22::1/64", "fd00:22::2/64"},
		{f.A, "a2", f.L2, "l2a", "10.3.0.1/30", "10.3.0.2/30", "fd00:31::1/64", "fd00:31::2/64"},
		{f.B, "b2", f.L2, "l2b", "10.3.1.1/30", "10.3.1.2/30", "fd00:32::1/64", "fd00:32::2/64"},
		{f.L2, "l2d", f.D, "d0", "10.4.0.254/24", "10.4.0.1/24", "fd00:4::fe/64", "fd00:4::1/64"},
	}
	for i, l := range links {
		f.MACs[l.d1], f.MACs[l.d2] = fmt.Sprintf("02:00:00:00:24:%02x", 2*i+1), fmt.Sprintf("02:00:00:00:24:%02x", 2*i+2)
		Veth(t, l.ns1, l.d1, f.MACs[l.d1], l.ns2, l.d2, f.MACs[l.d2])
		Run(t, "ip", "-n", l.ns1, "addr", "add", l.v4a, "dev", l.d1)
		Run(t, "ip", "-n", l.ns2, "addr", "add", l.v4b, "dev", l.d2)
		Run(t, "ip", "-n", l.ns1, "addr", "add", l.v6a, "dev", l.d1, "nodad")
		Run(t, "ip", "-n", l.ns2, "addr", "add", l.v6b, "dev", l.d2, "nodad")
	}
	for _, r := range []string{f.L1, f.A, f.B, f.L2} {
		for _, kv := range []string{"net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
			"net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1",
			"net.ipv4.icmp_ratelimit=0", "net.ipv6.icmp.ratelimit=0", "net.ipv4.icmp_errors_use_inbound_ifaddr=1"} {
			Run(t, "ip", "netns", "exec", r, "sysctl", "-qw", kv)
		}
	}
	route := func(ns string, args ...string) {
		Run(t, append([]string{"ip", "-n", ns, "route", "add"}, args...)...)
	}
	route6 := func(ns string, args ...string) {
		Run(t, append([]string{"ip", "-6", "-n", ns, "route", "add"}, args...)...)
	}
	route(f.S, "default", "via", "10.1.0.254")
	route6(f.S, "default", "via", "fd00:1::fe")
	route(f.D, "default", "via", "10.4.0.254")
	route6(f.D, "default", "via", "fd00:4::fe")
	route(f.L1, "10.4.0.0/24", "nexthop", "via", "10.2.0.2", "nexthop", "via", "10.2.1.2")
	route6(f.L1, "fd00:4::/64", "nexthop", "via", "fd00:21::2", "nexthop", "via", "fd00:22::2")
	route(f.L2, "10.1.0.0/24", "nexthop", "via", "10.3.0.1", "nexthop", "via", "10.3.1.1")
	route6(f.L2, "fd00:1::/64", "nexthop", "via", "fd00:31::1", "nexthop", "via", "fd00:32::1")
	for _, x := range []struct{ ns, up, up6, down, down6 string }{
		{f.A, "10.2.0.1", "fd00:21::1", "10.3.0.2", "fd00:31::2"}, {f.B, "10.2.1.1", "fd00:22::1", "10.3.1.2", "fd00:32::2"}} {
		route(x.ns, "10.1.0.0/24", "via", x.up)
		route6(x.ns, "fd00:1::/64", "via", x.up6)
		route(x.ns, "10.4.0.0/24", "via", x.down)
		route6(x.ns, "fd00:4::/64", "via", x.down6)
	}
	// S knows its gateway's MAC (the endpoint is built by hand here).
	Run(t, "ip", "-n", f.S, "neigh", "replace", "10.1.0.254", "lladdr", f.MACs["l1s"], "dev", "s0", "nud", "permanent")
	Run(t, "ip", "-n", f.S, "neigh", "replace", "fd00:1::fe", "lladdr", f.MACs["l1s"], "dev", "s0", "nud", "permanent")
	return f
}

// Remark makes router ns rewrite a field of the RoCE v2 packets it sends
// out of dev (nftables, postrouting: after the routing decision, as a
// switch port's egress remarking does): "dscp" to 0 or "ecn" to Not-ECT,
// IPv4 and IPv6; "ce" sets ECN to CE, as a congested queue marks an
// ECN-capable packet (RFC 3168) — on every packet, ECN-capable or not.
func Remark(t testing.TB, ns, dev, field string) {
	t.Helper()
	set := map[string]string{"dscp": "dscp set 0", "ecn": "ecn set not-ect", "ce": "ecn set ce"}[field]
	RunStdin(t, `table inet remark {
	chain post {
		type filter hook postrouting priority 0;
		oifname "`+dev+`" udp dport 4791 ip `+set+`
		oifname "`+dev+`" udp dport 4791 ip6 `+set+`
	}
}
`, "ip", "netns", "exec", ns, "nft", "-f", "-")
}
