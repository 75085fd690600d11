//go:build linux

package lab_test

import (
	"fmt"
	"strings"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// The lab's networks: the netdev that owns each host address and the tags
// its frames carry, outermost first.
func ExampleNets() {
	for _, n := range lab.Nets {
		line := fmt.Sprintf("%-12s %-15s %-14s", n.Name, n.HostNetdev, n.HostIPv4)
		for _, v := range n.VLANs {
			line += fmt.Sprintf(" 0x%04x:%d", v.Proto, v.ID)
		}
		fmt.Println(strings.TrimRight(line, " "))
	}
	// Output:
	// untagged     veth0           10.0.0.1/24
	// vlan100      veth0.100       10.0.100.1/24  0x8100:100
	// vlan200      veth0.200       10.0.200.1/24  0x8100:200
	// qinq1000.10  veth0.q1000.10  10.10.10.1/24  0x88a8:1000 0x8100:10
}
