package host

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A snapshot whose counters or settings a kernel could not have written is
// refused with a message naming the entry and the value.
func TestDecodeCountersBadInput(t *testing.T) {
	raw, err := os.ReadFile("testdata/mlx5-counters.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(bytes.NewReader(raw)); err != nil {
		t.Fatalf("the fixture: %v", err)
	}
	for _, c := range []struct{ old, new, want string }{
		{`"device": "mlx5_0",
        "port": 2,
        "source": "sysfs"`, `"device": "mlx5_0",
        "port": 1,
        "source": "sysfs"`, "counters.rdma: mlx5_0 port 1 appears twice"},
		{`"port": 2,
        "source": "sysfs"`, `"port": 2,
        "source": "procfs"`, `source "procfs": want "netlink" or "sysfs"`},
		{`"port": 2,
        "source": "sysfs"`, `"port": 0,
        "source": "sysfs"`, "port 0: want a port number 1..255"},
		{`"rx_prio0_bytes": 1,`, `"rx_prio0_bytes": -1,`, "counters.ethtool[0].stats.rx_prio0_bytes: number -1: want an integer 0 or more"},
		{`"rx_prio0_bytes": 1,`, `"": 1,`, `statistic name "" is not valid`},
		{`"pfc": [
      {
        "netns": null,`, `"pfc": [
      {
        "color": 1,
        "netns": null,`, `counters.pfc[0]: unknown key "color"`},
		{`"cnp_dscp": 48`, `"cnp_dscp": 64`, "cnp_dscp 64: want 0..63"},
		{`"status": "not exposed",
        "reason": "no rdma_cm`, `"status": "maybe",
        "reason": "no rdma_cm`, `status "maybe"`},
		{`"default_roce_mode": "RoCE v2"`, `"default_roce_mode": "RoCE v3"`, `default_roce_mode "RoCE v3"`},
		{`"netns": null,
        "netdev": "enp1s0f0",
        "kernel_driver": "mlx5_core"`, `"netns": "blue",
        "netdev": "enp1s0f0",
        "kernel_driver": "mlx5_core"`, `counters.ethtool of enp1s0f0: namespace "blue" is not in the snapshot`},
	} {
		if !strings.Contains(string(raw), c.old) {
			t.Fatalf("the fixture has no %q", c.old)
		}
		b := strings.Replace(string(raw), c.old, c.new, 1)
		_, err := Decode(strings.NewReader(b))
		if err == nil || (c.want != "" && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s → %s: %v, want an error naming %q", c.old, c.new, err, c.want)
		}
	}
}
