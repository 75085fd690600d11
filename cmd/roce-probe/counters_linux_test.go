package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// --watch --count N -o ndjson streams exactly N JSON objects, one per
// line, each with rates over the interval, and ends with exit 0 (live:
// this machine's netdevs); -o json prints them as one document, an array.
func TestCountersWatchBounded(t *testing.T) {
	out, stderr, code := runCLI(t, "", "counters", "--watch", "--interval", "50ms", "--count", "3", "--output", "ndjson")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out)
	}
	out, stderr, code = runCLI(t, "", "counters", "--watch", "--interval", "50ms", "--count", "3", "--output", "json")
	var doc []json.RawMessage
	if err := json.Unmarshal([]byte(out), &doc); code != exitOK || err != nil || len(doc) != 3 {
		t.Fatalf("-o json: exit %d, %d reports (%v), want one array of 3: %s\n%s", code, len(doc), err, stderr, out)
	}
	var fromDoc []string
	for _, r := range doc {
		fromDoc = append(fromDoc, string(r))
	}
	checkReports(t, lines)
	checkReports(t, fromDoc)
}

// checkReports checks watch reports: rates over about 0.05 s, times in
// order.
func checkReports(t *testing.T, lines []string) {
	t.Helper()
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
// whole JSON object (-o ndjson), the array is closed (-o json).
func TestCountersWatchSignal(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH")
	}
	bin := filepath.Join(t.TempDir(), "roce-probe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		c := exec.Command(bin, "counters", "--watch", "--interval", "100ms", "--output", "ndjson")
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
		// -o json: the array so far, closed.
		c = exec.Command(bin, "counters", "--watch", "--interval", "100ms", "--output", "json")
		stdout, _ = c.StdoutPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		r = bufio.NewReader(stdout)
		if _, err := r.ReadString('\n'); err != nil { // "[" and the first report
			c.Process.Kill()
			t.Fatalf("%v: -o json: no first report: %v", sig, err)
		}
		if _, err := r.ReadString('\n'); err != nil {
			c.Process.Kill()
			t.Fatalf("%v: -o json: no first report: %v", sig, err)
		}
		c.Process.Signal(sig)
		b, _ := io.ReadAll(r)
		if err := c.Wait(); err != nil {
			t.Errorf("%v: -o json: %v, want exit 0", sig, err)
		}
		var doc []json.RawMessage
		if err := json.Unmarshal(append([]byte("[\n"), b...), &doc); err != nil || len(doc) == 0 {
			t.Errorf("%v: -o json: not one array of reports (%v): [ ... %s", sig, err, b)
		}
	}
}

// collect records one counters sample and the settings; counters --from
// analyses it like the live host.
func TestCollectRecordsCounters(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.json")
	if _, stderr, code := runCLI(t, "", "collect", "--out", f); code != exitOK {
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

// counters --netns reads the namespace's netdevs live: on a host without
// RDMA devices the veth Soft-RoCE could run on, its ethtool set read in
// that namespace (veth_get_strings: peer_ifindex is the peer's ifindex;
// the per-queue XDP counters are left out).
func TestCountersLiveNetns(t *testing.T) {
	netnstest.RequireRoot(t)
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Skip("this host has RDMA devices: the veth is not a predicted port")
	}
	a, b := netnstest.New(t, "a"), netnstest.New(t, "b")
	netnstest.Veth(t, a, "cn0", "02:00:00:00:02:0a", b, "cn1", "02:00:00:00:02:0b")
	peer := netnstest.Run(t, "ip", "-n", b, "-o", "link", "show", "cn1")
	idx, _, _ := strings.Cut(peer, ":")
	f := filepath.Join(t.TempDir(), "s.json")
	if _, stderr, code := runCLI(t, "", "collect", "--netns", a, "-o", f); code != exitOK {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	s, err := host.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Counters.Ethtool) != 1 {
		t.Fatalf("ethtool sets %+v, want cn0's", s.Counters.Ethtool)
	}
	e := s.Counters.Ethtool[0]
	if e.Netns != a || e.Netdev != "cn0" || e.Driver != "veth" || fmt.Sprint(e.Stats["peer_ifindex"]) != strings.TrimSpace(idx) || len(e.Stats) != 1 {
		t.Errorf("cn0: %+v, want peer_ifindex %s and nothing per queue", e, idx)
	}
	if d := s.Settings.DCQCNOf("cn0"); d == nil || d.Status != "not exposed" {
		t.Errorf("DCQCN of a veth: %+v", d)
	}
	out, stderr, code := runCLI(t, "", "counters", "--netns", a, "--interval", "50ms", "--output", "json")
	if code != exitOK {
		t.Fatalf("counters --netns: exit %d: %s", code, stderr)
	}
	d := decodeCounters(t, out)
	if len(d.Netdevs) != 1 || d.Netdevs[0].Netdev != "cn0" || d.Interval == nil || len(d.Priorities) != 0 {
		t.Errorf("netdevs %+v interval %v priorities %d: want cn0 (no DCB: no priorities)", d.Netdevs, d.Interval, len(d.Priorities))
	}
}
