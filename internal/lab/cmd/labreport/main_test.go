package main

import (
	"os"
	"os/exec"
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
		"fabric and leaf-spine tests not run on this kernel: rxe works only in the initial network namespace on 6.1",
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

// A VM that stopped in the middle (here the console of a kernel that
// panicked while package b's TestA ran): the report shows a's results,
// b's test that never ended, where the run stopped, the guest's lowest
// memory and the console's last lines — CI shows only this report.
func TestReportKernelStopped(t *testing.T) {
	run := t.TempDir()
	os.WriteFile(filepath.Join(run, "plan"), []byte("a\t/src/a\texample.com/a\tTestA\t\nb\t/src/b\texample.com/b\tTestA\t\nc\t/src/c\texample.com/c\tTestA\t\n"), 0o644)
	out := filepath.Join(run, "out-7")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(run, "kernels"), []byte("7\t"+out+"\n"), 0o644)
	os.WriteFile(filepath.Join(out, "release"), []byte("7.3.4+deb13-amd64\n"), 0o644)
	os.WriteFile(filepath.Join(out, "a.json"), []byte(passJSON), 0o644)
	os.WriteFile(filepath.Join(out, "a.rc"), []byte("0\n"), 0o644)
	os.WriteFile(filepath.Join(out, "a.seconds"), []byte("3.0\n"), 0o644)
	os.WriteFile(filepath.Join(out, "b.out"), []byte("=== RUN   TestA\n"), 0o644)
	os.WriteFile(filepath.Join(out, "b.json"), []byte(`{"Action":"run","Test":"TestA"}
{"Action":"output","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Test":"TestA","Output":"    b_test.go:9: step 1\n"}
`), 0o644)
	os.WriteFile(filepath.Join(out, "vm-seconds"), []byte("212.5\n"), 0o644)
	os.WriteFile(filepath.Join(out, "memory.log"), []byte("9.10 MemFree: 1700000 MemAvailable: 1800000 Shmem: 1000 \n"+
		"120.40 MemFree: 20000 MemAvailable: 35840 Shmem: 900000 \n130.00 MemFree: 90000 MemAvailable: 100000 Shmem: 900000 \n"), 0o644)
	os.WriteFile(filepath.Join(out, "console.log"), []byte("lab-init: up 8.8s after boot\nlab: running example.com/a\nlab: running example.com/b\n"+
		"[  130.1] Kernel panic - not syncing: Out of memory and no killable processes...\n"), 0o644)
	var w strings.Builder
	ok, err := report(&w, run)
	got := w.String()
	if err != nil || ok {
		t.Fatalf("ok %v, err %v:\n%s", ok, err, got)
	}
	for _, want := range []string{
		"ok   example.com/a",
		"FAIL example.com/b",
		"--- DID NOT FINISH [7.3.4+deb13-amd64] example.com/b TestA\n=== RUN   TestA\n    b_test.go:9: step 1\n",
		"did not finish: the VM stopped during example.com/b after 212.5 s; the guest's lowest MemAvailable was 35 MiB (120.40 s after boot); the last lines of " + filepath.Join(out, "console.log") + ":\n",
		"     | [  130.1] Kernel panic - not syncing: Out of memory and no killable processes...\n",
		"lab: 7.3.4+deb13-amd64: 1 passed, 2 failed, 0 skipped",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "example.com/c") {
		t.Errorf("c never started (the VM stopped before it) but the report names it:\n%s", got)
	}
}

// A kernel booted twice because its first run crashed says so.
func TestReportKernelCrashedBefore(t *testing.T) {
	run := writeRun(t, map[string]struct{ json, rc string }{"a": {passJSON, "0"}})
	os.WriteFile(filepath.Join(run, "out-6.1", "crashed-before"), []byte("Kernel panic - not syncing: Fatal exception in interrupt\t/r/out-6.1.crashed\n"), 0o644)
	var b strings.Builder
	ok, _ := report(&b, run)
	want := "NOTE the first VM run on this kernel crashed (Kernel panic - not syncing: Fatal exception in interrupt; its results: /r/out-6.1.crashed); these are the second run's"
	if !ok || !strings.Contains(b.String(), want) {
		t.Errorf("ok %v, want %q in:\n%s", ok, want, b.String())
	}

	// The first run's b failed before the crash; the second run passed
	// everything: still a failure.
	first := t.TempDir()
	os.WriteFile(filepath.Join(first, "a.rc"), []byte("0\n"), 0o644)
	os.WriteFile(filepath.Join(first, "b.rc"), []byte("1\n"), 0o644)
	os.WriteFile(filepath.Join(run, "out-6.1", "crashed-before"), []byte("Kernel panic - not syncing: Fatal exception in interrupt\t"+first+"\n"), 0o644)
	b.Reset()
	ok, _ = report(&b, run)
	want = "FAIL the first run's b exited 1 before the crash (output: " + filepath.Join(first, "b.out") + ")"
	if ok || !strings.Contains(b.String(), want) || strings.Contains(b.String(), "first run's a ") {
		t.Errorf("ok %v, want %q (and nothing on a) in:\n%s", ok, want, b.String())
	}
}

