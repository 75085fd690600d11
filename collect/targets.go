package collect

import (
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

// counterNetdevs lists, in order and once each, the real netdevs of ns
// whose counters and DCQCN settings are read: the real netdev below each
// RDMA port's netdev (the port's RoCE frames cross it), the real netdev
// below each netdev of extra, and on a host without RDMA devices every
// netdev Soft-RoCE could run on.
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
		out = append(out, d.Real)
	}
	for _, d := range devs {
		for _, p := range d.Ports {
			if p.Netdev != "" && p.LinkLayer != "InfiniBand" {
				add(p.Netdev)
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
