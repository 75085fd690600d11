//go:build lab

package main

import (
	"encoding/json"
	"strings"
	"testing"
)

type labStatusJSON struct {
	RDMAExists bool   `json:"rdma_exists"`
	RDMANetdev string `json:"rdma_netdev"`
	PortState  string `json:"port_state"`
	PeerExists bool   `json:"peer_exists"`
	Netdevs    []struct {
		Name   string `json:"name"`
		Exists bool   `json:"exists"`
		Up     bool   `json:"up"`
	} `json:"netdevs"`
	Up bool `json:"up"`
}

func labStatusNow(t *testing.T) (labStatusJSON, int) {
	t.Helper()
	stdout, stderr, code := runCLI(t, "", "lab", "status", "-o", "json")
	var s labStatusJSON
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("lab status -o json: %v: %q (stderr %q)", err, stdout, stderr)
	}
	return s, code
}

// The real path of roce-probe lab in the lab's kernel: the fabric
// scripts/lab.sh built with "roce-probe lab up" is reported up; a second
// up refuses; down removes rxe0, the veth pair and the namespace; up builds
// it again (and leaves it up for the tests that follow).
func TestLabCommandRealKernel(t *testing.T) {
	s, code := labStatusNow(t)
	if code != exitOK || !s.Up || !s.RDMAExists || s.RDMANetdev != "veth0" || s.PortState != "ACTIVE" || !s.PeerExists {
		t.Fatalf("status of the running lab: exit %d, %+v; want up, rxe0 on veth0 ACTIVE, peer namespace", code, s)
	}
	for _, d := range s.Netdevs {
		if !d.Exists || !d.Up {
			t.Errorf("netdev %s: exists %v up %v, want both", d.Name, d.Exists, d.Up)
		}
	}
	if len(s.Netdevs) != 5 {
		t.Errorf("%d host netdevs, want 5 (veth0, veth0.100, veth0.200, veth0.q1000, veth0.q1000.10)", len(s.Netdevs))
	}

	_, stderr, code := runCLI(t, "", "lab", "up")
	if code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Errorf("second lab up: exit %d, stderr %q; want 2 and 'already exists'", code, stderr)
	}

	stdout, stderr, code := runCLI(t, "", "lab", "down")
	if code != exitOK || !strings.Contains(stdout, "removed the lab") {
		t.Fatalf("lab down: exit %d: %s %s", code, stdout, stderr)
	}
	if stdout, _, code := runCLI(t, "", "lab", "down"); code != exitOK || !strings.Contains(stdout, "nothing to remove") {
		t.Errorf("second lab down: exit %d, %q; want 'nothing to remove'", code, stdout)
	}
	s, code = labStatusNow(t)
	if code != exitFinding || s.Up || s.RDMAExists || s.PeerExists || s.Netdevs[0].Exists {
		t.Errorf("after lab down: exit %d, %+v; want exit 1, nothing left", code, s)
	}

	stdout, stderr, code = runCLI(t, "", "lab", "up", "-o", "json")
	if code != exitOK {
		t.Fatalf("lab up after down: exit %d: %s %s", code, stdout, stderr)
	}
	s, code = labStatusNow(t)
	if code != exitOK || !s.Up {
		t.Errorf("after lab up: exit %d, %+v; want up", code, s)
	}
}