// The plan as scripts/lab.sh writes it (scripts/lab/plan.sh's plan_add)
// and as scripts/lab/guest.sh reads it (its plan mode prints what its test
// mode would run): a package with fabric tests only has no single-host
// run and its fabric tests run in the fabric phase; a package without
// fabric tests has no fabric run. Before plan.sh, an empty TESTS field
// was lost: bash's read with IFS=$'\t' merges the tabs around it, so the
// fabric tests were read as single-host tests and run without the
// fabric.
func TestPlanEmptyFields(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	scripts, err := filepath.Abs("../../../../scripts/lab")
	if err != nil {
		t.Fatal(err)
	}
	bash := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", args...)
		cmd.Env = append(os.Environ(), append([]string{"LAB_TEST_TIMEOUT=300"}, env...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("bash %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// What the fix is for: an empty field read as guest.sh reads lines.
	if got := bash(nil, "-c", `IFS=$'\t' read -r a b c d e <<<$'n\t/src\tpkg\t\tTestF'; echo "tests=$d fabric=$e"`); got != "tests=TestF fabric=\n" {
		t.Fatalf("bash keeps an empty tab-separated field (%q): the placeholder is not needed", got)
	}
	run := t.TempDir()
	bash(nil, "-c", `. "$1/plan.sh"
plan_add "$2/plan" both /src/both example.com/both 'TestA|TestB' TestF
plan_add "$2/plan" fonly /src/fonly example.com/fonly '' 'TestG|TestH'
plan_add "$2/plan" sonly /src/sonly example.com/sonly TestS ''
plan_add "$2/plan" lonly /src/lonly example.com/lonly '' '' 'TestL'
plan_add "$2/plan" all /src/all example.com/all TestX TestY 'TestZ|TestW'`, "plan", scripts, run)
	const flags = "-test.v=test2json -test.timeout 300s -test.count=1 "
	got := bash(nil, filepath.Join(scripts, "guest.sh"), run, "plan", filepath.Join(run, "out"))
	want := "run both . " + flags + "-test.run ^(TestA|TestB)$\n" +
		"none fonly\n" +
		"run sonly . " + flags + "-test.run ^(TestS)$\n" +
		"none lonly\n" +
		"run all . " + flags + "-test.run ^(TestX)$\n" +
		"run both .fabric " + flags + "-test.run ^(TestF)$\n" +
		"run fonly .fabric " + flags + "-test.run ^(TestG|TestH)$\n" +
		"run all .fabric " + flags + "-test.run ^(TestY)$\n" +
		"run lonly .leafspine " + flags + "-test.run ^(TestL)$\n" +
		"run all .leafspine " + flags + "-test.run ^(TestZ|TestW)$\n"
	if got != want {
		t.Errorf("guest.sh plan:\n%s\nwant:\n%s", got, want)
	}
	// With -run RE (scripts/lab.sh test -run): each phase leaves out the
	// other phases' tests, and only where there are some.
	os.WriteFile(filepath.Join(run, "run-regexp"), []byte("Fabric|TestS"), 0o644)
	got = bash(nil, filepath.Join(scripts, "guest.sh"), run, "plan", filepath.Join(run, "out"))
	want = "run both . " + flags + "-test.run Fabric|TestS -test.skip ^(TestF)$\n" +
		"none fonly\n" +
		"run sonly . " + flags + "-test.run Fabric|TestS\n" +
		"none lonly\n" +
		"run all . " + flags + "-test.run Fabric|TestS -test.skip ^(TestY|TestZ|TestW)$\n" +
		"run both .fabric " + flags + "-test.run Fabric|TestS -test.skip ^(TestA|TestB)$\n" +
		"run fonly .fabric " + flags + "-test.run Fabric|TestS\n" +
		"run all .fabric " + flags + "-test.run Fabric|TestS -test.skip ^(TestX|TestZ|TestW)$\n" +
		"run lonly .leafspine " + flags + "-test.run Fabric|TestS\n" +
		"run all .leafspine " + flags + "-test.run Fabric|TestS -test.skip ^(TestX|TestY)$\n"
	if got != want {
		t.Errorf("guest.sh plan with -run:\n%s\nwant:\n%s", got, want)
	}
	// A five-field plan (no leaf-spine tests anywhere) is read as before.
	os.WriteFile(filepath.Join(run, "plan"), []byte("fonly\t/src/fonly\texample.com/fonly\t-\tTestG\n"), 0o644)
	os.Remove(filepath.Join(run, "run-regexp"))
	if got, want := bash(nil, filepath.Join(scripts, "guest.sh"), run, "plan", filepath.Join(run, "out")),
		"none fonly\nrun fonly .fabric "+flags+"-test.run ^(TestG)$\n"; got != want {
		t.Errorf("guest.sh plan of a five-field plan:\n%s\nwant:\n%s", got, want)
	}
	bash(nil, "-c", `. "$1/plan.sh"
: > "$2/plan"
plan_add "$2/plan" both /src/both example.com/both 'TestA|TestB' TestF
plan_add "$2/plan" fonly /src/fonly example.com/fonly '' 'TestG|TestH'
plan_add "$2/plan" sonly /src/sonly example.com/sonly TestS ''`, "plan", scripts, run)
	plan, err := readPlan(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan) != 3 || plan[1] != (planEntry{"fonly", "/src/fonly", "example.com/fonly"}) {
		t.Errorf("readPlan: %+v", plan)
	}
}

// A package with fabric tests only is reported by its fabric unit alone:
// its single-host unit (NAME.none) is not a failure.
func TestReportFabricOnly(t *testing.T) {
	run := t.TempDir()
	os.WriteFile(filepath.Join(run, "plan"), []byte("f\t/src/f\texample.com/f\t-\tTestA\n"), 0o644)
	writeKernel(t, run, "7", "7.3.4+deb13-amd64", map[string]struct{ json, rc string }{"f.fabric": {passJSON, "0"}})
	os.WriteFile(filepath.Join(run, "out-7", "f.none"), nil, 0o644)
	var b strings.Builder
	ok, err := report(&b, run)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !strings.Contains(b.String(), "ok   example.com/f (fabric)") || strings.Contains(b.String(), "did not run") ||
		!strings.Contains(b.String(), "lab: 1 passed, 0 failed, 0 skipped") {
		t.Errorf("ok %v:\n%s", ok, b.String())
	}
}

// A package's leaf-spine tests are a unit of their own, "(leaf-spine)",
// counted and failed like the others.
func TestReportLeafSpine(t *testing.T) {
	run := t.TempDir()
	os.WriteFile(filepath.Join(run, "plan"), []byte("l\t/src/l\texample.com/l\t-\tTestF\tTestL\n"), 0o644)
	writeKernel(t, run, "7", "7.3.4+deb13-amd64", map[string]struct{ json, rc string }{"l.fabric": {passJSON, "0"}, "l.leafspine": {passJSON, "0"}})
	os.WriteFile(filepath.Join(run, "out-7", "l.none"), nil, 0o644)
	var b strings.Builder
	ok, err := report(&b, run)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || !strings.Contains(b.String(), "ok   example.com/l (fabric)") || !strings.Contains(b.String(), "ok   example.com/l (leaf-spine)") ||
		!strings.Contains(b.String(), "lab: 2 passed, 0 failed, 0 skipped") {
		t.Errorf("ok %v:\n%s", ok, b.String())
	}
	writeKernel(t, run, "7", "7.3.4+deb13-amd64", map[string]struct{ json, rc string }{"l.fabric": {passJSON, "0"}, "l.leafspine": {passJSON, "1"}})
	b.Reset()
	if ok, _ := report(&b, run); ok || !strings.Contains(b.String(), "FAIL example.com/l (leaf-spine)") {
		t.Errorf("a leaf-spine binary exiting 1: ok %v:\n%s", ok, b.String())
	}
}
