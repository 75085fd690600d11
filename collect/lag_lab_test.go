//go:build lab

package collect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/roce-probe/roce-probe/gid"
)

// RoCE LAG's GID and netdev side on Soft-RoCE: rxe over a bond of two
// veths. RDMA netlink reports the bond as the port's netdev (rdma link),
// the kernel puts the bond's address into the GID table on the bond, and
// the collector records the bond's mode and the slaves that carry its
// traffic: the active one in active-backup, both in 802.3ad.
func TestLabRXEOverBond(t *testing.T) {
	for i, mode := range []netlink.BondMode{netlink.BOND_MODE_ACTIVE_BACKUP, netlink.BOND_MODE_802_3AD} {
		t.Run(mode.String(), func(t *testing.T) {
			bondName, dev := fmt.Sprintf("lagb%d", i), fmt.Sprintf("rxe_lag%d", i)
			var slaves []string
			for j := 0; j < 2; j++ {
				a, b := fmt.Sprintf("lag%da%d", i, j), fmt.Sprintf("lag%db%d", i, j)
				if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: a}, PeerName: b}); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if l, err := netlink.LinkByName(a); err == nil {
						_ = netlink.LinkDel(l)
					}
				})
				slaves = append(slaves, a)
			}
			bond := netlink.NewLinkBond(netlink.LinkAttrs{Name: bondName})
			bond.Mode = mode
			bond.Miimon = 100
			if err := netlink.LinkAdd(bond); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if l, err := netlink.LinkByName(bondName); err == nil {
					_ = netlink.LinkDel(l)
				}
			})
			bl, err := netlink.LinkByName(bondName)
			if err != nil {
				t.Fatal(err)
			}
			for j, s := range slaves {
				l, err := netlink.LinkByName(s)
				if err != nil {
					t.Fatal(err)
				}
				if err := netlink.LinkSetMasterByIndex(l, bl.Attrs().Index); err != nil {
					t.Fatal(err)
				}
				for _, n := range []string{s, fmt.Sprintf("lag%db%d", i, j)} {
					if nl, err := netlink.LinkByName(n); err == nil {
						_ = netlink.LinkSetUp(nl)
					}
				}
			}
			if err := netlink.LinkSetUp(bl); err != nil {
				t.Fatal(err)
			}
			addr, _ := netlink.ParseAddr(fmt.Sprintf("10.77.%d.1/24", i))
			if err := netlink.AddrAdd(bl, addr); err != nil {
				t.Fatal(err)
			}
			if err := netlink.RdmaLinkAdd(dev, "rxe", bondName); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = netlink.RdmaLinkDel(dev) })
			want := gid.MustParse(fmt.Sprintf("10.77.%d.1", i))
			var found bool
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !found; time.Sleep(100 * time.Millisecond) {
				s, err := Collect(Options{Sections: SectionRDMA | SectionNet})
				if err != nil {
					t.Fatal(err)
				}
				d, ok := s.Device(dev)
				if !ok || len(d.Ports) != 1 {
					continue
				}
				p := d.Ports[0]
				for _, g := range p.GIDs {
					if g.GID == want && g.Netdev == bondName {
						found = true
					}
				}
				if !found {
					continue
				}
				if p.Netdev != bondName {
					t.Errorf("port netdev %q, want %s (rdma link)", p.Netdev, bondName)
				}
				v, err := s.View("")
				if err != nil {
					t.Fatal(err)
				}
				desc, err := v.NS.Describe(bondName)
				if err != nil || desc.Bond == nil {
					t.Fatalf("describe %s: %+v %v", bondName, desc, err)
				}
				bl, _ := v.NS.ByName(bondName)
				if bl.BondMode != mode.String() {
					t.Errorf("bond_mode %q, want %q", bl.BondMode, mode)
				}
				got := strings.Join(desc.Bond.Slaves, ",")
				switch mode {
				case netlink.BOND_MODE_ACTIVE_BACKUP:
					if len(desc.Bond.Slaves) != 1 || len(desc.Bond.Backup) != 1 || bl.ActiveSlave == 0 {
						t.Errorf("active-backup: slaves %v backup %v active %d, want one active and one standby", desc.Bond.Slaves, desc.Bond.Backup, bl.ActiveSlave)
					}
				default:
					if got != strings.Join(slaves, ",") {
						t.Errorf("802.3ad: slaves %q, want %q", got, strings.Join(slaves, ","))
					}
				}
			}
			if !found {
				t.Fatalf("%s never showed %s on %s", dev, want, bondName)
			}
		})
	}
}
