package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/agent"
	"github.com/roce-probe/roce-probe/probe"
)

// An rdma_cm flow whose application sets no ToS gets the port's configfs
// default_roce_tos (drivers/infiniband/core/cma.c, cma_resolve_iboe_route:
// tos = id_priv->tos_set ? id_priv->tos : default_roce_tos). In
// mlx5-counters.json that is 106 on mlx5_0 port 1 (host/testdata/README.md):
// DSCP 26, which enp1s0f0's APP table maps to priority 3, where PFC is on:
// lossless, with one warning (priority 2 of ToS 106 has no egress-map entry
// on enp1s0f0.100). mlx5-tcoverride.json adds MLNX_OFED's Global tclass=96
// on port 1, which replaces a connected QP's traffic class: DSCP 24, not in
// the APP table: unknown. The agent's verdict of such a flow is `check
// --rdma-cm`'s on the same snapshot, warnings included; without the default
// ToS it would be DSCP 0's (no APP entry: unknown) on mlx5-counters.json.
func TestAgentRDMACMVerdictIsCheck(t *testing.T) {
	for _, c := range []struct {
		fixture  string
		want     string
		warnings int
	}{
		{"mlx5-counters", "lossless", 1},
		{"mlx5-tcoverride", "unknown", 3},
	} {
		r, _, code := runCheck(t, append(fromArgs(c.fixture), "--dev", "mlx5_0", "--gid-index", "5", "--rdma-cm")...)
		if r.Verdict != c.want || len(r.Warnings) != c.warnings || code != map[bool]int{true: exitOK, false: exitFinding}[c.want == "lossless"] {
			t.Errorf("%s: check --rdma-cm: exit %d, verdict %s, warnings %q; want %s with %d", c.fixture, code, r.Verdict, r.Warnings, c.want, c.warnings)
		}
		verdict, warnings := agentFlowVerdict(t, c.fixture, agent.FlowConfig{Name: "cm", RDMACM: true,
			Select: agent.SelectConfig{Device: "mlx5_0", Port: 1, GIDIndex: intPtr(5)}})
		if verdict != r.Verdict || warnings != len(r.Warnings) {
			t.Errorf("%s: the agent's rdma_cm flow is %s with %d warnings; check --rdma-cm says %s with %d", c.fixture, verdict, warnings, r.Verdict, len(r.Warnings))
		}
	}
}

func intPtr(i int) *int { return &i }

// agentFlowVerdict runs the agent on a snapshot fixture with one flow and
// no peers until its first read, and returns the flow's verdict and
// warnings count from its metrics (-1 without a warnings series).
func agentFlowVerdict(t *testing.T, fixture string, f agent.FlowConfig) (string, int) {
	t.Helper()
	cfg := agent.Default()
	cfg.Flows = []agent.FlowConfig{f}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(cfg, agent.Deps{Version: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Listener: ln,
		Collect: func(collect.Options) (*host.Snapshot, error) { return host.Load(hostTestdata + fixture + ".json") },
		Open: func(string, probe.Selection) (agent.Port, error) {
			return nil, errors.New("no raw sockets in this test")
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("the agent did not stop within 10s")
		}
	}()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		fams, err := a.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		verdict, warnings := "", -1
		for _, fam := range fams {
			for _, m := range fam.GetMetric() {
				switch fam.GetName() {
				case "roce_probe_flow_verdict":
					if m.GetGauge().GetValue() == 1 {
						for _, l := range m.GetLabel() {
							if l.GetName() == "verdict" {
								verdict = l.GetValue()
							}
						}
					}
				case "roce_probe_flow_warnings":
					warnings = int(m.GetGauge().GetValue())
				}
			}
		}
		if verdict != "" {
			return verdict, warnings // -1: no warnings series (the flow was not checked)
		}
	}
	t.Fatalf("%s: no flow verdict within 10s", fixture)
	return "", 0
}
