//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// hasRDMADevice says whether this machine shows an RDMA device, read
// straight from sysfs (not through roce-probe).
func hasRDMADevice(t *testing.T) bool {
	t.Helper()
	es, err := os.ReadDir("/sys/class/infiniband")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(es) > 0
}

// collect --out FILE, then a command with --from FILE, prints byte for byte
// what the command prints live: the snapshot is everything it reads. On
// a machine without RDMA devices both are the predicted Soft-RoCE tables,
// marked predicted in JSON and said so on stderr. (ah is left out: its
// answer includes neighbour states, which age between two reads.)
func TestCollectThenFromEqualsLive(t *testing.T) {
	dir := t.TempDir()
	plain, gz := filepath.Join(dir, "host.json"), filepath.Join(dir, "host.json.gz")
	for _, f := range []string{plain, gz} {
		out, stderr, code := runCLI(t, "", "collect", "--out", f)
		if code != exitOK || out != "" || stderr != "" {
			t.Fatalf("collect --out %s: exit %d, stdout %q, stderr %q", f, code, out, stderr)
		}
	}
	if b, err := os.ReadFile(gz); err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("%s is not gzip-compressed (%v)", gz, err)
	}
	b, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(b, &snap); err != nil || snap.Format != "roce-probe-snapshot" || snap.Version != 1 {
		t.Fatalf("collect wrote %v format %q version %d", err, snap.Format, snap.Version)
	}
	// collect without --out writes the same document to stdout.
	stdoutSnap, _, code := runCLI(t, "", "collect")
	if code != exitOK || !json.Valid([]byte(stdoutSnap)) || !strings.HasPrefix(stdoutSnap, `{"format":"roce-probe-snapshot","version":1,`) || strings.Count(stdoutSnap, "\n") != 1 {
		t.Errorf("collect to stdout: exit %d", code)
	}

	predicted := !hasRDMADevice(t)
	live, liveErr, liveCode := runCLI(t, "", "gids", "-o", "json")
	if liveCode != exitOK {
		t.Fatalf("live gids: exit %d: %s", liveCode, liveErr)
	}
	var doc struct {
		Predicted bool `json:"predicted"`
		Ports     []struct {
			Device  string           `json:"device"`
			Entries []map[string]any `json:"entries"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(live), &doc); err != nil {
		t.Fatalf("live gids: %v\n%s", err, live)
	}
	if doc.Predicted != predicted {
		t.Errorf("live gids: predicted %v, but /sys/class/infiniband has devices: %v", doc.Predicted, !predicted)
	}
	if said := strings.Contains(liveErr, "this host has no RDMA device"); said != predicted {
		t.Errorf("live gids: stderr %q; predicted %v", liveErr, predicted)
	}

	cmds := [][]string{
		{"gids", "-o", "json"},
		{"gids", "--all"},
		{"select", "--dst", "192.0.2.1", "-o", "json"},
		{"select", "--dst", "fd00::1"},
		{"qos", "-o", "json"},
	}
	// check on the first port's first entry, whatever this machine has.
	if len(doc.Ports) > 0 && len(doc.Ports[0].Entries) > 0 {
		idx := mustJSON(doc.Ports[0].Entries[0]["index"])
		cmds = append(cmds, []string{"check", "--dev", doc.Ports[0].Device, "--gid-index", idx, "--tclass", "106", "--sl", "3", "-o", "json"})
	}
	// The same output, but for who has no RDMA device: with --from, the
	// snapshot's host, never the machine the command runs on.
	fromErr := func(live, from string) string {
		return strings.ReplaceAll(live, "this host has no RDMA device (/sys/class/infiniband is missing or empty)",
			fmt.Sprintf("the host of snapshot %q has no RDMA device (its rdma.devices is empty)", from))
	}
	for _, args := range cmds {
		wantOut, liveErr, wantCode := runCLI(t, "", args...)
		for _, f := range []string{plain, gz} {
			wantErr := fromErr(liveErr, f)
			out, stderr, code := runCLI(t, "", append(append([]string{}, args...), "--from", f)...)
			if out != wantOut || stderr != wantErr || code != wantCode {
				t.Errorf("%v --from %s: exit %d (live %d), stderr %q (live %q), stdout equal %v:\n%s\nlive:\n%s",
					args, filepath.Base(f), code, wantCode, stderr, wantErr, out == wantOut, out, wantOut)
			}
		}
		wantErr := fromErr(liveErr, "-")
		out, stderr, code := runCLI(t, stdoutSnap, append(append([]string{}, args...), "--from", "-")...)
		if out != wantOut || stderr != wantErr || code != wantCode {
			t.Errorf("%v --from - (collect's stdout): exit %d (live %d), stderr %q (live %q), stdout equal %v", args, code, wantCode, stderr, wantErr, out == wantOut)
		}
	}
}

// collect --netns and qos --netns read another namespace: its veth has no
// DCB support (no dcbnl_ops: the kernel answers RTM_GETDCB with
// EOPNOTSUPP), which qos reports as "no DCB", exit 0.
func TestCollectNetns(t *testing.T) {
	netnstest.RequireRoot(t)
	ns1, ns2 := netnstest.New(t, "a"), netnstest.New(t, "b")
	netnstest.Veth(t, ns1, "va", "02:00:00:7a:00:01", ns2, "vb", "02:00:00:7a:00:02")
	netnstest.Run(t, "ip", "-n", ns1, "addr", "add", "10.122.0.1/24", "dev", "va")

	out, stderr, code := runCLI(t, "", "qos", "--netns", ns1, "--netdev", "va")
	if code != exitOK || !strings.Contains(out, "no DCB: va has no DCB support") {
		t.Errorf("qos --netns: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = runCLI(t, "", "collect", "--netns", ns1)
	if code != exitOK {
		t.Fatalf("collect --netns: exit %d: %s", code, stderr)
	}
	var snap struct {
		Namespaces []struct {
			Netns *string `json:"netns"`
			Links []struct {
				Name  string   `json:"name"`
				Addrs []string `json:"addrs"`
			} `json:"links"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal([]byte(out), &snap); err != nil || len(snap.Namespaces) == 0 {
		t.Fatalf("collect --netns: %v\n%s", err, out)
	}
	first := snap.Namespaces[0]
	found := false
	for _, l := range first.Links {
		if l.Name == "va" && strings.Contains(strings.Join(l.Addrs, " "), "10.122.0.1/24") {
			found = true
		}
	}
	if first.Netns == nil || *first.Netns != ns1 || !found {
		t.Errorf("collect --netns %s: first namespace %v, want %s with va 10.122.0.1/24", ns1, first.Netns, ns1)
	}
	// The snapshot answers as the namespace did.
	f := filepath.Join(t.TempDir(), "ns.json")
	if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	live, _, liveCode := runCLI(t, "", "qos", "--netns", ns1, "--netdev", "va", "-o", "json")
	fromOut, stderr, code := runCLI(t, "", "qos", "--from", f, "--netns", ns1, "--netdev", "va", "-o", "json")
	if code != liveCode || !bytes.Equal([]byte(fromOut), []byte(live)) {
		t.Errorf("qos --from: exit %d (live %d) %s\n%s\nlive:\n%s", code, liveCode, stderr, fromOut, live)
	}
}

// collect's output: --out FILE (-f) writes the file, -o is the format
// (json: standard output), -o FILE of earlier versions still writes FILE
// with a note; --hostname names the host, so that fabric takes two
// snapshots of this one machine as two hosts (it refuses the same name
// twice).
func TestCollectOutAndHostname(t *testing.T) {
	dir := t.TempDir()
	read := func(f string) map[string]any {
		t.Helper()
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		return doc
	}
	a, b, old := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json"), filepath.Join(dir, "old.json")
	if out, stderr, code := runCLI(t, "", "collect", "--out", a, "--hostname", "node1-a"); code != exitOK || out != "" || stderr != "" {
		t.Fatalf("collect --out: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if out, stderr, code := runCLI(t, "", "collect", "-f", b, "--hostname", "node1-b"); code != exitOK || out != "" || stderr != "" {
		t.Fatalf("collect -f: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if h := read(a)["hostname"]; h != "node1-a" {
		t.Errorf("hostname %v, want node1-a", h)
	}
	if h := read(b)["hostname"]; h != "node1-b" {
		t.Errorf("hostname %v, want node1-b", h)
	}
	out, stderr, code := runCLI(t, "", "collect", "-o", "json")
	if code != exitOK || !json.Valid([]byte(out)) || !strings.HasPrefix(out, `{"format":"roce-probe-snapshot"`) || stderr != "" {
		t.Errorf("collect -o json: exit %d, stderr %q, stdout %.80q", code, stderr, out)
	}
	if _, err := os.Stat("json"); err == nil {
		t.Errorf("collect -o json wrote a file named json")
	}
	out, stderr, code = runCLI(t, "", "collect", "-o", old)
	if code != exitOK || out != "" || !strings.Contains(stderr, "collect -o FILE is deprecated") || !strings.Contains(stderr, "--out "+old) {
		t.Errorf("collect -o FILE: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	hn, _ := os.Hostname()
	if h := read(old)["hostname"]; h != hn {
		t.Errorf("hostname %v, want this machine's %q", h, hn)
	}
	// fabric: two names, two hosts (exit 0 or 1, not 2); the machine's
	// own name twice is refused.
	out, stderr, code = runCLI(t, "", "fabric", "--from", a, "--from", b, "-o", "json")
	if code == exitUsage || !strings.Contains(out, `"node1-a"`) || !strings.Contains(out, `"node1-b"`) {
		t.Errorf("fabric with --hostname node1-a and node1-b: exit %d: %s\n%.300s", code, stderr, out)
	}
	c := filepath.Join(dir, "c.json")
	if _, stderr, code := runCLI(t, "", "collect", "--out", c); code != exitOK {
		t.Fatalf("collect: %s", stderr)
	}
	if _, stderr, code := runCLI(t, "", "fabric", "--from", old, "--from", c); code != exitUsage || !strings.Contains(stderr, "duplicate host") {
		t.Errorf("fabric with two snapshots named %q: exit %d, stderr %q; want 2, duplicate host", hn, code, stderr)
	}
}
