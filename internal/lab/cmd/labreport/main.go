package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// event is one line of go test -json output.
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type planEntry struct{ name, dir, pkg string }

// A unit is one test binary run: a package's single-host lab tests
// (out/NAME.*), its fabric tests (out/NAME.fabric.*) or its leaf-spine
// tests (out/NAME.leafspine.*).
type unit struct {
	file  string // NAME, NAME.fabric or NAME.leafspine
	label string // the package, with " (fabric)" or " (leaf-spine)"
}

// A kernel is one VM run (or the native run): its results directory.
type kernel struct{ spec, out string }

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: labreport RUNDIR")
		os.Exit(2)
	}
	ok, err := report(os.Stdout, os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "labreport:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

func readPlan(run string) ([]planEntry, error) {
	b, err := os.ReadFile(filepath.Join(run, "plan"))
	if err != nil {
		return nil, err
	}
	var plan []planEntry
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) < 3 {
			continue
		}
		plan = append(plan, planEntry{f[0], f[1], f[2]})
	}
	return plan, nil
}

// readKernels reads RUNDIR/kernels ("SPEC<TAB>OUTDIR" per line); without
// it, the run has one kernel whose results are in RUNDIR/out.
func readKernels(run string) []kernel {
	b, err := os.ReadFile(filepath.Join(run, "kernels"))
	if err != nil {
		return []kernel{{"", filepath.Join(run, "out")}}
	}
	var ks []kernel
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if spec, out, ok := strings.Cut(line, "\t"); ok {
			ks = append(ks, kernel{spec, out})
		}
	}
	return ks
}

// counts are a kernel's (or the whole run's) test results.
type counts struct{ passed, failed, skipped int }

func (c *counts) add(o counts) { c.passed += o.passed; c.failed += o.failed; c.skipped += o.skipped }

func report(w io.Writer, run string) (bool, error) {
	plan, err := readPlan(run)
	if err != nil {
		return false, err
	}
	ks := readKernels(run)
	ok := true
	var total counts
	var details strings.Builder
	var lines []string
	for _, k := range ks {
		release := strings.TrimSpace(readString(filepath.Join(k.out, "release")))
		name := release
		if name == "" {
			name = k.spec
		}
		if len(ks) > 1 || k.spec != "" {
			fmt.Fprintf(w, "kernel %s:\n", orString(name, "?"))
		}
		c, kok := reportKernel(w, &details, plan, k.out, name)
		ok = ok && kok
		total.add(c)
		if name != "" {
			lines = append(lines, fmt.Sprintf("lab: %s: %d passed, %d failed, %d skipped", name, c.passed, c.failed, c.skipped))
		}
	}
	if details.Len() > 0 {
		fmt.Fprint(w, details.String())
	}
	if total.passed+total.failed == 0 {
		fmt.Fprintln(w, "no lab test ran")
		ok = false
	}
	fmt.Fprintln(w)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "lab: %d passed, %d failed, %d skipped\n", total.passed, total.failed, total.skipped)
	return ok, nil
}

