//go:build lab

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// roce-probe audit on a Soft-RoCE host of the fabric (Linux 7.x) with two
// applications sending to h2 over VLAN 100: ib_send_lat with traffic
// class 106 and ib_send_lat with traffic class 0 (niced: they spin on
// their completion queues). h1's eth0.100 maps skb priority 0, the one rxe
// sends with, to PCP 3 (the topology's egress-qos-map), so both carry PCP
// 3, and the traffic class goes whole into the IP header: DSCP 26 and 0
// (docs/qos.md, rxe). Audited in h1 expecting traffic class 106, the audit
// exits 1 and names the second client's PID with DSCP 0 and PCP 3, and
// never the first's, whose frames it shows with DSCP 26 and PCP 3 as
// expected.
func TestFabricAudit(t *testing.T) {
	sw := lab.UseFabric(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	h1, h2 := sw.Host("h1"), sw.Host("h2")
	vlan100, err := lab.FabricNetByName("vlan100")
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := gidIdx(t, h1, h1.IPv4(vlan100).Addr(), vlan100.Netdev), gidIdx(t, h2, h2.IPv4(vlan100).Addr(), vlan100.Netdev)
	good := lab.Perftest("ib_send_lat", h1, h2, g1, g2, 21620, 1000000, 64, "--tclass=106").Niced().Start(t, ctx)
	bad := lab.Perftest("ib_send_lat", h1, h2, g1, g2, 21621, 1000000, 64, "--tclass=0").Niced().Start(t, ctx)
	_, goodPID := good.PIDs()
	_, badPID := bad.PIDs()
	rp, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, rp, "audit", "--tclass", "106", "--interval", "1s", "-o", "json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.StartIn(h1.Name, cmd); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	_ = os.WriteFile(filepath.Join(lab.ArtifactDir(t), "audit-h1.json"), out.Bytes(), 0o644)
	if cmd.ProcessState.ExitCode() != exitFinding {
		t.Fatalf("audit in h1: %v, want exit 1: %s\n%s", err, errb.String(), out.String())
	}
	var r struct {
		Wire struct {
			Sampled bool `json:"sampled"`
			QPs     []struct {
				PID     *int   `json:"pid"`
				DSCP    int    `json:"dscp"`
				PCP     *int   `json:"pcp"`
				VLAN    *int   `json:"vlan"`
				Verdict string `json:"verdict"`
				Packets int    `json:"packets"`
			} `json:"qps"`
		} `json:"wire"`
		Findings []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			QP      *struct {
				PID *int `json:"pid"`
			} `json:"qp"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("audit -o json: %v\n%s", err, out.String())
	}
	if !r.Wire.Sampled {
		t.Fatalf("no wire sample: %s", out.String())
	}
	named := false
	for _, f := range r.Findings {
		if f.QP == nil || f.QP.PID == nil {
			t.Errorf("finding %q names no process", f.Message)
			continue
		}
		switch *f.QP.PID {
		case goodPID:
			t.Errorf("finding names the client with traffic class 106 (pid %d): %s", goodPID, f.Message)
		case badPID:
			named = true
			for _, w := range []string{"DSCP 0", "PCP 3", "expects DSCP 26"} {
				if f.Code != "qp_markings_differ" || !strings.Contains(f.Message, w) {
					t.Errorf("finding %s %q: want qp_markings_differ saying %q", f.Code, f.Message, w)
				}
			}
		default:
			t.Errorf("finding names pid %d, neither client (%d, %d): %s", *f.QP.PID, goodPID, badPID, f.Message)
		}
	}
	if !named {
		t.Errorf("no finding names the client with traffic class 0 (pid %d): %s", badPID, out.String())
	}
	seen := map[int]bool{}
	for _, q := range r.Wire.QPs {
		if q.PID == nil || q.PCP == nil || q.VLAN == nil {
			continue
		}
		switch {
		case *q.PID == goodPID && q.DSCP == 26 && *q.PCP == 3 && *q.VLAN == 100 && q.Verdict == "ok":
			seen[goodPID] = true
		case *q.PID == badPID && q.DSCP == 0 && *q.PCP == 3 && *q.VLAN == 100 && q.Verdict == "markings_differ":
			seen[badPID] = true
		}
	}
	if !seen[goodPID] || !seen[badPID] {
		t.Errorf("wire sample: want pid %d with DSCP 26, PCP 3 (ok) and pid %d with DSCP 0, PCP 3 (markings_differ) on VLAN 100: %s", goodPID, badPID, out.String())
	}
}
