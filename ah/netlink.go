package ah

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/vlan"
)

// ReadNet takes a snapshot of the routes (tables local, main and
// default), neighbours, links and hop-limit sysctls of the named network
// namespace ("" for the caller's own) with one dump each: resolving any
// number of destinations against it costs no further netlink traffic.
// Reading the own namespace needs no privileges; entering another one
// needs CAP_SYS_ADMIN. Sysctls are read from /proc/sys only for the own
// namespace (others assume the kernel defaults, 64).
func ReadNet(name string) (*Net, error) {
	vh, err := vlan.Open(name)
	if err != nil {
		return nil, err
	}
	defer vh.Close()
	links, err := vh.Snapshot()
	if err != nil {
		return nil, err
	}
	h, err := openNetlink(name)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	n := &Net{Netns: name, Links: links}
	byIndex := map[int]string{}
	for _, l := range links.Links {
		byIndex[l.Index] = l.Name
	}
	err = h.RouteListFilteredIter(netlink.FAMILY_ALL, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE, func(r netlink.Route) bool {
		n.Routes = append(n.Routes, fromNetlinkRoute(r, byIndex)...)
		return true
	})
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("ah: listing routes: %w", err)
	}
	neighs, err := h.NeighList(0, netlink.FAMILY_ALL)
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, fmt.Errorf("ah: listing neighbours: %w", err)
	}
	for _, nb := range neighs {
		ip, ok := netip.AddrFromSlice(nb.IP)
		if !ok {
			continue
		}
		n.Neighbors = append(n.Neighbors, Neighbor{
			IP: ip.Unmap(), Ifindex: nb.LinkIndex, Dev: byIndex[nb.LinkIndex],
			MAC: vlan.MAC(nb.HardwareAddr), State: NUDState(nb.State),
		})
	}
	if name == "" {
		n.DefaultTTL = readSysctlInt("/proc/sys/net/ipv4/ip_default_ttl")
		n.IPv6HopLimit = map[string]int{}
		for _, dev := range append([]string{"default", "all"}, namesOf(links)...) {
			if v := readSysctlInt(filepath.Join("/proc/sys/net/ipv6/conf", dev, "hop_limit")); v > 0 {
				n.IPv6HopLimit[dev] = v
			}
		}
	}
	return n, nil
}

func namesOf(s *vlan.Snapshot) []string {
	out := make([]string, 0, len(s.Links))
	for _, l := range s.Links {
		out = append(out, l.Name)
	}
	return out
}

func readSysctlInt(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return v
}

func openNetlink(name string) (*netlink.Handle, error) {
	if name == "" {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("ah: opening rtnetlink: %w", err)
		}
		return h, nil
	}
	ns, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("ah: network namespace %q: %w", name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("ah: entering network namespace %q needs CAP_SYS_ADMIN (run as root): %w", name, err)
		}
		return nil, fmt.Errorf("ah: entering network namespace %q: %w", name, err)
	}
	return h, nil
}

var routeTypes = map[int]RouteType{
	unix.RTN_UNICAST: RouteUnicast, unix.RTN_LOCAL: RouteLocal, unix.RTN_BROADCAST: RouteBroadcast,
	unix.RTN_ANYCAST: RouteAnycast, unix.RTN_MULTICAST: RouteMulticast, unix.RTN_BLACKHOLE: RouteBlackhole,
	unix.RTN_UNREACHABLE: RouteUnreachable, unix.RTN_PROHIBIT: RouteProhibit, unix.RTN_THROW: RouteThrow,
}

func ipAddr(ip net.IP) netip.Addr {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}
	}
	return a.Unmap()
}

// fromNetlinkRoute converts one route; a multipath route becomes one Route
// per next hop (the kernel hashes flows over them; with the sgid's netdev
// as output interface only the next hops through it qualify).
func fromNetlinkRoute(r netlink.Route, byIndex map[int]string) []Route {
	t, ok := routeTypes[r.Type]
	if !ok {
		t = RouteType(fmt.Sprintf("type-%d", r.Type))
	}
	var dst netip.Prefix
	if r.Dst != nil {
		a, ok := netip.AddrFromSlice(r.Dst.IP)
		if !ok {
			return nil
		}
		bits, _ := r.Dst.Mask.Size()
		a = a.Unmap()
		dst = netip.PrefixFrom(a, bits)
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
	base := Route{
		Table: r.Table, Type: t, Dst: dst, Gateway: ipAddr(r.Gw), Ifindex: r.LinkIndex, Dev: byIndex[r.LinkIndex],
		PrefSrc: ipAddr(r.Src), Priority: r.Priority, HopLimit: r.Hoplimit, MTU: r.MTU,
	}
	if len(r.MultiPath) == 0 {
		return []Route{base}
	}
	out := make([]Route, 0, len(r.MultiPath))
	for _, nh := range r.MultiPath {
		x := base
		x.Ifindex, x.Dev, x.Gateway = nh.LinkIndex, byIndex[nh.LinkIndex], ipAddr(nh.Gw)
		out = append(out, x)
	}
	return out
}
