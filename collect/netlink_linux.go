package collect

import (
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/vlan"
)

// nsHandle reads one network namespace through rtnetlink: links,
// addresses, routes, neighbours and DCB. It carries the namespace, as a
// vishvananda/netlink Handle does.
type nsHandle struct {
	name string // "" for the caller's own namespace
	ns   netns.NsHandle
	nl   *netlink.Handle
	dcb  *dcbHandle
}

// openNetns returns a handle on the named network namespace (a name from
// `ip netns list`, a file in /run/netns), or on the caller's own one when
// name is "". Entering another namespace needs CAP_SYS_ADMIN.
func openNetns(name string) (*nsHandle, error) {
	if name == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("opening rtnetlink: %w", err)
		}
		return &nsHandle{nl: h, ns: netns.None()}, nil
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w %q: want a name from `ip netns list` (a file in /run/netns)", host.ErrNoNetns, name)
		}
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("network namespace %q: %w: reading another namespace needs root (CAP_SYS_ADMIN)", name, ErrPermission)
		}
		return nil, fmt.Errorf("network namespace %q: %w", name, err)
	}
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		ns.Close()
		// vishvananda/netlink formats setns's EPERM with %v: its text is
		// all that is left of it.
		if errors.Is(err, os.ErrPermission) || strings.Contains(err.Error(), unix.EPERM.Error()) {
			return nil, fmt.Errorf("network namespace %q: %w: entering another namespace needs root (CAP_SYS_ADMIN)", name, ErrPermission)
		}
		return nil, fmt.Errorf("entering network namespace %q: %w", name, err)
	}
	return &nsHandle{name: name, ns: ns, nl: h}, nil
}

// Close releases the netlink sockets and the namespace file.
func (h *nsHandle) Close() {
	if h.nl != nil {
		h.nl.Close()
	}
	h.dcb.Close()
	if h.name != "" {
		h.ns.Close()
	}
}

// readNamespace dumps every link, address, route (tables local, main and
// default) and neighbour, and reads the TTL sysctls: one dump each.
func (h *nsHandle) readNamespace() (*vlan.Namespace, error) {
	links, err := h.nl.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing links: %w", err)
	}
	addrs, err := h.nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing addresses: %w", err)
	}
	n := &vlan.Namespace{Netns: h.name, Links: make([]vlan.Link, 0, len(links)), Routes: []vlan.Route{}, Neighbors: []vlan.Neighbor{}}
	byIndex := map[int]int{}
	names := map[int]string{}
	for _, nl := range links {
		l := linkFromNetlink(nl)
		byIndex[l.Index] = len(n.Links)
		names[l.Index] = l.Name
		n.Links = append(n.Links, l)
	}
	for _, a := range addrs {
		i, ok := byIndex[a.LinkIndex]
		if !ok || a.IPNet == nil {
			continue
		}
		if p, ok := prefixOf(a.IPNet); ok {
			n.Links[i].Addrs = append(n.Links[i].Addrs, p)
		}
	}
	err = h.nl.RouteListFilteredIter(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE, func(r netlink.Route) bool {
		n.Routes = append(n.Routes, routesFromNetlink(r, names)...)
		return true
	})
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing routes: %w", err)
	}
	neighs, err := h.nl.NeighList(0, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("listing neighbours: %w", err)
	}
	for _, nb := range neighs {
		ip, ok := netip.AddrFromSlice(nb.IP)
		if !ok {
			continue
		}
		n.Neighbors = append(n.Neighbors, vlan.Neighbor{
			IP: ip.Unmap(), Ifindex: nb.LinkIndex, Dev: names[nb.LinkIndex],
			MAC: vlan.MAC(nb.HardwareAddr), State: vlan.NUDState(nb.State),
		})
	}
	linkNames := make([]string, 0, len(n.Links))
	for _, l := range n.Links {
		linkNames = append(linkNames, l.Name)
	}
	if err := h.inNetns(func() { n.Sysctls = readSysctls(linkNames) }); err != nil {
		return nil, err
	}
	return n, nil
}

// inNetns runs f on a thread that is in the handle's namespace: /proc/sys/net
// shows the sysctls of the namespace of the thread that opens it.
func (h *nsHandle) inNetns(f func()) error {
	if h.name == "" {
		f()
		return nil
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("network namespace of this thread: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(h.ns); err != nil {
		return fmt.Errorf("entering network namespace %q: %w", h.name, err)
	}
	f()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked and the runtime discards it.
		return fmt.Errorf("returning from network namespace %q: %w", h.name, err)
	}
	return nil
}

// readSysctls reads net.ipv4.ip_default_ttl and net.ipv6.conf.*.hop_limit
// of the calling thread's namespace.
func readSysctls(links []string) vlan.Sysctls {
	var s vlan.Sysctls
	if v, ok := readSysctlInt("/proc/sys/net/ipv4/ip_default_ttl"); ok {
		s.IPv4DefaultTTL = &v
	}
	for _, dev := range append([]string{"default", "all"}, links...) {
		if v, ok := readSysctlInt(filepath.Join("/proc/sys/net/ipv6/conf", dev, "hop_limit")); ok {
			if s.IPv6HopLimit == nil {
				s.IPv6HopLimit = map[string]int{}
			}
			s.IPv6HopLimit[dev] = v
		}
	}
	return s
}

func readSysctlInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}

