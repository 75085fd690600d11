//go:build linux

package main

import (
	"testing"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// vocabularyLab checks lab status and lab up -o json with the lab package
// faked, as lab_linux_test.go does (the lab itself needs root and a kernel
// with rxe; the lab command exists on Linux only).
func vocabularyLab(t *testing.T) {
	t.Helper()
	up := lab.Status{RDMADevice: "rxe0", RDMAExists: true, RDMANetdev: "veth0", PortState: "ACTIVE", PeerNetns: "peer", PeerExists: true,
		Netdevs: []lab.NetdevUp{{Name: "veth0", Exists: true, Up: true}, {Name: "veth0.100", Exists: true, Up: true}}}
	for _, c := range []struct {
		st   lab.Status
		args []string
		cmd  string
		code int
	}{
		{up, []string{"lab", "status", "-o", "json"}, "lab status -o json", exitOK},
		// Nothing there: rdma_netdev and port_state are null, up false.
		{lab.Status{RDMADevice: "rxe0", PeerNetns: "peer"}, []string{"lab", "status", "-o", "json"}, "lab status -o json", exitFinding},
		{up, []string{"lab", "up", "-o", "json"}, "lab up -o json", exitOK},
	} {
		fakeLab(t, func(lab.Options) error { return nil }, nil, c.st)
		out, stderr, code := runCLI(t, "", c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d: %s", c.args, code, c.code, stderr)
			continue
		}
		checkOutput(t, c.cmd, out)
	}
}
