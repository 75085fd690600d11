//go:build linux

package lab

import (
	"fmt"
	"net/netip"
)

// The routed leaf-spine fabric (Linux 7.x, next to the bridged fabric):
// two leaves and two spines, each router a network namespace named after
// it, and four RDMA hosts h5..h8 (each a namespace with its own rxe device
// rxe5..rxe8 on its NIC eth0), h5 and h6 behind leaf1, h7 and h8 behind
// leaf2. Every leaf has a link to every spine. A router's interface is
// named after the neighbour at its other end ("spine1" in leaf1 is leaf1's
// link to spine1; "h5" in leaf1 is its link to h5), so a port is (router,
// neighbour).
//
// Addresses: host hN's link is 10.30.N.0/24 and fd30:N::/64, the host .2
// (::2), its leaf .1 (::1), the host's default route via the leaf. The
// link between leaf i and spine j is 10.31.ij.0/24 and fd31:ij::/64, the
// leaf .1, the spine .2. Leaves route the hosts' networks 10.30.0.0/16 and
// fd30::/16 over both spines (one multipath route, 5-tuple hash); spines
// route each host's /24 and /64 to its leaf.
const (
	Leaf1  = "leaf1"
	Leaf2  = "leaf2"
	Spine1 = "spine1"
	Spine2 = "spine2"
)

var (
	// Leaves are the leaf routers, Spines the spine routers (each a
	// network namespace).
	Leaves = []string{Leaf1, Leaf2}
	Spines = []string{Spine1, Spine2}
	// LeafSpineHostsNet4 and LeafSpineHostsNet6 hold every host link; the
	// leaves' multipath routes are for them.
	LeafSpineHostsNet4 = netip.MustParsePrefix("10.30.0.0/16")
	LeafSpineHostsNet6 = netip.MustParsePrefix("fd30::/16")
)

// RoutedHost is one host of the leaf-spine. Its Host (Name "h5".."h8",
// RDMADevice "rxe5".."rxe8", MAC, Port: its leaf's interface toward it,
// which is named after the host, PortMAC: that interface's MAC) works
// with the traffic helpers (RCPingpong, Perftest, Ucmatose, Rping, Start,
// RunIn), whose TCP exchanges go to the host's IPv4 address.
type RoutedHost struct {
	Host
	Leaf string // its leaf router, Leaf1 or Leaf2
	// IP4 and IP6 are its addresses on HostNIC (with the link's prefix
	// length); Gateway4 and Gateway6 its leaf's addresses there, its
	// default routes.
	IP4, IP6           netip.Prefix
	Gateway4, Gateway6 netip.Addr
}

// Addr returns h's address in the family of v6.
func (h RoutedHost) Addr(v6 bool) netip.Addr {
	if v6 {
		return h.IP6.Addr()
	}
	return h.IP4.Addr()
}

// RouterPort is one interface of a leaf-spine router.
type RouterPort struct {
	Router   string // the router (its namespace)
	Netdev   string // the interface: named after Neighbor
	Neighbor string // the router or host at the other end
	MAC      string
	// IP4 and IP6 are the router's addresses on it; PeerIP4 and PeerIP6
	// the neighbour's.
	IP4, IP6         netip.Prefix
	PeerIP4, PeerIP6 netip.Addr
}

// RoutedHosts are the leaf-spine's RDMA hosts.
var RoutedHosts = []RoutedHost{routedHost(5, Leaf1), routedHost(6, Leaf1), routedHost(7, Leaf2), routedHost(8, Leaf2)}

func routedHost(n int, leaf string) RoutedHost {
	h := RoutedHost{
		Host: Host{Name: fmt.Sprintf("h%d", n), RDMADevice: fmt.Sprintf("rxe%d", n),
			MAC: fmt.Sprintf("02:00:00:00:01:%02x", n), Port: fmt.Sprintf("h%d", n), PortMAC: fmt.Sprintf("02:00:00:00:02:%02x", n), index: n},
		Leaf:     leaf,
		IP4:      netip.MustParsePrefix(fmt.Sprintf("10.30.%d.2/24", n)),
		IP6:      netip.MustParsePrefix(fmt.Sprintf("fd30:%d::2/64", n)),
		Gateway4: netip.MustParseAddr(fmt.Sprintf("10.30.%d.1", n)),
		Gateway6: netip.MustParseAddr(fmt.Sprintf("fd30:%d::1", n)),
	}
	h.Host.oob = h.IP4.Addr()
	return h
}

