package vlan_test

import (
	"fmt"
	"strings"

	"github.com/roce-probe/roce-probe/vlan"
)

// A QinQ stack: an 802.1Q VLAN 10 device on an 802.1ad VLAN 1000 device on
// veth0. RoCE frames sent with a GID on q1000.10 carry both tags.
func ExampleSnapshot_Describe() {
	snap, err := vlan.DecodeSnapshot(strings.NewReader(`{"links": [
	  {"name": "veth0", "ifindex": 2, "kind": "veth", "mac": "02:00:00:00:00:01", "mtu": 1500, "operstate": "up", "ether": true},
	  {"name": "veth0.q1000", "ifindex": 3, "kind": "vlan", "link": 2, "vlan": {"id": 1000, "proto": "802.1ad"}, "ether": true},
	  {"name": "q1000.10", "ifindex": 4, "kind": "vlan", "link": 3, "vlan": {"id": 10, "proto": "802.1Q"},
	   "egress_qos": {"0": 2}, "ether": true}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := snap.Describe("q1000.10")
	fmt.Println("VLAN ID:", *d.VLANID)
	fmt.Println("tags, outermost first:", d.Chain)
	fmt.Println("real netdev:", d.Real)
	fmt.Println("egress map:", d.EgressQoS)
	// Output:
	// VLAN ID: 10
	// tags, outermost first: [802.1ad:1000 10]
	// real netdev: veth0
	// egress map: 0:2
}
