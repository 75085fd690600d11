package probe_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// The lab topology of the rxe fixture: probes leave through veth0, with
// the tags of each stack outermost first (internal/lab/topology.go).
func TestWireDevice(t *testing.T) {
	ns, err := fixture(t, "rxe").Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		netdev string
		tags   []roce.VLANTag
	}{
		{"veth0", []roce.VLANTag{}},
		{"veth0.100", []roce.VLANTag{{TPID: 0x8100, ID: 100}}},
		{"veth0.q1000.10", []roce.VLANTag{{TPID: 0x88a8, ID: 1000}, {TPID: 0x8100, ID: 10}}},
	} {
		wire, tags, err := probe.WireDevice(ns, c.netdev)
		if err != nil || wire != "veth0" || len(tags) != len(c.tags) {
			t.Errorf("%s: %s %v %v, want veth0 %v", c.netdev, wire, tags, err, c.tags)
			continue
		}
		for i := range tags {
			if tags[i] != c.tags[i] {
				t.Errorf("%s: tag %d = %+v, want %+v", c.netdev, i, tags[i], c.tags[i])
			}
		}
	}
	var ne *probe.NetdevError
	if _, _, err := probe.WireDevice(ns, "eth9"); !errors.As(err, &ne) || ne.Netdev != "eth9" {
		t.Errorf("missing netdev: %v", err)
	}
	if _, _, err := probe.WireDevice(ns, "lo"); err == nil || !strings.Contains(err.Error(), "want Ethernet") {
		t.Errorf("lo: %v", err)
	}
	if got := probe.WireDevices(ns); strings.Join(got, ",") != "veth0" {
		t.Errorf("WireDevices = %v, want [veth0] (VLAN devices are captured on their lower device)", got)
	}
	ips, macs := probe.LocalAddresses(ns)
	if len(macs) == 0 || !containsAddr(ips, "10.10.10.1") || !containsAddr(ips, "fd00:100::1") {
		t.Errorf("LocalAddresses = %v %v", ips, macs)
	}
}

