package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// fakeLab replaces the lab entry points for one test.
func fakeLab(t *testing.T, up func(lab.Options) error, down func() error, st lab.Status) {
	t.Helper()
	oldUp, oldDown, oldStatus, oldFUp, oldFDown, oldFExists, oldLSUp, oldLSExists := labUp, labDown, labStatus, labFabricUp, labFabricDown, labFabricExists, labLeafSpineUp, labLeafSpineExists
	labUp, labDown = up, down
	labStatus = func() (lab.Status, error) { return st, nil }
	labFabricUp = func(time.Duration) error { t.Error("lab up --fabric called"); return nil }
	labLeafSpineUp = func(time.Duration) error { t.Error("lab up --leaf-spine called"); return nil }
	labFabricDown = func() error { return nil }
	labFabricExists = func() bool { return false }
	labLeafSpineExists = func() bool { return false }
	t.Cleanup(func() {
		labUp, labDown, labStatus, labFabricUp, labFabricDown, labFabricExists, labLeafSpineUp, labLeafSpineExists = oldUp, oldDown, oldStatus, oldFUp, oldFDown, oldFExists, oldLSUp, oldLSExists
	})
}

// lab up --leaf-spine builds the leaf-spine alone, with --fabric both (the
// bridged fabric first), and says so; an error exits 2 with its reason;
// --no-vlans does not go with it.
func TestLabUpLeafSpine(t *testing.T) {
	var calls []string
	fakeLab(t, nil, nil, lab.Status{})
	labFabricUp = func(time.Duration) error { calls = append(calls, "fabric"); return nil }
	labLeafSpineUp = func(time.Duration) error { calls = append(calls, "leaf-spine"); return nil }
	out, stderr, code := runCLI(t, "", "lab", "up", "--leaf-spine")
	if code != exitOK || strings.Join(calls, ",") != "leaf-spine" || !strings.Contains(out, "leaf-spine up: hosts h5 (rxe5, leaf1)") || strings.Contains(out, "fabric up") {
		t.Errorf("lab up --leaf-spine: exit %d, calls %v, %q %q; want the leaf-spine alone", code, calls, out, stderr)
	}
	calls = nil
	out, _, code = runCLI(t, "", "lab", "up", "--fabric", "--leaf-spine")
	if code != exitOK || strings.Join(calls, ",") != "fabric,leaf-spine" || !strings.Contains(out, "fabric up: hosts h1") || !strings.Contains(out, "leaf-spine up") {
		t.Errorf("lab up --fabric --leaf-spine: exit %d, calls %v, %q; want both, the fabric first", code, calls, out)
	}
	labLeafSpineUp = func(time.Duration) error { return fmt.Errorf("lab: %w (Linux 6.1.0-56-amd64 ...)", lab.ErrNoNetnsRXE) }
	_, stderr, code = runCLI(t, "", "lab", "up", "--leaf-spine")
	if code != exitUsage || !strings.Contains(stderr, "only in the initial network namespace") {
		t.Errorf("lab up --leaf-spine on 6.1: exit %d, stderr %q; want 2 and the reason", code, stderr)
	}
	_, stderr, code = runCLI(t, "", "lab", "up", "--leaf-spine", "--no-vlans")
	if code != exitUsage || !strings.Contains(stderr, "--no-vlans") {
		t.Errorf("--leaf-spine --no-vlans: exit %d, stderr %q; want 2 naming --no-vlans", code, stderr)
	}
}

// lab up --fabric on a kernel whose rxe works only in the initial network
// namespace (or without root) exits 2 with the reason; --no-vlans does not
// go with --fabric.
func TestLabUpFabricErrorsExit2(t *testing.T) {
	fakeLab(t, nil, nil, lab.Status{})
	labFabricUp = func(time.Duration) error {
		return fmt.Errorf("lab: %w (Linux 6.1.0-56-amd64 ...)", lab.ErrNoNetnsRXE)
	}
	_, stderr, code := runCLI(t, "", "lab", "up", "--fabric")
	if code != exitUsage || !strings.Contains(stderr, "only in the initial network namespace") {
		t.Errorf("exit %d, stderr %q; want 2 and the reason", code, stderr)
	}
	_, stderr, code = runCLI(t, "", "lab", "up", "--fabric", "--no-vlans")
	if code != exitUsage || !strings.Contains(stderr, "--no-vlans") {
		t.Errorf("--fabric --no-vlans: exit %d, stderr %q; want 2 naming --no-vlans", code, stderr)
	}
}

