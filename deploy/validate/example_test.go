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