// leafIndex is 1 for leaf1, 2 for leaf2 (and the same for spines).
func routerIndex(name string) int { return int(name[len(name)-1] - '0') }

// uplink is the link between leaf i and spine j: the leaf's and the
// spine's addresses.
func uplink(leaf, spine string) (l4, s4, l6, s6 netip.Prefix) {
	ij := routerIndex(leaf)*10 + routerIndex(spine)
	return netip.MustParsePrefix(fmt.Sprintf("10.31.%d.1/24", ij)), netip.MustParsePrefix(fmt.Sprintf("10.31.%d.2/24", ij)),
		netip.MustParsePrefix(fmt.Sprintf("fd31:%d::1/64", ij)), netip.MustParsePrefix(fmt.Sprintf("fd31:%d::2/64", ij))
}

// RouterPorts returns router's interfaces: a leaf's toward each spine then
// each of its hosts, a spine's toward each leaf. An unknown router is an
// error.
func RouterPorts(router string) ([]RouterPort, error) {
	var ps []RouterPort
	switch router {
	case Leaf1, Leaf2:
		for _, s := range Spines {
			l4, s4, l6, s6 := uplink(router, s)
			ps = append(ps, RouterPort{Router: router, Netdev: s, Neighbor: s,
				MAC: fmt.Sprintf("02:00:00:00:1%d:%02x", routerIndex(router), routerIndex(s)),
				IP4: l4, IP6: l6, PeerIP4: s4.Addr(), PeerIP6: s6.Addr()})
		}
		for _, h := range RoutedHosts {
			if h.Leaf != router {
				continue
			}
			ps = append(ps, RouterPort{Router: router, Netdev: h.Port, Neighbor: h.Name, MAC: h.PortMAC,
				IP4: netip.PrefixFrom(h.Gateway4, h.IP4.Bits()), IP6: netip.PrefixFrom(h.Gateway6, h.IP6.Bits()),
				PeerIP4: h.IP4.Addr(), PeerIP6: h.IP6.Addr()})
		}
	case Spine1, Spine2:
		for _, l := range Leaves {
			l4, s4, l6, s6 := uplink(l, router)
			ps = append(ps, RouterPort{Router: router, Netdev: l, Neighbor: l,
				MAC: fmt.Sprintf("02:00:00:00:2%d:%02x", routerIndex(router), routerIndex(l)),
				IP4: s4, IP6: s6, PeerIP4: l4.Addr(), PeerIP6: l6.Addr()})
		}
	default:
		return nil, fmt.Errorf("lab: no leaf-spine router %q: want one of %v or %v", router, Leaves, Spines)
	}
	return ps, nil
}

// RouterPortTo returns router's interface toward neighbor (a router or a
// host).
func RouterPortTo(router, neighbor string) (RouterPort, error) {
	ps, err := RouterPorts(router)
	if err != nil {
		return RouterPort{}, err
	}
	var names []string
	for _, p := range ps {
		if p.Neighbor == neighbor {
			return p, nil
		}
		names = append(names, p.Neighbor)
	}
	return RouterPort{}, fmt.Errorf("lab: leaf-spine router %s has no port toward %q: want one of %v", router, neighbor, names)
}

// RoutedHostByName returns the leaf-spine host named name ("h5".."h8").
func RoutedHostByName(name string) (RoutedHost, error) {
	for _, h := range RoutedHosts {
		if h.Name == name {
			return h, nil
		}
	}
	return RoutedHost{}, fmt.Errorf("lab: no leaf-spine host %q: want h5..h8", name)
}

// leafSpineRouters are every router, leaves first.
func leafSpineRouters() []string { return append(append([]string(nil), Leaves...), Spines...) }

// leafSpineNamespaces are the namespaces of the leaf-spine: routers, then
// hosts.
func leafSpineNamespaces() []string {
	ns := leafSpineRouters()
	for _, h := range RoutedHosts {
		ns = append(ns, h.Name)
	}
	return ns
}