// readDCB reads one netdev's DCB state in the handle's namespace.
func (h *nsHandle) readDCB(netdev string) (host.DCB, error) {
	if h.dcb == nil && h.name != "" {
		d, err := newDCBHandleAt(h.ns)
		if err != nil {
			return host.DCB{}, err
		}
		h.dcb = d
	}
	d, err := h.dcb.readDCB(netdev)
	if err != nil {
		return host.DCB{}, err
	}
	return host.DCB{Netns: h.name, DCB: *d}, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}

// linkFromNetlink converts a vishvananda/netlink link: kind, MAC, MTU,
// state, lower and master devices, VLAN tag and QoS maps. Addresses are
// added by readNamespace.
func linkFromNetlink(nl netlink.Link) vlan.Link {
	a := nl.Attrs()
	l := vlan.Link{
		Name:        a.Name,
		Index:       a.Index,
		Kind:        vlan.Kind(nl.Type()),
		MTU:         a.MTU,
		OperState:   operState(a.OperState),
		Ether:       a.EncapType == "ether",
		ParentIndex: a.ParentIndex,
		MasterIndex: a.MasterIndex,
	}
	if len(a.HardwareAddr) > 0 {
		l.MAC = vlan.MAC(append(net.HardwareAddr(nil), a.HardwareAddr...))
	}
	// IFLA_LINK_NETNSID is present only when the lower device is in
	// another namespace (the library sets -1 otherwise).
	l.ParentOtherNetns = a.NetNsID >= 0 && a.ParentIndex != 0
	switch v := nl.(type) {
	case *netlink.Device:
		l.Kind = vlan.KindPhysical
		if a.EncapType == "loopback" || a.Flags&net.FlagLoopback != 0 {
			l.Kind = vlan.KindLoopback
		}
	case *netlink.Vlan:
		tpid := vlan.TPID(v.VlanProtocol)
		if tpid == 0 {
			tpid = vlan.TPID8021Q
		}
		l.Tag = &vlan.Tag{ID: uint16(v.VlanId), TPID: tpid}
		if len(v.EgressQosMap) > 0 {
			l.EgressQoS = vlan.QoSMap(v.EgressQosMap)
		}
		if len(v.IngressQosMap) > 0 {
			l.IngressQoS = vlan.QoSMap(v.IngressQosMap)
		}
	case *netlink.Bond:
		if v.ActiveSlave > 0 {
			l.ActiveSlave = v.ActiveSlave
		}
		if v.Mode != netlink.BOND_MODE_UNKNOWN {
			l.BondMode = v.Mode.String()
		}
	}
	if !l.Kind.Stacked() {
		// IFLA_LINK of other kinds (a veth's peer, a tunnel's underlay)
		// is not a lower device in the upper/lower sense.
		l.ParentOtherNetns = false
	}
	return l
}

// operState names an IFLA_OPERSTATE value as the kernel does in
// /sys/class/net/*/operstate (net/core/net-sysfs.c operstates[], Linux
// 6.1) and `ip link` (iproute2, in upper case): vishvananda/netlink's
// String spells two of them otherwise ("not-present", "lower-layer-down").
func operState(s netlink.LinkOperState) string { return vlan.KernelOperState(s.String()) }

var routeTypes = map[int]vlan.RouteType{
	unix.RTN_UNICAST: vlan.RouteUnicast, unix.RTN_LOCAL: vlan.RouteLocal, unix.RTN_BROADCAST: vlan.RouteBroadcast,
	unix.RTN_ANYCAST: vlan.RouteAnycast, unix.RTN_MULTICAST: vlan.RouteMulticast, unix.RTN_BLACKHOLE: vlan.RouteBlackhole,
	unix.RTN_UNREACHABLE: vlan.RouteUnreachable, unix.RTN_PROHIBIT: vlan.RouteProhibit, unix.RTN_THROW: vlan.RouteThrow,
}

func ipAddr(ip net.IP) netip.Addr {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}
	}
	return a.Unmap()
}

// routesFromNetlink converts one route; a multipath route becomes one
// Route per next hop (the kernel hashes flows over them; with the sgid's
// netdev as output interface only the next hops through it qualify).
func routesFromNetlink(r netlink.Route, names map[int]string) []vlan.Route {
	t, ok := routeTypes[r.Type]
	if !ok {
		t = vlan.RouteType(fmt.Sprintf("type-%d", r.Type))
	}
	var dst netip.Prefix
	if r.Dst != nil {
		a, ok := netip.AddrFromSlice(r.Dst.IP)
		if !ok {
			return nil
		}
		bits, _ := r.Dst.Mask.Size()
		dst = netip.PrefixFrom(a.Unmap(), bits)
	} else {
		switch r.Family {
		case unix.AF_INET:
			dst = netip.MustParsePrefix("0.0.0.0/0")
		case unix.AF_INET6:
			dst = netip.MustParsePrefix("::/0")
		default:
			return nil
		}
	}
	base := vlan.Route{
		Table: r.Table, Type: t, Dst: dst, Gateway: ipAddr(r.Gw), Ifindex: r.LinkIndex, Dev: names[r.LinkIndex],
		PrefSrc: ipAddr(r.Src), Priority: r.Priority, HopLimit: r.Hoplimit, MTU: r.MTU,
	}
	if len(r.MultiPath) == 0 {
		return []vlan.Route{base}
	}
	out := make([]vlan.Route, 0, len(r.MultiPath))
	for _, nh := range r.MultiPath {
		x := base
		x.Ifindex, x.Dev, x.Gateway = nh.LinkIndex, names[nh.LinkIndex], ipAddr(nh.Gw)
		out = append(out, x)
	}
	return out
}
