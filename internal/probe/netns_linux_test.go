//go:build linux

package probe

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// These tests build network namespaces joined by veth pairs on the machine
// running them and send real frames through them. They need root (to create
// namespaces and raw sockets) and the ip binary; the nftables tests also need
// nft. Without root they skip (CI runs as root, so they run there); a
// missing tool under ROCE_PROBE_CI=1 fails.

func requireNetnsRoot(t *testing.T, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces and raw sockets (CI runs as root)")
	}
	for _, tool := range append([]string{"ip"}, tools...) {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("ROCE_PROBE_CI") == "1" {
				t.Fatalf("%s is not installed (ROCE_PROBE_CI=1): %v", tool, err)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
}

var nsCounter atomic.Int32

// newNetns creates a network namespace with a unique name, removed when
// the test ends.
func newNetns(t *testing.T, role string) string {
	t.Helper()
	name := fmt.Sprintf("rp%d-%s%d", os.Getpid(), role, nsCounter.Add(1))
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runStdin runs a command with the given standard input.
func runStdin(t *testing.T, stdin string, args ...string) {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Stdin = strings.NewReader(stdin)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s\ninput:\n%s", strings.Join(args, " "), err, out, stdin)
	}
}

// vethPair creates a veth pair with one end in each namespace, both up,
// with fixed MACs.
func vethPair(t *testing.T, ns1, dev1, mac1, ns2, dev2, mac2 string) {
	t.Helper()
	run(t, "ip", "-n", ns1, "link", "add", "name", dev1, "address", mac1, "type", "veth",
		"peer", "name", dev2, "address", mac2, "netns", ns2)
	run(t, "ip", "-n", ns1, "link", "set", dev1, "up")
	run(t, "ip", "-n", ns2, "link", "set", dev2, "up")
}

// inNetns runs fn on an OS thread switched into the namespace. Sockets
// opened by fn stay in that namespace when used from other goroutines.
func inNetns(t *testing.T, ns string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	var failure any
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// The thread is left locked and dies with the goroutine, so a
		// failed switch back cannot leak the namespace to other goroutines.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			failure = err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			failure = err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			failure = err
			return
		}
		defer func() {
			if r := recover(); r != nil {
				failure = r
			}
		}()
		fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		}
	}()
	<-done
	if failure != nil {
		t.Fatalf("in namespace %s: %v", ns, failure)
	}
}
