//go:build linux

package probe

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/vishvananda/netlink"
)

// WireDevice returns the lowest device under netdev (netdev itself when it
// is not a VLAN device) and the tags the VLAN devices in between add,
// outermost first. A VLAN device strips its tag from frames it receives, so
// capture must happen on the wire device to see tags and PCP.
func WireDevice(netdev string) (string, []roce.VLANTag, error) {
	link, err := netlink.LinkByName(netdev)
	if err != nil {
		return "", nil, &NetdevError{Netdev: netdev, Err: errors.New("no such netdev")}
	}
	var tags []roce.VLANTag
	for depth := 0; ; depth++ {
		v, ok := link.(*netlink.Vlan)
		if !ok {
			break
		}
		if depth == 2 {
			return "", nil, &NetdevError{Netdev: netdev, Err: errors.New("more than two stacked VLAN devices: want at most 2 tags")}
		}
		proto := uint16(0x8100)
		if v.VlanProtocol == netlink.VLAN_PROTOCOL_8021AD {
			proto = 0x88a8
		}
		tags = append([]roce.VLANTag{{TPID: proto, ID: uint16(v.VlanId)}}, tags...)
		parent, err := netlink.LinkByIndex(v.ParentIndex)
		if err != nil {
			return "", nil, &NetdevError{Netdev: netdev, Err: fmt.Errorf("lower device %d of %s: %v", v.ParentIndex, v.Name, err)}
		}
		link = parent
	}
	if link.Attrs().EncapType != "ether" {
		return "", nil, &NetdevError{Netdev: netdev, Err: fmt.Errorf("%s is a %q device: want Ethernet", link.Attrs().Name, link.Attrs().EncapType)}
	}
	return link.Attrs().Name, tags, nil
}

// ResolveEndpoint finds how to reach dst from netdev: the wire device and
// tags (WireDevice), the source address (src if valid, otherwise netdev's
// first global address of dst's family, falling back to link-local), the
// next hop from the routing table and its MAC from the neighbour table.
// When the neighbour is unknown it sends one UDP datagram to the next hop's
// discard port (9) to make the kernel resolve it, and waits up to wait.
func ResolveEndpoint(netdev string, src, dst netip.Addr, wait time.Duration) (Endpoint, error) {
	e := Endpoint{Netdev: netdev, Dst: dst.Unmap()}
	var err error
	if e.Wire, e.Tags, err = WireDevice(netdev); err != nil {
		return e, err
	}
	link, err := netlink.LinkByName(netdev)
	if err != nil {
		return e, &NetdevError{Netdev: netdev, Err: errors.New("no such netdev")}
	}
	e.SrcMAC = link.Attrs().HardwareAddr
	if link.Attrs().Flags&net.FlagUp == 0 {
		return e, &NetdevError{Netdev: netdev, Err: errors.New("is down")}
	}
	family := netlink.FAMILY_V4
	if e.Dst.Is6() {
		family = netlink.FAMILY_V6
	}
	if src.IsValid() {
		e.Src = src.Unmap()
		if e.Src.Is4() != e.Dst.Is4() {
			return e, fmt.Errorf("probe: source %s and destination %s are of different families", e.Src, e.Dst)
		}
	} else {
		addrs, err := netlink.AddrList(link, family)
		if err != nil {
			return e, fmt.Errorf("probe: addresses of %s: %w", netdev, err)
		}
		for _, a := range addrs {
			ip, ok := netip.AddrFromSlice(a.IP)
			if !ok {
				continue
			}
			ip = ip.Unmap()
			if !e.Src.IsValid() || (e.Src.IsLinkLocalUnicast() && !ip.IsLinkLocalUnicast()) {
				e.Src = ip
			}
		}
		if !e.Src.IsValid() {
			return e, &NetdevError{Netdev: netdev, Err: fmt.Errorf("has no %s address to send from", familyName(e.Dst))}
		}
	}
	e.NextHop = e.Dst
	routes, err := netlink.RouteGetWithOptions(e.Dst.AsSlice(), &netlink.RouteGetOptions{Oif: netdev, SrcAddr: e.Src.AsSlice()})
	if err != nil {
		return e, fmt.Errorf("probe: no route to %s from %s on %s: %w", e.Dst, e.Src, netdev, err)
	}
	if len(routes) > 0 && routes[0].Gw != nil {
		if gw, ok := netip.AddrFromSlice(routes[0].Gw); ok {
			e.NextHop = gw.Unmap()
		}
	}
	deadline := time.Now().Add(wait)
	kicked := false
	for {
		if mac := neighbour(link.Attrs().Index, family, e.NextHop); mac != nil {
			e.DstMAC = mac
			return e, nil
		}
		if time.Now().After(deadline) {
			return e, fmt.Errorf("probe: no neighbour entry for %s on %s (ARP/ND got no answer within %v): is %s reachable on that netdev?", e.NextHop, netdev, wait, e.Dst)
		}
		if !kicked {
			kicked = true
			kick(e.Src, e.NextHop, netdev)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func familyName(a netip.Addr) string {
	if a.Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// neighbour returns the MAC of a usable neighbour entry for addr.
func neighbour(ifindex, family int, addr netip.Addr) net.HardwareAddr {
	ns, err := netlink.NeighList(ifindex, family)
	if err != nil {
		return nil
	}
	const usable = netlink.NUD_REACHABLE | netlink.NUD_STALE | netlink.NUD_DELAY | netlink.NUD_PROBE | netlink.NUD_PERMANENT | netlink.NUD_NOARP
	for _, n := range ns {
		ip, ok := netip.AddrFromSlice(n.IP)
		if ok && ip.Unmap() == addr && n.State&usable != 0 && len(n.HardwareAddr) == 6 {
			return n.HardwareAddr
		}
	}
	return nil
}

// kick sends one datagram to addr's discard port so that the kernel
// resolves its MAC address.
func kick(src, addr netip.Addr, netdev string) {
	la := &net.UDPAddr{IP: src.AsSlice()}
	ra := &net.UDPAddr{IP: addr.AsSlice(), Port: 9}
	if addr.IsLinkLocalUnicast() {
		ra.Zone = netdev
		la.Zone = netdev
	}
	c, err := net.DialUDP("udp", la, ra)
	if err != nil {
		return
	}
	c.Write([]byte("roce-probe neighbour resolution"))
	c.Close()
}

// LocalAddresses returns every IP address and MAC address of the current
// network namespace: a listener answers only probes sent to one of them.
func LocalAddresses() ([]netip.Addr, []net.HardwareAddr, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, nil, fmt.Errorf("probe: listing netdevs: %w", err)
	}
	var ips []netip.Addr
	var macs []net.HardwareAddr
	for _, l := range links {
		if len(l.Attrs().HardwareAddr) == 6 {
			macs = append(macs, l.Attrs().HardwareAddr)
		}
	}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		return nil, nil, fmt.Errorf("probe: listing addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			ips = append(ips, ip.Unmap())
		}
	}
	return ips, macs, nil
}

// WireDevices returns every up Ethernet netdev of the namespace that is
// neither a VLAN device nor enslaved to a bridge or bond (their master is
// listed instead, so no frame is seen, and answered, twice): where a
// listener without --netdev captures.
func WireDevices() ([]string, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("probe: listing netdevs: %w", err)
	}
	var out []string
	for _, l := range links {
		a := l.Attrs()
		if _, vlan := l.(*netlink.Vlan); vlan || a.EncapType != "ether" || a.Flags&net.FlagUp == 0 || a.MasterIndex != 0 {
			continue
		}
		out = append(out, a.Name)
	}
	return out, nil
}