func TestLabUpErrorsExit2(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"no rxe", fmt.Errorf("%w (modprobe rdma_rxe: exit status 1)", lab.ErrNoRXE), "rdma_rxe"},
		{"not root", lab.ErrNotRoot, "needs root"},
		{"no 8021q", fmt.Errorf("%w (x)", lab.ErrNoVLAN), "8021q"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fakeLab(t, func(lab.Options) error { return c.err }, nil, lab.Status{})
			stdout, stderr, code := runCLI(t, "", "lab", "up")
			if code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if !strings.Contains(stderr, c.want) {
				t.Errorf("stderr %q does not mention %q", stderr, c.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

// lab down says what it removed, and that there was nothing when nothing
// existed (it used to print "lab removed" either way).
func TestLabDownSaysWhatItRemoved(t *testing.T) {
	down := func() error { return nil }
	fakeLab(t, nil, down, lab.Status{RDMADevice: "rxe0", PeerNetns: "peer"})
	out, stderr, code := runCLI(t, "", "lab", "down")
	if code != exitOK || !strings.Contains(out, "nothing to remove") || strings.Contains(out, "removed ") {
		t.Errorf("lab down with nothing up: exit %d, %q %q; want exit 0 and 'nothing to remove'", code, out, stderr)
	}
	fakeLab(t, nil, down, lab.Status{RDMADevice: "rxe0", PeerNetns: "peer", RDMAExists: true, PeerExists: true})
	out, _, code = runCLI(t, "", "lab", "down")
	if code != exitOK || !strings.Contains(out, "removed the lab (rxe0, namespace peer") || strings.Contains(out, "fabric") {
		t.Errorf("lab down with the lab up: exit %d, %q", code, out)
	}
	labFabricExists = func() bool { return true }
	out, _, _ = runCLI(t, "", "lab", "down")
	if !strings.Contains(out, "and the fabric (hosts h1") || strings.Contains(out, "leaf-spine") {
		t.Errorf("lab down with both up: %q", out)
	}
	labLeafSpineExists = func() bool { return true }
	out, _, _ = runCLI(t, "", "lab", "down")
	if !strings.Contains(out, "and the leaf-spine (hosts h5 (rxe5, leaf1)") || !strings.Contains(out, "routers leaf1, leaf2, spine1, spine2") {
		t.Errorf("lab down with the leaf-spine up too: %q", out)
	}
}

func TestLabDownNotRootExit2(t *testing.T) {
	fakeLab(t, nil, func() error { return lab.ErrNotRoot }, lab.Status{})
	_, stderr, code := runCLI(t, "", "lab", "down")
	if code != exitUsage || !strings.Contains(stderr, "root") {
		t.Errorf("lab down as non-root: exit %d, stderr %q; want exit 2 naming root", code, stderr)
	}
}

func TestLabBadFlagsExit2(t *testing.T) {
	called := false
	fakeLab(t, func(lab.Options) error { called = true; return nil }, nil, lab.Status{})
	for _, args := range [][]string{
		{"lab", "up", "-o", "yaml"},
		{"lab", "up", "--timeout", "0s"},
		{"lab", "status", "-o", "xml"},
		{"lab", "status", "extra"},
	} {
		_, stderr, code := runCLI(t, "", args...)
		if code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with a message", args, code, stderr)
		}
	}
	if called {
		t.Error("lab up ran despite bad flags")
	}
}

func TestLabStatus(t *testing.T) {
	up := lab.Status{RDMADevice: "rxe0", RDMAExists: true, RDMANetdev: "veth0", PortState: "ACTIVE",
		PeerNetns: "peer", PeerExists: true, Netdevs: []lab.NetdevUp{{Name: "veth0", Exists: true, Up: true}}}
	fakeLab(t, nil, nil, up)
	stdout, _, code := runCLI(t, "", "lab", "status", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d for a lab that is up, want 0", code)
	}
	var got struct {
		RDMANetdev string `json:"rdma_netdev"`
		PortState  string `json:"port_state"`
		Up         bool   `json:"up"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	if !got.Up || got.RDMANetdev != "veth0" || got.PortState != "ACTIVE" {
		t.Errorf("json %+v, want up, veth0, ACTIVE", got)
	}

	fakeLab(t, nil, nil, lab.Status{RDMADevice: "rxe0", PeerNetns: "peer"})
	stdout, stderr, code := runCLI(t, "", "lab", "status")
	if code != exitFinding {
		t.Errorf("exit %d for a missing lab, want %d", code, exitFinding)
	}
	if !strings.Contains(stdout, "rxe0: exists no") || !strings.Contains(stderr, "not up") {
		t.Errorf("stdout %q / stderr %q do not say the lab is missing", stdout, stderr)
	}
}
