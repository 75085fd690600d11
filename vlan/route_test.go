package vlan

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
)

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

// labNet is a snapshot shaped like the lab's initial namespace (docs/lab.md)
// plus a routed network, a route with a hoplimit metric and error routes.
func labNet() *Namespace {
	mac := func(s string) MAC {
		var m MAC
		if err := m.UnmarshalText([]byte(s)); err != nil {
			panic(err)
		}
		return m
	}
	ttl := 64
	return &Namespace{
		Links: []Link{
			{Name: "lo", Index: 1, Kind: KindLoopback, OperState: "unknown", Addrs: []netip.Prefix{pfx("127.0.0.1/8"), pfx("::1/128")}},
			{Name: "veth0", Index: 2, Kind: KindVeth, MAC: mac("02:00:00:00:00:01"), MTU: 1500, OperState: "up", Ether: true,
				Addrs: []netip.Prefix{pfx("10.0.0.1/24"), pfx("fd00::1/64"), pfx("fe80::ff:fe00:1/64")}},
			{Name: "veth0.100", Index: 3, Kind: KindVLAN, ParentIndex: 2, MAC: mac("02:00:00:00:00:01"), MTU: 1500, OperState: "up", Ether: true,
				Tag: &Tag{ID: 100, TPID: TPID8021Q}, EgressQoS: QoSMap{0: 3, 2: 5, 4: 6, 6: 7},
				Addrs: []netip.Prefix{pfx("10.0.100.1/24"), pfx("fd00:100::1/64")}},
		},
		Routes: []Route{
			{Table: TableLocal, Type: RouteLocal, Dst: pfx("10.0.0.1/32"), Dev: "veth0", Ifindex: 2},
			{Table: TableLocal, Type: RouteBroadcast, Dst: pfx("10.0.0.255/32"), Dev: "veth0", Ifindex: 2},
			{Table: TableLocal, Type: RouteLocal, Dst: pfx("10.0.100.1/32"), Dev: "veth0.100", Ifindex: 3},
			{Table: TableLocal, Type: RouteLocal, Dst: pfx("fd00::1/128"), Dev: "veth0", Ifindex: 2},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("10.0.0.0/24"), Dev: "veth0", Ifindex: 2},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("10.0.100.0/24"), Dev: "veth0.100", Ifindex: 3},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("10.9.0.0/16"), Gateway: ip("10.0.0.254"), Dev: "veth0", Ifindex: 2, Priority: 100},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("10.9.0.0/16"), Gateway: ip("10.0.0.253"), Dev: "veth0", Ifindex: 2, Priority: 50, HopLimit: 8},
			{Table: TableMain, Type: RouteBlackhole, Dst: pfx("10.66.0.0/16")},
			{Table: TableMain, Type: RouteUnreachable, Dst: pfx("10.67.0.0/16")},
			{Table: TableMain, Type: RouteProhibit, Dst: pfx("10.68.0.0/16")},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("fd00::/64"), Dev: "veth0", Ifindex: 2, Priority: 256},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("fe80::/64"), Dev: "veth0", Ifindex: 2, Priority: 256},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("fd00:100::/64"), Dev: "veth0.100", Ifindex: 3, Priority: 256},
			{Table: TableMain, Type: RouteUnicast, Dst: pfx("fd99::/16"), Gateway: ip("fe80::1"), Dev: "veth0", Ifindex: 2, Priority: 1024},
			{Table: 100, Type: RouteUnicast, Dst: pfx("0.0.0.0/0"), Gateway: ip("10.0.0.99"), Dev: "veth0", Ifindex: 2},
		},
		Neighbors: []Neighbor{
			{IP: ip("10.0.0.2"), Dev: "veth0", Ifindex: 2, MAC: mac("02:00:00:00:00:02"), State: NUDReachable},
			{IP: ip("10.0.0.253"), Dev: "veth0", Ifindex: 2, MAC: mac("02:00:00:00:00:fd"), State: NUDStale},
			{IP: ip("10.0.0.3"), Dev: "veth0", Ifindex: 2, State: NUDFailed},
			{IP: ip("10.0.100.2"), Dev: "veth0.100", Ifindex: 3, MAC: mac("02:00:00:00:00:02"), State: NUDPermanent},
			{IP: ip("fd00::2"), Dev: "veth0", Ifindex: 2, MAC: mac("02:00:00:00:00:02"), State: NUDDelay},
		},
		Sysctls: Sysctls{IPv4DefaultTTL: &ttl, IPv6HopLimit: map[string]int{"veth0": 64, "veth0.100": 32, "lo": 64}},
	}
}