func orString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// reportKernel prints one line per unit that ran on one kernel and adds the
// output of failing and skipped tests, tagged with the kernel, to details.
func reportKernel(w io.Writer, details *strings.Builder, plan []planEntry, out, kname string) (counts, bool) {
	var c counts
	ok := true
	tag := ""
	if kname != "" {
		tag = " [" + kname + "]"
	}
	if panic, first, found := strings.Cut(strings.TrimSpace(readString(filepath.Join(out, "crashed-before"))), "\t"); found {
		// scripts/lab.sh booted this kernel twice: the first run's guest
		// kernel crashed. Said first, so a rerun is never silent.
		fmt.Fprintf(w, "     NOTE the first VM run on this kernel crashed (%s; its results: %s); these are the second run's\n", panic, first)
		// A failure the first run saw before the crash is not washed
		// away by a clean second run.
		rcs, _ := filepath.Glob(filepath.Join(first, "*.rc"))
		sort.Strings(rcs)
		for _, f := range rcs {
			if rc := strings.TrimSpace(readString(f)); rc != "0" && rc != "" {
				fmt.Fprintf(w, "FAIL the first run's %s exited %s before the crash (output: %s)\n", strings.TrimSuffix(filepath.Base(f), ".rc"), rc, strings.TrimSuffix(f, ".rc")+".out")
				c.failed++
				ok = false
			}
		}
	}
	finished := fileExists(filepath.Join(out, "done"))
	if !finished {
		// The VM stopped (a kernel panic, qemu killed, the VM timeout)
		// before guest.sh marked the run done: report the units that ran,
		// the one that was running (its tests that never ended say DID NOT
		// FINISH) and what the console and the memory log last said.
		defer func() { stopped(w, out) }()
		ok = false
		c.failed++
	}
	if rc := strings.TrimSpace(readString(filepath.Join(out, "fabric.rc"))); rc != "" && rc != "0" {
		fmt.Fprintf(w, "FAIL building the lab failed:\n%s\n", readString(filepath.Join(out, "fabric.log")))
		c.failed++
		return c, false
	}
	fabric := strings.TrimSpace(readString(filepath.Join(out, "multihost.status")))
	for _, p := range plan {
		units := []unit{{p.name, p.pkg}}
		if fileExists(filepath.Join(out, p.name+".fabric.rc")) {
			units = append(units, unit{p.name + ".fabric", p.pkg + " (fabric)"})
		}
		if fileExists(filepath.Join(out, p.name+".leafspine.rc")) {
			units = append(units, unit{p.name + ".leafspine", p.pkg + " (leaf-spine)"})
		}
		for _, u := range units {
			if !fileExists(filepath.Join(out, u.file+".rc")) && u.file == p.name && fabricOnly(out, p.name) {
				continue
			}
			if !finished && !fileExists(filepath.Join(out, u.file+".out")) && !fileExists(filepath.Join(out, u.file+".rc")) {
				continue // never started: the VM stopped before
			}
			uc, uok := reportUnit(w, details, out, u, tag)
			c.add(uc)
			ok = ok && uok
		}
	}
	if fabric != "" && fabric != "ok" {
		fmt.Fprintf(w, "     fabric and leaf-spine tests not run on this kernel: %s\n", fabric)
	}
	return c, ok
}

// stopped explains a kernel's run that did not finish: the unit that was
// running (the last "lab: running" line of the console), how long the VM
// ran, the lowest memory the guest had left (memory.log, written by
// scripts/lab/guest.sh every 5 s) and the last lines of the console, where
// a kernel panic or the OOM killer shows.
func stopped(w io.Writer, out string) {
	console := readString(filepath.Join(out, "console.log"))
	during := "before the first test binary"
	for _, l := range strings.Split(console, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "lab: running "); ok {
			during = "during " + rest
		}
	}
	msg := "FAIL the lab run on this kernel did not finish: the VM stopped " + during
	if s := strings.TrimSpace(readString(filepath.Join(out, "vm-seconds"))); s != "" {
		msg += " after " + s + " s"
	}
	if m := lowestMemory(readString(filepath.Join(out, "memory.log"))); m != "" {
		msg += "; " + m
	}
	fmt.Fprintf(w, "%s; the last lines of %s:\n", msg, filepath.Join(out, "console.log"))
	tail := strings.TrimRight(lastLines(console, 40), "\n")
	if tail == "" {
		tail = "(empty)"
	}
	for _, l := range strings.Split(tail, "\n") {
		fmt.Fprintf(w, "     | %s\n", strings.TrimRight(l, "\r"))
	}
}

// lowestMemory reads memory.log lines "UPTIME MemAvailable: KB ..." and
// says when the guest had the least memory available.
func lowestMemory(log string) string {
	low, at := -1, ""
	for _, l := range strings.Split(log, "\n") {
		f := strings.Fields(l)
		for i := 1; i+1 < len(f); i++ {
			if f[i] != "MemAvailable:" {
				continue
			}
			var kb int
			if _, err := fmt.Sscan(f[i+1], &kb); err == nil && (low < 0 || kb < low) {
				low, at = kb, f[0]
			}
		}
	}
	if low < 0 {
		return ""
	}
	return fmt.Sprintf("the guest's lowest MemAvailable was %d MiB (%s s after boot)", low/1024, at)
}

