package fabrictest_test

import (
	"fmt"
	"os"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
)

// Host 7 of a fleet made from the mlx5 fixture: its own hostname, and the
// addresses moved by 7 in the links and the GID table alike.
func ExampleHost() {
	base, err := os.ReadFile("../../host/testdata/mlx5-dscp.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := fabrictest.Host(base, "node-7", 7)
	if err != nil {
		fmt.Println(err)
		return
	}
	l, _ := s.Namespaces[0].ByName("enp1s0f0.100")
	fmt.Println(s.Hostname, l.Addrs[0], s.RDMA.Devices[0].Ports[0].GIDs[5].GID)
	// Output: node-7 10.100.0.17/16 ::ffff:10.100.0.17
}
