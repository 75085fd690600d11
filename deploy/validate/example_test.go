package validate_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/deploy/validate"
)

// Loading the Kubernetes manifests of deploy/kubernetes: each decoded
// strictly into its API type.
func ExampleLoadDir() {
	s, err := validate.LoadDir("../kubernetes")
	if err != nil {
		fmt.Println(err)
		return
	}
	c := s.DaemonSet.Spec.Template.Spec.Containers[0]
	fmt.Println(s.DaemonSet.Name, c.SecurityContext.Capabilities.Add)
	// Output: roce-probe [NET_RAW]
}

// A manifest with a field its type does not have is refused, the file and
// document named.
func ExampleSet_Decode() {
	var s validate.Set
	err := s.Decode("service.yaml", []byte(`apiVersion: v1
kind: Service
metadata:
  name: roce-probe
spec:
  clusterIP: None
  selectr: {app: roce-probe}
`))
	fmt.Println(err)
	// Output: service.yaml: document 1 (Service): error unmarshaling JSON: while decoding JSON: json: unknown field "selectr"
}

// Checking a query against the metrics docs/metrics.md lists: a label the
// metric does not have is named, with the labels it has.
func ExampleMetricsDoc_CheckExpr() {
	doc, err := validate.ParseMetricsDoc([]byte("| metric | type | labels | meaning |\n|---|---|---|---|\n" +
		"| `roce_probe_priority_discards_total` | counter | `netdev`, `prio`, `reason` | frames dropped |\n"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(doc.CheckExpr(`sum by (netdev, prio) (rate(roce_probe_priority_discards_total[5m]))`))
	fmt.Println(doc.CheckExpr(`sum by (priority) (rate(roce_probe_priority_discards_total[5m]))`))
	fmt.Println(doc.CheckExpr(`rate(roce_probe_priority_drops_total[5m])`))
	// Output:
	// <nil>
	// sum by/without: label "priority" is not a label of the series there (docs/metrics.md lists netdev, prio, reason)
	// metric roce_probe_priority_drops_total is not in docs/metrics.md
}
