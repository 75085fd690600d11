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
	"github.com/roce-probe/roce-probe/topology"
)

// startLLDPD runs lldpd (Debian's) on netdev in namespace ns ("" the
// initial one) with its own control socket and configuration, and stops
// it when the test ends; it returns the socket.
func startLLDPD(t *testing.T, ns, netdev, conf string) string {
	t.Helper()
	dir := t.TempDir()
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

// A switch on the other end of the lab's veth: lldpd in the peer
// namespace, named leaf-lab, its port IDs interface names. collect hears
// its LLDP frame on veth0 (the netdev below rxe0) and names the switch
// and port; with an lldpd of its own on veth0 (receive only) and no
// listening, collect reads lldpd's table through lldpcli instead.
func TestLabLLDP(t *testing.T) {
	for _, tool := range []string{"lldpd", "lldpcli"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (Debian package lldpd, in scripts/lab.sh's lists): %v", tool, err)
		}
	}
	startLLDPD(t, lab.PeerNetns, lab.PeerNetdev, "configure system hostname leaf-lab\nconfigure lldp portidsubtype ifname\nconfigure lldp tx-interval 1\n")
	hostSock := startLLDPD(t, "", lab.HostNetdev, "configure lldp status rx-only\n")

	start := time.Now()
	s, err := Collect(Options{Sections: SectionTopology, LLDPWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	a := s.Topology.AttachmentOf(lab.HostNetdev)
	if a == nil || a.Switch != "leaf-lab" || a.SwitchPort != lab.PeerNetdev || a.Source != topology.SourceLLDP || a.Neighbor == nil || a.Neighbor.PortIDType != "ifname" {
		t.Fatalf("%s: %+v (took %v)", lab.HostNetdev, a, took)
	}
	if took > 10*time.Second {
		t.Errorf("collect took %v: it returns once every RoCE netdev heard a frame (tx-interval 1s)", took)
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
	for !strings.Contains(lldpcli(t, hostSock, "show", "neighbors"), "leaf-lab") {
		if time.Now().After(deadline) {
			t.Fatalf("lldpd on %s never heard leaf-lab:\n%s", lab.HostNetdev, lldpcli(t, hostSock, "show", "neighbors"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if s, err = Collect(Options{Sections: SectionTopology}); err != nil {
		t.Fatal(err)
	}
	a = s.Topology.AttachmentOf(lab.HostNetdev)
	if a == nil || a.Switch != "leaf-lab" || a.SwitchPort != lab.PeerNetdev || a.Source != topology.SourceLLDPD || a.Age < 0 {
		t.Errorf("%s from lldpd: %+v", lab.HostNetdev, a)
	}
}
