package host

import (
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/counters"
)

// In a pod (mlx5-pod, host/testdata/README.md) mlx5_0 port 1 has no
// netdev in the pod's namespace (the PF stays in the host's) and its GID
// entries 4..7 sit on net1, a macvlan whose lower device is in the host's
// namespace: the port's real netdev, its counters and its DCB are unknown
// because of that boundary — not "no DCB". On the host's own view
// (mlx5-counters) nothing is behind a boundary.
func TestCountersInputNetnsBoundary(t *testing.T) {
	port := func(name string) counters.PortInfo {
		t.Helper()
		v, err := fixture(t, name).View("")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range v.CountersInput(nil, nil).Ports {
			if p.Device == "mlx5_0" && p.Port == 1 {
				return p
			}
		}
		t.Fatalf("%s: no mlx5_0 port 1 in the counters input", name)
		return counters.PortInfo{}
	}
	pod := port("mlx5-pod")
	if pod.Real != "" || !strings.Contains(pod.Boundary, "lower device of net1 is in another network namespace") {
		t.Errorf("mlx5-pod port 1: real %q, boundary %q; want no real netdev and net1's boundary", pod.Real, pod.Boundary)
	}
	if h := port("mlx5-counters"); h.Boundary != "" || h.Real == "" {
		t.Errorf("mlx5-counters port 1: real %q, boundary %q; want a real netdev and no boundary", h.Real, h.Boundary)
	}
}
