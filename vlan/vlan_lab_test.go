//go:build lab

package vlan

import (
	"testing"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// The lab's netdevs as netlink reports them: each network's host netdev
// has the topology's tag chain and egress map; the peer namespace, read
// through Open("peer"), has the peer side; routes to the peers leave
// through the right netdev with the right source address.
func TestLabDescribeTopology(t *testing.T) {
	h, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := h.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(lab.PeerNetns)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ps, err := p.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if ps.Netns != lab.PeerNetns {
		t.Errorf("peer snapshot netns %q", ps.Netns)
	}
	if _, ok := s.ByName(lab.PeerNetdev); ok {
		t.Errorf("%s visible in the initial namespace", lab.PeerNetdev)
	}
	for _, n := range lab.Nets {
		for side, snap := range map[string]*Snapshot{n.HostNetdev: s, n.PeerNetdev: ps} {
			d, err := snap.Describe(side)
			if err != nil {
				t.Errorf("%s: %v", side, err)
				continue
			}
			if len(d.Chain) != len(n.VLANs) {
				t.Errorf("%s: chain %v, want %v", side, d.Chain, n.VLANs)
				continue
			}
			for i, v := range n.VLANs {
				if d.Chain[i] != (Tag{ID: v.ID, Proto: Proto(v.Proto)}) {
					t.Errorf("%s: tag %d = %v, want %d/%#04x", side, i, d.Chain[i], v.ID, v.Proto)
				}
			}
			real := lab.HostNetdev
			if snap == ps {
				real = lab.PeerNetdev
			}
			if d.Real != real || d.MTU != lab.MTU || d.OperState != "up" {
				t.Errorf("%s: real %s mtu %d state %s", side, d.Real, d.MTU, d.OperState)
			}
		}
		d, _ := s.Describe(n.HostNetdev)
		if QoSMap(n.EgressQoS).String() != d.EgressQoS.String() {
			t.Errorf("%s: egress map %q, want %q", n.HostNetdev, d.EgressQoS, QoSMap(n.EgressQoS))
		}
		for _, dst := range []struct{ dst, src string }{{n.PeerIPv4.Addr().String(), n.HostIPv4.Addr().String()}, {n.PeerIPv6.Addr().String(), n.HostIPv6.Addr().String()}} {
			r, err := h.RouteGet(mustAddr(dst.dst))
			if err != nil || r.Netdev != n.HostNetdev || r.Src.String() != dst.src {
				t.Errorf("route to %s: %+v, %v; want via %s src %s", dst.dst, r, err, n.HostNetdev, dst.src)
			}
			c, err := s.ConnectedRoute(mustAddr(dst.dst))
			if err != nil || c.Netdev != r.Netdev || c.Src != r.Src {
				t.Errorf("connected route to %s: %+v, %v; kernel says %+v", dst.dst, c, err, r)
			}
		}
	}
}
