//go:build linux

package lab

import "net/netip"

// The standard lab topology. The host side is the initial network
// namespace, where rxe0 runs on veth0 (Linux 6.1 runs rxe only there); the
// peer side is the network namespace "peer", holding veth1, the other end
// of the veth pair, with matching VLAN devices and addresses.
const (
	RDMADevice = "rxe0"  // the Soft-RoCE device on HostNetdev
	HostNetdev = "veth0" // host end of the veth pair (initial namespace)
	PeerNetdev = "veth1" // peer end of the veth pair (namespace PeerNetns)
	PeerNetns  = "peer"  // the peer's network namespace
	HostMAC    = "02:00:00:00:00:01"
	PeerMAC    = "02:00:00:00:00:02"
	MTU        = 1500
)

// Net is one IP network of the lab: the base veth pair, a VLAN on it, or a
// QinQ stack. Host-side netdevs are in the initial namespace, peer-side ones
// in PeerNetns; every address is configured with nodad so it is usable at once.
type Net struct {
	Name       string            // short name for test output
	HostNetdev string            // netdev on the host side that owns HostIPv4/HostIPv6
	PeerNetdev string            // netdev on the peer side that owns PeerIPv4/PeerIPv6
	VLANs      []VLAN            // tags outermost first; empty for the untagged base network
	HostIPv4   netip.Prefix      // host address with prefix length
	PeerIPv4   netip.Prefix      // peer address with prefix length
	HostIPv6   netip.Prefix      // host ULA address
	PeerIPv6   netip.Prefix      // peer ULA address
	EgressQoS  map[uint32]uint32 // host VLAN device's egress-qos-map (skb priority → PCP); nil for none
}

// VLAN is one tag of a lab network and the netdevs that add it: on each
// side, the device of the outermost tag sits on the veth end and each inner
// tag's device sits on the device of the tag before it.
type VLAN struct {
	ID         uint16
	Proto      uint16 // 0x8100 (802.1Q) or 0x88a8 (802.1ad)
	HostNetdev string // host-side VLAN device that adds this tag
	PeerNetdev string // peer-side VLAN device that adds this tag
}

// Nets lists the lab networks. The first is the untagged base network.
var Nets = []Net{
	{
		Name: "untagged", HostNetdev: "veth0", PeerNetdev: "veth1",
		HostIPv4: netip.MustParsePrefix("10.0.0.1/24"), PeerIPv4: netip.MustParsePrefix("10.0.0.2/24"),
		HostIPv6: netip.MustParsePrefix("fd00::1/64"), PeerIPv6: netip.MustParsePrefix("fd00::2/64"),
	},
	{
		Name: "vlan100", HostNetdev: "veth0.100", PeerNetdev: "veth1.100",
		VLANs:    []VLAN{{ID: 100, Proto: 0x8100, HostNetdev: "veth0.100", PeerNetdev: "veth1.100"}},
		HostIPv4: netip.MustParsePrefix("10.0.100.1/24"), PeerIPv4: netip.MustParsePrefix("10.0.100.2/24"),
		HostIPv6: netip.MustParsePrefix("fd00:100::1/64"), PeerIPv6: netip.MustParsePrefix("fd00:100::2/64"),
		// skb priority 0 (what rxe sends with) → PCP 3; the rdma_cm priorities 2, 4, 6 → 5, 6, 7.
		EgressQoS: map[uint32]uint32{0: 3, 2: 5, 4: 6, 6: 7},
	},
	{
		Name: "vlan200", HostNetdev: "veth0.200", PeerNetdev: "veth1.200",
		VLANs:    []VLAN{{ID: 200, Proto: 0x8100, HostNetdev: "veth0.200", PeerNetdev: "veth1.200"}},
		HostIPv4: netip.MustParsePrefix("10.0.200.1/24"), PeerIPv4: netip.MustParsePrefix("10.0.200.2/24"),
		HostIPv6: netip.MustParsePrefix("fd00:200::1/64"), PeerIPv6: netip.MustParsePrefix("fd00:200::2/64"),
	},
	{
		// QinQ: 802.1ad outer tag 1000 on veth0 ("veth0.q1000"), 802.1Q inner
		// tag 10 on top of it ("veth0.q1000.10"); the same names with veth1
		// on the peer side. The egress-qos-map is on the inner device.
		Name: "qinq1000.10", HostNetdev: "veth0.q1000.10", PeerNetdev: "veth1.q1000.10",
		VLANs: []VLAN{
			{ID: 1000, Proto: 0x88a8, HostNetdev: "veth0.q1000", PeerNetdev: "veth1.q1000"},
			{ID: 10, Proto: 0x8100, HostNetdev: "veth0.q1000.10", PeerNetdev: "veth1.q1000.10"},
		},
		HostIPv4: netip.MustParsePrefix("10.10.10.1/24"), PeerIPv4: netip.MustParsePrefix("10.10.10.2/24"),
		HostIPv6: netip.MustParsePrefix("fd00:1010::1/64"), PeerIPv6: netip.MustParsePrefix("fd00:1010::2/64"),
		EgressQoS: map[uint32]uint32{0: 2},
	},
}

// NetByName returns the lab network with the given Name.
func NetByName(name string) (Net, bool) {
	for _, n := range Nets {
		if n.Name == name {
			return n, true
		}
	}
	return Net{}, false
}