// fabricOnly reports whether a package has only fabric or leaf-spine
// tests: then its single-host unit has nothing to run (NAME.none marks it).
func fabricOnly(out, name string) bool { return fileExists(filepath.Join(out, name+".none")) }

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

func reportUnit(w io.Writer, details *strings.Builder, out string, u unit, tag string) (counts, bool) {
	var c counts
	rc := strings.TrimSpace(readString(filepath.Join(out, u.file+".rc")))
	secs := strings.TrimSpace(readString(filepath.Join(out, u.file+".seconds")))
	if secs == "" {
		secs = "?" // still running when the VM stopped
	}
	evs, err := readEvents(filepath.Join(out, u.file+".json"))
	if err != nil && rc == "" {
		fmt.Fprintf(w, "FAIL %s: did not run (%v)\n", u.label, err)
		c.failed++
		return c, false
	}
	outputs := map[string]*strings.Builder{}
	result := map[string]string{}
	var order []string
	for _, e := range evs {
		if e.Test == "" {
			continue
		}
		if _, seen := outputs[e.Test]; !seen {
			outputs[e.Test] = &strings.Builder{}
			order = append(order, e.Test)
		}
		switch e.Action {
		case "output":
			outputs[e.Test].WriteString(e.Output)
		case "pass", "fail", "skip":
			result[e.Test] = e.Action
		}
	}
	for _, t := range order {
		switch result[t] {
		case "pass":
			c.passed++
		case "fail":
			c.failed++
			fmt.Fprintf(details, "\n--- FAIL%s %s %s\n%s", tag, u.label, t, outputs[t].String())
		case "skip":
			c.skipped++
			fmt.Fprintf(details, "\n--- SKIP%s %s %s\n%s", tag, u.label, t, lastLines(outputs[t].String(), 5))
		default: // started but never finished: a crash or a timeout
			c.failed++
			fmt.Fprintf(details, "\n--- DID NOT FINISH%s %s %s\n%s", tag, u.label, t, outputs[t].String())
		}
	}
	if err != nil && rc == "0" {
		// A binary that ran and passed but whose results are missing is
		// not a pass: its output was not converted (NAME.json), so its
		// tests would count as none.
		c.failed++
		fmt.Fprintf(details, "\n--- NO RESULTS%s %s: the test binary ran (exit status 0) but %s.json could not be read: %v\n", tag, u.label, u.file, err)
		fmt.Fprintf(w, "FAIL %-50s no test results  %ss\n", u.label, secs)
		return c, false
	}
	ok := true
	status := "ok  "
	if c.failed > 0 || rc != "0" {
		status = "FAIL"
		ok = false
		if c.failed == 0 {
			// The binary failed outside any test (build of the fixture,
			// TestMain, panic, timeout): show the end of its output.
			c.failed++
			fmt.Fprintf(details, "\n--- FAIL%s %s (exit status %s)\n%s", tag, u.label, rc, lastLines(rawOutput(evs), 40))
		}
	}
	fmt.Fprintf(w, "%s %-50s %3d passed %3d failed %3d skipped  %ss\n", status, u.label, c.passed, c.failed, c.skipped, secs)
	for _, a := range artifacts(filepath.Join(out, u.file+".artifacts")) {
		fmt.Fprintf(w, "     artifact %s\n", a)
	}
	return c, ok
}

func readString(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

func readEvents(path string) ([]event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var evs []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			evs = append(evs, e)
		}
	}
	return evs, sc.Err()
}

func rawOutput(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Action == "output" {
			b.WriteString(e.Output)
		}
	}
	return b.String()
}

func lastLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

func artifacts(dir string) []string {
	var list []string
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			list = append(list, path)
		}
		return nil
	})
	sort.Strings(list)
	return list
}
