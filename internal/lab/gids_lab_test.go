//go:build lab && linux

package lab

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sysfsGID is one populated entry of an RDMA port's GID table, read from
// /sys/class/infiniband/DEV/ports/PORT/{gids,gid_attrs/ndevs,gid_attrs/types}.
type sysfsGID struct {
	Index  int
	GID    netip.Addr // as sysfs prints it: IPv4-mapped GIDs stay mapped
	Netdev string
	Type   string
}

func (g sysfsGID) String() string {
	return fmt.Sprintf("[%d] %s %s %q", g.Index, g.GID, g.Netdev, g.Type)
}

func readSysfsGIDs(t *testing.T, dev string, port int) []sysfsGID {
	t.Helper()
	dir := filepath.Join("/sys/class/infiniband", dev, "ports", strconv.Itoa(port))
	ents, err := os.ReadDir(filepath.Join(dir, "gids"))
	if err != nil {
		t.Fatal(err)
	}
	var out []sysfsGID
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatalf("unexpected file %s in %s/gids", e.Name(), dir)
		}
		b, err := os.ReadFile(filepath.Join(dir, "gids", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		a, err := netip.ParseAddr(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("gids/%d = %q: %v", i, b, err)
		}
		if a.IsUnspecified() {
			continue // empty slot; its gid_attrs files fail with EINVAL
		}
		nd, err := os.ReadFile(filepath.Join(dir, "gid_attrs/ndevs", e.Name()))
		if err != nil {
			t.Fatalf("gid %d (%s) has no netdev: %v", i, a, err)
		}
		ty, err := os.ReadFile(filepath.Join(dir, "gid_attrs/types", e.Name()))
		if err != nil {
			t.Fatalf("gid %d (%s) has no type: %v", i, a, err)
		}
		out = append(out, sysfsGID{i, a, strings.TrimSpace(string(nd)), strings.TrimSpace(string(ty))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// eui64LinkLocal is fe80::/64 with the modified EUI-64 interface
// identifier of mac (RFC 4291 appendix A): universal/local bit flipped,
// ff:fe in the middle.
func eui64LinkLocal(t *testing.T, mac string) netip.Addr {
	hw, err := net.ParseMAC(mac)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := netip.AddrFromSlice([]byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0,
		hw[0] ^ 2, hw[1], hw[2], 0xff, 0xfe, hw[3], hw[4], hw[5]})
	return a
}

func TestRXEPortActive(t *testing.T) {
	if err := WaitPortActive(RDMADevice, 1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/sys/class/infiniband/" + RDMADevice + "/ports/1/link_layer")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "Ethernet" {
		t.Errorf("link_layer = %q, want Ethernet", got)
	}
}

// The GID table rxe0 builds for the lab topology: index 0 is the default
// GID (fe80::/64 + EUI-64 of veth0's MAC) on veth0; every host netdev
// (veth0's VLAN uppers too, QinQ included) has its link-local GID and one
// GID per address (IPv4 as ::ffff:a.b.c.d), owned by the netdev that has
// the address; every entry is "RoCE v2" (rxe implements only v2). No other
// entries. Source: drivers/infiniband/core/roce_gid_mgmt.c,
// enum_all_gids_of_dev_cb and is_eth_port_of_netdev_filter; cache.c,
// ib_cache_gid_add and find_gid; drivers/infiniband/sw/rxe/rxe_verbs.c,
// rxe_port_immutable (Linux 6.1).
func TestRXEGIDTable(t *testing.T) {
	ll := eui64LinkLocal(t, HostMAC)
	if ll.String() != "fe80::ff:fe00:1" {
		t.Fatalf("EUI-64 link-local of %s = %s, want fe80::ff:fe00:1", HostMAC, ll)
	}
	type key struct {
		gid    netip.Addr
		netdev string
	}
	want := map[key]bool{{ll, HostNetdev}: true}
	for _, n := range Nets {
		for _, v := range n.VLANs {
			want[key{ll, v.HostNetdev}] = true
		}
		v4 := netip.AddrFrom16(n.HostIPv4.Addr().As16()) // ::ffff:a.b.c.d
		want[key{v4, n.HostNetdev}] = true
		want[key{n.HostIPv6.Addr(), n.HostNetdev}] = true
	}

	var table []sysfsGID
	deadline := time.Now().Add(5 * time.Second)
	for {
		table = readSysfsGIDs(t, RDMADevice, 1)
		if len(table) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var dump strings.Builder
	for _, g := range table {
		fmt.Fprintln(&dump, g)
	}
	t.Logf("GID table of %s port 1:\n%s", RDMADevice, dump.String())

	if len(table) == 0 || table[0].Index != 0 || table[0].GID != ll || table[0].Netdev != HostNetdev {
		t.Errorf("index 0 must be the default GID %s on %s; table:\n%s", ll, HostNetdev, dump.String())
	}
	got := map[key]bool{}
	for _, g := range table {
		if g.Type != "RoCE v2" {
			t.Errorf("%v: type %q, want \"RoCE v2\"", g, g.Type)
		}
		k := key{g.GID, g.Netdev}
		if got[k] {
			t.Errorf("%v: duplicate entry", g)
		}
		got[k] = true
		if !want[k] {
			t.Errorf("%v: unexpected entry", g)
		}
	}
	for k := range want {
		if !got[k] {
			t.Errorf("missing GID %s on %s", k.gid, k.netdev)
		}
	}
}
