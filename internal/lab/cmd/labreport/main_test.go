package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun makes a run directory with one plan entry per package.
func writeRun(t *testing.T, pkgs map[string]struct{ json, rc string }) string {
	t.Helper()
	run := t.TempDir()
	out := filepath.Join(run, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for name, p := range pkgs {
		plan.WriteString(name + "\t/src/" + name + "\texample.com/" + name + "\tTestA\n")
		if p.json != "" {
			os.WriteFile(filepath.Join(out, name+".json"), []byte(p.json), 0o644)
		}
		os.WriteFile(filepath.Join(out, name+".rc"), []byte(p.rc+"\n"), 0o644)
		os.WriteFile(filepath.Join(out, name+".seconds"), []byte("1.5\n"), 0o644)
	}
	os.WriteFile(filepath.Join(run, "plan"), []byte(plan.String()), 0o644)
	return run
}

const passJSON = `{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Test":"TestA"}
`

func TestReport(t *testing.T) {
	for _, c := range []struct {
		name   string
		pkgs   map[string]struct{ json, rc string }
		ok     bool
		expect []string
	}{
		{"pass", map[string]struct{ json, rc string }{"a": {passJSON, "0"}}, true,
			[]string{"ok   example.com/a", "lab: 1 passed, 0 failed, 0 skipped"}},
		{"fail shows output", map[string]struct{ json, rc string }{"a": {`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"    x_lab_test.go:9: PCP 3, want 5\n"}
{"Action":"fail","Test":"TestA"}
`, "1"}}, false, []string{"FAIL example.com/a", "PCP 3, want 5", "lab: 0 passed, 1 failed, 0 skipped"}},
		{"crash outside tests", map[string]struct{ json, rc string }{"a": {`{"Action":"output","Output":"panic: boom\n"}
`, "2"}}, false, []string{"FAIL example.com/a (exit status 2)", "panic: boom"}},
		{"timeout inside a test", map[string]struct{ json, rc string }{"a": {`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"still waiting\n"}
`, "124"}}, false, []string{"DID NOT FINISH example.com/a TestA", "still waiting"}},
		{"skip is reported", map[string]struct{ json, rc string }{"a": {`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"    x.go:1: no tool\n"}
{"Action":"skip","Test":"TestA"}
{"Action":"run","Test":"TestB"}
{"Action":"pass","Test":"TestB"}
`, "0"}}, true, []string{"SKIP example.com/a TestA", "no tool", "1 passed, 0 failed, 1 skipped"}},
		{"nothing ran", map[string]struct{ json, rc string }{"a": {"", "0"}}, false, []string{"no lab test ran"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			ok, err := report(&b, writeRun(t, c.pkgs))
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.ok {
				t.Errorf("ok = %v, want %v\n%s", ok, c.ok, b.String())
			}
			for _, e := range c.expect {
				if !strings.Contains(b.String(), e) {
					t.Errorf("report does not contain %q:\n%s", e, b.String())
				}
			}
		})
	}
}
