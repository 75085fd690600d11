package gid_test

import (
	"fmt"
	"os"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

func ExampleParse() {
	g, _ := gid.Parse("0000:0000:0000:0000:0000:ffff:c0a8:0002")
	fmt.Println(g, g.IsIPv4Mapped(), g.Addr())
	fmt.Println(g.SysfsString())
	// Output:
	// ::ffff:192.168.0.2 true 192.168.0.2
	// 0000:0000:0000:0000:0000:ffff:c0a8:0002
}

// Build a port's table from the slots sysfs shows in use (roce-probe's
// collector reads them from /sys/class/infiniband/<dev>/ports/<p>/gids and
// gid_attrs), then print the entries in use.
func ExampleNewPort() {
	used := []gid.Entry{
		{Index: 0, GID: gid.MustParse("fe80::ff:fe00:1"), Type: gid.TypeRoCEv2, Netdev: "veth0"},
		{Index: 1, GID: gid.MustParse("10.0.0.1"), Type: gid.TypeRoCEv2, Netdev: "veth0"},
		{Index: 3, GID: gid.MustParse("10.0.100.1"), Type: gid.TypeRoCEv2, Netdev: "veth0.100"},
	}
	port := gid.NewPort(gid.Port{Device: "rxe0", Port: 1, State: "ACTIVE", LinkLayer: "Ethernet", Netdev: "veth0"}, 16, used)
	fmt.Println(port.Device, port.Port, "types", port.Types, len(port.Entries), "slots")
	for _, e := range port.Entries[:4] {
		if e.Empty {
			fmt.Println(e.Index, "(empty)")
			continue
		}
		fmt.Println(e.Index, e.GID, e.Type, e.Kind, e.Netdev, "default:", e.Default)
	}
	// Output:
	// rxe0 1 types [RoCE v2] 16 slots
	// 0 fe80::ff:fe00:1 RoCE v2 ipv6-link-local veth0 default: true
	// 1 ::ffff:10.0.0.1 RoCE v2 ipv4 veth0 default: false
	// 2 (empty)
	// 3 ::ffff:10.0.100.1 RoCE v2 ipv4 veth0.100 default: false
}

// The default GID the kernel derives from a netdev's MAC.
func ExampleDefaultGID() {
	fmt.Println(gid.DefaultGID([]byte{0x02, 0, 0, 0, 0, 0x01}, 0))
	// Output: fe80::ff:fe00:1
}

// Pick the source GID index for a peer on VLAN 100 of the lab topology:
// the table, the namespace it lives in (links, addresses, routes), and the
// route to the destination decide.
func ExampleSelect() {
	f, _ := os.Open("../vlan/testdata/lab.json") // the lab's initial namespace
	defer f.Close()
	ns, err := vlan.Decode(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	port := gid.NewPort(gid.Port{Device: "rxe0", Port: 1, LinkLayer: "Ethernet", Netdev: "veth0"}, 8, []gid.Entry{
		{Index: 0, GID: gid.MustParse("fe80::ff:fe00:1"), Type: gid.TypeRoCEv2, Netdev: "veth0"},
		{Index: 1, GID: gid.MustParse("10.0.0.1"), Type: gid.TypeRoCEv2, Netdev: "veth0"},
		{Index: 2, GID: gid.MustParse("fd00::1"), Type: gid.TypeRoCEv2, Netdev: "veth0"},
		{Index: 3, GID: gid.MustParse("10.0.100.1"), Type: gid.TypeRoCEv2, Netdev: "veth0.100"},
		{Index: 4, GID: gid.MustParse("fd00:100::1"), Type: gid.TypeRoCEv2, Netdev: "veth0.100"},
	})
	ports := []gid.Port{port}
	gid.Map(ports, ns) // VLAN, MAC, ... of every entry's netdev
	s, err := gid.Select(ports[0].Entries, gid.MustParse("10.0.100.2"), gid.Preferences{}, ns)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("index", s.Entry.Index, s.Entry.GID, "on", s.Entry.Netdev, "VLAN", *s.Entry.VLAN, "route via", s.Route.Dev, "src", s.Route.Src)
	fmt.Println("NCCL would pick", gid.NCCL(ports[0].Entries, gid.NCCLOptions{}))
	// Output:
	// index 3 ::ffff:10.0.100.1 on veth0.100 VLAN 100 route via veth0.100 src 10.0.100.1
	// NCCL would pick 1
}
