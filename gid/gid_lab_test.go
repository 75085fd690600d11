//go:build lab

package gid_test

import (
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/vlan"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// labTable reads rxe0 port 1 and the initial namespace with the collector
// and maps the table as every command does.
func labTable(t *testing.T) (gid.Port, *vlan.Namespace) {
	t.Helper()
	s, err := collect.Collect(collect.Options{Sections: collect.SectionRDMA | collect.SectionNet})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Port(lab.RDMADevice, 1)
	if err != nil {
		t.Fatal(err)
	}
	return *p, v.NS
}

func diffNow(t *testing.T) ([]gid.Change, gid.Port) {
	t.Helper()
	p, snap := labTable(t)
	pred, err := gid.Predict(gid.SpecOf(p), snap)
	if err != nil {
		t.Fatal(err)
	}
	return gid.Diff(pred.Entries, p.Entries), p
}

// The kernel's table for rxe0 equals the prediction from the netdevs,
// index for index (the lab adds every address before creating rxe0, so
// the table is a fresh scan).
func TestLabPredictionEqualsTable(t *testing.T) {
	d, p := diffNow(t)
	if p.Netdev != lab.HostNetdev || len(p.Types) != 1 || p.Types[0] != gid.TypeRoCEv2 {
		t.Errorf("port: netdev %q types %v, want %s and [RoCE v2]", p.Netdev, p.Types, lab.HostNetdev)
	}
	if !p.Entries[0].Default || p.Entries[0].Netdev != lab.HostNetdev || p.Entries[0].GID != gid.MustParse("fe80::ff:fe00:1") {
		t.Errorf("index 0 = %+v, want the default GID of %s (MAC %s)", p.Entries[0], lab.HostNetdev, lab.HostMAC)
	}
	for _, c := range d {
		t.Errorf("%s", c)
	}
	if t.Failed() {
		for _, e := range p.Entries {
			if !e.Empty {
				t.Logf("actual %d: %s %s %s", e.Index, e.GID, e.Type, e.Netdev)
			}
		}
	}
}

// sameSlots reports where two tables differ in (empty, GID, type, netdev).
func sameSlots(a, b []gid.Entry) []string {
	var out []string
	if len(a) != len(b) {
		return []string{fmt.Sprintf("%d slots vs %d", len(a), len(b))}
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Empty != y.Empty || (!x.Empty && x.Key() != y.Key()) {
			out = append(out, fmt.Sprintf("slot %d: %s %s %s (empty %v) vs %s %s %s (empty %v)", i, x.GID, x.Type, x.Netdev, x.Empty, y.GID, y.Type, y.Netdev, y.Empty))
		}
	}
	return out
}

// waitTable polls until rxe0's table equals want slot for slot: GID
// updates run on a workqueue after the address event.
func waitTable(t *testing.T, want []gid.Entry) gid.Port {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last []string
	for {
		p, _ := labTable(t)
		last = sameSlots(p.Entries, want)
		if len(last) == 0 {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 15 s the table still differs from the expected one: %v", last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Adding an address puts its GID in the lowest free slot (gid.AddAddress), so
// it differs from a fresh scan only by moved entries; removing it restores
// the table, which then equals the fresh-scan prediction again.
func TestLabAddressAddRemove(t *testing.T) {
	n := lab.Nets[2] // vlan200
	link, err := netlink.LinkByName(n.HostNetdev)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []netip.Prefix{netip.MustParsePrefix("10.0.200.77/24"), netip.MustParsePrefix("fd00:200::77/64")} {
		t.Run(p.String(), func(t *testing.T) {
			before, _ := labTable(t)
			want, ok := gid.AddAddress(before.Entries, before.Types, p.Addr(), n.HostNetdev)
			if !ok {
				t.Fatal("no free slot")
			}
			a := &netlink.Addr{IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}}
			if p.Addr().Is6() {
				a.Flags = unix.IFA_F_NODAD
			}
			if err := netlink.AddrAdd(link, a); err != nil {
				t.Fatal(err)
			}
			removed := false
			defer func() {
				if !removed {
					netlink.AddrDel(link, a)
				}
			}()
			waitTable(t, want)
			d, _ := diffNow(t)
			for _, c := range d {
				if c.Kind != gid.Moved {
					t.Errorf("with %s added: %s", p, c)
				}
			}
			if err := netlink.AddrDel(link, a); err != nil {
				t.Fatal(err)
			}
			removed = true
			waitTable(t, before.Entries)
			d, _ = diffNow(t)
			for _, c := range d {
				t.Errorf("after %s was removed: %s", p, c)
			}
		})
	}
}

// For each lab network, the entry gid.Select picks for the peer's address is
// the host address on that network's netdev, as rdma_cm would pick it
// through the kernel's route lookup (here: the collected routes; the host
// lab tests compare that lookup with the kernel's own).
func TestLabSelectFollowsRoute(t *testing.T) {
	p, h := labTable(t)
	for _, n := range lab.Nets {
		for _, pair := range [][2]netip.Prefix{{n.PeerIPv4, n.HostIPv4}, {n.PeerIPv6, n.HostIPv6}} {
			dst, src := pair[0].Addr(), pair[1].Addr()
			s, err := gid.Select(p.Entries, gid.FromAddr(dst), gid.Preferences{}, h)
			if err != nil {
				t.Errorf("%s: %v", dst, err)
				continue
			}
			e := s.Entry
			if e.Netdev != n.HostNetdev || e.IP != src || e.Type != gid.TypeRoCEv2 {
				t.Errorf("%s: selected %d (%s on %s), want %s on %s", dst, e.Index, e.IP, e.Netdev, src, n.HostNetdev)
			}
			// vlan is the outermost tag's ID: what the first switch sees.
			wantVLAN := -1
			if len(n.VLANs) > 0 {
				wantVLAN = int(n.VLANs[0].ID)
			}
			if (wantVLAN < 0) != (e.VLAN == nil) || (e.VLAN != nil && int(*e.VLAN) != wantVLAN) || len(e.VLANChain) != len(n.VLANs) {
				t.Errorf("%s: VLAN %v chain %v, want %d and %d tags", dst, e.VLAN, e.VLANChain, wantVLAN, len(n.VLANs))
			}
			cm, err := gid.RDMACM(p.Entries, p.Types, *s.Route)
			if err != nil || cm.Index != e.Index {
				t.Errorf("%s: rdma_cm model picks %d (%v), gid.Select %d", dst, cm.Index, err, e.Index)
			}
		}
	}
}
