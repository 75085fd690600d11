package qos

import (
	"fmt"

	"github.com/roce-probe/roce-probe/vlan"
)

// Link is what qos needs to know about the netdev a GID belongs to: the
// VLAN tags the kernel adds to frames sent through it and the real device
// underneath, whose DCB settings and traffic classes apply.
//
// The vlan package describes netdevs in full; Link is the small view the
// QoS chain needs, so qos does not depend on how that description is read.
type Link struct {
	Netdev string          // the GID's netdev, e.g. "eth0.100"
	Tags   []vlan.ChainTag // VLAN tags, outermost first, each with its VLAN device and egress map; empty when untagged
	Real   string          // the real (non-VLAN) device at the bottom of the chain

	// RealNumTC is the real device's num_tc (traffic classes set up by
	// mqprio or the driver's DCB code) and RealPrioTC its prio_tc_map; the
	// kernel's iboe_tos_to_sl returns a TC instead of a PCP when num_tc is
	// non-zero. RealNumTC < 0 means "not known".
	RealNumTC  int
	RealPrioTC [16]uint8

	// Boundary is, when the stack continues into another network
	// namespace (a pod's macvlan), why the tags below it, their PCP and
	// the real device's DCB are unknown (vlan.Description.Boundary); ""
	// when the whole stack is visible.
	Boundary string
}

// Tagged reports whether frames sent through the link carry a VLAN tag.
func (l Link) Tagged() bool { return len(l.Tags) > 0 }

// IsVLAN reports whether the GID's netdev is itself a VLAN device (its
// innermost tag is added by the netdev itself).
func (l Link) IsVLAN() bool {
	return len(l.Tags) > 0 && l.Tags[len(l.Tags)-1].Netdev == l.Netdev
}

// LinkOf is the Link of a netdev described by vlan.Namespace.Describe.
// RealNumTC is -1 (not known): the real device's mqprio traffic classes
// are not read.
func LinkOf(d vlan.Description) Link {
	return Link{Netdev: d.Name, Tags: d.Chain, Real: d.Real, RealNumTC: -1, Boundary: d.Boundary()}
}

// LinkFromNamespace describes netdev name of a namespace as a Link.
func LinkFromNamespace(n *vlan.Namespace, name string) (Link, error) {
	d, err := n.Describe(name)
	if err != nil {
		return Link{}, fmt.Errorf("qos: %w", err)
	}
	return LinkOf(d), nil
}

// TOSToSL is the kernel's iboe_tos_to_sl (drivers/infiniband/core/cma.c):
// the SL rdma_cm puts into the path record of a RoCE connection for a ToS.
//
//	prio = rt_tos2priority(tos)
//	VLAN netdev (or the first lower device is one):
//	    real.num_tc ? real.prio_tc_map[prio] : PCP from the VLAN egress map
//	otherwise: num_tc ? prio_tc_map[prio] : 0
//
// The result is a TC number, not a PCP, when the real device has traffic
// classes: a quirk of the kernel that the SL then carries. An unknown
// RealNumTC (< 0) is treated as 0.
func TOSToSL(l Link, tos uint8) uint8 {
	prio := TOSToPriority(tos)
	if len(l.Tags) > 0 {
		// The GID netdev is a VLAN device, or its first lower device is
		// the innermost VLAN device: get_vlan_ndev_tc on that device.
		if l.RealNumTC > 0 {
			return l.RealPrioTC[prio&15]
		}
		return EgressPCP(l.Tags[len(l.Tags)-1].EgressQoS, uint32(prio))
	}
	if l.RealNumTC > 0 {
		return l.RealPrioTC[prio&15]
	}
	return 0
}

// TOSToSLOld is iboe_tos_to_sl as kernels up to 4.x computed it:
// dev = VLAN ? real device : netdev; dev.num_tc ? prio_tc_map[prio] :
// VLAN ? egress map : 0. It differs from TOSToSL only for netdevs whose
// lower device is a VLAN device without being one themselves.
func TOSToSLOld(l Link, tos uint8) uint8 {
	prio := TOSToPriority(tos)
	if l.RealNumTC > 0 && (l.IsVLAN() || len(l.Tags) == 0) {
		return l.RealPrioTC[prio&15]
	}
	if l.IsVLAN() {
		return EgressPCP(l.Tags[len(l.Tags)-1].EgressQoS, uint32(prio))
	}
	return 0
}
