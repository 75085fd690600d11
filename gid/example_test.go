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

// Read a GID table (here a fixture tree laid out like /sys) and print the
// entries that are in use.
func ExampleSysfs_ReadPort() {
	sys := &gid.Sysfs{Root: "testdata/rxe/sys"} // zero value: /sys
	port, err := sys.ReadPort("rxe0", 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(port.Device, port.Port, port.State, "netdev", port.Netdev, "types", port.Types)
	for _, e := range port.Entries[:4] {
		fmt.Println(e.Index, e.GID, e.Type, e.Kind, e.Netdev, e.Default)
	}
	// Output:
	// rxe0 1 ACTIVE netdev veth0 types [RoCE v2]
	// 0 fe80::ff:fe00:1 RoCE v2 ipv6-link-local veth0 true
	// 1 ::ffff:10.0.0.1 RoCE v2 ipv4 veth0 false
	// 2 fd00::1 RoCE v2 ipv6-ula veth0 false
	// 3 ::ffff:10.0.100.1 RoCE v2 ipv4 veth0.100 false
}

// The default GID the kernel derives from a netdev's MAC.
func ExampleDefaultGID() {
	fmt.Println(gid.DefaultGID([]byte{0x02, 0, 0, 0, 0, 0x01}, 0))
	// Output: fe80::ff:fe00:1
}

// Pick the source GID index for a peer on VLAN 100 of the lab topology,
// from fixture tables and a netdev snapshot; the snapshot's connected
// routes stand in for the kernel's route lookup (vlan.Handle).
func ExampleSelect() {
	sys := &gid.Sysfs{Root: "testdata/rxe/sys"}
	port, _ := sys.ReadPort("rxe0", 1)
	f, _ := os.Open("testdata/rxe/links.json")
	defer f.Close()
	snap, _ := vlan.DecodeSnapshot(f)
	ports := []gid.Port{port}
	gid.Map(ports, snap) // VLAN, MAC, ... of every entry's netdev
	s, err := gid.Select(ports[0].Entries, gid.MustParse("10.0.100.2"), gid.Preferences{}, gid.SnapshotRouter{Snapshot: snap})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("index", s.Entry.Index, s.Entry.GID, "on", s.Entry.Netdev, "VLAN", *s.Entry.VLAN)
	fmt.Println("NCCL would pick", gid.NCCL(port.Entries, gid.NCCLOptions{}))
	// Output:
	// index 3 ::ffff:10.0.100.1 on veth0.100 VLAN 100
	// NCCL would pick 1
}
