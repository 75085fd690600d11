package gid_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/gid"

	"github.com/roce-probe/roce-probe/vlan"
)

// Known answer from include/net/addrconf.h, addrconf_ifid_eui48, as
// drivers/infiniband/core/cache.c, make_default_gid uses it (Linux 6.1): MAC
// 02:00:00:00:00:01 → fe80::ff:fe00:1 (U/L bit flipped), and with a
// dev_id the ff:fe is replaced and the U/L bit kept.
func TestDefaultGID(t *testing.T) {
	cases := []struct {
		mac   []byte
		devID uint16
		want  string
	}{
		{[]byte{0x02, 0, 0, 0, 0, 0x01}, 0, "fe80::ff:fe00:1"},
		{[]byte{0x0c, 0x42, 0xa1, 0, 0, 0x10}, 0, "fe80::e42:a1ff:fe00:10"},
		{[]byte{0x0c, 0x42, 0xa1, 0, 0, 0x10}, 0x0102, "fe80::c42:a101:200:10"},
		{[]byte{1, 2, 3, 4, 5, 6, 7, 8}, 0, "fe80::"},
	}
	for _, c := range cases {
		if got := gid.DefaultGID(c.mac, c.devID).String(); got != c.want {
			t.Errorf("DefaultGID(% x, %d) = %s, want %s", c.mac, c.devID, got, c.want)
		}
	}
}

func TestRoCEMTU(t *testing.T) {
	// include/rdma/ib_addr.h, iboe_get_mtu (Linux 6.1): mtu - 96 rounded down to an IB MTU.
	for mtu, want := range map[int]int{1500: 1024, 9000: 4096, 4200: 4096, 4191: 2048, 1120: 1024, 1119: 512, 1024: 512, 351: 0, 352: 256} {
		if got := gid.RoCEMTU(mtu); got != want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", mtu, got, want)
		}
	}
}

func sameTable(t *testing.T, got, want []gid.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("predicted %d slots, actual %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Empty != w.Empty || g.GID != w.GID || g.Type != w.Type || g.Netdev != w.Netdev || g.Default != w.Default ||
			g.Kind != w.Kind || g.IP != w.IP || g.RealNetdev != w.RealNetdev || g.Index != w.Index {
			t.Errorf("slot %d: predicted %s %s %s default=%v empty=%v, actual %s %s %s default=%v empty=%v",
				i, g.GID, g.Type, g.Netdev, g.Default, g.Empty, w.GID, w.Type, w.Netdev, w.Default, w.Empty)
		}
	}
}

func TestPredictMatchesFixtures(t *testing.T) {
	for _, dir := range []string{"mlx5", "rxe"} {
		t.Run(dir, func(t *testing.T) {
			snap := loadSnap(t, dir)
			for _, p := range fixturePorts(t, dir) {
				pred, err := gid.Predict(gid.SpecOf(p), snap)
				if err != nil {
					t.Fatal(err)
				}
				sameTable(t, pred.Entries, p.Entries)
				if d := gid.Diff(pred.Entries, p.Entries); len(d) != 0 {
					t.Errorf("port %d: diff %v, want none", p.Port, d)
				}
			}
		})
	}
}

