//go:build lab

package qos

import (
	"testing"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/vlan"
)

// veth and VLAN devices have no dcbnl_ops: RTM_GETDCB answers EOPNOTSUPP,
// which ReadDCB reports as "no DCB", not as an error.
func TestLabNoDCB(t *testing.T) {
	for _, n := range lab.Nets {
		d, err := ReadDCB(n.HostNetdev)
		if err != nil {
			t.Errorf("ReadDCB(%s): %v", n.HostNetdev, err)
			continue
		}
		if d.Supported || d.Reason == "" || d.Trust() != TrustUnknown {
			t.Errorf("ReadDCB(%s) = %+v, want no DCB with a reason", n.HostNetdev, d)
		}
	}
}

// The live lab netdevs give the Links the topology describes.
func TestLabLinkFromSnapshot(t *testing.T) {
	h, err := vlan.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	snap, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lab.Nets {
		l, err := LinkFromSnapshot(snap, n.HostNetdev)
		if err != nil {
			t.Errorf("%s: %v", n.HostNetdev, err)
			continue
		}
		if l.Real != lab.HostNetdev || len(l.Tags) != len(n.VLANs) {
			t.Errorf("%s: %+v, want real %s and %d tags", n.HostNetdev, l, lab.HostNetdev, len(n.VLANs))
			continue
		}
		for i, v := range n.VLANs {
			if l.Tags[i].ID != v.ID || uint16(l.Tags[i].Proto) != v.Proto {
				t.Errorf("%s tag %d: %+v, want %+v", n.HostNetdev, i, l.Tags[i], v)
			}
		}
		if len(l.Tags) > 0 {
			inner := l.Tags[len(l.Tags)-1]
			for prio, pcp := range n.EgressQoS {
				if got := EgressPCP(inner.EgressMap, prio); uint32(got) != pcp {
					t.Errorf("%s egress %d: %d, want %d", inner.Netdev, prio, got, pcp)
				}
			}
		}
	}
}
