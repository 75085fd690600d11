package audit

import (
	"sort"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
)

// CaptureNetdevs returns the netdevs a wire sample of v's RDMA traffic is
// captured on: the wire device (probe.WireDevice: the bottom of the stack,
// where VLAN tags and PCPs are still on the frames) of every RDMA port's
// netdev, sorted.
func CaptureNetdevs(v *host.View) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range v.Ports {
		if p.Netdev == "" || p.LinkLayer == "InfiniBand" {
			continue
		}
		w, _, err := probe.WireDevice(v.NS, p.Netdev)
		if err != nil || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}
