package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// Fixture trees and snapshots of gid/testdata (facts and their kernel
// sources in gid/testdata/README.md).
func fixtureArgs(name string) []string {
	return []string{"--sysfs", "../../gid/testdata/" + name + "/sys", "--links", "../../gid/testdata/" + name + "/links.json"}
}

func TestGidsJSONKeys(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"gids", "-o", "json"}, fixtureArgs("rxe")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 13 {
		t.Fatalf("%d rows, want the 13 non-empty entries", len(rows))
	}
	keys := []string{"device", "port", "index", "gid", "type", "kind", "ip", "netdev", "ifindex", "vlan", "vlan_chain",
		"real_netdev", "mac", "mtu", "state", "netns", "default", "empty"}
	for _, r := range rows {
		if len(r) != len(keys) {
			t.Errorf("row has %d keys, want exactly %v: %v", len(r), keys, r)
		}
		for _, k := range keys {
			if _, ok := r[k]; !ok {
				t.Errorf("row lacks key %q: %v", k, r)
			}
		}
	}
	q := rows[10]
	chain, _ := json.Marshal(q["vlan_chain"])
	if q["netdev"] != "veth0.q1000.10" || q["vlan"] != float64(10) || string(chain) != `[{"id":1000,"proto":"802.1ad"},{"id":10,"proto":"802.1Q"}]` ||
		q["type"] != "RoCE v2" || q["real_netdev"] != "veth0" {
		t.Errorf("QinQ row = %v", q)
	}
	if rows[0]["default"] != true || rows[0]["vlan"] != nil {
		t.Errorf("row 0 = %v, want the untagged default GID", rows[0])
	}
	out, _, _ = runCLI(t, "", append([]string{"gids", "-o", "json", "--all"}, fixtureArgs("rxe")...)...)
	json.Unmarshal([]byte(out), &rows)
	if len(rows) != 16 || rows[15]["empty"] != true || rows[15]["type"] != nil {
		t.Errorf("--all: %d rows, last %v", len(rows), rows[len(rows)-1])
	}
}

func TestGidsTableShowsDiff(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"gids"}, fixtureArgs("rxe-churned")...)...)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"rxe0 port 1: state ACTIVE, Ethernet, netdev veth0, active MTU 1024, types RoCE v2, 13 of 16 slots used",
		"moved: ::ffff:10.0.0.1 RoCE v2 on veth0 is at index 13, a fresh scan puts it at 1",
		"10 (802.1ad:1000 10)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(empty)") {
		t.Errorf("empty slots shown without --all")
	}
	out, _, _ = runCLI(t, "", append([]string{"gids"}, fixtureArgs("rxe")...)...)
	if !strings.Contains(out, "# matches the table the kernel builds") {
		t.Errorf("fresh table: no match line:\n%s", out)
	}
}

func TestGidsFilters(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"gids", "--dev", "mlx5_0", "--port", "2", "-o", "json"}, fixtureArgs("mlx5")...)...)
	var rows []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 || rows[0]["port"] != float64(2) {
		t.Errorf("--dev mlx5_0 --port 2: exit %d, rows %v", code, rows)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dev", "mlx5_9"}, `--dev "mlx5_9": no such RDMA device: want one of mlx5_0`},
		// gid/testdata/README.md: mlx5_0 has ports 1 and 2.
		{[]string{"--port", "3"}, "--port 3: no such port on any RDMA device: want one of mlx5_0 port 1, mlx5_0 port 2"},
		{[]string{"--dev", "mlx5_0", "--port", "3"}, "--port 3: no such port on mlx5_0: want one of mlx5_0 port 1, mlx5_0 port 2"},
		{[]string{"--port", "-1"}, "--port -1 is out of range"},
		{[]string{"-o", "xml"}, `-o "xml" is not a known output format`},
	} {
		_, stderr, code := runCLI(t, "", append(append([]string{"gids"}, c.args...), fixtureArgs("mlx5")...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("gids %v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// No RDMA device: gids says so and shows the predicted table.
func TestGidsNoDevice(t *testing.T) {
	out, stderr, code := runCLI(t, "", "gids", "--sysfs", t.TempDir(), "--links", "../../gid/testdata/mlx5/links.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "no RDMA devices on this machine") {
		t.Errorf("stderr %q does not say there is no RDMA device", stderr)
	}
	// enp1s0f0 as rxe would see it: default GID, 192.168.1.10, then the
	// VLAN and macvlan addresses (drivers/infiniband/core/roce_gid_mgmt.c,
	// is_eth_port_of_netdev_filter; cache.c, ib_cache_gid_add; Linux 6.1).
	for _, want := range []string{
		"rxe_enp1s0f0 predicted port 1",
		"0      fe80::e42:a1ff:fe00:10",
		"::ffff:192.168.1.10",
		"fd00:100::20",
		"rxe_enp1s0f1 predicted port 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "docker0") || strings.Contains(out, "rxe_mv0") {
		t.Errorf("bridge or macvlan treated as an RDMA netdev:\n%s", out)
	}
}

func TestGidsUnknownNetns(t *testing.T) {
	_, stderr, code := runCLI(t, "", "gids", "--netns", "roce-probe-no-such-netns", "--sysfs", "../../gid/testdata/rxe/sys")
	if code != exitUsage || !strings.Contains(stderr, `network namespace "roce-probe-no-such-netns" not found`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// --save-links writes the snapshot that --links reads back: the same table.
func TestGidsSaveLinksRoundTrip(t *testing.T) {
	path := t.TempDir() + "/links.json"
	out1, _, code := runCLI(t, "", append([]string{"gids", "-o", "json", "--save-links", path}, fixtureArgs("mlx5")...)...)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	out2, stderr, code := runCLI(t, "", "gids", "-o", "json", "--sysfs", "../../gid/testdata/mlx5/sys", "--links", path)
	if code != 0 || out1 != out2 {
		t.Errorf("exit %d %s; tables differ:\n%s\n%s", code, stderr, out1, out2)
	}
	_, stderr, code = runCLI(t, "", append([]string{"gids", "--save-links", "/nonexistent-dir/x.json"}, fixtureArgs("mlx5")...)...)
	if code != exitUsage || !strings.Contains(stderr, `--save-links "/nonexistent-dir/x.json": directory /nonexistent-dir: no such file or directory`) {
		t.Errorf("bad path: exit %d %q", code, stderr)
	}
}
