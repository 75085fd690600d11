package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun makes a run directory with one plan entry per package and the
// results of one kernel (release 6.1.0-56-amd64, finished).
func writeRun(t *testing.T, pkgs map[string]struct{ json, rc string }) string {
	t.Helper()
	run := t.TempDir()
	var plan strings.Builder
	for name := range pkgs {
		plan.WriteString(name + "\t/src/" + name + "\texample.com/" + name + "\tTestA\tTestF\n")
	}
	os.WriteFile(filepath.Join(run, "plan"), []byte(plan.String()), 0o644)
	writeKernel(t, run, "6.1", "6.1.0-56-amd64", pkgs)
	return run
}

// writeKernel adds one kernel's results to a run: units are NAME (a
// package's single-host tests) or NAME.fabric (its fabric tests).
func writeKernel(t *testing.T, run, spec, release string, units map[string]struct{ json, rc string }) {
	t.Helper()
	out := filepath.Join(run, "out-"+spec)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, p := range units {
		if p.json != "" {
			os.WriteFile(filepath.Join(out, name+".json"), []byte(p.json), 0o644)
		}
		os.WriteFile(filepath.Join(out, name+".rc"), []byte(p.rc+"\n"), 0o644)
		os.WriteFile(filepath.Join(out, name+".seconds"), []byte("1.5\n"), 0o644)
	}
	os.WriteFile(filepath.Join(out, "release"), []byte(release+"\n"), 0o644)
	os.WriteFile(filepath.Join(out, "done"), nil, 0o644)
	f, err := os.OpenFile(filepath.Join(run, "kernels"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(spec + "\t" + out + "\n")
	f.Close()
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
			[]string{"ok   example.com/a", "lab: 6.1.0-56-amd64: 1 passed, 0 failed, 0 skipped", "lab: 1 passed, 0 failed, 0 skipped"}},
		{"fail shows output", map[string]struct{ json, rc string }{"a": {`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"    x_lab_test.go:9: PCP 3, want 5\n"}
{"Action":"fail","Test":"TestA"}
`, "1"}}, false, []string{"FAIL example.com/a", "--- FAIL [6.1.0-56-amd64] example.com/a TestA", "PCP 3, want 5", "lab: 0 passed, 1 failed, 0 skipped"}},
		{"crash outside tests", map[string]struct{ json, rc string }{"a": {`{"Action":"output","Output":"panic: boom\n"}
`, "2"}}, false, []string{"FAIL [6.1.0-56-amd64] example.com/a (exit status 2)", "panic: boom"}},
		{"timeout inside a test", map[string]struct{ json, rc string }{"a": {`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"still waiting\n"}
`, "124"}}, false, []string{"DID NOT FINISH [6.1.0-56-amd64] example.com/a TestA", "still waiting"}},
		{"skip is reported", map[string]struct{ json, rc string }{"a": {`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"    x.go:1: no tool\n"}
{"Action":"skip","Test":"TestA"}
{"Action":"run","Test":"TestB"}
{"Action":"pass","Test":"TestB"}
`, "0"}}, true, []string{"SKIP [6.1.0-56-amd64] example.com/a TestA", "no tool", "1 passed, 0 failed, 1 skipped"}},
		// A binary that exited 0 but whose results were never converted
		// (the fabric tests' NAME.fabric.out once was not) fails: before,
		// it reported "0 passed, 0 failed" as ok.
		{"results lost", map[string]struct{ json, rc string }{"a": {"", "0"}}, false, []string{"FAIL example.com/a", "no test results", "a.json could not be read", "0 passed, 1 failed"}},
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

// Two kernels: a line per kernel, then the total; the fabric tests of a
// package are a unit of their own, and a kernel without the fabric says
// why its fabric tests did not run.
func TestReportKernels(t *testing.T) {
	run := writeRun(t, map[string]struct{ json, rc string }{"a": {passJSON, "0"}})
	fail := `{"Action":"run","Test":"TestF"}
{"Action":"output","Test":"TestF","Output":"    f_lab_test.go:3: no retransmission\n"}
{"Action":"fail","Test":"TestF"}
`
	writeKernel(t, run, "7", "7.3.4+deb13-amd64", map[string]struct{ json, rc string }{"a": {passJSON, "0"}, "a.fabric": {fail, "1"}})
	os.WriteFile(filepath.Join(run, "out-6.1", "multihost.status"), []byte("rxe works only in the initial network namespace on 6.1\n"), 0o644)
	var b strings.Builder
	ok, err := report(&b, run)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Errorf("ok with a failing fabric test:\n%s", b.String())
	}
	for _, e := range []string{
		"kernel 6.1.0-56-amd64:", "kernel 7.3.4+deb13-amd64:",
		"FAIL example.com/a (fabric)", "--- FAIL [7.3.4+deb13-amd64] example.com/a (fabric) TestF", "no retransmission",
		"fabric tests not run on this kernel: rxe works only in the initial network namespace on 6.1",
		"lab: 6.1.0-56-amd64: 1 passed, 0 failed, 0 skipped\nlab: 7.3.4+deb13-amd64: 1 passed, 1 failed, 0 skipped\nlab: 2 passed, 1 failed, 0 skipped\n",
	} {
		if !strings.Contains(b.String(), e) {
			t.Errorf("report does not contain %q:\n%s", e, b.String())
		}
	}
}

// A kernel whose VM did not finish is a failure of its own.
func TestReportKernelDidNotFinish(t *testing.T) {
	run := writeRun(t, map[string]struct{ json, rc string }{"a": {passJSON, "0"}})
	os.MkdirAll(filepath.Join(run, "out-7"), 0o755)
	os.WriteFile(filepath.Join(run, "kernels"), []byte("6.1\t"+filepath.Join(run, "out-6.1")+"\n7\t"+filepath.Join(run, "out-7")+"\n"), 0o644)
	var b strings.Builder
	ok, _ := report(&b, run)
	if ok || !strings.Contains(b.String(), "did not finish") || !strings.Contains(b.String(), "lab: 7: 0 passed, 1 failed, 0 skipped") {
		t.Errorf("ok %v:\n%s", ok, b.String())
	}
}
