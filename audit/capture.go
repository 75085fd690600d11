package audit

import (
	"sort"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
)

// CaptureNetdevs returns the netdevs a live wire sample of v's RDMA
// traffic is captured on: the wire device (probe.WireDevice: the bottom
// of the stack, where VLAN tags and PCPs are still on the frames) of every
// Soft-RoCE port's netdev, sorted; and the RDMA devices whose traffic the
// kernel does not see (every other driver offloads it: mlx5, bnxt_re,
// irdma, ...), whose frames only a capture of the NIC's own (the mlx5
// offloaded-traffic sniffer) or of a switch port mirror shows. A host
// without RDMA devices (a predicted view) has neither.
func CaptureNetdevs(v *host.View) (netdevs, offloaded []string) {
	if v.Predicted {
		return nil, nil
	}
	seen := map[string]bool{}
	off := map[string]bool{}
	for _, p := range v.Ports {
		if p.Netdev == "" || p.LinkLayer == "InfiniBand" {
			continue
		}
		if v.Driver(p.Device).Driver != qos.DriverRXE {
			if !off[p.Device] {
				off[p.Device] = true
				offloaded = append(offloaded, p.Device)
			}
			continue
		}
		w, _, err := probe.WireDevice(v.NS, p.Netdev)
		if err != nil || seen[w] {
			continue
		}
		seen[w] = true
		netdevs = append(netdevs, w)
	}
	sort.Strings(netdevs)
	sort.Strings(offloaded)
	return netdevs, offloaded
}