// WireDevices on one namespace per case, each with the links the kernel
// would show (ether: the device's ARPHRD_ETHER; operstate as
// Documentation/networking/operstates.rst describes it). want is what a
// listener must capture on for every frame for this namespace to be seen
// once: known from the kernel's receive path, not from WireDevices.
func TestWireDevicesRule(t *testing.T) {
	const (
		up, unknown, down, lld = "up", "unknown", "down", "lowerlayerdown"
	)
	eth := func(name string, index int, kind vlan.Kind, state string) vlan.Link {
		return vlan.Link{Name: name, Index: index, Kind: kind, OperState: state, Ether: true, MTU: 1500}
	}
	lo := vlan.Link{Name: "lo", Index: 1, Kind: vlan.KindLoopback, OperState: unknown, MTU: 65536}
	stacked := func(l vlan.Link, parent int, otherNetns bool) vlan.Link {
		l.ParentIndex, l.ParentOtherNetns = parent, otherNetns
		if l.Kind == vlan.KindVLAN {
			l.Tag = &vlan.Tag{ID: 100, TPID: vlan.TPID8021Q}
		}
		return l
	}
	slave := func(l vlan.Link, master int) vlan.Link { l.MasterIndex = master; return l }
	for _, c := range []struct {
		name  string
		links []vlan.Link
		want  []string
	}{
		{"loopback: not Ethernet (ARPHRD_LOOPBACK)", []vlan.Link{lo}, nil},
		{"NIC up", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, up)}, []string{"eth0"}},
		{"NIC down: no carrier or admin down", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, down)}, nil},
		{"veth whose peer is down: lowerlayerdown", []vlan.Link{lo, eth("veth0", 2, vlan.KindVeth, lld)}, nil},
		{"dummy: unknown (no carrier reporting) is up", []vlan.Link{lo, eth("dummy0", 2, "dummy", unknown)}, []string{"dummy0"}},
		{"dormant: 802.1X not done", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, "dormant")}, nil},
		{"testing: no normal traffic", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, "testing")}, nil},
		{"notpresent", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, "notpresent")}, nil},
		{"bond and its ports: the bond", []vlan.Link{lo, slave(eth("eth0", 2, vlan.KindPhysical, up), 4),
			slave(eth("eth1", 3, vlan.KindPhysical, up), 4), eth("bond0", 4, vlan.KindBond, up)}, []string{"bond0"}},
		{"bond whose ports are all down", []vlan.Link{lo, slave(eth("eth0", 2, vlan.KindPhysical, down), 3),
			eth("bond0", 3, vlan.KindBond, down)}, nil},
		{"team and its port: the team", []vlan.Link{lo, slave(eth("eth0", 2, vlan.KindPhysical, up), 3),
			eth("team0", 3, vlan.KindTeam, up)}, []string{"team0"}},
		{"bridge and its ports: the bridge", []vlan.Link{lo, slave(eth("eth0", 2, vlan.KindPhysical, up), 4),
			slave(eth("veth0", 3, vlan.KindVeth, up), 4), eth("br0", 4, vlan.KindBridge, up)}, []string{"br0"}},
		{"VLAN on a local NIC: the NIC", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, up),
			stacked(eth("eth0.100", 3, vlan.KindVLAN, up), 2, false)}, []string{"eth0"}},
		{"QinQ on a local NIC: the NIC", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, up),
			stacked(eth("eth0.q1000", 3, vlan.KindVLAN, up), 2, false), stacked(eth("eth0.q1000.10", 4, vlan.KindVLAN, up), 3, false)}, []string{"eth0"}},
		{"VLAN on a bond: the bond", []vlan.Link{lo, slave(eth("eth0", 2, vlan.KindPhysical, up), 3),
			eth("bond0", 3, vlan.KindBond, up), stacked(eth("bond0.100", 4, vlan.KindVLAN, up), 3, false)}, []string{"bond0"}},
		{"macvlan and ipvlan on a local NIC: the NIC", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, up),
			stacked(eth("mv0", 3, vlan.KindMacvlan, up), 2, false), stacked(eth("ipv0", 4, vlan.KindIPvlan, up), 2, false)}, []string{"eth0"}},
		{"macvlan whose lower device is in another namespace", []vlan.Link{lo,
			stacked(eth("net1", 3, vlan.KindMacvlan, up), 7, true)}, []string{"net1"}},
		{"ipvlan whose lower device is in another namespace", []vlan.Link{lo,
			stacked(eth("net1", 3, vlan.KindIPvlan, unknown), 7, true)}, []string{"net1"}},
		{"VLAN whose lower device is in another namespace", []vlan.Link{lo,
			stacked(eth("c0.100", 3, vlan.KindVLAN, up), 7, true)}, []string{"c0.100"}},
		{"macvlan whose lower device in another namespace is down", []vlan.Link{lo,
			stacked(eth("net1", 3, vlan.KindMacvlan, lld), 7, true)}, nil},
		{"ipip, gre, wireguard: not Ethernet (ARPHRD_TUNNEL, ARPHRD_IPGRE, ARPHRD_NONE)", []vlan.Link{lo,
			{Name: "ipip0", Index: 2, Kind: "ipip", OperState: unknown}, {Name: "gre1", Index: 3, Kind: "gre", OperState: unknown},
			{Name: "wg0", Index: 4, Kind: "wireguard", OperState: unknown}}, nil},
		{"IPoIB: not Ethernet (ARPHRD_INFINIBAND)", []vlan.Link{lo,
			{Name: "ib0", Index: 2, Kind: vlan.KindPhysical, OperState: up}, {Name: "ib0.8001", Index: 3, Kind: "ipoib", OperState: up, ParentIndex: 2}}, nil},
		{"vxlan and gretap carry Ethernet", []vlan.Link{lo, eth("eth0", 2, vlan.KindPhysical, up),
			eth("vxlan0", 3, vlan.KindVXLAN, unknown), eth("gretap1", 4, "gretap", unknown)}, []string{"eth0", "gretap1", "vxlan0"}},
		{"sorted by name, not ifindex", []vlan.Link{lo, eth("veth9", 2, vlan.KindVeth, up), eth("eth1", 3, vlan.KindPhysical, up),
			eth("br0", 4, vlan.KindBridge, up), slave(eth("veth3", 5, vlan.KindVeth, up), 4), stacked(eth("net1", 6, vlan.KindMacvlan, up), 9, true)},
			[]string{"br0", "eth1", "net1", "veth9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := &vlan.Namespace{Links: c.links}
			ns.Freeze()
			if got := probe.WireDevices(ns); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("WireDevices = %v, want %v", got, c.want)
			}
		})
	}
}

func containsAddr(as []netip.Addr, s string) bool {
	for _, a := range as {
		if a.String() == s {
			return true
		}
	}
	return false
}

