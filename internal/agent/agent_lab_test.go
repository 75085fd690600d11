//go:build lab

package agent

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// An RDMA device removed and added again (the single-host lab's rxe0 on
// veth0): the agent's flow, bound to rxe0, has no source while it is gone
// (no_source errors, verdict unknown, its GID entries gone from the
// metrics) and probes again once the periodic read finds it back; the
// agent serves throughout. The peer namespace runs a listening agent.
func TestLabAgentRXEReadded(t *testing.T) {
	if st, err := lab.PortState(lab.RDMADevice, 1); err != nil || st != "ACTIVE" {
		t.Fatalf("%s port 1: %q %v: the single-host lab is not up", lab.RDMADevice, st, err)
	}
	bin, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	n := lab.Nets[0]
	// The VM's own namespace may have its loopback down: the agent listens
	// on veth0's address and is asked from the peer namespace.
	listen := n.HostIPv4.Addr().String() + ":9469"
	host := runAgentProc(t, "", exec.Command(bin, "agent", "--listen", listen, "--log-level", "debug", "--interval", "2s",
		"--probe-rate", "2", "--probe-timeout", "3s", "--peer", "peer="+n.PeerIPv4.Addr().String(),
		"--flow", "name=rxe,device="+lab.RDMADevice+",netdev="+n.HostNetdev+",family=ipv4,tclass=106,sl=3"), (*exec.Cmd).Start)
	runAgentProc(t, lab.PeerNetns, exec.Command(bin, "agent", "--listen", "127.0.0.1:9469", "--interval", "2s", "--serve-only"),
		func(c *exec.Cmd) error { return lab.StartIn(lab.PeerNetns, c) })
	host.addr, host.dialNS = listen, lab.PeerNetns
	answered := func() float64 { return host.value(t, metricProbesAnswered, "peer", "peer", "flow", "rxe") }
	eventually(t, 2*time.Minute, "answers from the peer", func() bool { return answered() >= 2 })
	if v := host.value(t, metricFlowSource, "flow", "rxe", "device", lab.RDMADevice); v != 1 {
		t.Fatalf("the flow does not send from %s", lab.RDMADevice)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	restored := false
	readd := func() {
		if out, err := exec.CommandContext(ctx, "rdma", "link", "add", lab.RDMADevice, "type", "rxe", "netdev", lab.HostNetdev).CombinedOutput(); err != nil {
			t.Fatalf("rdma link add: %v: %s", err, out)
		}
		if err := lab.WaitPortActive(lab.RDMADevice, 1, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		restored = true
	}
	t.Cleanup(func() {
		if !restored { // leave the lab as the other tests expect it
			exec.Command("rdma", "link", "add", lab.RDMADevice, "type", "rxe", "netdev", lab.HostNetdev).Run()
			lab.WaitPortActive(lab.RDMADevice, 1, 30*time.Second)
		}
	})
	if out, err := exec.CommandContext(ctx, "rdma", "link", "delete", lab.RDMADevice).CombinedOutput(); err != nil {
		t.Fatalf("rdma link delete: %v: %s", err, out)
	}
	eventually(t, time.Minute, "no_source while rxe0 is gone", func() bool {
		f := host.metrics(t)
		errs, _ := value(f, metricProbeErrors, "reason", reasonNoSource)
		unknown, _ := value(f, metricFlowVerdict, "flow", "rxe", "verdict", "unknown")
		_, gids := value(f, metricGIDInfo, "device", lab.RDMADevice)
		return errs > 0 && unknown == 1 && !gids
	})
	if code, _, err := host.get("/healthz"); err != nil || code != 200 {
		t.Errorf("/healthz without rxe0: %d %v", code, err)
	}
	readd()
	a := answered()
	eventually(t, 2*time.Minute, "answers after rxe0 came back", func() bool { return answered() >= a+2 })
	if v := host.value(t, metricFlowSource, "flow", "rxe", "device", lab.RDMADevice); v != 1 {
		t.Error("the flow does not send from rxe0 again")
	}
}
