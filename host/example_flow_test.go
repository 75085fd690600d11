package host_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
)

// Check an rdma_cm connection whose application sets no ToS: rdma_cm then
// uses the port's configfs default_roce_tos, which View.Flow takes from
// the snapshot's settings (106 here: DSCP 26, which the port maps to its
// lossless priority 3).
func ExampleView_Flow() {
	s, err := host.Load("testdata/mlx5-counters.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := s.View("")
	if err != nil {
		fmt.Println(err)
		return
	}
	src, err := v.Source("mlx5_0", 1, 5)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := qos.Check(v.Flow(src, host.FlowParams{RDMACM: true}))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("tos", *r.TOS, "dscp", *r.DSCP, "priority", *r.Priority, "verdict", r.Verdict)
	// Output:
	// tos 106 dscp 26 priority 3 verdict lossless
}
