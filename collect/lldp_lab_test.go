//go:build lab

package collect

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/testenv"
	"github.com/roce-probe/roce-probe/topology"
)

// startLLDPD runs lldpd (Debian's) on netdev in namespace ns ("" the
// initial one) with its own control socket and configuration, and stops
// it when the test ends; it returns the socket.
func startLLDPD(t *testing.T, ns, netdev, conf string) string {
	t.Helper()
	// Not under t.TempDir: lldpcli (setgid _lldpd) could not connect to a
	// socket below its 0700 directories (EACCES, in the lab's VM).
	dir, err := os.MkdirTemp("/run", "roce-probe-lldpd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock, pid, cfg := filepath.Join(dir, "lldpd.sock"), filepath.Join(dir, "lldpd.pid"), filepath.Join(dir, "lldpd.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/lldpd", 0o755); err != nil { // lldpd's privilege-separation chroot
		t.Fatal(err)
	}
	args := []string{"lldpd", "-u", sock, "-p", pid, "-I", netdev, "-O", cfg}
	if ns != "" {
		args = append([]string{"ip", "netns", "exec", ns}, args...)
	}
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil { // it daemonizes
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Cleanup(func() {
		if b, err := os.ReadFile(pid); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(p, syscall.SIGTERM)
			}
		}
	})
	return sock
}

func lldpcli(t *testing.T, sock string, args ...string) string {
	t.Helper()
	out, err := exec.Command("lldpcli", append([]string{"-u", sock}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("lldpcli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// lldpd1016Frame is an LLDP frame of lldpd 1.0.16 (package topology's
// fixture: tshark reads system name "vm", port ID the MAC
// d2:31:68:05:c7:9b, port description "tswp1", TTL 120).
func lldpd1016Frame(t *testing.T) []byte {
	return testenv.FirstFrame(t, "../topology/testdata/lldpd-1.0.16.pcap")
}

// A switch on the other end of the lab's veth sends LLDP (the peer
// namespace sends lldpd's frame every 100 ms): collect hears it on veth0,
// the netdev below rxe0, and names the switch and its port; lldpd on
// veth0 (receive only) learns it too, and with no listening collect
// reads lldpd's table through the real lldpcli.
func TestLabLLDP(t *testing.T) {
	for _, tool := range []string{"lldpd", "lldpcli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian package lldpd, in scripts/lab.sh's lists): %v", tool, err)
		}
	}
	sendFrames(t, lab.PeerNetns, lab.PeerNetdev, lldpd1016Frame(t))
	hostSock := startLLDPD(t, "", lab.HostNetdev, "configure lldp status rx-only\n")

	start := time.Now()
	s, err := Collect(Options{Sections: SectionTopology, LLDPWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	a := s.Topology.AttachmentOf(lab.HostNetdev)
	if a == nil || a.Switch != "vm" || a.SwitchPort != "tswp1" || a.Source != topology.SourceLLDP || a.Neighbor == nil || a.Neighbor.ChassisID != "d2:31:68:05:c7:9b" {
		t.Fatalf("%s: %+v (took %v)", lab.HostNetdev, a, took)
	}
	if took > 5*time.Second {
		t.Errorf("collect took %v: it returns once every RoCE netdev heard a frame (one every 100 ms)", took)
	}

	// lldpd's table, through the real lldpcli (a wrapper in PATH gives it
	// this test's socket).
	bin := t.TempDir()
	real, _ := exec.LookPath("lldpcli")
	if err := os.WriteFile(filepath.Join(bin, "lldpcli"), []byte("#!/bin/sh\nexec "+real+" -u "+hostSock+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(lldpcli(t, hostSock, "show", "neighbors"), "d2:31:68:05:c7:9b") {
		if time.Now().After(deadline) {
			t.Fatalf("lldpd on %s never heard the frames:\n%s", lab.HostNetdev, lldpcli(t, hostSock, "show", "neighbors"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s, err = Collect(Options{Sections: SectionTopology}); err != nil {
		t.Fatal(err)
	}
	a = s.Topology.AttachmentOf(lab.HostNetdev)
	if a == nil || a.Switch != "vm" || a.SwitchPort != "tswp1" || a.Source != topology.SourceLLDPD || a.Age < 0 {
		t.Errorf("%s from lldpd: %+v", lab.HostNetdev, a)
	}
}
