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
