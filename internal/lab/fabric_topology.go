//go:build linux

package lab

import (
	"fmt"
	"net/netip"
)

// The multi-host fabric: hosts h1..h4, each a network namespace with its own
// rxe device on its own NIC (one end of a veth pair), and a switch: the
// namespace SwitchNetns whose VLAN-filtering bridge has the other ends as
// ports. It runs on kernels whose rxe works in any network namespace
// (Linux 7.x; see KernelFacts) next to the single-host lab.
const (
	SwitchNetns = "sw"  // the switch's network namespace
	Bridge      = "br0" // the switch's bridge (vlan_filtering 1, 802.1Q)
	HostNIC     = "eth0"
	// TrunkVLANs are the VLANs every switch port carries tagged; VLAN 1 is
	// every port's untagged PVID (which also carries the QinQ frames: the
	// 802.1Q bridge treats an 802.1ad-tagged frame as untagged).
	TrunkVLAN100 = 100
	TrunkVLAN200 = 200
)

// Host is one host of the fabric.
type Host struct {
	Name       string // its network namespace, "h1".."h4"
	RDMADevice string // its rxe device, "rxe1".."rxe4", on its NIC HostNIC
	MAC        string // its NIC's MAC
	Port       string // its switch port (in SwitchNetns), "swp1".."swp4"
	PortMAC    string // the switch port's MAC
	// EgressQoS maps a FabricNet's name to the egress-qos-map of this
	// host's VLAN device there (skb priority → PCP); nil or a missing
	// entry: no map.
	EgressQoS map[string]map[uint32]uint32
	index     int        // 1..4 (5..8 for the leaf-spine's hosts)
	oob       netip.Addr // a leaf-spine host's IPv4 address (RoutedHost.IP4); invalid for h1..h4
}

// FabricNet is one IP network of the fabric: untagged, a trunk VLAN, or the
// QinQ path. Host hN's addresses are the network's addresses ending in N.
type FabricNet struct {
	Name   string
	VLANs  []VLANTag // outermost first; empty for the untagged network
	Netdev string    // the host netdev that owns the addresses
	IPv4   netip.Prefix
	IPv6   netip.Prefix
	Hosts  []string // the hosts on this network
}

// VLANTag is one tag of a fabric network and the host netdev that adds it
// (stacked on the previous tag's netdev, the first on HostNIC).
type VLANTag struct {
	ID     uint16
	Proto  uint16 // 0x8100 or 0x88a8
	Netdev string
}

// Hosts are the fabric's hosts. Their egress-qos-maps differ on purpose:
// h1's and h4's VLAN 100 devices map skb priority 0 (what rxe sends with)
// to different PCPs, h3 has no map at all, and h2's VLAN 200 map sends
// priority 0 to PCP 6.
var Hosts = []Host{
	{Name: "h1", RDMADevice: "rxe1", MAC: "02:00:00:00:01:01", Port: "swp1", PortMAC: "02:00:00:00:02:01", index: 1,
		EgressQoS: map[string]map[uint32]uint32{"vlan100": {0: 3, 2: 5, 4: 6, 6: 7}, "qinq1000.10": {0: 2}}},
	{Name: "h2", RDMADevice: "rxe2", MAC: "02:00:00:00:01:02", Port: "swp2", PortMAC: "02:00:00:00:02:02", index: 2,
		EgressQoS: map[string]map[uint32]uint32{"vlan100": {0: 1, 2: 2, 4: 3, 6: 4}, "vlan200": {0: 6}}},
	{Name: "h3", RDMADevice: "rxe3", MAC: "02:00:00:00:01:03", Port: "swp3", PortMAC: "02:00:00:00:02:03", index: 3},
	{Name: "h4", RDMADevice: "rxe4", MAC: "02:00:00:00:01:04", Port: "swp4", PortMAC: "02:00:00:00:02:04", index: 4,
		EgressQoS: map[string]map[uint32]uint32{"vlan100": {0: 5, 2: 0, 4: 7, 6: 6}, "vlan200": {0: 4, 4: 1}}},
}

// FabricNets are the fabric's networks. The QinQ path (802.1ad 1000 outside,
// 802.1Q 10 inside, added by the hosts' own VLAN devices) joins h1 and h2
// only.
var FabricNets = []FabricNet{
	{Name: "untagged", Netdev: HostNIC,
		IPv4: netip.MustParsePrefix("10.1.0.0/24"), IPv6: netip.MustParsePrefix("fd01::/64"),
		Hosts: []string{"h1", "h2", "h3", "h4"}},
	{Name: "vlan100", Netdev: "eth0.100", VLANs: []VLANTag{{TrunkVLAN100, 0x8100, "eth0.100"}},
		IPv4: netip.MustParsePrefix("10.100.0.0/24"), IPv6: netip.MustParsePrefix("fd01:100::/64"),
		Hosts: []string{"h1", "h2", "h3", "h4"}},
	{Name: "vlan200", Netdev: "eth0.200", VLANs: []VLANTag{{TrunkVLAN200, 0x8100, "eth0.200"}},
		IPv4: netip.MustParsePrefix("10.200.0.0/24"), IPv6: netip.MustParsePrefix("fd01:200::/64"),
		Hosts: []string{"h1", "h2", "h3", "h4"}},
	{Name: "qinq1000.10", Netdev: "eth0.q1000.10",
		VLANs: []VLANTag{{1000, 0x88a8, "eth0.q1000"}, {10, 0x8100, "eth0.q1000.10"}},
		IPv4:  netip.MustParsePrefix("10.110.0.0/24"), IPv6: netip.MustParsePrefix("fd01:1010::/64"),
		Hosts: []string{"h1", "h2"}},
}

// HostByName returns the fabric host named name ("h1".."h4").
func HostByName(name string) (Host, error) {
	for _, h := range Hosts {
		if h.Name == name {
			return h, nil
		}
	}
	return Host{}, fmt.Errorf("lab: no fabric host %q: want h1..h%d", name, len(Hosts))
}

// FabricNetByName returns the fabric network named name.
func FabricNetByName(name string) (FabricNet, error) {
	for _, n := range FabricNets {
		if n.Name == name {
			return n, nil
		}
	}
	return FabricNet{}, fmt.Errorf("lab: no fabric network %q", name)
}

// Has reports whether host h is on network n.
func (n FabricNet) Has(h Host) bool {
	for _, x := range n.Hosts {
		if x == h.Name {
			return true
		}
	}
	return false
}

// IPv4 returns h's IPv4 address on network n (with the network's prefix
// length).
func (h Host) IPv4(n FabricNet) netip.Prefix { return hostAddr(n.IPv4, h.index) }

// IPv6 returns h's IPv6 address on network n.
func (h Host) IPv6(n FabricNet) netip.Prefix { return hostAddr(n.IPv6, h.index) }

// Addr returns h's address on network n in the family of v6.
func (h Host) Addr(n FabricNet, v6 bool) netip.Addr {
	if v6 {
		return h.IPv6(n).Addr()
	}
	return h.IPv4(n).Addr()
}

// EgressMap returns the egress-qos-map of h's VLAN device on network n (nil
// when it has none or n is untagged).
func (h Host) EgressMap(n FabricNet) map[uint32]uint32 { return h.EgressQoS[n.Name] }

func hostAddr(p netip.Prefix, i int) netip.Prefix {
	b := p.Addr().AsSlice()
	b[len(b)-1] = byte(i)
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, p.Bits())
}