// With the next hop's MAC in the namespace's neighbour table, the
// endpoint resolves from the snapshot alone (no datagram is sent): source
// address from the netdev, next hop from the route, MAC from the table.
func TestResolveEndpointFromNamespace(t *testing.T) {
	ns, err := fixture(t, "rxe").Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	ns.Neighbors = append(ns.Neighbors, vlan.Neighbor{IP: netip.MustParseAddr("10.10.10.2"), Dev: "veth0.q1000.10", Ifindex: 7,
		MAC: vlan.MAC{2, 0, 0, 0, 0, 2}, State: vlan.NUDReachable})
	ns.Freeze()
	e, err := probe.ResolveEndpoint(ns, "veth0.q1000.10", netip.Addr{}, netip.MustParseAddr("10.10.10.2"), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if e.Wire != "veth0" || len(e.Tags) != 2 || e.Src.String() != "10.10.10.1" || e.NextHop.String() != "10.10.10.2" ||
		e.DstMAC.String() != "02:00:00:00:00:02" || e.SrcMAC.String() != "02:00:00:00:00:01" {
		t.Errorf("endpoint = %+v", e)
	}
	if _, err := probe.ResolveEndpoint(ns, "veth0.100", netip.Addr{}, netip.MustParseAddr("fd00:1010::9"), time.Millisecond); err == nil {
		t.Errorf("IPv6 destination with no route through veth0.100 resolved")
	}
	if _, err := probe.ResolveEndpoint(ns, "veth0.q1000", netip.Addr{}, netip.MustParseAddr("10.0.0.2"), time.Millisecond); err == nil || !strings.Contains(err.Error(), "has no IPv4 address") {
		t.Errorf("a netdev without an IPv4 address: %v", err)
	}
	// A VLAN whose lower device is down cannot send (the kernel's
	// operstate lowerlayerdown), nor can a device that is down itself.
	for state, want := range map[string]string{"lowerlayerdown": "is down below (operstate lowerlayerdown", "down": "is down"} {
		ns, err := fixture(t, "rxe").Namespace("")
		if err != nil {
			t.Fatal(err)
		}
		for i := range ns.Links {
			if ns.Links[i].Name == "veth0.q1000.10" {
				ns.Links[i].OperState = state
			}
		}
		ns.Freeze()
		_, err = probe.ResolveEndpoint(ns, "veth0.q1000.10", netip.Addr{}, netip.MustParseAddr("10.10.10.2"), time.Millisecond)
		var ne *probe.NetdevError
		if !errors.As(err, &ne) || ne.Netdev != "veth0.q1000.10" || !strings.Contains(err.Error(), want) {
			t.Errorf("operstate %s: %v: want a probe.NetdevError saying %q", state, err, want)
		}
	}
}

// A probe cannot be sent from a VLAN device whose lower device is in
// another namespace (a container's VLAN interface), nor from a device
// stacked on one: the VLAN device would add its own tag to a frame built
// with it and set the PCP from its egress-qos-map. A macvlan in the same
// place sends untouched frames and resolves.
func TestResolveEndpointVLANOfAnotherNetns(t *testing.T) {
	vl := vlan.Link{Name: "c0", Index: 2, Kind: vlan.KindVLAN, OperState: "up", Ether: true, MTU: 1500, MAC: vlan.MAC{2, 0, 0, 0, 0, 0xc0},
		ParentIndex: 7, ParentOtherNetns: true, Tag: &vlan.Tag{ID: 100, TPID: vlan.TPID8021Q},
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24")}}
	mv := vlan.Link{Name: "c1", Index: 3, Kind: vlan.KindMacvlan, OperState: "up", Ether: true, MTU: 1500, MAC: vlan.MAC{2, 0, 0, 0, 0, 0xc1},
		ParentIndex: 2, Addrs: []netip.Prefix{netip.MustParsePrefix("10.2.0.1/24")}}
	other := vlan.Link{Name: "m0", Index: 4, Kind: vlan.KindMacvlan, OperState: "up", Ether: true, MTU: 1500, MAC: vlan.MAC{2, 0, 0, 0, 0, 0xd0},
		ParentIndex: 9, ParentOtherNetns: true, Addrs: []netip.Prefix{netip.MustParsePrefix("10.3.0.1/24")}}
	ns := &vlan.Namespace{Links: []vlan.Link{vl, mv, other}, Routes: []vlan.Route{
		{Dst: netip.MustParsePrefix("10.1.0.0/24"), Dev: "c0", Ifindex: 2, Type: vlan.RouteUnicast, Table: 254},
		{Dst: netip.MustParsePrefix("10.2.0.0/24"), Dev: "c1", Ifindex: 3, Type: vlan.RouteUnicast, Table: 254},
		{Dst: netip.MustParsePrefix("10.3.0.0/24"), Dev: "m0", Ifindex: 4, Type: vlan.RouteUnicast, Table: 254},
	}, Neighbors: []vlan.Neighbor{{IP: netip.MustParseAddr("10.3.0.2"), Dev: "m0", Ifindex: 4, MAC: vlan.MAC{2, 0, 0, 0, 0, 2}, State: vlan.NUDReachable}}}
	ns.Freeze()
	for netdev, want := range map[string]string{
		"c0": "is a VLAN device (VLAN 100) whose lower device is in another network namespace",
		"c1": "is stacked on c0, a VLAN device (VLAN 100) whose lower device is in another network namespace",
	} {
		dst := netip.MustParseAddr("10.1.0.2")
		if netdev == "c1" {
			dst = netip.MustParseAddr("10.2.0.2")
		}
		_, err := probe.ResolveEndpoint(ns, netdev, netip.Addr{}, dst, time.Millisecond)
		var ne *probe.NetdevError
		if !errors.As(err, &ne) || ne.Netdev != netdev || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v: want a probe.NetdevError saying %q", netdev, err, want)
		}
	}
	e, err := probe.ResolveEndpoint(ns, "m0", netip.Addr{}, netip.MustParseAddr("10.3.0.2"), time.Millisecond)
	if err != nil || e.Wire != "m0" || len(e.Tags) != 0 {
		t.Errorf("a macvlan whose lower device is in another namespace: %+v, %v: want it to send on itself, untagged", e, err)
	}
}
