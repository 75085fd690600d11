//go:build !linux

package collect

import (
	"net/netip"
	"time"

	"github.com/roce-probe/roce-probe/vlan"
)

// ProbeNeighbor makes the kernel resolve a next hop; it is a live action
// on Linux only.
func ProbeNeighbor(src, dst netip.Addr, rr vlan.RouteResult, timeout time.Duration) (vlan.Neighbor, error) {
	return vlan.Neighbor{}, errNotLinux
}

// SolicitNeighbor makes the kernel resolve a next hop without waiting; it
// is a live action on Linux only.
func SolicitNeighbor(src, dst netip.Addr, rr vlan.RouteResult) error { return errNotLinux }
