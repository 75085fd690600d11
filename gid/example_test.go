package gid_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/gid"
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
