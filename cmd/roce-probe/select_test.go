package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSelectJSON(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.100.2", "-o", "json"}, fixtureArgs("rxe")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r) != 7 || r["device"] != "rxe0" || r["port"] != float64(1) || r["index"] != float64(3) ||
		r["gid"] != "::ffff:10.0.100.1" || r["netdev"] != "veth0.100" || r["vlan"] != float64(100) {
		t.Errorf("select = %v", r)
	}
	reasons := r["reasons"].([]any)
	if len(reasons) != 13 {
		t.Errorf("%d reasons, want 13", len(reasons))
	}
	first := reasons[0].(map[string]any)
	if len(first) != 3 || first["index"] != float64(0) || first["verdict"] != "rejected" || first["reason"] == "" {
		t.Errorf("reason 0 = %v", first)
	}
}

func TestSelectEnvAndTable(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.0.2", "-o", "env"}, fixtureArgs("rxe-churned")...)...)
	if code != 0 || !strings.Contains(out, "export NCCL_IB_GID_INDEX=13\n") || !strings.Contains(out, "export UCX_IB_GID_INDEX=13\n") ||
		!strings.Contains(out, "export NCCL_IB_HCA==rxe0:1\n") {
		t.Errorf("env output (exit %d):\n%s", code, out)
	}
	out, _, _ = runCLI(t, "", append([]string{"select", "--dst", "10.0.0.2"}, fixtureArgs("rxe-churned")...)...)
	for _, want := range []string{
		"rxe0 port 1: use GID index 13 (RoCE v2 ::ffff:10.0.0.1 on veth0, untagged) to reach 10.0.0.2",
		"rdma_cm would use index 13",
		"without a GID index, NCCL would pick 3, UCX 3, perftest 3",
		"14     rejected  stale: no netdev has the address 10.0.0.5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestSelectNothingReachable(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.100.2", "--roce", "v1", "-o", "json"}, fixtureArgs("rxe")...)...)
	if code != exitFinding || !strings.Contains(stderr, "no GID entry can reach 10.0.100.2") || !strings.Contains(out, `"index":null`) {
		t.Errorf("exit %d, stderr %q, out %s", code, stderr, out)
	}
}

func TestSelectBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--dst is required"},
		{[]string{"--dst", "10.0.0.300"}, `--dst "10.0.0.300" is not an IP address or GID`},
		{[]string{"--dst", "fe80::1%eth0"}, "has a zone"},
		{[]string{"--dst", "10.0.0.2", "--roce", "v3"}, `--roce "v3" is not a RoCE version: want v1 or v2`},
		{[]string{"--dst", "10.0.0.2", "--vlan", "4096"}, `--vlan 4096 is out of range: want 0..4095 or "none"`},
		{[]string{"--dst", "10.0.0.2", "--subnet", "10.0.0.0/33"}, "--subnet"},
		{[]string{"--dst", "10.0.0.2", "--family", "ipx"}, `--family "ipx"`},
		{[]string{"--dst", "10.0.0.2", "-o", "yaml"}, `-o "yaml"`},
	} {
		_, stderr, code := runCLI(t, "", append(append([]string{"select"}, c.args...), fixtureArgs("rxe")...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("select %v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
	_, stderr, code := runCLI(t, "", "select", "--dst", "10.0.0.2", "--sysfs", t.TempDir(), "--links", "../../gid/testdata/rxe/links.json")
	if code != exitUsage || !strings.Contains(stderr, "no RDMA devices") {
		t.Errorf("no devices: exit %d, %q", code, stderr)
	}
}
