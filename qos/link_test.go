package qos

import (
	"testing"

	"github.com/roce-probe/roce-probe/vlan"
)

func labVLAN100() Link {
	return Link{Netdev: "veth0.100", Real: "veth0", RealNumTC: 0,
		Tags: []vlan.ChainTag{{Netdev: "veth0.100", Tag: vlan.Tag{ID: 100, TPID: vlan.TPID8021Q}, EgressQoS: map[uint32]uint32{0: 3, 2: 5, 4: 6, 6: 7}}}}
}

// labQinQ is the lab's QinQ netdev (internal/lab/topology.go): an 802.1ad
// tag 1000 added by veth0.q1000 (no egress map), then an 802.1Q tag 10
// added by veth0.q1000.10 (egress map 0:2), outermost first.
func labQinQ() Link {
	return Link{Netdev: "veth0.q1000.10", Real: "veth0", RealNumTC: 0, Tags: []vlan.ChainTag{
		{Netdev: "veth0.q1000", Tag: vlan.Tag{ID: 1000, TPID: vlan.TPID8021AD}},
		{Netdev: "veth0.q1000.10", Tag: vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}, EgressQoS: map[uint32]uint32{0: 2}},
	}}
}

func TestTOSToSLWholeRange(t *testing.T) {
	// Expected: rt_tos2priority by refTOS2Prio (tos_test.go), then the lab
	// egress map {0:3 2:5 4:6 6:7} as drivers/infiniband/core/cma.c,
	// iboe_tos_to_sl and get_vlan_ndev_tc apply it (Linux 6.1).
	labPCP := map[uint8]uint8{0: 3, 2: 5, 4: 6, 6: 7}
	vlan := labVLAN100()
	untagged := Link{Netdev: "veth0", Real: "veth0"}
	withTC := Link{Netdev: "eth0", Real: "eth0", RealNumTC: 4, RealPrioTC: [16]uint8{0: 0, 2: 1, 4: 2, 6: 3}}
	vlanTC := vlan
	vlanTC.RealNumTC, vlanTC.RealPrioTC = 4, withTC.RealPrioTC
	for i := 0; i < 256; i++ {
		tos := uint8(i)
		prio := refTOS2Prio[tos&0x18]
		if got := TOSToSL(vlan, tos); got != labPCP[prio] {
			t.Errorf("VLAN: TOSToSL(0x%02x) = %d, want %d", tos, got, labPCP[prio])
		}
		if got := TOSToSL(untagged, tos); got != 0 {
			t.Errorf("untagged, no TCs: TOSToSL(0x%02x) = %d, want 0", tos, got)
		}
		if got := TOSToSL(withTC, tos); got != withTC.RealPrioTC[prio] {
			t.Errorf("untagged with TCs: TOSToSL(0x%02x) = %d, want %d", tos, got, withTC.RealPrioTC[prio])
		}
		if got := TOSToSL(vlanTC, tos); got != withTC.RealPrioTC[prio] {
			t.Errorf("VLAN over a device with TCs: TOSToSL(0x%02x) = %d, want the TC %d", tos, got, withTC.RealPrioTC[prio])
		}
		// Old kernels agree on all of these.
		for _, l := range []Link{vlan, untagged, withTC, vlanTC} {
			if TOSToSLOld(l, tos) != TOSToSL(l, tos) {
				t.Errorf("%s: old and current iboe_tos_to_sl differ for 0x%02x", l.Netdev, tos)
			}
		}
	}
	// ToS 106 on the lab VLAN: priority 2 → PCP 5.
	if got := TOSToSL(vlan, 106); got != 5 {
		t.Errorf("TOSToSL(lab vlan100, 106) = %d, want 5", got)
	}
}

func TestTOSToSLLowerVLANDiffersOnOldKernels(t *testing.T) {
	// A macvlan on top of a VLAN device: current kernels walk to the
	// first lower device (the VLAN) and use its egress map; ≤ 4.x used
	// the netdev itself, which is no VLAN, so 0.
	l := labVLAN100()
	l.Netdev = "macvlan0"
	if got := TOSToSL(l, 0x08); got != 5 {
		t.Errorf("current: %d, want 5", got)
	}
	if got := TOSToSLOld(l, 0x08); got != 0 {
		t.Errorf("old: %d, want 0", got)
	}
	if l.IsVLAN() || !l.Tagged() {
		t.Error("macvlan over a VLAN: tagged but not itself a VLAN device")
	}
}
