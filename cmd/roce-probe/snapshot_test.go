package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readCommands are the read-only commands, each with arguments that work
// on the rxe fixture: every one takes --from and reads the same snapshot.
var readCommands = [][]string{
	{"gids"},
	{"select", "--dst", "10.0.100.2"},
	{"qos", "--dev", "rxe0"},
	{"check", "--dev", "rxe0", "--gid-index", "3", "--tclass", "106", "--sl", "3"},
	{"ah", "--dev", "rxe0", "--gid-index", "3", "--dst", "10.0.100.2"},
}

// A --from file that is not a snapshot this roce-probe can use exits 2 with
// one line naming --from, the file and what is wrong, before any output.
func TestFromBadSnapshot(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(f func(doc map[string]any)) string { return snapshotVariant(t, "rxe", f) }
	for _, c := range []struct {
		name  string
		file  string
		want  []string
		needs func(cmd string) bool // the commands that fail; nil: all
	}{
		{"missing", filepath.Join(dir, "no-such.json"), []string{"no such file or directory", "roce-probe collect"}, nil},
		{"directory", dir, []string{"is a directory", "roce-probe collect"}, nil},
		{"not JSON", write("garbage.json", "garbage\n"), []string{"not a roce-probe snapshot", "not JSON"}, nil},
		{"other JSON", write("other.json", `{"links": []}`), []string{"not a roce-probe snapshot", `"format"`}, nil},
		{"empty", write("empty.json", ""), []string{"not a roce-probe snapshot"}, nil},
		{"version 2", edit(func(d map[string]any) { d["version"] = 2 }), []string{"unknown snapshot version", "version 2", "reads version 1"}, nil},
		// Sections a command needs. qos --netdev reads no RDMA device, so
		// only the commands that look at GID tables need rdma.
		{"no rdma", edit(func(d map[string]any) { d["rdma"] = nil }), []string{"no rdma section", "roce-probe collect"}, nil},
		{"no namespaces", edit(func(d map[string]any) { d["namespaces"], d["dcb"] = nil, nil }), []string{"no namespaces section"}, nil},
		{"no dcb", edit(func(d map[string]any) { d["dcb"] = nil }), []string{"no dcb section"},
			func(cmd string) bool { return cmd == "qos" || cmd == "check" || cmd == "ah" }},
		// Validation: a value the kernel never reports.
		{"bad DCB", edit(func(d map[string]any) {
			d["dcb"].([]any)[0].(map[string]any)["supported"] = true
			d["dcb"].([]any)[0].(map[string]any)["app"] = []any{map[string]any{"selector": 5, "priority": 8, "protocol": 26}}
		}), []string{"app[0].priority 8 is out of range: want 0..7"}, nil},
	} {
		for _, args := range readCommands {
			cmd := args[0]
			all := append(append([]string{}, args...), "--from", c.file)
			out, stderr, code := runCLI(t, "", all...)
			if c.needs != nil && !c.needs(cmd) {
				// Sections this command does not need: it answers as from
				// the whole fixture.
				full, _, fullCode := runCLI(t, "", append(append([]string{}, args...), fromArgs("rxe")...)...)
				if code != fullCode || out != full {
					t.Errorf("%s, %s: exit %d (want %d), output differs from the whole snapshot's:\n%s\n%s", c.name, cmd, code, fullCode, out, stderr)
				}
				continue
			}
			msg := strings.TrimSuffix(stderr, "\n")
			if code != exitUsage || out != "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, `roce-probe: --from "`+c.file+`": `) {
				t.Errorf("%s, %s: exit %d, stdout %q, stderr %q; want exit 2 and one line naming --from %q", c.name, cmd, code, out, stderr, c.file)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s, %s: stderr %q lacks %q", c.name, cmd, msg, w)
				}
			}
		}
	}
	// qos --netdev reads no GID table: a snapshot without the rdma section
	// is enough.
	noRDMA := edit(func(d map[string]any) { d["rdma"] = nil })
	out, stderr, code := runCLI(t, "", "qos", "--netdev", "veth0.100", "--from", noRDMA)
	full, _, _ := runCLI(t, "", append([]string{"qos", "--netdev", "veth0.100"}, fromArgs("rxe")...)...)
	if code != exitOK || out != full {
		t.Errorf("qos --netdev without rdma section: exit %d, %s\n%s", code, stderr, out)
	}
}

