package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// gids -o json is one document: predicted, and per port the header the
// table shows, the entries and the comparison with a fresh scan.
func TestGidsJSONKeys(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"gids", "-o", "json"}, fromArgs("rxe")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing (the snapshot has an RDMA device)", stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 2 || doc["predicted"] != false {
		t.Errorf("document %v, want exactly predicted (false) and ports", keysOf(doc))
	}
	ports, _ := doc["ports"].([]any)
	if len(ports) != 1 {
		t.Fatalf("%d ports, want rxe0's one", len(ports))
	}
	p := ports[0].(map[string]any)
	portKeys := []string{"device", "port", "state", "phys_state", "link_layer", "netdev", "active_mtu", "types", "table_len",
		"used", "entries", "matches", "diff", "diff_error"}
	if !sameKeys(p, portKeys) {
		t.Errorf("port keys %v, want exactly %v", keysOf(p), portKeys)
	}
	// rxe0 port 1 on veth0 (MTU 1500): rxe's active MTU is the largest IB
	// MTU that fits (1024); 16 slots, 13 used; the table is a fresh scan
	// (host/testdata/README.md), so it matches.
	types, _ := json.Marshal(p["types"])
	if p["device"] != "rxe0" || p["port"] != 1.0 || p["state"] != "ACTIVE" || p["phys_state"] != "LinkUp" || p["link_layer"] != "Ethernet" ||
		p["netdev"] != "veth0" || p["active_mtu"] != 1024.0 || string(types) != `["RoCE v2"]` || p["table_len"] != 16.0 || p["used"] != 13.0 ||
		p["matches"] != true || p["diff_error"] != nil {
		t.Errorf("port header %v", p)
	}
	if d, ok := p["diff"].([]any); !ok || len(d) != 0 {
		t.Errorf("diff %v, want [] (compared, no difference)", p["diff"])
	}
	rows := entriesOf(t, p)
	if len(rows) != 13 {
		t.Fatalf("%d entries, want the 13 non-empty ones", len(rows))
	}
	keys := []string{"device", "port", "index", "gid", "type", "kind", "ip", "netdev", "ifindex", "vlan", "vlan_chain",
		"real_netdev", "mac", "mtu", "operstate", "netns", "netns_boundary", "default", "empty"}
	for _, r := range rows {
		if !sameKeys(r, keys) {
			t.Errorf("entry keys %v, want exactly %v", keysOf(r), keys)
		}
	}
	// Index 10 is 10.10.10.1 on veth0.q1000.10: 802.1ad 1000 outside,
	// 802.1Q 10 inside. vlan is the OUTERMOST tag (what the first switch
	// classifies on); vlan_chain lists both, outermost first, with their
	// TPIDs (0x88a8 = 34984, 0x8100 = 33024) and VLAN devices; the PCP
	// depends on the sender's skb priority, so gids does not know it.
	q := rows[10]
	if q["netdev"] != "veth0.q1000.10" || q["vlan"] != 1000.0 || q["type"] != "RoCE v2" || q["real_netdev"] != "veth0" ||
		!jsonIs(q["vlan_chain"], `[{"id":1000,"tpid":34984,"pcp":null,"netdev":"veth0.q1000"},{"id":10,"tpid":33024,"pcp":null,"netdev":"veth0.q1000.10"}]`) {
		t.Errorf("QinQ entry = %v", q)
	}
	// Untagged: vlan null, vlan_chain an empty list (known: no tag).
	if rows[0]["default"] != true || rows[0]["vlan"] != nil || !jsonIs(rows[0]["vlan_chain"], "[]") {
		t.Errorf("entry 0 = %v, want the untagged default GID", rows[0])
	}
	out, _, _ = runCLI(t, "", append([]string{"gids", "-o", "json", "--all"}, fromArgs("rxe")...)...)
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	p = doc["ports"].([]any)[0].(map[string]any)
	rows = entriesOf(t, p)
	// Empty slot: type and everything else unknown is null.
	last := rows[len(rows)-1]
	if len(rows) != 16 || last["empty"] != true || last["type"] != nil || last["vlan_chain"] != nil || last["netdev"] != nil ||
		p["table_len"] != 16.0 || p["used"] != 13.0 {
		t.Errorf("--all: %d entries, last %v, table_len %v used %v", len(rows), last, p["table_len"], p["used"])
	}
}

