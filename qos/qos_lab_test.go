//go:build lab

package qos_test

import (
	"testing"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/qos"
)

// labSnapshot collects the lab host's namespaces and DCB (no RDMA section:
// these tests need none).
func labSnapshot(t *testing.T) *host.Snapshot {
	t.Helper()
	s, err := collect.Collect(collect.Options{Sections: collect.SectionNet | collect.SectionDCB})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// veth and VLAN devices have no dcbnl_ops: RTM_GETDCB answers EOPNOTSUPP,
// which the collector records as "no DCB" with a reason, not as an error.
// DCB is read on the real device: every lab netdev's is veth0's.
func TestLabNoDCB(t *testing.T) {
	s := labSnapshot(t)
	if errs := s.ErrorsOf("dcb " + lab.HostNetdev); len(errs) != 0 {
		t.Errorf("collecting the DCB of %s: %v", lab.HostNetdev, errs)
	}
	ns, err := s.Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lab.Nets {
		l, err := qos.LinkFromNamespace(ns, n.HostNetdev)
		if err != nil {
			t.Errorf("%s: %v", n.HostNetdev, err)
			continue
		}
		d, err := s.DCBOf("", l.Real)
		if err != nil || d == nil {
			t.Errorf("DCB of %s (below %s): %+v, %v; want it read", l.Real, n.HostNetdev, d, err)
			continue
		}
		if d.Netdev != lab.HostNetdev || d.Supported || d.Reason == "" || d.Trust() != qos.TrustUnknown {
			t.Errorf("DCB of %s = %+v, want %s without DCB, with a reason", n.HostNetdev, d, lab.HostNetdev)
		}
	}
}

// The live lab netdevs give the Links the topology describes.
func TestLabLinkFromNamespace(t *testing.T) {
	ns, err := labSnapshot(t).Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range lab.Nets {
		l, err := qos.LinkFromNamespace(ns, n.HostNetdev)
		if err != nil {
			t.Errorf("%s: %v", n.HostNetdev, err)
			continue
		}
		if l.Real != lab.HostNetdev || len(l.Tags) != len(n.VLANs) {
			t.Errorf("%s: %+v, want real %s and %d tags", n.HostNetdev, l, lab.HostNetdev, len(n.VLANs))
			continue
		}
		for i, v := range n.VLANs {
			if l.Tags[i].ID != v.ID || uint16(l.Tags[i].TPID) != v.Proto || l.Tags[i].Netdev != v.HostNetdev {
				t.Errorf("%s tag %d: %+v, want %+v", n.HostNetdev, i, l.Tags[i], v)
			}
		}
		if len(l.Tags) > 0 {
			inner := l.Tags[len(l.Tags)-1]
			for prio, pcp := range n.EgressQoS {
				if got := qos.EgressPCP(inner.EgressQoS, prio); uint32(got) != pcp {
					t.Errorf("%s egress %d: %d, want %d", inner.Netdev, prio, got, pcp)
				}
			}
		}
	}
}
