package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// An agent's automatic traces with the real tracer (trace.Run, raw
// sockets) in a routed two-spine fabric of namespaces (netnstest.TwoPaths:
// S behind L1, D behind L2, spines A and B), spine A rewriting DSCP to 0 on
// its port toward L2: the agent in S (ToR l1) probes D (ToR l2) as an
// inter-ToR pair, its probes through A arrive remarked, it traces those
// source ports, and /pairs names, for every traced one, the spine A (by
// trace.routers: A answers from 10.2.0.2, the address of its port toward
// L1, icmp_errors_use_inbound_ifaddr) and the remark between A and L2's
// port from A (10.3.0.2): the injected fault, as the fabric is wired.
func TestAgentTracesRemarkingSpine(t *testing.T) {
	skipInLab(t)
	f := netnstest.NewTwoPaths(t)
	netnstest.Remark(t, f.A, "a2", "dscp")
	startAgentIn(t, f.D, "--serve-only")
	cfg := filepath.Join(t.TempDir(), "agent.yaml")
	if err := os.WriteFile(cfg, []byte(`peers:
  static: ["s=10.1.0.1 tor=l1", "d=10.4.0.1 tor=l2"]
probe:
  sample_rate: 10
  ecmp_paths: 2
  timeout: 500ms
flows:
  - name: v4
    select: {netdev: s0, family: ipv4}
    tclass: 106
    sl: 3
trace:
  timeout: 300ms
  routers: {"10.2.0.2": spineA, "10.2.1.2": spineB}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ps := startAgentIn(t, f.S, "--config", cfg)
	type change struct {
		Field         string  `json:"field"`
		From          int     `json:"from_value"`
		To            int     `json:"to_value"`
		BeforeAddress *string `json:"before_address"`
		AtAddress     *string `json:"at_address"`
	}
	var doc agentPairsDoc
	eventually(t, 60*time.Second, "S's remarked ports traced", func() bool {
		select {
		case <-ps.done:
			t.Fatalf("S's agent exited: %v", ps.err)
		default:
		}
		code, b, err := ps.get("/pairs")
		if err != nil || code != 200 || json.Unmarshal(b, &doc) != nil {
			return false
		}
		for _, p := range doc.Pairs {
			for _, sf := range p.SportFaults {
				if sf.Traced && sf.Remarked > 0 {
					return true
				}
			}
		}
		return false
	})
	if doc.ToR == nil || *doc.ToR != "l1" || len(doc.Addresses) != 1 || doc.Addresses[0] != "10.1.0.1" {
		t.Errorf("S: tor %v addresses %v, want l1 [10.1.0.1]", doc.ToR, doc.Addresses)
	}
	if !doc.Trace.Enabled || doc.Trace.Runs == 0 || doc.Trace.Failures != 0 {
		t.Errorf("S's tracer %+v: want enabled, runs, no failure", doc.Trace)
	}
	if len(doc.Pairs) != 1 || doc.Pairs[0].Address != "10.4.0.1" || doc.Pairs[0].Scope != "inter_tor" {
		t.Fatalf("S's pairs %+v: want D, inter_tor", doc.Pairs)
	}
	for _, sf := range doc.Pairs[0].SportFaults {
		if !sf.Traced {
			continue
		}
		var ch *change
		if err := json.Unmarshal(sf.Remark, &ch); err != nil {
			t.Fatal(err)
		}
		if sf.Remarked == 0 { // a probe lost while the namespaces' neighbours resolved: no remark on its path
			if ch != nil && (sf.Spine == nil || *sf.Spine != "spineA") {
				t.Errorf("port %d, only lost: spine %v, remark %s: a remark only on spineA's paths", sf.Sport, sf.Spine, sf.Remark)
			}
			continue
		}
		if sf.Spine == nil || *sf.Spine != "spineA" || ch == nil || ch.Field != "dscp" || ch.From != 26 || ch.To != 0 ||
			ch.BeforeAddress == nil || *ch.BeforeAddress != "10.2.0.2" || ch.AtAddress == nil || *ch.AtAddress != "10.3.0.2" {
			t.Errorf("port %d: spine %v, remark %s: want spineA, dscp 26→0 between 10.2.0.2 (A) and 10.3.0.2 (L2 from A)", sf.Sport, sf.Spine, sf.Remark)
		}
	}
}
