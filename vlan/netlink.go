package vlan

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Handle reads links, addresses and routes of one network namespace through
// rtnetlink. Reading the caller's own namespace needs no privileges;
// entering another one (Open with a name) needs CAP_SYS_ADMIN.
type Handle struct {
	nl    *netlink.Handle
	netns string
}

// Open returns a Handle on the named network namespace (a name from
// `ip netns list`, i.e. a file in /run/netns), or on the caller's own
// namespace when name is "".
func Open(name string) (*Handle, error) {
	if name == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("vlan: opening rtnetlink: %w", err)
		}
		return &Handle{nl: h}, nil
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("vlan: network namespace %q not found: want a name from `ip netns list` (a file in /run/netns)", name)
		}
		return nil, fmt.Errorf("vlan: network namespace %q: %w", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("vlan: entering network namespace %q needs CAP_SYS_ADMIN (run as root): %w", name, err)
		}
		return nil, fmt.Errorf("vlan: entering network namespace %q: %w", name, err)
	}
	return &Handle{nl: h, netns: name}, nil
}

// Netns returns the namespace name given to Open ("" for the caller's own).
func (h *Handle) Netns() string { return h.netns }

// Close releases the netlink sockets.
func (h *Handle) Close() {
	if h != nil && h.nl != nil {
		h.nl.Close()
	}
}

// Snapshot dumps every link and address of the namespace.
func (h *Handle) Snapshot() (*Snapshot, error) {
	links, err := h.nl.LinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("vlan: listing links: %w", err)
	}
	addrs, err := h.nl.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("vlan: listing addresses: %w", err)
	}
	s := &Snapshot{Netns: h.netns, Links: make([]Link, 0, len(links))}
	byIndex := map[int]int{}
	for _, nl := range links {
		l := FromNetlink(nl)
		byIndex[l.Index] = len(s.Links)
		s.Links = append(s.Links, l)
	}
	for _, a := range addrs {
		i, ok := byIndex[a.LinkIndex]
		if !ok || a.IPNet == nil {
			continue
		}
		if p, ok := prefixOf(a.IPNet); ok {
			s.Links[i].Addrs = append(s.Links[i].Addrs, p)
		}
	}
	return s, nil
}

// RouteGet asks the kernel for the route to dst (`ip route get`): the
// egress netdev and the preferred source address, the two things rdma_cm
// resolves a RoCE destination to.
func (h *Handle) RouteGet(dst netip.Addr) (Route, error) {
	dst = dst.Unmap()
	routes, err := h.nl.RouteGet(net.IP(dst.AsSlice()))
	if err != nil {
		return Route{}, fmt.Errorf("vlan: route to %s: %w", dst, err)
	}
	if len(routes) == 0 {
		return Route{}, fmt.Errorf("vlan: route to %s: the kernel returned no route", dst)
	}
	rt := routes[0]
	r := Route{Dst: dst, Ifindex: rt.LinkIndex}
	if a, ok := netip.AddrFromSlice(rt.Src); ok {
		r.Src = a.Unmap()
	}
	if a, ok := netip.AddrFromSlice(rt.Gw); ok {
		r.Gateway = a.Unmap()
	}
	if l, err := h.nl.LinkByIndex(rt.LinkIndex); err == nil {
		r.Netdev = l.Attrs().Name
	}
	return r, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	a = a.Unmap()
	return netip.PrefixFrom(a, ones), true
}

// FromNetlink converts a vishvananda/netlink link into a Link: kind, MAC,
// MTU, state, lower and master devices, VLAN tag and QoS maps. Addresses
// are not part of netlink.Link; Handle.Snapshot adds them.
func FromNetlink(nl netlink.Link) Link {
	a := nl.Attrs()
	l := Link{
		Name:        a.Name,
		Index:       a.Index,
		Kind:        Kind(nl.Type()),
		MTU:         a.MTU,
		OperState:   a.OperState.String(),
		Ether:       a.EncapType == "ether",
		ParentIndex: a.ParentIndex,
		MasterIndex: a.MasterIndex,
	}
	if len(a.HardwareAddr) > 0 {
		l.MAC = MAC(append(net.HardwareAddr(nil), a.HardwareAddr...))
	}
	// IFLA_LINK_NETNSID is present only when the lower device is in
	// another namespace (the library sets -1 otherwise).
	l.ParentOtherNetns = a.NetNsID >= 0 && a.ParentIndex != 0
	switch v := nl.(type) {
	case *netlink.Device:
		l.Kind = KindPhysical
		if a.EncapType == "loopback" || a.Flags&net.FlagLoopback != 0 {
			l.Kind = KindLoopback
		}
	case *netlink.Vlan:
		proto := Proto(v.VlanProtocol)
		if proto == 0 {
			proto = Proto8021Q
		}
		l.VLAN = &Tag{ID: uint16(v.VlanId), Proto: proto}
		if len(v.EgressQosMap) > 0 {
			l.EgressQoS = QoSMap(v.EgressQosMap)
		}
		if len(v.IngressQosMap) > 0 {
			l.IngressQoS = QoSMap(v.IngressQosMap)
		}
	case *netlink.Bond:
		if v.ActiveSlave > 0 {
			l.ActiveSlave = v.ActiveSlave
		}
	}
	if !l.Kind.Stacked() {
		// IFLA_LINK of other kinds (a veth's peer, a tunnel's underlay)
		// is not a lower device in the upper/lower sense.
		l.ParentOtherNetns = false
	}
	return l
}
