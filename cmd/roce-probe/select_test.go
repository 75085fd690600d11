package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSelectJSON(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.100.2", "-o", "json"}, fromArgs("rxe")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// One document: an array with one object per port (rxe0 has one).
	var doc []map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 1 {
		t.Fatalf("%d selections, want 1 (rxe0 port 1):\n%s", len(doc), out)
	}
	r := doc[0]
	keys := []string{"device", "port", "predicted", "index", "gid", "netdev", "vlan", "vlan_chain", "route", "rdma_cm_index",
		"nccl_index", "ucx_index", "perftest_index", "verdicts"}
	if !sameKeys(r, keys) {
		t.Errorf("keys %v, want exactly %v", keysOf(r), keys)
	}
	// 10.0.100.2 is on veth0.100's connected route: index 3 holds
	// 10.0.100.1 on veth0.100 (802.1Q 100), the route's source address, so
	// rdma_cm picks it too.
	if r["device"] != "rxe0" || r["port"] != 1.0 || r["predicted"] != false || r["index"] != 3.0 || r["gid"] != "::ffff:10.0.100.1" ||
		r["netdev"] != "veth0.100" || r["vlan"] != 100.0 || !jsonIs(r["vlan_chain"], `[{"id":100,"tpid":33024,"pcp":null,"netdev":"veth0.100"}]`) ||
		r["rdma_cm_index"] != 3.0 {
		t.Errorf("select = %v", r)
	}
	route, _ := r["route"].(map[string]any)
	if route == nil || route["netdev"] != "veth0.100" || route["src"] != "10.0.100.1" || route["next_hop"] != "10.0.100.2" {
		t.Errorf("route = %v", r["route"])
	}
	reasons := r["verdicts"].([]any)
	if len(reasons) != 13 {
		t.Errorf("%d reasons, want 13", len(reasons))
	}
	first := reasons[0].(map[string]any)
	if len(first) != 3 || first["index"] != 0.0 || first["verdict"] != "rejected" || first["reason"] == "" {
		t.Errorf("reason 0 = %v", first)
	}

	// QinQ: vlan is the outermost tag (802.1ad 1000), the chain has both.
	out, stderr, code = runCLI(t, "", append([]string{"select", "--dst", "10.10.10.2", "-o", "json"}, fromArgs("rxe")...)...)
	if code != 0 {
		t.Fatalf("QinQ: exit %d: %s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc) != 1 {
		t.Fatalf("QinQ: %v:\n%s", err, out)
	}
	r = doc[0]
	if r["index"] != 10.0 || r["netdev"] != "veth0.q1000.10" || r["vlan"] != 1000.0 ||
		!jsonIs(r["vlan_chain"], `[{"id":1000,"tpid":34984,"pcp":null,"netdev":"veth0.q1000"},{"id":10,"tpid":33024,"pcp":null,"netdev":"veth0.q1000.10"}]`) {
		t.Errorf("QinQ select = %v", r)
	}
}

func TestSelectEnvAndTable(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.0.2", "-o", "env"}, fromArgs("rxe-churned")...)...)
	if code != 0 || !strings.Contains(out, "export NCCL_IB_GID_INDEX=13\n") || !strings.Contains(out, "export UCX_IB_GID_INDEX=13\n") ||
		!strings.Contains(out, "export NCCL_IB_HCA==rxe0:1\n") {
		t.Errorf("env output (exit %d):\n%s", code, out)
	}
	out, _, _ = runCLI(t, "", append([]string{"select", "--dst", "10.0.0.2"}, fromArgs("rxe-churned")...)...)
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
	out, stderr, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.100.2", "--roce", "v1", "-o", "json"}, fromArgs("rxe")...)...)
	if code != exitFinding || !strings.Contains(stderr, "no GID entry can reach 10.0.100.2") || !strings.Contains(out, `"index": null`) ||
		!strings.Contains(out, `"vlan_chain": null`) {
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
		// RoCE never sends to the host itself through the loopback.
		{[]string{"--dst", "::1"}, `--dst "::1" is a loopback address`},
		{[]string{"--dst", "127.0.0.1"}, `--dst "127.0.0.1" is a loopback address`},
		{[]string{"--dst", "::ffff:127.0.0.2"}, `--dst "::ffff:127.0.0.2" is a loopback address`},
		{[]string{"--dst", "10.0.0.2", "--roce", "v3"}, `--roce "v3" is not known: want v1 or v2`},
		{[]string{"--dst", "10.0.0.2", "--vlan", "4096"}, `--vlan 4096 is out of range: want 0..4095 or "none"`},
		{[]string{"--dst", "10.0.0.2", "--subnet", "10.0.0.0/33"}, "--subnet"},
		{[]string{"--dst", "10.0.0.2", "--family", "ipx"}, `--family "ipx"`},
		{[]string{"--dst", "10.0.0.2", "-o", "yaml"}, `-o "yaml"`},
	} {
		out, stderr, code := runCLI(t, "", append(append([]string{"select"}, c.args...), fromArgs("rxe")...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("select %v: exit %d, stderr %q, stdout %q; want 2 and %q", c.args, code, stderr, out, c.want)
		}
	}
}

// select -o env is for eval: on a host without RDMA devices (the
// Soft-RoCE prediction) or for a device the host does not have it prints
// nothing on standard output and exits non-zero, so that `eval
// "$(roce-probe select ... -o env)"` exports nothing for a device that does
// not exist.
func TestSelectEnvNothingToExport(t *testing.T) {
	noRDMA := withoutRDMADevices(t, "rxe")
	for _, c := range []struct {
		args     []string
		code     int
		inStderr string
	}{
		{[]string{"--from", noRDMA}, exitFinding, "the host has no RDMA device: rxe_veth0 is the Soft-RoCE device 'rdma link add' would create"},
		{[]string{"--from", noRDMA, "--dev", "rxe_veth0"}, exitFinding, "nothing to export"},
		{append([]string{"--dev", "mlx5_0"}, fromArgs("rxe")...), exitUsage, `--dev "mlx5_0": no such RDMA device`},
	} {
		args := append([]string{"select", "--dst", "10.0.100.2", "-o", "env"}, c.args...)
		out, stderr, code := runCLI(t, "", args...)
		if code != c.code || out != "" || !strings.Contains(stderr, c.inStderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d, no stdout, %q", args, code, out, stderr, c.code, c.inStderr)
		}
	}
	// The same host with its device: the lines to export.
	out, _, code := runCLI(t, "", append([]string{"select", "--dst", "10.0.100.2", "-o", "env"}, fromArgs("rxe")...)...)
	if code != exitOK || !strings.Contains(out, "export NCCL_IB_HCA==rxe0:1\n") {
		t.Errorf("rxe: exit %d:\n%s", code, out)
	}
}
