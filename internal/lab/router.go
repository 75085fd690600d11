//go:build linux

package lab

import (
	"fmt"
	"net/netip"
	"time"
)

// LeafSpine drives the routed leaf-spine fabric for one test: faults on
// router ports (the same Port methods as the bridged fabric's switch
// ports: RemarkDSCP, MarkCE, BleachECN, DropRoCE, Netem, Loss), router
// faults (NoICMP, ICMPRateLimit) and captures. Every fault lasts until the
// test ends: UseLeafSpine registers a cleanup that removes them all.
//
//	ls := lab.UseLeafSpine(t)                         // hosts h5, h6 (leaf1), h7, h8 (leaf2)
//	ls.Router("spine1").Port("leaf2").RemarkDSCP(26, 0) // spine1 remarks on its link to leaf2
//	ls.Router("spine2").NoICMP()                       // spine2 answers no ICMP
//	c := ls.Router("spine1").Port("leaf2").Capture()   // what spine1 sends to leaf2 (after its faults) and receives from it
type LeafSpine struct {
	*faults
}

// UseLeafSpine returns the leaf-spine for test t, failing t when it is
// not up (roce-probe lab up --leaf-spine builds it on Linux 7.x;
// scripts/lab.sh builds it alone, after the other phases, for the tests of
// *_leafspine_lab_test.go files).
func UseLeafSpine(t TB) *LeafSpine {
	t.Helper()
	if !LeafSpineIsUp() {
		t.Fatalf("the leaf-spine is not up (namespaces %v, rxe5..rxe8 ACTIVE): run its tests with scripts/lab.sh --kernel 7 (they live in *_leafspine_lab_test.go files) or roce-probe lab up --leaf-spine", leafSpineNamespaces())
	}
	return &LeafSpine{newFaults(t)}
}

// Reset removes every fault this LeafSpine added (tc rules, router
// sysctls).
func (l *LeafSpine) Reset() { l.reset() }

// Host returns the leaf-spine host named name ("h5".."h8"), failing the
// test if there is none.
func (l *LeafSpine) Host(name string) RoutedHost {
	l.t.Helper()
	h, err := RoutedHostByName(name)
	if err != nil {
		l.t.Fatalf("%v", err)
	}
	return h
}

// CaptureHost starts a capture on host name's NIC (in its namespace):
// what the host sends and receives (ICMP answers included).
func (l *LeafSpine) CaptureHost(name string) *Capture {
	l.t.Helper()
	return l.capture(l.Host(name).Name, HostNIC)
}

// ShieldRXE makes host name's NIC drop the UDP datagrams to port 4791
// from source ports first..last that it receives, on ingress: after a
// capture on the NIC has seen them, before the IP stack and rxe do. Tests
// that send plain UDP probes to 4791 through the fabric use it to keep
// them from rxe: on Linux 7.3.4 a datagram to 4791 that is not RoCE, sent
// over IPv6 to a namespaced rxe, crashed the kernel in rxe_rcv (valid
// RoCE v2 frames did not).
func (l *LeafSpine) ShieldRXE(name string, first, last uint16) {
	l.t.Helper()
	if first > last {
		l.t.Fatalf("lab: ShieldRXE source ports %d..%d: want first ≤ last", first, last)
	}
	h := l.Host(name)
	p := &Port{l.faults, h.Name, HostNIC, h.Name + " " + HostNIC}
	var fs [][]string
	for _, fam := range []string{"ip", "ipv6"} {
		fs = append(fs, []string{"protocol", fam, "flower", "ip_proto", "udp", "dst_port", "4791", "src_port", fmt.Sprintf("%d-%d", first, last), "action", "drop"})
	}
	p.filters("ingress", fs)
}

// Router is one router of the leaf-spine in a test.
type Router struct {
	l    *LeafSpine
	name string
}

// Router returns the router named name (Leaf1, Leaf2, Spine1, Spine2),
// failing the test if there is none.
func (l *LeafSpine) Router(name string) *Router {
	l.t.Helper()
	if _, err := RouterPorts(name); err != nil {
		l.t.Fatalf("%v", err)
	}
	return &Router{l, name}
}

