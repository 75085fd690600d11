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

func report(w io.Writer, run string) (bool, error) {
	plan, err := readPlan(run)
	if err != nil {
		return false, err
	}
	ok := true
	var passed, failed, skipped int
	var details strings.Builder
	for _, p := range plan {
		out := filepath.Join(run, "out")
		rc := strings.TrimSpace(readString(filepath.Join(out, p.name+".rc")))
		secs := strings.TrimSpace(readString(filepath.Join(out, p.name+".seconds")))
		evs, err := readEvents(filepath.Join(out, p.name+".json"))
		if err != nil && rc == "" {
			fmt.Fprintf(w, "FAIL %s: did not run (%v)\n", p.pkg, err)
			ok = false
			failed++
			continue
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
		var np, nf, ns int
		for _, t := range order {
			switch result[t] {
			case "pass":
				np++
			case "fail":
				nf++
				fmt.Fprintf(&details, "\n--- FAIL %s %s\n%s", p.pkg, t, outputs[t].String())
			case "skip":
				ns++
				fmt.Fprintf(&details, "\n--- SKIP %s %s\n%s", p.pkg, t, lastLines(outputs[t].String(), 5))
			default: // started but never finished: a crash or a timeout
				nf++
				fmt.Fprintf(&details, "\n--- DID NOT FINISH %s %s\n%s", p.pkg, t, outputs[t].String())
			}
		}
		status := "ok  "
		if nf > 0 || rc != "0" {
			status = "FAIL"
			ok = false
			if nf == 0 {
				// The binary failed outside any test (build of the fixture,
				// TestMain, panic, timeout): show the end of its output.
				nf++
				fmt.Fprintf(&details, "\n--- FAIL %s (exit status %s)\n%s", p.pkg, rc, lastLines(rawOutput(evs), 40))
			}
		}
		passed += np
		failed += nf
		skipped += ns
		fmt.Fprintf(w, "%s %-50s %3d passed %3d failed %3d skipped  %ss\n", status, p.pkg, np, nf, ns, secs)
		if arts := artifacts(filepath.Join(out, p.name+".artifacts")); len(arts) > 0 {
			for _, a := range arts {
				fmt.Fprintf(w, "     artifact %s\n", a)
			}
		}
	}
	if details.Len() > 0 {
		fmt.Fprint(w, details.String())
	}
	if passed+failed == 0 {
		fmt.Fprintln(w, "no lab test ran")
		ok = false
	}
	fmt.Fprintf(w, "\nlab: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	return ok, nil
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
