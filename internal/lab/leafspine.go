//go:build linux

package lab

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// routerSysctls are what LeafSpineUp sets in every router's namespace:
// forwarding; multipath routes that hash on the 5-tuple (policy 1: L4,
// Documentation/networking/ip-sysctl.rst); no per-destination ICMP rate
// limit (icmp_ratelimit 0) and a global ICMP budget far above what a lab
// test sends, so every TTL-expired probe gets its answer; no reverse-path
// filter (the return path of a flow may take the other spine).
var routerSysctls = [][2]string{
	{"net/ipv4/ip_forward", "1"},
	{"net/ipv6/conf/all/forwarding", "1"},
	{"net/ipv4/fib_multipath_hash_policy", "1"},
	{"net/ipv6/fib_multipath_hash_policy", "1"},
	{"net/ipv4/icmp_ratelimit", "0"},
	{"net/ipv6/icmp/ratelimit", "0"},
	{"net/ipv4/icmp_msgs_per_sec", "100000"},
	{"net/ipv4/icmp_msgs_burst", "100000"},
	{"net/ipv4/conf/all/rp_filter", "0"},
	{"net/ipv4/conf/default/rp_filter", "0"},
}

// LeafSpineUp builds the routed leaf-spine fabric (leafspine_topology.go)
// in the running kernel: the router namespaces with forwarding and the
// sysctls of routerSysctls, the links with fixed MACs and addresses (IPv6
// nodad, DAD off), the routes (the leaves' multipath routes over both
// spines), the hosts' namespaces h5..h8 with their default routes and
// their rxe devices rxe5..rxe8, created inside them in the kernel's shared
// RDMA netns mode (in which rdma_cm works; see docs/lab.md). It waits
// until every rxe port is ACTIVE and has its GIDs (the link-local one and
// one per address). It fails like FabricUp: not root, a kernel whose rxe
// works only in the initial namespace (ErrNoNetnsRXE), exclusive RDMA
// netns mode, or a part that already exists (LeafSpineDown first); a
// failure removes what was built.
func LeafSpineUp(timeout time.Duration) error {
	if geteuid() != 0 {
		return ErrNotRoot
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if err := preflight("leaf-spine", "LeafSpineDown", leafSpineNamespaces(), leafSpineRDMADevices()); err != nil {
		return err
	}
	if err := buildLeafSpine(); err != nil {
		return leafSpineCleanup(err)
	}
	for _, h := range RoutedHosts {
		if err := WaitPortActive(h.RDMADevice, 1, timeout); err != nil {
			return leafSpineCleanup(err)
		}
		mac, _ := net.ParseMAC(h.MAC)
		want := []gidKey{{linkLocal(mac), HostNIC}, {h.IP4.Addr(), HostNIC}, {h.IP6.Addr(), HostNIC}}
		if err := waitGIDs(h.RDMADevice, 1, want, timeout); err != nil {
			return leafSpineCleanup(err)
		}
	}
	return nil
}

// leafSpineRDMADevices are the rxe devices of RoutedHosts.
func leafSpineRDMADevices() []string {
	d := make([]string, len(RoutedHosts))
	for i, h := range RoutedHosts {
		d[i] = h.RDMADevice
	}
	return d
}

func leafSpineCleanup(err error) error {
	if derr := LeafSpineDown(); derr != nil {
		return fmt.Errorf("%w (removing the partial leaf-spine also failed: %v)", err, derr)
	}
	return err
}

// openNsQuiet creates a namespace with lo up and IPv6 DAD off for every
// netdev made in it later (conf/default/accept_dad, which new netdevs
// copy).
func openNsQuiet(name string) (*nsHandle, error) {
	n, err := openNs(name)
	if err != nil {
		return nil, err
	}
	if lo, err := n.h.LinkByName("lo"); err == nil {
		_ = n.h.LinkSetUp(lo)
	}
	if err := sysctlIn(name, "net/ipv6/conf/default/accept_dad", "0"); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func buildLeafSpine() error {
	ns := map[string]*nsHandle{}
	defer func() {
		for _, n := range ns {
			n.close()
		}
	}()
	for _, r := range leafSpineRouters() {
		n, err := openNsQuiet(r)
		if err != nil {
			return err
		}
		ns[r] = n
		for _, kv := range routerSysctls {
			if err := sysctlIn(r, kv[0], kv[1]); err != nil {
				return err
			}
		}
	}
	for _, h := range RoutedHosts {
		n, err := openNsQuiet(h.Name)
		if err != nil {
			return err
		}
		ns[h.Name] = n
	}
	// Links: each made in the leaf's namespace with its other end in the
	// spine's or the host's.
	for _, l := range Leaves {
		ports, _ := RouterPorts(l)
		for _, p := range ports {
			peerName, peerMAC := "", ""
			if h, err := RoutedHostByName(p.Neighbor); err == nil {
				peerName, peerMAC = HostNIC, h.MAC
			} else {
				sp, _ := RouterPortTo(p.Neighbor, l)
				peerName, peerMAC = sp.Netdev, sp.MAC
			}
			mac, _ := net.ParseMAC(p.MAC)
			pmac, _ := net.ParseMAC(peerMAC)
			veth := &netlink.Veth{
				LinkAttrs:        netlink.LinkAttrs{Name: p.Netdev, HardwareAddr: mac, MTU: MTU},
				PeerName:         peerName,
				PeerHardwareAddr: pmac,
				PeerMTU:          MTU,
				PeerNamespace:    netlink.NsFd(int(ns[p.Neighbor].ns)),
			}
			if err := ns[l].h.LinkAdd(veth); err != nil {
				return fmt.Errorf("lab: add veth %s (%s) / %s (%s): %w", p.Netdev, l, peerName, p.Neighbor, err)
			}
		}
	}
	// Addresses, then up.
	addrs := func(n *nsHandle, dev string, ps ...netip.Prefix) error {
		link, err := n.h.LinkByName(dev)
		if err != nil {
			return fmt.Errorf("lab: %s: %s: %w", n.name, dev, err)
		}
		for _, p := range ps {
			a := &netlink.Addr{IPNet: prefixNet(p)}
			if p.Addr().Is6() {
				a.Flags = unix.IFA_F_NODAD
			}
			if err := n.h.AddrAdd(link, a); err != nil {
				return fmt.Errorf("lab: %s: add address %s to %s: %w", n.name, p, dev, err)
			}
		}
		if err := n.h.LinkSetUp(link); err != nil {
			return fmt.Errorf("lab: %s: set %s up: %w", n.name, dev, err)
		}
		return nil
	}
	for _, r := range leafSpineRouters() {
		ports, _ := RouterPorts(r)
		for _, p := range ports {
			if err := addrs(ns[r], p.Netdev, p.IP4, p.IP6); err != nil {
				return err
			}
		}
	}
	for _, h := range RoutedHosts {
		n := ns[h.Name]
		if err := addrs(n, HostNIC, h.IP4, h.IP6); err != nil {
			return err
		}
		for _, gw := range []netip.Addr{h.Gateway4, h.Gateway6} {
			if err := addRoute(n, netip.Prefix{}, gw.Is6(), []nexthop{{HostNIC, gw}}); err != nil {
				return err
			}
		}
	}
	// Routes. Leaves: the hosts' networks over both spines (their own
	// hosts' links are connected, hence more specific). Spines: each
	// host's link via its leaf.
	for _, l := range Leaves {
		for _, v6 := range []bool{false, true} {
			var nhs []nexthop
			for _, s := range Spines {
				p, _ := RouterPortTo(l, s)
				nhs = append(nhs, nexthop{p.Netdev, pick(v6, p.PeerIP6, p.PeerIP4)})
			}
			dst := LeafSpineHostsNet4
			if v6 {
				dst = LeafSpineHostsNet6
			}
			if err := addRoute(ns[l], dst, v6, nhs); err != nil {
				return err
			}
		}
	}
	for _, s := range Spines {
		for _, h := range RoutedHosts {
			p, _ := RouterPortTo(s, h.Leaf)
			if err := addRoute(ns[s], h.IP4.Masked(), false, []nexthop{{p.Netdev, p.PeerIP4}}); err != nil {
				return err
			}
			if err := addRoute(ns[s], h.IP6.Masked(), true, []nexthop{{p.Netdev, p.PeerIP6}}); err != nil {
				return err
			}
		}
	}
	for _, h := range RoutedHosts {
		err := InNetns(h.Name, func() error { return netlink.RdmaLinkAdd(h.RDMADevice, "rxe", HostNIC) })
		if err != nil {
			return fmt.Errorf("lab: %s: rdma link add %s type rxe netdev %s: %w", h.Name, h.RDMADevice, HostNIC, err)
		}
	}
	return nil
}

func pick(v6 bool, a6, a4 netip.Addr) netip.Addr {
	if v6 {
		return a6
	}
	return a4
}

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// nexthop is a gateway on a netdev.
type nexthop struct {
	dev string
	gw  netip.Addr
}

// addRoute adds a route to dst (the default route when dst is the zero
// Prefix) over one or more nexthops (a multipath route).
func addRoute(n *nsHandle, dst netip.Prefix, v6 bool, nhs []nexthop) error {
	r := &netlink.Route{Family: unix.AF_INET}
	if v6 {
		r.Family = unix.AF_INET6
	}
	if dst.IsValid() {
		r.Dst = prefixNet(dst)
	} else if v6 {
		r.Dst = prefixNet(netip.MustParsePrefix("::/0"))
	} else {
		r.Dst = prefixNet(netip.MustParsePrefix("0.0.0.0/0"))
	}
	for _, nh := range nhs {
		l, err := n.h.LinkByName(nh.dev)
		if err != nil {
			return fmt.Errorf("lab: %s: %s: %w", n.name, nh.dev, err)
		}
		if len(nhs) == 1 {
			r.LinkIndex, r.Gw = l.Attrs().Index, nh.gw.AsSlice()
		} else {
			r.MultiPath = append(r.MultiPath, &netlink.NexthopInfo{LinkIndex: l.Attrs().Index, Gw: nh.gw.AsSlice()})
		}
	}
	if err := n.h.RouteAdd(r); err != nil {
		return fmt.Errorf("lab: %s: route add %s via %v: %w", n.name, r.Dst, nhs, err)
	}
	return nil
}

// LeafSpineDown removes the leaf-spine: the hosts' rxe devices and every
// namespace of it (with its netdevs). Missing parts are skipped.
func LeafSpineDown() error {
	if geteuid() != 0 {
		return ErrNotRoot
	}
	return removeParts(leafSpineNamespaces(), leafSpineRDMADevices())
}

// LeafSpineExists reports whether any namespace of the leaf-spine exists.
func LeafSpineExists() bool {
	for _, ns := range leafSpineNamespaces() {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			return true
		}
	}
	return false
}

// LeafSpineIsUp reports whether the leaf-spine's namespaces and rxe
// devices exist and every rxe port is ACTIVE.
func LeafSpineIsUp() bool {
	for _, ns := range leafSpineNamespaces() {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err != nil {
			return false
		}
	}
	for _, h := range RoutedHosts {
		if st, err := PortState(h.RDMADevice, 1); err != nil || st != "ACTIVE" {
			return false
		}
	}
	return true
}
