//go:build linux

package lab

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netns"
)

// InNetns runs f on an OS thread that is in the named network namespace
// (a name under /run/netns, as made by `ip netns add`), then moves the
// thread back. Sockets f opens stay in that namespace after InNetns
// returns; goroutines f starts do not inherit the namespace. An empty
// name is the caller's own namespace (as for StartIn and CaptureIn): f
// runs as it is.
func InNetns(name string, f func() error) error {
	if name == "" {
		return f()
	}
	target, err := netns.GetFromName(name)
	if err != nil {
		return fmt.Errorf("lab: network namespace %q: %w", name, err)
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("lab: current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(target); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("lab: enter network namespace %q: %w", name, err)
	}
	ferr := f()
	if err := netns.Set(orig); err != nil {
		// The thread stays locked, so the runtime ends it with this
		// goroutine instead of reusing a thread in the wrong namespace.
		return fmt.Errorf("lab: leave network namespace %q: %w", name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// InPeer runs f in the peer namespace (PeerNetns); see InNetns.
func InPeer(f func() error) error { return InNetns(PeerNetns, f) }

// StartInPeer starts cmd (an *exec.Cmd not yet started) with the peer
// namespace as its network namespace. Wait for it as usual.
func StartInPeer(cmd *exec.Cmd) error { return StartIn(PeerNetns, cmd) }

// StartIn starts cmd (an *exec.Cmd not yet started) in the named network
// namespace ("" for the caller's). Wait for it as usual.
func StartIn(namespace string, cmd *exec.Cmd) error {
	if namespace == "" {
		return cmd.Start()
	}
	return InNetns(namespace, cmd.Start)
}

// RunInPeer runs a command in the peer namespace and returns its combined
// output. A non-zero exit is an error that includes the output.
func RunInPeer(ctx context.Context, name string, args ...string) ([]byte, error) {
	return RunIn(ctx, PeerNetns, name, args...)
}

// RunIn runs a command in the named network namespace and returns its
// combined output. A non-zero exit is an error that includes the output.
func RunIn(ctx context.Context, namespace, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := StartIn(namespace, cmd); err != nil {
		return nil, fmt.Errorf("lab: start %s in namespace %s: %w", name, namespace, err)
	}
	if err := cmd.Wait(); err != nil {
		return out.Bytes(), fmt.Errorf("lab: %s %q in namespace %s: %w\n%s", name, args, namespace, err, out.Bytes())
	}
	return out.Bytes(), nil
}
