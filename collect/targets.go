package collect

import (
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

// counterNetdevs lists, in order and once each, the real netdevs of ns
// whose counters and DCQCN settings are read: the real netdev below each
// RDMA port's netdev (the port's RoCE frames cross it), the real netdev
// below each netdev of extra, and on a host without RDMA devices every
// netdev Soft-RoCE could run on. A real netdev that is a bond counts as
// its slaves (every one: the standby slaves of an active-backup bond too).
func counterNetdevs(devs []host.Device, ns *vlan.Namespace, extra []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(name string) {
		if ns == nil {
			return
		}
		d, err := ns.Describe(name)
		if err != nil || d.LowerInOtherNetns || seen[d.Real] {
			return
		}
		seen[d.Real] = true
		if d.Bond != nil {
			// RoCE LAG: a bond has no counters or DCB of its own; its
			// slaves, the NIC ports, carry the frames.
			for _, sl := range d.Bond.Members() {
				if !seen[sl] {
					seen[sl] = true
					out = append(out, sl)
				}
			}
			return
		}
		out = append(out, d.Real)
	}
	for _, d := range devs {
		for _, p := range d.Ports {
			if p.Netdev != "" && p.LinkLayer != "InfiniBand" {
				add(ns.PortNetdev(p.Netdev))
			}
		}
	}
	for _, n := range extra {
		add(n)
	}
	if len(devs) == 0 && ns != nil {
		for _, l := range host.CandidateNetdevs(ns) {
			add(l.Name)
		}
	}
	return out
}
