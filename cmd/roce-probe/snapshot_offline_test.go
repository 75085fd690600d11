package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLabSnapshotsOffline replays, on the machine running the unit tests
// (CI's, which has no RDMA device), the commands TestLabLiveEqualsSnapshot
// ran live inside the lab: each must print, from the snapshot collected
// there, exactly what it printed there. ROCE_PROBE_LAB_RUN names the lab
// run directory (scripts/test.sh sets it after the lab); without it there
// is nothing to replay.
func TestLabSnapshotsOffline(t *testing.T) {
	run := os.Getenv("ROCE_PROBE_LAB_RUN")
	if run == "" {
		t.Skip("ROCE_PROBE_LAB_RUN is not set: no lab run to replay (scripts/test.sh sets it after the lab)")
	}
	var found []string
	err := filepath.WalkDir(run, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "cases.json" && filepath.Base(filepath.Dir(p)) == "fromsnap" {
			found = append(found, filepath.Dir(p))
		}
		return nil
	})
	if err != nil || len(found) == 0 {
		t.Fatalf("ROCE_PROBE_LAB_RUN=%s holds no fromsnap/cases.json (%v): did TestLabLiveEqualsSnapshot run?", run, err)
	}
	for _, dir := range found {
		b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
		if err != nil {
			t.Fatal(err)
		}
		var cases []struct {
			Args   []string `json:"args"`
			Stdout string   `json:"stdout"`
			Exit   int      `json:"exit"`
		}
		if err := json.Unmarshal(b, &cases); err != nil || len(cases) == 0 {
			t.Fatalf("%s: %d cases, %v", dir, len(cases), err)
		}
		snap := filepath.Join(dir, "snapshot.json.gz")
		for _, c := range cases {
			args := append(append([]string(nil), c.Args...), "--from", snap)
			out, stderr, code := runCLI(t, "", args...)
			if code != c.Exit || out != c.Stdout {
				t.Errorf("%s (%s): exit %d here, %d in the lab (%s)\nlab:\n%s\nhere:\n%s", strings.Join(c.Args, " "), dir, code, c.Exit, stderr, c.Stdout, out)
			}
		}
		t.Logf("%s: %d commands answer from the snapshot as they did live in the lab", dir, len(cases))
	}
}
