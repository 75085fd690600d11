//go:build lab

package collect

import (
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/vlan"
)

// The lab's netdevs as the collector reads them: each network's host
// netdev has the topology's tag chain (outermost first, each tag with its
// VLAN device) and egress map; the peer namespace, read by name, has the
// peer side; the snapshot's route lookup gives, for every peer address,
// the device and source address the kernel's own lookup (RTM_GETROUTE, as
// `ip route get`) gives.
func TestLabCollectTopology(t *testing.T) {
	s, err := Collect(Options{Netns: []string{"", lab.PeerNetns}})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Namespaces) != 2 || s.Namespaces[1].Netns != lab.PeerNetns {
		t.Fatalf("namespaces: %d", len(s.Namespaces))
	}
	hs, ps := s.Namespaces[0], s.Namespaces[1]
	if _, ok := hs.ByName(lab.PeerNetdev); ok {
		t.Errorf("%s visible in the initial namespace", lab.PeerNetdev)
	}
	for _, n := range lab.Nets {
		for side, snap := range map[string]*vlan.Namespace{n.HostNetdev: hs, n.PeerNetdev: ps} {
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
				want := v.HostNetdev
				if snap == ps {
					want = v.PeerNetdev
				}
				if d.Chain[i].Tag != (vlan.Tag{ID: v.ID, TPID: vlan.TPID(v.Proto)}) || d.Chain[i].Netdev != want {
					t.Errorf("%s: tag %d = %v on %s, want %d/%#04x on %s", side, i, d.Chain[i], d.Chain[i].Netdev, v.ID, v.Proto, want)
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
		d, _ := hs.Describe(n.HostNetdev)
		if vlan.QoSMap(n.EgressQoS).String() != d.EgressQoS.String() {
			t.Errorf("%s: egress map %q, want %q", n.HostNetdev, d.EgressQoS, vlan.QoSMap(n.EgressQoS))
		}
		for _, p := range [][2]netip.Prefix{{n.PeerIPv4, n.HostIPv4}, {n.PeerIPv6, n.HostIPv6}} {
			dst, src := p[0].Addr(), p[1].Addr()
			routes, err := netlink.RouteGet(net.IP(dst.AsSlice()))
			if err != nil || len(routes) == 0 {
				t.Fatalf("kernel route to %s: %v", dst, err)
			}
			kl, err := netlink.LinkByIndex(routes[0].LinkIndex)
			if err != nil {
				t.Fatal(err)
			}
			ksrc, _ := netip.AddrFromSlice(routes[0].Src)
			r, err := hs.RouteGet(dst)
			if err != nil || r.Dev != kl.Attrs().Name || r.Src != ksrc.Unmap() {
				t.Errorf("route to %s: snapshot says %s src %s (%v), the kernel %s src %s", dst, r.Dev, r.Src, err, kl.Attrs().Name, ksrc)
			}
			if r.Dev != n.HostNetdev || r.Src != src {
				t.Errorf("route to %s: via %s src %s, want %s src %s (topology)", dst, r.Dev, r.Src, n.HostNetdev, src)
			}
		}
	}
}
