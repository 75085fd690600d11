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
