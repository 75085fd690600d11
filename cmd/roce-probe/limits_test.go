package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/host"
)

// A snapshot past host.MaxSnapshotBytes once decompressed — from a file,
// standard input or among fabric's files — is bad input (exit 2) named by
// its file and the limit.
func TestSnapshotLimits(t *testing.T) {
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write([]byte(`{"format":"roce-probe-snapshot","version":1,"hostname":"`))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < 2*host.MaxSnapshotBytes>>20; i++ {
		zw.Write(chunk)
	}
	zw.Write([]byte(`"}`))
	zw.Close()
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.json.gz")
	os.WriteFile(bomb, gz.Bytes(), 0o644)
	good, err := os.ReadFile(fixture("rxe"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "good.json"), good, 0o644)
	limit := "the decompressed snapshot is larger than 64 MiB (67108864 bytes), the most roce-probe reads"
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"gids", "--from", bomb}, `roce-probe: --from "` + bomb + `": ` + limit + "\n"},
		{gz.String(), []string{"gids", "--from", "-"}, `roce-probe: --from "-": ` + limit + "\n"},
		{"", []string{"fabric", "--from", dir}, "roce-probe: " + bomb + ": " + limit + "\n"},
	} {
		stdout, stderr, code := runCLI(t, c.stdin, c.args...)
		if code != 2 || stdout != "" || stderr != c.want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q\nwant exit 2, stderr %q", strings.Join(c.args, " "), code, stdout, stderr, c.want)
		}
	}
}

// Messages about a snapshot use its own terms — key paths with indices,
// the device, port and index of a GID — and never Go's type or field
// names; ah's frame error names no Go field either.
func TestMessagesSpeakUserTerms(t *testing.T) {
	dir := t.TempDir()
	badGID := snapshotVariant(t, "mlx5", func(doc map[string]any) {
		dev := doc["rdma"].(map[string]any)["devices"].([]any)[0].(map[string]any)
		port := dev["ports"].([]any)[0].(map[string]any)
		port["gids"].([]any)[1].(map[string]any)["gid"] = "fe80::zz"
	})
	badIfindex := snapshotVariant(t, "mlx5", func(doc map[string]any) {
		firstNamespace(t, doc)["links"].([]any)[1].(map[string]any)["ifindex"] = "2"
	})
	array := filepath.Join(dir, "array.json")
	os.WriteFile(array, []byte("[]"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"gids", "--from", badGID}, exitUsage, `snapshot: mlx5_0 port 1: GID index 1 (rdma.devices[0].ports[0].gids[1]): gid: "fe80::zz" is not a GID`},
		{[]string{"gids", "--from", badIfindex}, exitUsage, `snapshot: namespaces[0].links[1].ifindex: string: want an integer`},
		{[]string{"gids", "--from", array}, exitUsage, `snapshot: not a roce-probe snapshot: the document is an array, want an object`},
		{[]string{"ah", "--from", fixture("mlx5"), "--dev", "mlx5_0", "--gid-index", "3", "--dst", "10.0.0.2", "--path", "user-ah",
			"--dmac", "02:00:00:00:00:02", "--pcap", filepath.Join(dir, "ah.pcap")}, exitFinding, "ah: the UDP source port is not predictable (mlx5 user AH without flow label"},
	} {
		stdout, stderr, code := runCLI(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q\nwant exit %d, stderr with %q", strings.Join(c.args, " "), code, stderr, c.code, c.want)
		}
		for _, bad := range []string{"Go value", "Go struct", "decodeBase", "json: ", "struct {", "Datagram."} {
			if strings.Contains(stdout+stderr, bad) {
				t.Errorf("%s: output names Go's %q:\n%s%s", strings.Join(c.args, " "), bad, stdout, stderr)
			}
		}
	}
}
