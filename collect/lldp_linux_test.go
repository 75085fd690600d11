package collect

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/internal/testenv"
	"github.com/roce-probe/roce-probe/topology"
)

// sg200Frame is the LLDP frame of a Cisco SG 200-08P (lldpd's test data,
// kept with package topology's fixtures).
func sg200Frame(t *testing.T) []byte {
	return testenv.FirstFrame(t, "../topology/testdata/cisco-sg200.pcap")
}

// sendFrames writes frame out of netdev in namespace ns every 100 ms
// until the test ends (a switch port sending LLDP).
func sendFrames(t *testing.T, ns, netdev string, frame []byte) {
	t.Helper()
	var fd int
	var err error
	netnstest.In(t, ns, func() {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return
		}
		var ifi *net.Interface
		if ifi, err = net.InterfaceByName(netdev); err == nil {
			err = unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			unix.Write(fd, frame)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done; unix.Close(fd) })
}

// A switch namespace sends the SG 200's LLDP frame: the listener in the
// host namespace decodes it (lldpd's expected values: chassis mac
// 00:35:35:35:35:35, port ifname g1, TTL 120), and Collect records the
// attachment; on a netdev where nothing is sent it says why.
func TestLLDPListenerAndCollect(t *testing.T) {
	netnstest.RequireRoot(t)
	h, sw := netnstest.New(t, "lh"), netnstest.New(t, "ls")
	netnstest.Veth(t, h, "lh0", "02:00:00:00:05:0a", sw, "ls0", "02:00:00:00:05:0b")
	netnstest.Veth(t, h, "lh1", "02:00:00:00:05:1a", sw, "ls1", "02:00:00:00:05:1b")
	sendFrames(t, sw, "ls0", sg200Frame(t))

	var l *LLDPListener
	var err error
	netnstest.In(t, h, func() { l, err = ListenLLDP("lh0") })
	if err != nil {
		t.Fatal(err)
	}
	hd, err := l.Next(time.Now().Add(3 * time.Second))
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if hd.Neighbor.ChassisID != "00:35:35:35:35:35" || hd.Neighbor.PortID != "g1" || hd.Neighbor.TTL != 120 {
		t.Errorf("heard %+v", hd.Neighbor)
	}
	// Nothing is sent on lh1.
	netnstest.In(t, h, func() { l, err = ListenLLDP("lh1") })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Next(time.Now().Add(200 * time.Millisecond)); !errors.Is(err, ErrNoLLDP) {
		t.Errorf("lh1: %v, want ErrNoLLDP", err)
	}
	l.Close()

	s, err := Collect(Options{Netns: []string{h}, Netdevs: []string{"lh0", "lh1"}, Sections: SectionTopology, LLDPWait: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s.Topology == nil {
		t.Fatal("no topology section")
	}
	a0, a1 := s.Topology.AttachmentOf("lh0"), s.Topology.AttachmentOf("lh1")
	if a0 == nil || a0.Switch != "00:35:35:35:35:35" || a0.SwitchPort != "g1" || a0.Source != topology.SourceLLDP {
		t.Errorf("lh0: %+v", a0)
	}
	if a1 == nil || a1.Known() || !strings.Contains(a1.Reason, "no frame within 1.5s") || !strings.Contains(a1.Reason, "lldpd: not asked") ||
		!strings.Contains(a1.Reason, "fw-lldp-agent") {
		t.Errorf("lh1: %+v", a1)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	// Configured: wins, without listening.
	s, err = Collect(Options{Netns: []string{h}, Netdevs: []string{"lh0"}, Sections: SectionTopology, Switches: map[string]string{"": "leaf-3"}})
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Topology.AttachmentOf("lh0"); a == nil || a.Switch != "leaf-3" || a.Source != topology.SourceConfig {
		t.Errorf("configured: %+v", a)
	}
}

// Without CAP_NET_RAW ListenLLDP says so: the test binary runs itself
// again under setpriv with CAP_NET_RAW dropped from its bounding set, so
// that even root lacks it.
func TestLLDPListenerNeedsCapNetRaw(t *testing.T) {
	if os.Getenv("ROCE_PROBE_LLDP_NOCAP") == "1" {
		_, err := ListenLLDP("lo")
		if !errors.Is(err, ErrPermission) || !strings.Contains(err.Error(), "needs CAP_NET_RAW") {
			t.Fatalf("without CAP_NET_RAW: %v", err)
		}
		return
	}
	netnstest.RequireRoot(t, "setpriv")
	cmd := exec.Command("setpriv", "--bounding-set=-net_raw", "--inh-caps=-net_raw", "--", os.Args[0], "-test.run=^TestLLDPListenerNeedsCapNetRaw$", "-test.count=1")
	cmd.Env = append(os.Environ(), "ROCE_PROBE_LLDP_NOCAP=1")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// runLLDPCli runs the lldpcli found in PATH: its table is parsed, a
// failure's first line of standard error, a hang and a flood are reasons.
func TestRunLLDPCli(t *testing.T) {
	dir := t.TempDir()
	tool := map[string]string{}
	for _, name := range []string{"cat", "sleep", "yes"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skip(err)
		}
		tool[name] = p
	}
	t.Setenv("PATH", dir)
	if _, why := runLLDPCli(); !strings.Contains(why, "lldpcli is not installed") {
		t.Errorf("no lldpcli: %q", why)
	}
	fixture, err := filepath.Abs("../topology/testdata/lldpcli-json-2.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		script, why string
		n           int
	}{
		{tool["cat"] + " " + fixture, "", 2},
		// lldpcli 1.0.16 without a running lldpd.
		{"echo '2026-11-27T09:50:00 [WARN/lldpctl] cannot find daemon socket: unable to connect to socket' >&2; echo 'lldpcli: unable to connect to socket' >&2; exit 1", "lldpcli: [WARN/lldpctl] cannot find daemon socket", 0},
		{"exec " + tool["sleep"] + " 10", "did not answer within 5s", 0},
		{"exec " + tool["yes"] + " '{}'", "larger than", 0},
	} {
		if err := os.WriteFile(dir+"/lldpcli", []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		ns, why := runLLDPCli()
		if len(ns) != tc.n || !strings.Contains(why, tc.why) || (tc.why == "") != (why == "") {
			t.Errorf("%s: %d neighbours, reason %q; want %d, %q", tc.script, len(ns), why, tc.n, tc.why)
		}
	}
}

// lldpdTable runs lldpcli again only when its last table is older than
// the age asked: a host read every few seconds (the agent's) does not
// fork and exec at each one.
func TestLLDPDTableMaxAge(t *testing.T) {
	dir := t.TempDir()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	runs := filepath.Join(dir, "runs")
	if err := os.WriteFile(filepath.Join(dir, "lldpcli"), []byte("#!"+sh+"\necho run >> "+runs+"\necho 'lldpcli: unable to connect to socket' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	count := func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run\n")
	}
	lldpdLast.mu.Lock()
	lldpdLast.at = time.Time{}
	lldpdLast.mu.Unlock()
	for i := 0; i < 3; i++ {
		if _, why := lldpdTable(time.Minute); !strings.Contains(why, "unable to connect") {
			t.Fatalf("reason %q", why)
		}
	}
	if n := count(); n != 1 {
		t.Errorf("lldpcli ran %d times for three reads within a minute, want 1", n)
	}
	lldpdTable(0)
	lldpdTable(0)
	if n := count(); n != 3 {
		t.Errorf("lldpcli ran %d times, want 3 (max age 0: every read)", n)
	}
}

// TestUntimed: lldpcli's error as the 7.3.4 lab VM printed it without a
// running lldpd (the lab run of 2026-11-27) loses its time, which made
// every snapshot's topology reason differ from the one before.
func TestUntimed(t *testing.T) {
	for in, want := range map[string]string{
		"2026-11-27T12:19:08 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory": "[WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory",
		"unable to connect to socket": "unable to connect to socket",
		"":                            "",
		"2026-11-27T12:19:08":         "2026-11-27T12:19:08",
	} {
		if got := untimed(in); got != want {
			t.Errorf("untimed(%q) = %q, want %q", in, got, want)
		}
	}
}