func TestDiffChurned(t *testing.T) {
	p := fixturePorts(t, "rxe-churned")[0]
	pred, err := gid.Predict(gid.SpecOf(p), loadSnap(t, "rxe-churned"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range gid.Diff(pred.Entries, p.Entries) {
		got = append(got, c.String())
	}
	want := []string{
		"unseen: index 5 fe80::ff:fe00:1 RoCE v2 on -: its netdev is not in this namespace",
		"moved: ::ffff:10.0.0.1 RoCE v2 on veth0 is at index 13, a fresh scan puts it at 1",
		"stale: index 14 ::ffff:10.0.0.5 RoCE v2 on veth0 is not explained by any netdev address",
		"missing: fe80::ff:fe00:1 RoCE v2 on veth0.100 (predicted index 5) is not in the table",
		"missing: fd00:1010::1 RoCE v2 on veth0.q1000.10 (predicted index 11) is not in the table",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diff =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Bonding (drivers/infiniband/core/roce_gid_mgmt.c,
// is_ndev_for_default_gid_filter and is_eth_port_of_netdev_filter; Linux
// 6.1): default GIDs come from the bond's MAC with the bond as netdev; an
// inactive slave gets no IP GIDs.
func TestPredictBond(t *testing.T) {
	snap := &vlan.Namespace{Links: []vlan.Link{
		{Name: "ens1f0", Index: 2, Kind: vlan.KindPhysical, MAC: vlan.MAC{0x0c, 0x42, 0xa1, 0, 0, 1}, Ether: true, MasterIndex: 4},
		{Name: "ens1f1", Index: 3, Kind: vlan.KindPhysical, MAC: vlan.MAC{0x0c, 0x42, 0xa1, 0, 0, 2}, Ether: true, MasterIndex: 4},
		{Name: "bond0", Index: 4, Kind: vlan.KindBond, MAC: vlan.MAC{0x0c, 0x42, 0xa1, 0, 0, 1}, Ether: true, ActiveSlave: 2,
			Addrs: mustPrefixes("192.168.7.1/24")},
		{Name: "bond0.30", Index: 5, Kind: vlan.KindVLAN, Tag: &vlan.Tag{ID: 30, TPID: vlan.TPID8021Q}, ParentIndex: 4,
			MAC: vlan.MAC{0x0c, 0x42, 0xa1, 0, 0, 1}, Ether: true, Addrs: mustPrefixes("192.168.30.1/24")},
	}}
	active, err := gid.Predict(gid.PortSpec{Device: "mlx5_bond_0", Port: 1, Netdev: "ens1f0", Types: []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2}, TableLen: 8}, snap)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"fe80::e42:a1ff:fe00:1 RoCE v1 bond0 default",
		"fe80::e42:a1ff:fe00:1 RoCE v2 bond0 default",
		"::ffff:192.168.7.1 RoCE v1 bond0",
		"::ffff:192.168.7.1 RoCE v2 bond0",
		"::ffff:192.168.30.1 RoCE v1 bond0.30",
		"::ffff:192.168.30.1 RoCE v2 bond0.30",
		"empty", "empty",
	}
	for i, e := range active.Entries {
		got := "empty"
		if !e.Empty {
			got = e.GID.String() + " " + e.Type.String() + " " + e.Netdev
			if e.Default {
				got += " default"
			}
		}
		if got != want[i] {
			t.Errorf("active slave, slot %d = %q, want %q", i, got, want[i])
		}
	}
	inactive, err := gid.Predict(gid.PortSpec{Device: "x", Port: 1, Netdev: "ens1f1", Types: []gid.Type{gid.TypeRoCEv2}, TableLen: 4}, snap)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range inactive.Entries[1:] {
		if !e.Empty {
			t.Errorf("inactive slave: slot %d = %s on %s, want no IP GIDs", i+1, e.GID, e.Netdev)
		}
	}
}

func TestPredictOverflowAndErrors(t *testing.T) {
	snap := loadSnap(t, "rxe")
	pred, err := gid.Predict(gid.PortSpec{Device: "rxe0", Port: 1, Netdev: "veth0", Types: []gid.Type{gid.TypeRoCEv2}, TableLen: 4}, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(pred.Entries) != 4 || len(pred.Overflow) != 9 {
		t.Errorf("4-slot table: %d entries, %d overflow; want 4 and 9 (12 IP GIDs, 3 free slots)", len(pred.Entries), len(pred.Overflow))
	}
	if _, err := gid.Predict(gid.PortSpec{Device: "rxe0", Port: 1, Netdev: "eth9", Types: []gid.Type{gid.TypeRoCEv2}}, snap); err == nil ||
		!strings.Contains(err.Error(), `"eth9"`) {
		t.Errorf("unknown netdev: err = %v", err)
	}
	if _, err := gid.Predict(gid.PortSpec{Device: "rxe0", Port: 1, Netdev: "veth0"}, snap); err == nil {
		t.Errorf("no types: no error")
	}
}

func mustPrefixes(ss ...string) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

// An address added after the table was built takes the lowest free slot
// (the hole at 1 in rxe-churned), not its fresh-scan position; removing
// it empties that slot again (drivers/infiniband/core/cache.c,
// ib_cache_gid_add and find_gid; Linux 6.1).
func TestAddRemoveAddress(t *testing.T) {
	p := fixturePorts(t, "rxe-churned")[0]
	added, ok := gid.AddAddress(p.Entries, p.Types, netip.MustParseAddr("10.0.200.77"), "veth0.200")
	if !ok {
		t.Fatal("no slot")
	}
	if e := added[1]; e.Empty || e.GID != gid.MustParse("10.0.200.77") || e.Type != gid.TypeRoCEv2 || e.Netdev != "veth0.200" || e.Index != 1 {
		t.Errorf("slot 1 after add = %+v", e)
	}
	if !p.Entries[1].Empty {
		t.Errorf("input modified")
	}
	again, _ := gid.AddAddress(added, p.Types, netip.MustParseAddr("10.0.200.77"), "veth0.200")
	if !again[11].Empty {
		t.Errorf("adding the same address twice used another slot")
	}
	// mlx5-like: a v1 and a v2 entry, in the two lowest free slots.
	m := fixturePorts(t, "mlx5")[0]
	madded, _ := gid.AddAddress(m.Entries, m.Types, netip.MustParseAddr("fd00::9"), "enp1s0f0")
	if madded[14].Type != gid.TypeRoCEv1 || madded[15].Type != gid.TypeRoCEv2 || madded[15].GID != gid.MustParse("fd00::9") {
		t.Errorf("mlx5 add: slots 14, 15 = %+v %+v", madded[14], madded[15])
	}
	removed := gid.RemoveAddress(added, netip.MustParseAddr("10.0.200.77"), "veth0.200")
	for i := range removed {
		if removed[i].Empty != p.Entries[i].Empty || removed[i].GID != p.Entries[i].GID {
			t.Errorf("slot %d after add+remove = %+v, want %+v", i, removed[i], p.Entries[i])
		}
	}
	full := make([]gid.Entry, 2)
	full[0] = gid.Entry{Index: 0, GID: gid.MustParse("fe80::1"), Type: gid.TypeRoCEv2}
	full[1] = gid.Entry{Index: 1, GID: gid.MustParse("10.0.0.1"), Type: gid.TypeRoCEv2}
	if _, ok := gid.AddAddress(full, []gid.Type{gid.TypeRoCEv2}, netip.MustParseAddr("10.0.0.2"), "eth0"); ok {
		t.Errorf("full table: ok")
	}
}
