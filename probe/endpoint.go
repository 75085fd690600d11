package probe

import (
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/collect"
	"net"
	"net/netip"
	"sort"
	"syscall"
	"time"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// maxProbeTags is how many VLAN tags a probe sent from a stacked netdev
// carries at most: the listener's kernel filter takes frames with up to
// two (docs/probe.md), though probe.Frame.Build would build more.
const maxProbeTags = 2

// WireDevice returns the device at the bottom of netdev's stack in
// namespace ns (netdev itself when it is not stacked) and the tags the
// VLAN devices in between add, outermost first: the one walk down a stack
// (vlan.Namespace.Describe). A VLAN device strips its tag from frames it
// receives, so probes are captured on the wire device, where tags and PCP
// are still visible. Errors are *probe.NetdevError naming netdev.
func WireDevice(ns *vlan.Namespace, netdev string) (string, []roce.VLANTag, error) {
	_, wire, tags, err := describeWire(ns, netdev)
	return wire, tags, err
}

// describeWire is WireDevice with the description it walked.
func describeWire(ns *vlan.Namespace, netdev string) (vlan.Description, string, []roce.VLANTag, error) {
	d, err := ns.Describe(netdev)
	if err != nil {
		if errors.Is(err, vlan.ErrNoLink) {
			return d, "", nil, &NetdevError{Netdev: netdev, Err: errors.New("no such netdev")}
		}
		return d, "", nil, &NetdevError{Netdev: netdev, Err: err}
	}
	if len(d.Chain) > maxProbeTags {
		return d, "", nil, &NetdevError{Netdev: netdev, Err: fmt.Errorf("%d stacked VLAN devices: want at most %d tags", len(d.Chain), maxProbeTags)}
	}
	real, ok := ns.ByName(d.Real)
	if !ok || !real.Ether {
		return d, "", nil, &NetdevError{Netdev: netdev, Err: fmt.Errorf("%s is a %q device: want Ethernet", d.Real, real.Kind)}
	}
	tags := make([]roce.VLANTag, 0, len(d.Chain))
	for _, t := range d.Chain {
		tags = append(tags, roce.VLANTag{TPID: uint16(t.TPID), ID: t.ID})
	}
	return d, d.Real, tags, nil
}

// WireDevices returns the netdevs of ns a probe listener captures on when
// no netdev is given (`roce-probe listen` without --netdev, and the
// agent), sorted by name: every device where a frame addressed to this
// namespace is seen, each frame on one device only, with its tags where
// this namespace can see them. A netdev is listed when it is
//
//   - Ethernet (Link.Ether, ARPHRD_ETHER): probes are Ethernet frames. The
//     loopback (ARPHRD_LOOPBACK), IP tunnels (ipip, gre, sit), WireGuard
//     and IPoIB are not; vxlan and gretap, which carry Ethernet, are.
//   - operational (vlan.OperUp: operstate "up" or "unknown", the kernel's
//     netif_oper_up). A device that is "down" or "lowerlayerdown" receives
//     nothing; "dormant" (802.1X not done) and "testing" carry no user
//     traffic until they turn "up"; "unknown" is what drivers that do not
//     report carrier say (dummy), and what Linux 6.1 reports for a macvlan
//     or VLAN moved into another namespace (7.3: "up"; measured in the lab,
//     TestLabListenStackedOnOtherNetns). The agent re-reads the host and
//     opens a device when it turns up; listen decides once, when it starts.
//   - not enslaved (MasterIndex 0): a bond or team hands every frame of
//     its ports to itself, a bridge the frames for this host (net/core/dev.c
//     __netif_receive_skb_core, Linux 6.1: packet sockets on the port see
//     the frame, then the rx_handler moves it to the master and packet
//     sockets there see it again). The master is listed instead, so no
//     probe is answered twice, and replies leave through it as the host's
//     own traffic does.
//   - not stacked on a device of ns (VLAN, macvlan, ipvlan): the lower
//     device sees their frames first, tags and PCP included (a VLAN device
//     strips its tag on receive: net/8021q/vlan_core.c vlan_do_receive), and
//     is listed itself. A stacked device whose lower device is in another
//     namespace (Link.ParentOtherNetns: a macvlan, ipvlan or VLAN moved into
//     a container) is listed: in ns it is the only device its frames
//     reach. (A VLAN device there hands over its frames untagged, so the
//     listener reports such a probe as arrived untagged.)
//
// WireDevice is the one device a listener given a netdev captures on; for
// a netdev listed here it is the netdev itself.
func WireDevices(ns *vlan.Namespace) []string {
	var out []string
	for _, l := range ns.Links {
		if !l.Ether || !vlan.OperUp(l.OperState) || l.MasterIndex != 0 || (l.Kind.Stacked() && !l.ParentOtherNetns) {
			continue
		}
		out = append(out, l.Name)
	}
	sort.Strings(out)
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

// SendableStack says why a probe cannot be sent from the netdev d
// describes, or nil: when d's bottom is a VLAN device whose lower device
// is in another namespace (vlan.Description.RealTags), that device would
// add its own tag to a probe built with it (a double tag) and set the PCP
// from its egress-qos-map, not from the probe. send (ResolveEndpoint) and
// the agent's flows refuse such a netdev.
func SendableStack(d vlan.Description) error {
	if !d.RealTags() {
		return nil
	}
	what := fmt.Sprintf("is stacked on %s, a VLAN device (VLAN %d)", d.Real, d.Chain[0].ID)
	if d.Real == d.Name {
		what = fmt.Sprintf("is a VLAN device (VLAN %d)", d.Chain[0].ID)
	}
	return fmt.Errorf("%s whose lower device is in another network namespace: the device tags what is written on it, "+
		"so a probe's tags and PCP cannot be set from here: send from the lower device's namespace", what)
}

// ErrNoNeighbor is wrapped by ResolveEndpoint's error when the next hop
// did not answer ARP/ND within the wait: a fact about the network (the
// peer is down or not on that link), not bad input.
var ErrNoNeighbor = errors.New("the next hop did not answer ARP/ND")

// ResolveEndpoint finds how a probe reaches dst from netdev in namespace
// ns: the wire device and tags (WireDevice), the source address (src if
// valid, otherwise netdev's first address of dst's family, a global one
// before a link-local one), the next hop of the route through netdev
// (vlan.Namespace.RouteTo, as the kernel's lookup with netdev as output
// interface) and its MAC from the neighbour table. When ns has no usable
// entry it makes the kernel resolve it (ProbeNeighbor: one datagram to
// the next hop's discard port) and waits up to wait: the one live step.
func ResolveEndpoint(ns *vlan.Namespace, netdev string, src, dst netip.Addr, wait time.Duration) (Endpoint, error) {
	e := Endpoint{Netdev: netdev, Dst: dst.Unmap()}
	d, wire, tags, err := describeWire(ns, netdev)
	if err != nil {
		return e, err
	}
	e.Wire, e.Tags = wire, tags
	link := d.Link
	e.SrcMAC = net.HardwareAddr(link.MAC)
	if vlan.OperNotUp(link.OperState) { // the kernel would drop what it sends
		return e, &NetdevError{Netdev: netdev, Err: errors.New(vlan.OperText(link.OperState))}
	}
	if err := SendableStack(d); err != nil {
		return e, &NetdevError{Netdev: netdev, Err: err}
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
			return e, &NetdevError{Netdev: netdev, Err: fmt.Errorf("has no %s address to send from", fam)}
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
	nb, err := collect.ProbeNeighbor(e.Src, e.Dst, rr, wait)
	if errors.Is(err, syscall.ETIMEDOUT) {
		return e, fmt.Errorf("probe: %s on %s: %w within %v (neighbour state %s): is %s reachable on that netdev?", e.NextHop, netdev, ErrNoNeighbor, wait, nb.State, e.Dst)
	}
	if err != nil {
		return e, fmt.Errorf("probe: no neighbour entry for %s on %s: %w", e.NextHop, netdev, err)
	}
	e.DstMAC = net.HardwareAddr(nb.MAC)
	return e, nil
}
