//go:build linux

package netnstest

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RequireRoot skips the test unless it runs as root with ip and the other
// tools installed. Under ROCE_PROBE_CI=1 (CI runs as root) a missing
// privilege or tool fails the test instead.
func RequireRoot(t testing.TB, tools ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		const msg = "needs root to create network namespaces and raw sockets"
		if os.Getenv("ROCE_PROBE_CI") == "1" {
			t.Fatal(msg + " (ROCE_PROBE_CI=1: CI runs as root)")
		}
		t.Skip(msg + " (CI runs as root; set ROCE_PROBE_CI=1 to make this a failure)")
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

var counter atomic.Int32

// New creates a namespace with a unique name (role is a hint for people
// reading `ip netns`), its loopback up, removed when the test ends.
func New(t testing.TB, role string) string {
	t.Helper()
	name := fmt.Sprintf("rp%d-%s%d", os.Getpid(), role, counter.Add(1))
	Run(t, "ip", "netns", "add", name)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
	Run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// Run runs a command and fails the test if it fails; it returns the output.
func Run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// RunStdin is Run with standard input.
func RunStdin(t testing.TB, stdin string, args ...string) {
	t.Helper()
	c := exec.Command(args[0], args[1:]...)
	c.Stdin = strings.NewReader(stdin)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s\ninput:\n%s", strings.Join(args, " "), err, out, stdin)
	}
}

// Veth creates a veth pair with one end in each namespace, both up (it
// returns once both report operstate up), with
// the given MACs.
func Veth(t testing.TB, ns1, dev1, mac1, ns2, dev2, mac2 string) {
	t.Helper()
	Run(t, "ip", "-n", ns1, "link", "add", "name", dev1, "address", mac1, "type", "veth",
		"peer", "name", dev2, "address", mac2, "netns", ns2)
	Run(t, "ip", "-n", ns1, "link", "set", dev1, "up")
	Run(t, "ip", "-n", ns2, "link", "set", dev2, "up")
	// Until linkwatch has seen the carrier (up to a second later, longer
	// on a loaded machine) the veth's qdisc is noop and drops every frame
	// written to it: a test sending at once lost all its frames
	// (TestWireDrainSelection drained nothing under load).
	WaitOperState(t, ns1, dev1, "up")
	WaitOperState(t, ns2, dev2, "up")
}

// WaitOperState waits, at most 5 s, until netdev in namespace ns reports
// operstate state in sysfs (the kernel's linkwatch settles a change up to a
// second after it), and fails the test otherwise.
func WaitOperState(t testing.TB, ns, netdev, state string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/sys/class/net/"+netdev+"/operstate").Output()
		if got = strings.TrimSpace(string(out)); err == nil && got == state {
			return
		}
	}
	t.Fatalf("%s in %s: operstate %q after 5 s, want %q", netdev, ns, got, state)
}

// In runs fn on an OS thread switched into namespace ns. Sockets fn opens
// stay in ns when used from other goroutines. fn must not call t.Fatal.
func In(t testing.TB, ns string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	var failure any
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// On failure the thread stays locked and dies with the goroutine,
		// so the namespace cannot leak to other goroutines.
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

// Do runs fn on an OS thread switched into namespace ns and returns its
// error; unlike In it may be called from any goroutine.
func Do(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		err = fn()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// RequireNFTables skips the test unless nft can create a netdev table in
// this kernel (the lab VM's kernel has no nf_tables module, for one). Under
// ROCE_PROBE_CI=1 outside the lab (LAB unset) a missing nf_tables fails.
func RequireNFTables(t testing.TB) {
	t.Helper()
	RequireRoot(t, "nft")
	ns := New(t, "nft")
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "add", "table", "netdev", "probe_check").CombinedOutput()
	if err == nil {
		return
	}
	msg := fmt.Sprintf("nftables does not work in this kernel (nft add table netdev: %v: %s)", err, strings.TrimSpace(string(out)))
	if os.Getenv("ROCE_PROBE_CI") == "1" && os.Getenv("LAB") == "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