func TestRouteTo(t *testing.T) {
	cases := []struct {
		name    string
		dst     string
		dev     string
		errno   syscall.Errno
		nextHop string
		hop     int
		local   bool
		onLink  bool
		outDev  string
	}{
		{name: "on-link IPv4", dst: "10.0.0.2", dev: "veth0", nextHop: "10.0.0.2", hop: 64, outDev: "veth0"},
		// Longest prefix, then the lowest metric; the route's hoplimit metric wins over the sysctl.
		{name: "routed IPv4, lowest metric", dst: "10.9.1.1", dev: "veth0", nextHop: "10.0.0.253", hop: 8, outDev: "veth0"},
		// fib_lookup_good_nhc: the next hop must leave through the oif; with no route through
		// veth0.100, IPv4 assumes the destination is on veth0.100's link.
		{name: "IPv4 through another netdev: assumed on-link", dst: "10.9.1.1", dev: "veth0.100", nextHop: "10.9.1.1", hop: 64, onLink: true, outDev: "veth0.100"},
		{name: "own address", dst: "10.0.0.1", dev: "veth0", nextHop: "10.0.0.1", hop: 64, local: true, outDev: "veth0"},
		// The local route of 10.0.100.1 is on veth0.100: from veth0 it does not match.
		{name: "own address of another netdev", dst: "10.0.100.1", dev: "veth0", nextHop: "10.0.100.1", hop: 64, onLink: true, outDev: "veth0"},
		{name: "blackhole", dst: "10.66.1.1", dev: "veth0", errno: syscall.EINVAL},
		{name: "unreachable", dst: "10.67.1.1", dev: "veth0", errno: syscall.EHOSTUNREACH},
		{name: "prohibit", dst: "10.68.1.1", dev: "veth0", errno: syscall.EACCES},
		// Table 100 is only reached by policy rules, which are not modelled.
		{name: "other tables ignored", dst: "192.0.2.1", dev: "veth0", nextHop: "192.0.2.1", hop: 64, onLink: true, outDev: "veth0"},
		{name: "IPv6 on-link", dst: "fd00::2", dev: "veth0", nextHop: "fd00::2", hop: 64, outDev: "veth0"},
		{name: "IPv6 hop limit of the netdev", dst: "fd00:100::2", dev: "veth0.100", nextHop: "fd00:100::2", hop: 32, outDev: "veth0.100"},
		{name: "IPv6 via link-local gateway", dst: "fd99::5", dev: "veth0", nextHop: "fe80::1", hop: 64, outDev: "veth0"},
		{name: "IPv6 link-local", dst: "fe80::ff:fe00:2", dev: "veth0", nextHop: "fe80::ff:fe00:2", hop: 64, outDev: "veth0"},
		// ip6_route_output with the oif is strict: no route through veth0.100 → ENETUNREACH.
		{name: "IPv6 through another netdev", dst: "fd00::2", dev: "veth0.100", errno: syscall.ENETUNREACH},
		{name: "IPv6 no route", dst: "2001:db8::1", dev: "veth0", errno: syscall.ENETUNREACH},
	}
	n := labNet()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := n.RouteTo(ip(c.dst), c.dev, 0)
			if c.errno != 0 {
				var re *RouteError
				if !errors.As(err, &re) || !errors.Is(err, c.errno) {
					t.Fatalf("err = %v, want a RouteError with %v", err, c.errno)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.NextHop != ip(c.nextHop) || r.HopLimit != c.hop || r.Local != c.local || r.OnLink != c.onLink || r.Dev != c.outDev || r.HopLimitFrom == "" {
				t.Errorf("got %+v; want next hop %s hop %d local %v on-link %v dev %s", r, c.nextHop, c.hop, c.local, c.onLink, c.outDev)
			}
		})
	}
}

func TestNUDState(t *testing.T) {
	for _, c := range []struct {
		s     NUDState
		str   string
		valid bool
	}{
		{0, "NONE", false}, {NUDIncomplete, "INCOMPLETE", false}, {NUDFailed, "FAILED", false},
		{NUDReachable, "REACHABLE", true}, {NUDStale, "STALE", true}, {NUDDelay, "DELAY", true},
		{NUDProbe, "PROBE", true}, {NUDPermanent, "PERMANENT", true}, {NUDNoARP, "NOARP", true},
	} {
		if c.s.String() != c.str || c.s.Valid() != c.valid {
			t.Errorf("%#x: %s valid %v, want %s %v", uint16(c.s), c.s, c.s.Valid(), c.str, c.valid)
		}
		var back NUDState
		if err := back.UnmarshalText([]byte(c.str)); err != nil || back != c.s {
			t.Errorf("UnmarshalText(%s) = %v, %v", c.str, back, err)
		}
	}
}
