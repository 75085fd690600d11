package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/host"
)

// --watch --count N streams exactly N JSON objects, each with rates over
// the interval, and ends with exit 0 (live: this machine's netdevs).
func TestCountersWatchBounded(t *testing.T) {
	out, stderr, code := runCLI(t, "", "counters", "--watch", "--interval", "50ms", "--count", "3", "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out)
	}
	var last time.Time
	for _, l := range lines {
		d := decodeCounters(t, l)
		if d.Interval == nil || *d.Interval < 0.04 || *d.Interval > 2 {
			t.Errorf("interval_s %v, want about 0.05", d.Interval)
		}
		tm, err := time.Parse(time.RFC3339Nano, d.Time)
		if err != nil || !tm.After(last) {
			t.Errorf("time %q not after %v", d.Time, last)
		}
		last = tm
	}
}

// Ctrl-C or SIGTERM ends --watch cleanly: exit 0, every line written is a
// whole JSON object.
func TestCountersWatchSignal(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "roce-probe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		c := exec.Command(bin, "counters", "--watch", "--interval", "100ms", "--output", "json")
		stdout, _ := c.StdoutPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		first, err := r.ReadString('\n')
		if err != nil {
			c.Process.Kill()
			t.Fatalf("%v: no first line: %v", sig, err)
		}
		c.Process.Signal(sig)
		done := make(chan error, 1)
		rest := make(chan string, 1)
		go func() {
			b, _ := bufio.NewReader(r).ReadString(0)
			rest <- b
			done <- c.Wait()
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%v: %v, want exit 0", sig, err)
			}
		case <-time.After(10 * time.Second):
			c.Process.Kill()
			t.Fatalf("%v: still running 10s after the signal", sig)
		}
		for _, l := range strings.Split(strings.TrimSpace(first+<-rest), "\n") {
			if !json.Valid([]byte(l)) {
				t.Errorf("%v: a line is not a whole JSON object: %q", sig, l)
			}
		}
	}
}

// collect records one counters sample and the settings; counters --from
// analyses it like the live host.
func TestCollectRecordsCounters(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.json")
	if _, stderr, code := runCLI(t, "", "collect", "-o", f); code != exitOK {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	s, err := host.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if s.Counters == nil || s.Counters.Time.IsZero() || s.Settings == nil {
		t.Fatalf("counters %+v settings %+v", s.Counters, s.Settings)
	}
	// Every ethtool set recorded is a netdev of the host with the driver
	// sysfs names.
	for _, e := range s.Counters.Ethtool {
		link, err := os.Readlink(filepath.Join("/sys/class/net", e.Netdev, "device", "driver"))
		if err == nil && filepath.Base(link) != e.Driver {
			t.Errorf("%s: driver %q, sysfs %q", e.Netdev, e.Driver, filepath.Base(link))
		}
	}
	out, stderr, code := runCLI(t, "", "counters", "--from", f, "--output", "json")
	if code != exitOK && code != exitFinding {
		t.Fatalf("counters --from: exit %d: %s", code, stderr)
	}
	d := decodeCounters(t, out)
	if d.Interval != nil || len(d.Netdevs) != len(s.Counters.Ethtool) {
		t.Errorf("interval %v, %d netdevs for %d ethtool sets", d.Interval, len(d.Netdevs), len(s.Counters.Ethtool))
	}
}