// Name returns the router's name (its namespace).
func (r *Router) Name() string { return r.name }

// Port returns the router's interface toward neighbor (a router or a
// host), failing the test if it has none.
func (r *Router) Port(neighbor string) *Port {
	r.l.t.Helper()
	p, err := RouterPortTo(r.name, neighbor)
	if err != nil {
		r.l.t.Fatalf("%v", err)
	}
	return &Port{r.l.faults, r.name, p.Netdev, r.name + "→" + neighbor}
}

// Ports returns every interface of the router.
func (r *Router) Ports() []*Port {
	ps, _ := RouterPorts(r.name)
	var out []*Port
	for _, p := range ps {
		out = append(out, &Port{r.l.faults, r.name, p.Netdev, r.name + "→" + p.Neighbor})
	}
	return out
}

// Addrs returns the router's addresses (IPv4 and IPv6, every interface):
// an ICMP answer from the router comes from one of them.
func (r *Router) Addrs() []netip.Addr {
	ps, _ := RouterPorts(r.name)
	var out []netip.Addr
	for _, p := range ps {
		out = append(out, p.IP4.Addr(), p.IP6.Addr())
	}
	return out
}

// icmpv6Keep are the ICMPv6 types NoICMP lets through: Packet Too Big
// (2) and neighbour discovery (133..137, RFC 4861), without which the
// router's links would break.
var icmpv6Keep = []int{2, 133, 134, 135, 136, 137}

// NoICMP makes the router answer nothing: every ICMP and ICMPv6 packet
// whose source is one of the router's addresses (echo replies,
// destination unreachable, time exceeded, parameter problem, ...) is
// dropped on every port of the router (tc flower on egress), except
// ICMPv6 Packet Too Big and neighbour discovery; ICMP the router forwards
// for others passes, and the router still forwards everything.
func (r *Router) NoICMP() {
	r.l.t.Helper()
	var fs [][]string
	for _, ty := range icmpv6Keep {
		fs = append(fs, []string{"protocol", "ipv6", "flower", "ip_proto", "icmpv6", "type", fmt.Sprint(ty), "action", "ok"})
	}
	for _, a := range r.Addrs() {
		if a.Is6() {
			fs = append(fs, []string{"protocol", "ipv6", "flower", "ip_proto", "icmpv6", "src_ip", a.String(), "action", "drop"})
		} else {
			fs = append(fs, []string{"protocol", "ip", "flower", "ip_proto", "icmp", "src_ip", a.String(), "action", "drop"})
		}
	}
	for _, p := range r.Ports() {
		p.egressFilters(fs)
	}
	r.l.t.Logf("lab: %s answers no ICMP (its ICMP and ICMPv6 dropped on its ports, but ICMPv6 types %v)", r.name, icmpv6Keep)
}

// ICMPRateLimit makes the router rate-limit the ICMP errors it sends per
// destination as Linux does: at most one per interval after a burst
// (net.ipv4.icmp_ratelimit and net.ipv6.icmp.ratelimit, in ms, for the
// types of icmp_ratemask / icmp.ratemask; the per-destination token bucket
// holds 6 intervals, XRLIM_BURST_FACTOR in net/ipv4/inetpeer.c). The
// leaf-spine's routers start with 0 (no limit); Reset restores that.
func (r *Router) ICMPRateLimit(interval time.Duration) {
	f := r.l.faults
	f.t.Helper()
	if interval < time.Millisecond {
		f.t.Fatalf("lab: ICMP rate limit interval %v: want at least 1ms", interval)
	}
	ms := fmt.Sprint(interval.Milliseconds())
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, key := range []string{"net/ipv4/icmp_ratelimit", "net/ipv6/icmp/ratelimit"} {
		if err := sysctlIn(r.name, key, ms); err != nil {
			f.t.Fatalf("%v", err)
		}
		name, k := r.name, key
		f.undo = append(f.undo, func() error { return sysctlIn(name, k, "0") })
	}
	f.t.Logf("lab: %s rate-limits ICMP errors to one per %v per destination", r.name, interval)
}
