package host

import (
	"reflect"
	"testing"
)

// TestCountersErrors keeps the errors of the collector's counter reads
// (collect/counters_linux.go: "counters DEV/PORT", "ethtool",
// "ethtool NETDEV") and no other source's.
func TestCountersErrors(t *testing.T) {
	errs := []SourceError{{Source: "counters mlx5_0/1"}, {Source: "dcb eth0"}, {Source: "ethtool"}, {Source: "rdma"},
		{Source: "ethtool eth0"}, {Source: "ethtools"}, {Source: "counters"}, {Source: "netns blue"}}
	want := []SourceError{{Source: "counters mlx5_0/1"}, {Source: "ethtool"}, {Source: "ethtool eth0"}}
	if got := CountersErrors(errs); !reflect.DeepEqual(got, want) {
		t.Errorf("CountersErrors = %v, want %v", got, want)
	}
}
