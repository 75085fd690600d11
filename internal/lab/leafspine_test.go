//go:build linux

package lab

import (
	"strings"
	"testing"
)

// Every link of the leaf-spine has two ends that name each other, in one
// subnet, with distinct addresses and MACs; the routers' and hosts' names
// are what docs/lab.md shows.
func TestLeafSpineTopologyConsistent(t *testing.T) {
	owner := map[string]string{} // "mac 02:..." or "addr 10...." → who has it
	seen := func(kind, v, who string) {
		if other, ok := owner[kind+" "+v]; ok {
			t.Errorf("%s %s of %s is also %s's", kind, v, who, other)
		}
		owner[kind+" "+v] = who
	}
	for _, r := range leafSpineRouters() {
		ps, err := RouterPorts(r)
		if err != nil {
			t.Fatal(err)
		}
		want := 2
		if strings.HasPrefix(r, "leaf") {
			want = 4 // two spines, two hosts
		}
		if len(ps) != want {
			t.Errorf("%s has %d ports, want %d", r, len(ps), want)
		}
		for _, p := range ps {
			who := r + "/" + p.Netdev
			seen("mac", p.MAC, who)
			seen("addr", p.IP4.Addr().String(), who)
			seen("addr", p.IP6.Addr().String(), who)
			if p.Netdev != p.Neighbor {
				t.Errorf("%s: interface %s toward %s: want it named after the neighbour", r, p.Netdev, p.Neighbor)
			}
			if h, err := RoutedHostByName(p.Neighbor); err == nil {
				if h.Leaf != r || h.IP4.Addr() != p.PeerIP4 || h.IP6.Addr() != p.PeerIP6 || h.Gateway4 != p.IP4.Addr() || h.Gateway6 != p.IP6.Addr() || h.PortMAC != p.MAC {
					t.Errorf("%s: port toward host %+v disagrees with the host %+v", r, p, h)
				}
				if !p.IP4.Contains(h.IP4.Addr()) || !p.IP6.Contains(h.IP6.Addr()) {
					t.Errorf("%s: host %s's addresses are not on the link %s, %s", r, h.Name, p.IP4, p.IP6)
				}
				continue
			}
			back, err := RouterPortTo(p.Neighbor, r)
			if err != nil {
				t.Errorf("%s → %s: no port back: %v", r, p.Neighbor, err)
				continue
			}
			if back.PeerIP4 != p.IP4.Addr() || back.PeerIP6 != p.IP6.Addr() || !back.IP4.Contains(p.IP4.Addr()) || !back.IP6.Contains(p.IP6.Addr()) {
				t.Errorf("link %s/%s – %s/%s: ends %v %v and %v %v do not match", r, p.Netdev, back.Router, back.Netdev, p.IP4, p.IP6, back.IP4, back.IP6)
			}
		}
	}
	for _, h := range RoutedHosts {
		seen("mac", h.MAC, h.Name)
		if !LeafSpineHostsNet4.Contains(h.IP4.Addr()) || !LeafSpineHostsNet6.Contains(h.IP6.Addr()) {
			t.Errorf("%s's addresses %s %s are outside the leaves' multipath routes %s %s", h.Name, h.IP4, h.IP6, LeafSpineHostsNet4, LeafSpineHostsNet6)
		}
		if _, err := HostByName(h.Name); err == nil {
			t.Errorf("leaf-spine host %s clashes with a bridged fabric host", h.Name)
		}
		if oobAddr(h.Host) != h.IP4.Addr() {
			t.Errorf("%s: TCP exchanges go to %s, want its address %s", h.Name, oobAddr(h.Host), h.IP4.Addr())
		}
	}
	if got := []string{RoutedHosts[0].Name, RoutedHosts[0].RDMADevice, RoutedHosts[0].IP4.String(), RoutedHosts[3].IP6.String()}; strings.Join(got, " ") != "h5 rxe5 10.30.5.2/24 fd30:8::2/64" {
		t.Errorf("names and addresses %v differ from docs/lab.md's", got)
	}
	if _, err := RouterPorts("spine3"); err == nil || !strings.Contains(err.Error(), "spine3") {
		t.Errorf("RouterPorts(spine3) = %v, want an error naming it", err)
	}
	if _, err := RouterPortTo(Spine1, "h5"); err == nil || !strings.Contains(err.Error(), "want one of [leaf1 leaf2]") {
		t.Errorf("RouterPortTo(spine1, h5) = %v, want an error listing leaf1, leaf2", err)
	}
	if _, err := RoutedHostByName("h1"); err == nil {
		t.Error("RoutedHostByName(h1): no error")
	}
}
