package vlan_test

import (
	"fmt"
	"strings"

	"github.com/roce-probe/roce-probe/vlan"
)

// A QinQ stack: an 802.1Q VLAN 10 device on an 802.1ad VLAN 1000 device on
// veth0. RoCE frames sent with a GID on q1000.10 carry both tags.
func ExampleNamespace_Describe() {
	snap, err := vlan.Decode(strings.NewReader(`{"links": [
	  {"name": "veth0", "ifindex": 2, "kind": "veth", "mac": "02:00:00:00:00:01", "mtu": 1500, "operstate": "up", "ether": true},
	  {"name": "veth0.q1000", "ifindex": 3, "kind": "vlan", "parent_ifindex": 2, "tag": {"id": 1000, "tpid": 34984}, "ether": true},
	  {"name": "q1000.10", "ifindex": 4, "kind": "vlan", "parent_ifindex": 3, "tag": {"id": 10, "tpid": 33024},
	   "egress_qos_map": {"0": 2}, "ether": true}
	]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, _ := snap.Describe("q1000.10")
	outer, _ := d.Outermost()
	fmt.Println("outermost tag (what the first switch sees):", outer, "added by", outer.Netdev)
	fmt.Println("tags, outermost first:", d.Chain)
	fmt.Println("VLAN ID the RDMA stack gives the GID:", *d.L2VLANID)
	fmt.Println("real netdev:", d.Real)
	fmt.Println("egress map:", d.EgressQoS)
	// Output:
	// outermost tag (what the first switch sees): 802.1ad:1000 added by veth0.q1000
	// tags, outermost first: [802.1ad:1000 10]
	// VLAN ID the RDMA stack gives the GID: 10
	// real netdev: veth0
	// egress map: 0:2
}
