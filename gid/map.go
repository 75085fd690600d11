package gid

import (
	"github.com/roce-probe/roce-probe/vlan"
)

// Map fills the netdev fields of every entry of ports (ifindex, VLAN ID
// and chain, real netdev, MAC, MTU, state, namespace) and each port's
// ActiveMTU from snap, the namespace the netdevs are looked up in. Entries
// whose netdev snap does not have get Netns = NetnsOther. A port whose
// Netdev is a slave of a bond gets the bond as Netdev (vlan.PortNetdev).
func Map(ports []Port, snap *vlan.Namespace) {
	for pi := range ports {
		p := &ports[pi]
		// RoCE LAG: the port's traffic goes through the bond. sysfs's
		// device/net (and snapshots read from it) name one slave, and so
		// can RDMA netlink: mlx5_lag_get_roce_netdev returns the PF netdev
		// of the active slave, or PF0's
		// (drivers/net/ethernet/mellanox/mlx5/core/lag/lag.c).
		p.Netdev = snap.PortNetdev(p.Netdev)
		if l, ok := snap.ByName(p.Netdev); ok && p.Netdev != "" {
			p.ActiveMTU = RoCEMTU(l.MTU)
		}
		for i := range p.Entries {
			MapEntry(&p.Entries[i], p.LinkLayer, snap)
		}
	}
}

// MapEntry fills e's netdev fields from snap (see Map). linkLayer is the
// port's link layer; InfiniBand entries have no netdev and stay unmapped.
func MapEntry(e *Entry, linkLayer string, snap *vlan.Namespace) {
	if e.Empty || linkLayer == "InfiniBand" {
		return
	}
	if e.Netdev == "" {
		e.Netns = NetnsOther
		return
	}
	d, err := snap.Describe(e.Netdev)
	if err != nil {
		e.Netns = NetnsOther
		return
	}
	e.Ifindex = d.Index
	e.VLAN = nil
	if t, ok := d.Outermost(); ok {
		id := t.ID
		e.VLAN = &id
	}
	e.VLANChain = d.Chain
	e.L2VLAN = d.L2VLANID
	e.RealNetdev = d.Real
	if e.NetnsBoundary = d.Boundary(); e.NetnsBoundary != "" {
		// A pod's netdev: the tags below the namespace boundary and the
		// real netdev are unknown, not absent.
		e.VLAN, e.VLANChain, e.RealNetdev = nil, nil, ""
	}
	e.MAC = d.MAC
	e.MTU = d.MTU
	e.State = d.OperState
	e.Netns = snap.Netns
	if e.Netns == "" {
		e.Netns = NetnsCurrent
	}
}

// RoCEMTU is the kernel's iboe_get_mtu: the largest IB MTU (256, 512,
// 1024, 2048 or 4096) that fits in a netdev MTU after the RoCE headers
// (GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4 = 96
// bytes). It returns 0 when even 256 does not fit. A netdev MTU of 1500
// gives 1024; 9000 gives 4096.
func RoCEMTU(netdevMTU int) int {
	m := netdevMTU - 96
	for _, v := range []int{4096, 2048, 1024, 512, 256} {
		if m >= v {
			return v
		}
	}
	return 0
}
