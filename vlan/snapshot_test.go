package vlan

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
)

// testdata/lab.json is the host side of the lab topology
// (internal/lab/topology.go): veth0 with VLAN 100 (egress map 0:3 2:5 4:6
// 6:7), VLAN 200, and QinQ 802.1ad 1000 + 802.1Q 10.
func labSnap(t *testing.T) *Snapshot {
	t.Helper()
	f, err := os.Open("testdata/lab.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := DecodeSnapshot(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDescribe(t *testing.T) {
	s := labSnap(t)
	cases := []struct {
		name, chain, real string
		vid               int
	}{
		{"veth0", "", "veth0", -1},
		{"veth0.100", "100", "veth0", 100},
		{"veth0.q1000", "802.1ad:1000", "veth0", 1000},
		{"veth0.q1000.10", "802.1ad:1000 10", "veth0", 10},
	}
	for _, c := range cases {
		d, err := s.Describe(c.name)
		if err != nil {
			t.Fatal(err)
		}
		var tags []string
		for _, tg := range d.Chain {
			tags = append(tags, tg.String())
		}
		if strings.Join(tags, " ") != c.chain || d.Real != c.real {
			t.Errorf("%s: chain %q real %s, want %q %s", c.name, tags, d.Real, c.chain, c.real)
		}
		if (c.vid < 0) != (d.VLANID == nil) || (d.VLANID != nil && int(*d.VLANID) != c.vid) {
			t.Errorf("%s: VLAN ID %v, want %d", c.name, d.VLANID, c.vid)
		}
	}
	d, _ := s.Describe("veth0.100")
	if d.EgressQoS.String() != "0:3 2:5 4:6 6:7" || d.MAC.String() != "02:00:00:00:00:01" || d.MTU != 1500 {
		t.Errorf("veth0.100 = egress %q mac %s mtu %d", d.EgressQoS, d.MAC, d.MTU)
	}
	if _, err := s.Describe("eth9"); err == nil || !strings.Contains(err.Error(), `"eth9" not found in this network namespace`) {
		t.Errorf("Describe(eth9) = %v", err)
	}
}

// drivers/infiniband/core/cache.c, rdma_read_gid_l2_fields and
// get_lower_dev_vlan (Linux 6.1): a macvlan on a VLAN device uses the
// VLAN's ID; a macvlan on a macvlan on a VLAN does not (only the
// first-level lower device counts), though its frames are tagged.
func TestMacvlanVLANID(t *testing.T) {
	s := &Snapshot{Links: []Link{
		{Name: "eth0", Index: 2, Kind: KindPhysical},
		{Name: "eth0.7", Index: 3, Kind: KindVLAN, ParentIndex: 2, VLAN: &Tag{7, Proto8021Q}},
		{Name: "mv0", Index: 4, Kind: KindMacvlan, ParentIndex: 3},
		{Name: "mv1", Index: 5, Kind: KindMacvlan, ParentIndex: 4},
		{Name: "pod0", Index: 6, Kind: KindMacvlan, ParentIndex: 3, ParentOtherNetns: true},
	}}
	d, _ := s.Describe("mv0")
	if d.VLANID == nil || *d.VLANID != 7 || len(d.Chain) != 1 || d.Real != "eth0" || strings.Join(d.Lowers, ",") != "eth0.7,eth0" {
		t.Errorf("mv0: vid %v chain %v real %s lowers %v", d.VLANID, d.Chain, d.Real, d.Lowers)
	}
	d, _ = s.Describe("mv1")
	if d.VLANID != nil || len(d.Chain) != 1 {
		t.Errorf("mv1: vid %v chain %v, want no VID (second-level) and chain [7]", d.VLANID, d.Chain)
	}
	d, _ = s.Describe("pod0")
	if !d.LowerInOtherNetns || d.Real != "pod0" {
		t.Errorf("pod0: other netns %v real %s", d.LowerInOtherNetns, d.Real)
	}
	if !s.IsUpper("mv1", "eth0") || !s.IsUpper("eth0.7", "eth0") || s.IsUpper("eth0", "eth0.7") || s.IsUpper("eth0", "eth0") {
		t.Errorf("IsUpper relations wrong")
	}
}

func TestDecodeSnapshotErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"links":[{"name":"a","ifindex":1},{"name":"a","ifindex":2}]}`:                          `"a" appears twice`,
		`{"links":[{"name":"a","ifindex":0}]}`:                                                   "ifindex 0",
		`{"links":[{"name":"a","ifindex":1,"kind":"vlan"}]}`:                                     "without a tag",
		`{"links":[{"name":"a","ifindex":1,"kind":"vlan","vlan":{"id":4096,"proto":"802.1Q"}}]}`: "VLAN ID 4096: want 0..4095",
		`{"links":[{"name":"a","ifindex":1,"bogus":1}]}`:                                         `unknown field "bogus"`,
		`{"links":[{"name":"a","ifindex":1,"mac":"zz"}]}`:                                        "not a MAC address",
	} {
		_, err := DecodeSnapshot(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("DecodeSnapshot(%s) = %v, want error containing %q", in, err, want)
		}
	}
}

func TestConnectedRoute(t *testing.T) {
	s := labSnap(t)
	for dst, want := range map[string]string{
		"10.0.100.2": "veth0.100 10.0.100.1", "10.10.10.9": "veth0.q1000.10 10.10.10.1",
		"fd00:200::2": "veth0.200 fd00:200::1", "::ffff:10.0.0.2": "veth0 10.0.0.1",
	} {
		r, err := s.ConnectedRoute(netip.MustParseAddr(dst))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Netdev + " " + r.Src.String(); got != want {
			t.Errorf("route to %s = %s, want %s", dst, got, want)
		}
	}
	if _, err := s.ConnectedRoute(netip.MustParseAddr("192.0.2.1")); err == nil {
		t.Errorf("route to an unconnected address: no error")
	}
}

// FromNetlink on the structs vishvananda/netlink returns for a QinQ inner
// VLAN with QoS maps, a macvlan in another namespace and a bond.
func TestFromNetlink(t *testing.T) {
	v := &netlink.Vlan{
		LinkAttrs: netlink.LinkAttrs{Name: "q1000.10", Index: 7, MTU: 1500, ParentIndex: 6, NetNsID: -1, EncapType: "ether",
			HardwareAddr: net.HardwareAddr{2, 0, 0, 0, 0, 1}, OperState: netlink.OperUp},
		VlanId: 10, VlanProtocol: netlink.VLAN_PROTOCOL_8021Q,
		EgressQosMap: map[uint32]uint32{0: 2}, IngressQosMap: map[uint32]uint32{3: 3},
	}
	l := FromNetlink(v)
	if l.Kind != KindVLAN || l.VLAN == nil || *l.VLAN != (Tag{10, Proto8021Q}) || l.ParentIndex != 6 || l.ParentOtherNetns ||
		l.EgressQoS.String() != "0:2" || l.IngressQoS.String() != "3:3" || l.OperState != "up" || !l.Ether || l.MAC.String() != "02:00:00:00:00:01" {
		t.Errorf("vlan = %+v", l)
	}
	ad := FromNetlink(&netlink.Vlan{LinkAttrs: netlink.LinkAttrs{Name: "o", Index: 6, NetNsID: -1}, VlanId: 1000, VlanProtocol: netlink.VLAN_PROTOCOL_8021AD})
	if ad.VLAN.Proto != Proto8021AD {
		t.Errorf("802.1ad proto = %v", ad.VLAN.Proto)
	}
	mv := FromNetlink(&netlink.Macvlan{LinkAttrs: netlink.LinkAttrs{Name: "net1", Index: 3, ParentIndex: 9, NetNsID: 0}})
	if mv.Kind != KindMacvlan || !mv.ParentOtherNetns {
		t.Errorf("macvlan with IFLA_LINK_NETNSID: kind %s other netns %v", mv.Kind, mv.ParentOtherNetns)
	}
	ve := FromNetlink(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "veth0", Index: 2, ParentIndex: 3, NetNsID: 1}})
	if ve.Kind != KindVeth || ve.ParentOtherNetns {
		t.Errorf("veth: kind %s other netns %v (a veth peer is not a lower device)", ve.Kind, ve.ParentOtherNetns)
	}
	b := FromNetlink(&netlink.Bond{LinkAttrs: netlink.LinkAttrs{Name: "bond0", Index: 4, NetNsID: -1}, ActiveSlave: 2})
	if b.Kind != KindBond || b.ActiveSlave != 2 {
		t.Errorf("bond = %+v", b)
	}
	d := FromNetlink(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "enp1s0f0", Index: 2, NetNsID: -1, EncapType: "ether"}})
	lo := FromNetlink(&netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Index: 1, NetNsID: -1, EncapType: "loopback"}})
	if d.Kind != KindPhysical || lo.Kind != KindLoopback {
		t.Errorf("device kinds: %s %s", d.Kind, lo.Kind)
	}
}

// The real kernel, the caller's own namespace: no privileges needed, and
// every Linux network namespace has a loopback device.
func TestHandleSnapshotOwnNetns(t *testing.T) {
	h, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	lo, ok := s.ByName("lo")
	if !ok || lo.Kind != KindLoopback || lo.Ether || lo.Index != 1 {
		t.Fatalf("lo = %+v, %v", lo, ok)
	}
	if _, err := Open("roce-probe-no-such-netns"); err == nil || !strings.Contains(err.Error(), `"roce-probe-no-such-netns" not found`) {
		t.Errorf("Open(missing) = %v", err)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