// The same snapshot gzip-compressed, or on standard input (--from -),
// gives the same answers as the file.
func TestFromGzipAndStdin(t *testing.T) {
	b, err := os.ReadFile(fixture("rxe"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(b)
	zw.Close()
	gzFile := filepath.Join(t.TempDir(), "rxe.json.gz")
	if err := os.WriteFile(gzFile, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range readCommands {
		want, wantErr, wantCode := runCLI(t, "", append(append([]string{}, args...), fromArgs("rxe")...)...)
		for _, c := range []struct {
			name, stdin, from string
		}{
			{"gzip", "", gzFile},
			{"stdin", string(b), "-"},
			{"gzip on stdin", gz.String(), "-"},
		} {
			out, stderr, code := runCLI(t, c.stdin, append(append([]string{}, args...), "--from", c.from)...)
			if out != want || stderr != wantErr || code != wantCode {
				t.Errorf("%s: %s: exit %d (want %d), stderr %q (want %q), stdout differs: %v", c.name, args[0], code, wantCode, stderr, wantErr, out != want)
			}
		}
	}
}

// On a host without RDMA devices every command uses the same predicted
// Soft-RoCE tables (rxe_<netdev>), says so on stderr and marks its JSON
// predicted. For the rxe fixture's netdevs the predicted table of veth0
// is the table the real rxe0 on veth0 has (a fresh scan): the same
// entries at the same indices.
func TestPredictedTablesEverywhere(t *testing.T) {
	snap := snapshotVariant(t, "rxe", func(doc map[string]any) {
		doc["rdma"] = map[string]any{"devices": []any{}}
		// The neighbours of rxeWithNeighbours: the peer's VLAN 100 address.
		firstNamespace(t, doc)["neighbors"] = []any{
			map[string]any{"ip": "10.0.100.2", "netdev": "veth0.100", "mac": "02:00:00:00:00:02", "state": "REACHABLE"},
		}
	})
	run := func(args ...string) (map[string]any, string) {
		t.Helper()
		out, stderr, code := runCLI(t, "", append(args, "--from", snap, "-o", "json")...)
		if code == exitUsage {
			t.Fatalf("%v: exit 2: %s", args, stderr)
		}
		if !strings.Contains(stderr, fmt.Sprintf("the host of snapshot %q has no RDMA device (its rdma.devices is empty)", snap)) || !strings.Contains(stderr, "Soft-RoCE would get") {
			t.Errorf("%v: stderr %q does not say the tables are predicted", args, stderr)
		}
		var doc any
		dec := json.NewDecoder(strings.NewReader(out))
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if m, ok := doc.(map[string]any); ok {
			return m, out
		}
		return map[string]any{"list": doc}, out
	}

	// gids: one predicted port, rxe_veth0 (veth0 is the only Ethernet
	// netdev at the bottom of a stack; lo and the VLAN devices are not).
	g, _ := run("gids")
	ports, _ := g["ports"].([]any)
	if g["predicted"] != true || len(ports) != 1 {
		t.Fatalf("gids: predicted %v, %d ports", g["predicted"], len(ports))
	}
	port := ports[0].(map[string]any)
	if port["device"] != "rxe_veth0" || port["port"] != 1.0 || port["netdev"] != "veth0" {
		t.Errorf("gids port %v", port)
	}
	real, _, _ := runCLI(t, "", append([]string{"gids", "-o", "json"}, fromArgs("rxe")...)...)
	var realDoc map[string]any
	if err := json.Unmarshal([]byte(real), &realDoc); err != nil {
		t.Fatal(err)
	}
	realEntries := entriesOf(t, realDoc["ports"].([]any)[0].(map[string]any))
	predEntries := entriesOf(t, port)
	if len(predEntries) != len(realEntries) {
		t.Fatalf("predicted %d entries, rxe0 has %d", len(predEntries), len(realEntries))
	}
	idx := -1
	for i, e := range predEntries {
		r := realEntries[i]
		for _, k := range []string{"index", "gid", "type", "netdev", "vlan", "vlan_chain"} {
			if !jsonIs(e[k], mustJSON(r[k])) {
				t.Errorf("predicted entry %d %s = %v, rxe0's = %v", i, k, e[k], r[k])
			}
		}
		if e["gid"] == "::ffff:10.0.100.1" {
			idx = int(e["index"].(float64))
		}
	}
	if idx < 0 {
		t.Fatal("no predicted entry for 10.0.100.1")
	}

	// select picks that entry of that table.
	sl, _ := run("select", "--dst", "10.0.100.2")
	list, _ := sl["list"].([]any)
	if len(list) != 1 {
		t.Fatalf("select: %v, want one port's selection", sl)
	}
	s, _ := list[0].(map[string]any)
	if s["predicted"] != true || s["device"] != "rxe_veth0" || s["index"] != float64(idx) || s["netdev"] != "veth0.100" || s["vlan"] != 100.0 {
		t.Errorf("select: %v", s)
	}
	// check follows it: rxe on veth0.100 (egress-qos-map 0:3).
	c, _ := run("check", "--dev", "rxe_veth0", "--gid-index", mustJSON(idx), "--tclass", "106", "--sl", "3")
	if c["predicted"] != true || c["netdev"] != "veth0.100" || c["driver"] != "rxe" || c["vlan"] != 100.0 || c["pcp"] != 3.0 {
		t.Errorf("check: %v", c)
	}
	// ah --gid-index auto picks what select picks, and resolves it.
	a, _ := run("ah", "--dev", "rxe_veth0", "--gid-index", "auto", "--dst", "10.0.100.2")
	attr, _ := a["attr"].(map[string]any)
	wire, _ := a["wire"].(map[string]any)
	src, _ := a["sgid_entry"].(map[string]any)
	if a["predicted"] != true || attr == nil || attr["grh"].(map[string]any)["sgid_index"] != float64(idx) || wire == nil ||
		wire["vlan"] != 100.0 || wire["pcp"] != 3.0 || src == nil || src["gid"] != "::ffff:10.0.100.1" || a["driver"] != "rxe" {
		t.Errorf("ah: predicted %v attr %v wire %v source %v", a["predicted"], attr, wire, src)
	}
	// qos shows the predicted device's netdev.
	q, _ := run("qos", "--dev", "rxe_veth0")
	reports, _ := q["list"].([]any)
	if len(reports) != 1 {
		t.Fatalf("qos: %v", q)
	}
	r := reports[0].(map[string]any)
	if r["device"] != "rxe_veth0" || r["netdev"] != "veth0" || r["driver_info"].(map[string]any)["driver"] != "rxe" {
		t.Errorf("qos: %v", r)
	}

	// With the RDMA device, nothing is predicted and nothing is said.
	for _, args := range readCommands {
		_, stderr, _ := runCLI(t, "", append(append([]string{}, args...), fromArgs("rxe")...)...)
		if strings.Contains(stderr, "no RDMA device") {
			t.Errorf("%s on a snapshot with rxe0: stderr %q", args[0], stderr)
		}
	}
}

// A GID entry whose netdev the namespace does not have (rxe-churned's
// index 5, whose ndevs read fails) is reported as such, never as an
// untagged entry.
func TestAbsentNetdevIsNotUntagged(t *testing.T) {
	for _, args := range [][]string{
		{"ah", "--dev", "rxe0", "--gid-index", "5", "--dst", "fe80::2"},
		{"check", "--dev", "rxe0", "--gid-index", "5", "--tclass", "106", "--sl", "0"},
	} {
		out, stderr, code := runCLI(t, "", append(args, fromArgs("rxe-churned")...)...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, "--gid-index 5") || !strings.Contains(stderr, "netdev is not in this network namespace") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", args[0], code, out, stderr)
		}
	}
	out, _, _ := runCLI(t, "", append([]string{"gids", "-o", "json"}, fromArgs("rxe-churned")...)...)
	var doc struct {
		Ports []struct {
			Entries []map[string]any `json:"entries"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc.Ports[0].Entries {
		if e["index"] == 5.0 && (e["netdev"] != nil || e["vlan_chain"] != nil || e["netns"] != "other") {
			t.Errorf("index 5 = %v, want netdev and vlan_chain null (unknown), netns other", e)
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// FuzzFromSnapshot: whatever --from - is given, every read-only command
// answers (exit 0 or 1) or refuses it as bad input (exit 2) with one line
// naming --from or the flag it contradicts; it never panics. The seeds are
// the fixtures, so the fuzzer mutates real snapshots.
func FuzzFromSnapshot(f *testing.F) {
	for _, name := range []string{"rxe", "rxe-churned", "mlx5", "mlx5-dscp", "mlx5-pcp"} {
		b, err := os.ReadFile(fixture(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"format":"roce-probe-snapshot","version":1}`))
	cmds := append([][]string{
		{"gids", "--all", "-o", "json"},
		{"select", "--dst", "192.168.1.20"},
		{"qos", "--netdev", "veth0"},
		{"check", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3"},
		{"ah", "--dev", "rxe0", "--gid-index", "auto", "--dst", "10.0.0.2", "-o", "json"},
	}, readCommands...)
	f.Fuzz(func(t *testing.T, snap []byte) {
		for _, args := range cmds {
			out, stderr, code := runCLI(t, string(snap), append(append([]string{}, args...), "--from", "-")...)
			switch code {
			case exitOK, exitFinding:
				if code == exitOK && out == "" {
					t.Fatalf("%v: exit 0 without output (stderr %q)", args, stderr)
				}
			case exitUsage:
				msg := strings.TrimSuffix(stderr, "\n")
				if out != "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "roce-probe: --") {
					t.Fatalf("%v: exit 2 with stdout %q, stderr %q: want one line naming a flag", args, out, stderr)
				}
			default:
				t.Fatalf("%v: exit %d", args, code)
			}
		}
	})
}
