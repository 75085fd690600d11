//go:build linux

package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKernel points Up's hooks at a fake: uid, a sysfs with the given
// modules loaded, and a modprobe that loads only the modules in loadable.
func fakeKernel(t *testing.T, uid int, loaded, loadable []string) *[]string {
	t.Helper()
	root := t.TempDir()
	for _, m := range loaded {
		if err := os.MkdirAll(filepath.Join(root, "module", m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var calls []string
	oldRoot, oldUID, oldProbe := sysfsRoot, geteuid, modprobe
	sysfsRoot, geteuid = root, func() int { return uid }
	modprobe = func(name string) error {
		calls = append(calls, name)
		for _, m := range loadable {
			if m == name {
				return nil
			}
		}
		return fmt.Errorf("modprobe %s: exit status 1: modprobe: FATAL: Module %s not found", name, name)
	}
	t.Cleanup(func() { sysfsRoot, geteuid, modprobe = oldRoot, oldUID, oldProbe })
	return &calls
}

func TestUpNotRoot(t *testing.T) {
	calls := fakeKernel(t, 1000, nil, []string{"rdma_rxe", "8021q"})
	err := Up(Options{})
	if !errors.Is(err, ErrNotRoot) {
		t.Fatalf("Up as uid 1000 = %v, want ErrNotRoot", err)
	}
	if !strings.Contains(err.Error(), "root") || !strings.Contains(err.Error(), "CAP_NET_ADMIN") {
		t.Errorf("error %q does not say root / CAP_NET_ADMIN is needed", err)
	}
	if len(*calls) != 0 {
		t.Errorf("Up ran modprobe %v before checking for root", *calls)
	}
	if err := Down(); !errors.Is(err, ErrNotRoot) {
		t.Errorf("Down as uid 1000 = %v, want ErrNotRoot", err)
	}
}

func TestUpNoRXE(t *testing.T) {
	fakeKernel(t, 0, []string{"8021q"}, nil)
	err := Up(Options{})
	if !errors.Is(err, ErrNoRXE) {
		t.Fatalf("Up without rdma_rxe = %v, want ErrNoRXE", err)
	}
	for _, want := range []string{"rdma_rxe", "scripts/lab.sh", "Module rdma_rxe not found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestUpNoVLAN(t *testing.T) {
	fakeKernel(t, 0, []string{"rdma_rxe"}, nil)
	err := Up(Options{})
	if !errors.Is(err, ErrNoVLAN) {
		t.Fatalf("Up without 8021q = %v, want ErrNoVLAN", err)
	}
	if !strings.Contains(err.Error(), "8021q") {
		t.Errorf("error %q does not name 8021q", err)
	}
}

func TestUpNegativeTimeout(t *testing.T) {
	fakeKernel(t, 0, []string{"rdma_rxe", "8021q"}, nil)
	err := Up(Options{Timeout: -1})
	if err == nil || !strings.Contains(err.Error(), "timeout -1ns") {
		t.Fatalf("Up with timeout -1ns = %v, want an error naming the timeout", err)
	}
}

func TestPortStateParsesSysfs(t *testing.T) {
	root := t.TempDir()
	old := sysfsRoot
	sysfsRoot = root
	t.Cleanup(func() { sysfsRoot = old })
	dir := filepath.Join(root, "class/infiniband/rxe0/ports/1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{{"4: ACTIVE\n", "ACTIVE"}, {"1: DOWN\n", "DOWN"}} {
		if err := os.WriteFile(filepath.Join(dir, "state"), []byte(c.file), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := PortState("rxe0", 1)
		if err != nil || got != c.want {
			t.Errorf("PortState with %q = %q, %v; want %q", c.file, got, err, c.want)
		}
	}
	if _, err := PortState("rxe0", 2); err == nil {
		t.Error("PortState of a missing port: no error")
	}
}