func TestGidsTableShowsDiff(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"gids"}, fromArgs("rxe-churned")...)...)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"rxe0 port 1: state ACTIVE, Ethernet, netdev veth0, active MTU 1024, types RoCE v2, 13 of 16 slots used",
		"moved: ::ffff:10.0.0.1 RoCE v2 on veth0 is at index 13, a fresh scan puts it at 1",
		"stale: index 14 ::ffff:10.0.0.5 RoCE v2 on veth0 is not explained by any netdev address",
		"missing: fd00:1010::1 RoCE v2 on veth0.q1000.10 (predicted index 11) is not in the table",
		// Index 5's ndevs read fails, as for a netdev of another namespace.
		"unseen: index 5 fe80::ff:fe00:1 RoCE v2 on -: its netdev is not in this namespace",
		// The QinQ entries' VLAN column: the outermost tag, then the chain.
		"1000 (802.1ad:1000 10)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "(empty)") {
		t.Errorf("empty slots shown without --all")
	}
	out, _, _ = runCLI(t, "", append([]string{"gids"}, fromArgs("rxe")...)...)
	if !strings.Contains(out, "# matches the table the kernel builds") {
		t.Errorf("fresh table: no match line:\n%s", out)
	}

	// The same diff in JSON: kind, index, predicted_index (null when it
	// does not apply), entry, message.
	out, _, _ = runCLI(t, "", append([]string{"gids", "-o", "json"}, fromArgs("rxe-churned")...)...)
	var doc struct {
		Ports []struct {
			Matches *bool            `json:"matches"`
			Diff    []map[string]any `json:"diff"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Ports) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	p := doc.Ports[0]
	if p.Matches == nil || *p.Matches {
		t.Errorf("matches %v, want false", p.Matches)
	}
	var kinds []string
	for _, c := range p.Diff {
		if !sameKeys(c, []string{"kind", "index", "predicted_index", "entry", "message"}) {
			t.Errorf("diff item keys %v", keysOf(c))
		}
		kinds = append(kinds, c["kind"].(string))
		switch c["kind"] {
		case "moved":
			if c["index"] != 13.0 || c["predicted_index"] != 1.0 {
				t.Errorf("moved: %v", c)
			}
		case "stale":
			if c["index"] != 14.0 || c["predicted_index"] != nil {
				t.Errorf("stale: %v, want index 14 and predicted_index null", c)
			}
		}
	}
	if strings.Join(kinds, ",") != "unseen,moved,stale,missing,missing" {
		t.Errorf("diff kinds %v", kinds)
	}
}

func TestGidsFilters(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"gids", "--dev", "mlx5_0", "--port", "2", "-o", "json"}, fromArgs("mlx5")...)...)
	var doc struct {
		Ports []struct {
			Device  string           `json:"device"`
			Port    int              `json:"port"`
			State   string           `json:"state"`
			Entries []map[string]any `json:"entries"`
		} `json:"ports"`
	}
	// host/testdata/README.md: port 2 is DOWN on enp1s0f1 and
	// holds only its two default GIDs.
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Ports) != 1 || doc.Ports[0].Port != 2 ||
		doc.Ports[0].State != "DOWN" || len(doc.Ports[0].Entries) != 2 || doc.Ports[0].Entries[0]["port"] != 2.0 {
		t.Errorf("--dev mlx5_0 --port 2: exit %d, %+v", code, doc)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dev", "mlx5_9"}, `--dev "mlx5_9": no such RDMA device: want one of mlx5_0`},
		// mlx5_0 has ports 1 and 2.
		{[]string{"--port", "3"}, "--port 3: no such port on any RDMA device: want one of mlx5_0 port 1, mlx5_0 port 2"},
		{[]string{"--dev", "mlx5_0", "--port", "3"}, "--port 3: no such port on mlx5_0: want one of mlx5_0 port 1, mlx5_0 port 2"},
		{[]string{"--port", "-1"}, "--port -1 is out of range"},
		{[]string{"-o", "xml"}, `-o "xml" is not known: want table or json`},
	} {
		out, stderr, code := runCLI(t, "", append(append([]string{"gids"}, c.args...), fromArgs("mlx5")...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("gids %v: exit %d, stderr %q, stdout %q; want 2 and %q", c.args, code, stderr, out, c.want)
		}
	}
}

// No RDMA device: gids says so and shows the predicted tables, marked
// predicted.
func TestGidsNoDevice(t *testing.T) {
	snap := withoutRDMADevices(t, "mlx5")
	out, stderr, code := runCLI(t, "", "gids", "--from", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, fmt.Sprintf("the host of snapshot %q has no RDMA device (its rdma.devices is empty)", snap)) || !strings.Contains(stderr, "Soft-RoCE") {
		t.Errorf("stderr %q does not say there is no RDMA device and which tables are shown", stderr)
	}
	// With --from, nothing is said of the machine roce-probe runs on.
	if strings.Contains(stderr, "this host") || strings.Contains(stderr, "/sys/class") {
		t.Errorf("stderr %q speaks of the local machine, not the snapshot", stderr)
	}
	// enp1s0f0 as rxe would see it: default GID, 192.168.1.10, then the
	// VLAN and macvlan addresses (the kernel's order: netdevs in ifindex
	// order, IPv4 before IPv6; host/testdata/README.md). RoCE v2
	// only: rxe has no RoCE v1.
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
	if strings.Contains(out, "docker0") || strings.Contains(out, "rxe_mv0") || strings.Contains(out, "rxe_enp1s0f0.100") || strings.Contains(out, "RoCE v1") {
		t.Errorf("bridge, macvlan or VLAN treated as an RDMA netdev, or a RoCE v1 entry predicted:\n%s", out)
	}
	out, _, code = runCLI(t, "", "gids", "--from", snap, "-o", "json")
	var doc struct {
		Predicted *bool `json:"predicted"`
		Ports     []struct {
			Device  string  `json:"device"`
			Matches *bool   `json:"matches"`
			State   *string `json:"state"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	// A predicted table is not compared with itself (matches null), and
	// has no port state (no device to ask).
	if doc.Predicted == nil || !*doc.Predicted || len(doc.Ports) != 2 || doc.Ports[0].Device != "rxe_enp1s0f0" ||
		doc.Ports[0].Matches != nil || doc.Ports[0].State != nil {
		t.Errorf("predicted document %s", out)
	}
}

func TestGidsUnknownNetns(t *testing.T) {
	_, stderr, code := runCLI(t, "", "gids", "--netns", "roce-probe-no-such-netns")
	if code != exitUsage || !strings.Contains(stderr, `--netns "roce-probe-no-such-netns"`) || !strings.Contains(stderr, "no such network namespace") ||
		!strings.Contains(stderr, "ip netns list") {
		t.Errorf("live: exit %d, stderr %q", code, stderr)
	}
	// From a snapshot: the namespaces it holds.
	_, stderr, code = runCLI(t, "", append([]string{"gids", "--netns", "blue"}, fromArgs("rxe")...)...)
	if code != exitUsage || !strings.Contains(stderr, `--netns "blue"`) || !strings.Contains(stderr, "no such network namespace") ||
		!strings.Contains(stderr, "in the snapshot") {
		t.Errorf("--from: exit %d, stderr %q", code, stderr)
	}
}

// entriesOf returns the entries of a decoded gids port.
func entriesOf(t *testing.T, p map[string]any) []map[string]any {
	t.Helper()
	es, ok := p["entries"].([]any)
	if !ok {
		t.Fatalf("entries is %T, want a list", p["entries"])
	}
	var rows []map[string]any
	for _, e := range es {
		rows = append(rows, e.(map[string]any))
	}
	return rows
}

// sameKeys says whether m has exactly keys.
func sameKeys(m map[string]any, keys []string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

func keysOf(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// A port the collector could not read is left out of the snapshot and
// named in its errors: gids shows the other port and says which one is
// missing, and why.
func TestGIDsPartialRead(t *testing.T) {
	path := snapshotVariant(t, "mlx5", func(doc map[string]any) {
		dev := doc["rdma"].(map[string]any)["devices"].([]any)[0].(map[string]any)
		dev["ports"] = dev["ports"].([]any)[:1]
		doc["errors"] = []any{map[string]any{"source": "rdma mlx5_0 port 2", "error": "listing GID table: open /sys/class/infiniband/mlx5_0/ports/2/gids: no such file or directory"}}
	})
	out, errOut, code := runCLI(t, "", "gids", "--from", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "mlx5_0") || strings.Contains(out, "enp1s0f1") {
		t.Errorf("gids shows:\n%s\nwant port 1 (enp1s0f0) only", out)
	}
	if !strings.Contains(errOut, "mlx5_0 port 2 could not be read (left out): listing GID table") {
		t.Errorf("stderr = %q, want the port named as left out", errOut)
	}
}
