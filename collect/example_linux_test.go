package collect_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/collect"
)

// Read the RDMA section from a sysfs tree mounted elsewhere: here the mlx5
// tree of the tests (collect/testdata/mlx5: mlx5_0, port 1 on enp1s0f0,
// port 2 on enp1s0f1, each found through device/net/<name>/dev_port;
// host/testdata/README.md describes it).
func ExampleCollect_sysfsRoot() {
	s, err := collect.Collect(collect.Options{Sections: collect.SectionRDMA, SysfsRoot: "testdata/mlx5/sys"})
	if err != nil {
		fmt.Println(err)
		return
	}
	printPorts(s)
	// Output:
	// mlx5_0 1 enp1s0f0
	// mlx5_0 2 enp1s0f1
}
