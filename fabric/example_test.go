package fabric_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/fabric"
)

// Two hosts' snapshots: the fresh rxe table and the same table after
// churn, where 10.0.0.1 moved from index 1 to 13.
func ExampleAnalyze() {
	hosts, err := fabric.ReadFiles([]string{"../host/testdata/rxe.json", "../host/testdata/rxe-churned.json"}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := fabric.Analyze(hosts, fabric.SourceFiles)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range r.Findings {
		fmt.Println(f.Check, f.Network, f.Type)
		for _, g := range f.Groups {
			fmt.Println(" ", g.Text, fabric.HostList(g.Ports, 3))
		}
	}
	// Output:
	// gid_index 10.0.0.0/24 RoCE v2
	//   1 fixture-rxe
	//   13 fixture-rxe-churned
}
