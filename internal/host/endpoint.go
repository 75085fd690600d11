package host

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/roce-probe/roce-probe/internal/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// maxProbeTags is how many VLAN tags a probe frame carries at most
// (probe.Frame.Build).
const maxProbeTags = 2

// WireDevice returns the device at the bottom of netdev's stack in
// namespace ns (netdev itself when it is not stacked) and the tags the
// VLAN devices in between add, outermost first: the one walk down a stack
// (vlan.Namespace.Describe). A VLAN device strips its tag from frames it
// receives, so probes are captured on the wire device, where tags and PCP
// are still visible. Errors are *probe.NetdevError naming netdev.
func WireDevice(ns *vlan.Namespace, netdev string) (string, []roce.VLANTag, error) {
	d, err := ns.Describe(netdev)
	if err != nil {
		if errors.Is(err, vlan.ErrNoLink) {
			return "", nil, &probe.NetdevError{Netdev: netdev, Err: errors.New("no such netdev")}
		}
		return "", nil, &probe.NetdevError{Netdev: netdev, Err: err}
	}
	if len(d.Chain) > maxProbeTags {
		return "", nil, &probe.NetdevError{Netdev: netdev, Err: fmt.Errorf("%d stacked VLAN devices: want at most %d tags", len(d.Chain), maxProbeTags)}
	}
	real, ok := ns.ByName(d.Real)
	if !ok || !real.Ether {
		return "", nil, &probe.NetdevError{Netdev: netdev, Err: fmt.Errorf("%s is a %q device: want Ethernet", d.Real, real.Kind)}
	}
	tags := make([]roce.VLANTag, 0, len(d.Chain))
	for _, t := range d.Chain {
		tags = append(tags, roce.VLANTag{TPID: uint16(t.TPID), ID: t.ID})
	}
	return d.Real, tags, nil
}

// WireDevices returns every up Ethernet netdev of ns that is neither a
// stacked device (VLAN, macvlan, ...) nor enslaved to a bridge or bond
// (their master is listed instead, so no frame is seen, and answered,
// twice): where a listener without --netdev captures.
func WireDevices(ns *vlan.Namespace) []string {
	var out []string
	for _, l := range ns.Links {
		if !l.Ether || l.Kind.Stacked() || l.MasterIndex != 0 || l.OperState == "down" || l.OperState == "lowerlayerdown" {
			continue
		}
		out = append(out, l.Name)
	}
	return out
}

// LocalAddresses returns every IP address and MAC address of ns: a
// listener answers only probes sent to one of them.
func LocalAddresses(ns *vlan.Namespace) ([]netip.Addr, []net.HardwareAddr) {
	var ips []netip.Addr
	var macs []net.HardwareAddr
	for _, l := range ns.Links {
		if len(l.MAC) == 6 {
			macs = append(macs, net.HardwareAddr(l.MAC))
		}
		for _, p := range l.Addrs {
			ips = append(ips, p.Addr().Unmap())
		}
	}
	return ips, macs
}

// ResolveEndpoint finds how a probe reaches dst from netdev in namespace
// ns: the wire device and tags (WireDevice), the source address (src if
// valid, otherwise netdev's first address of dst's family, a global one
// before a link-local one), the next hop of the route through netdev
// (vlan.Namespace.RouteTo, as the kernel's lookup with netdev as output
// interface) and its MAC from the neighbour table. When ns has no usable
// entry it makes the kernel resolve it (ProbeNeighbor: one datagram to
// the next hop's discard port) and waits up to wait: the one live step.
func ResolveEndpoint(ns *vlan.Namespace, netdev string, src, dst netip.Addr, wait time.Duration) (probe.Endpoint, error) {
	e := probe.Endpoint{Netdev: netdev, Dst: dst.Unmap()}
	var err error
	if e.Wire, e.Tags, err = WireDevice(ns, netdev); err != nil {
		return e, err
	}
	link, _ := ns.ByName(netdev)
	e.SrcMAC = net.HardwareAddr(link.MAC)
	if link.OperState == "down" {
		return e, &probe.NetdevError{Netdev: netdev, Err: errors.New("is down")}
	}
	if src.IsValid() {
		e.Src = src.Unmap()
		if e.Src.Is4() != e.Dst.Is4() {
			return e, fmt.Errorf("probe: source %s and destination %s are of different families", e.Src, e.Dst)
		}
	} else {
		for _, p := range link.Addrs {
			ip := p.Addr().Unmap()
			if ip.Is4() != e.Dst.Is4() {
				continue
			}
			if !e.Src.IsValid() || (e.Src.IsLinkLocalUnicast() && !ip.IsLinkLocalUnicast()) {
				e.Src = ip
			}
		}
		if !e.Src.IsValid() {
			fam := "IPv6"
			if e.Dst.Is4() {
				fam = "IPv4"
			}
			return e, &probe.NetdevError{Netdev: netdev, Err: fmt.Errorf("has no %s address to send from", fam)}
		}
	}
	rr, err := ns.RouteTo(e.Dst, netdev, link.Index)
	if err != nil {
		return e, fmt.Errorf("probe: no route to %s from %s on %s: %w", e.Dst, e.Src, netdev, err)
	}
	e.NextHop = rr.NextHop
	if nb, ok := ns.Neighbor(rr.NextHop, rr.Dev, rr.Ifindex); ok && nb.State.Valid() && len(nb.MAC) == 6 {
		e.DstMAC = net.HardwareAddr(nb.MAC)
		return e, nil
	}
	nb, err := ProbeNeighbor(e.Src, e.Dst, rr, wait)
	if err != nil {
		return e, fmt.Errorf("probe: no neighbour entry for %s on %s (ARP/ND got no answer within %v): is %s reachable on that netdev? (%w)", e.NextHop, netdev, wait, e.Dst, err)
	}
	e.DstMAC = net.HardwareAddr(nb.MAC)
	return e, nil
}
