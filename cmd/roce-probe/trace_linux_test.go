//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// traceDoc is what the tests (TestTraceJSON, the lab's leaf-spine tests)
// read of `trace -o json`.
type traceDoc struct {
	Paths []struct {
		UDPSport   int      `json:"udp_sport"`
		UDPSports  []int    `json:"udp_sports"`
		FlowLabels []uint32 `json:"flow_labels"`
		Reached    bool     `json:"reached"`
		Hops       []struct {
			Status  string  `json:"status"`
			Address *string `json:"address"`
			DSCP    *int    `json:"dscp"`
			ECN     *int    `json:"ecn"`
			Arrived *struct {
				DSCP int `json:"dscp"`
				ECN  int `json:"ecn"`
			} `json:"arrived"`
		} `json:"hops"`
		Changes []struct {
			Field     string `json:"field"`
			From      int    `json:"from_value"`
			To        int    `json:"to_value"`
			BeforeTTL int    `json:"before_ttl"`
			AtTTL     int    `json:"at_ttl"`
			CEMarked  bool   `json:"ce_marked"`
		} `json:"changes"`
	} `json:"paths"`
	PortsTried int    `json:"ports_tried"`
	Stop       string `json:"stop"`
}

// `roce-probe trace` in a routed two-spine fabric of namespaces
// (netnstest.TwoPaths) whose spine B rewrites DSCP to 0 on its port toward
// L2, with `roce-probe listen` on the destination: -o json follows
// docs/json.md, finds both spines, and locates the remark after B on the
// paths through B only; exit 1. The table names the same hop.
func TestTraceJSON(t *testing.T) {
	f := netnstest.NewTwoPaths(t)
	netnstest.Remark(t, f.B, "b2", "dscp")
	wait := startListener(t, f.D, time.Minute, "--netdev", "d0")
	for _, c := range []struct {
		dst, spineA, spineB string
	}{{"10.4.0.1", "10.2.0.2", "10.2.1.2"}, {"fd00:4::1", "fd00:21::2", "fd00:22::2"}} {
		r := runIn(t, f.S, "trace", "--netdev", "s0", "--dst", c.dst, "--tclass", "106", "--paths", "4", "--timeout", "300ms", "-o", "json")
		if r.code != exitFinding {
			t.Fatalf("trace --dst %s: exit %d, want %d (a remark): %s%s", c.dst, r.code, exitFinding, r.stdout, r.stderr)
		}
		checkOutput(t, "trace -o json", r.stdout)
		var doc traceDoc
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Paths) != 2 {
			t.Fatalf("--dst %s: %d paths, want 2:\n%s", c.dst, len(doc.Paths), r.stdout)
		}
		ports := 0
		for _, p := range doc.Paths {
			ports += len(p.UDPSports)
			if !p.Reached || len(p.Hops) != 4 || p.Hops[1].Address == nil || p.Hops[3].Arrived == nil {
				t.Fatalf("--dst %s: path %+v: want 4 hops to the listener", c.dst, p)
			}
			switch *p.Hops[1].Address {
			case c.spineB:
				if len(p.Changes) != 1 || p.Changes[0].Field != "dscp" || p.Changes[0].From != 26 || p.Changes[0].To != 0 || p.Changes[0].BeforeTTL != 2 || p.Changes[0].AtTTL != 3 {
					t.Errorf("--dst %s: path through B: changes %+v, want dscp 26→0 between hops 2 and 3", c.dst, p.Changes)
				}
				if p.Hops[3].Arrived.DSCP != 0 {
					t.Errorf("--dst %s: the listener saw DSCP %d through B, want 0", c.dst, p.Hops[3].Arrived.DSCP)
				}
			case c.spineA:
				if len(p.Changes) != 0 {
					t.Errorf("--dst %s: path through A: changes %+v, want none", c.dst, p.Changes)
				}
			default:
				t.Errorf("--dst %s: hop 2 is %s, want a spine", c.dst, *p.Hops[1].Address)
			}
		}
		if ports != doc.PortsTried {
			t.Errorf("--dst %s: the paths list %d ports, %d were tried", c.dst, ports, doc.PortsTried)
		}
	}
	// The table, for one port: the change is named at hop 3.
	r := runIn(t, f.S, "trace", "--netdev", "s0", "--dst", "10.4.0.1", "--tclass", "106", "--paths", "4", "--timeout", "300ms")
	if r.code != exitFinding || !strings.Contains(r.stdout, "change: dscp 26→0 between hop 2 (10.2.1.2) and hop 3 (10.3.1.2)") {
		t.Errorf("table: exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("trace --paths 4:\n%s", r.stdout)
	wait()
}

// `roce-probe trace` in the two-spine fabric whose spine B marks ECN CE
// on its port toward L2, as a congested queue marks an ECN-capable packet
// instead of dropping it (RFC 3168 section 5; what DCQCN relies on): the
// change is shown where it happens (ecn 2→3 after B, on the paths through
// B; ce_marked true) and, as any change, exits 1 (send fails on its
// ecn-ce finding alike), saying it was a CE mark and no remark.
func TestTraceCEMarkIsNoRemark(t *testing.T) {
	f := netnstest.NewTwoPaths(t)
	netnstest.Remark(t, f.B, "b2", "ce")
	wait := startListener(t, f.D, time.Minute, "--netdev", "d0")
	r := runIn(t, f.S, "trace", "--netdev", "s0", "--dst", "10.4.0.1", "--tclass", "106", "--paths", "4", "--timeout", "300ms", "-o", "json")
	if r.code != exitFinding {
		t.Fatalf("trace: exit %d, want %d (a change): %s%s", r.code, exitFinding, r.stdout, r.stderr)
	}
	var doc traceDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	throughB := 0
	for _, p := range doc.Paths {
		if !p.Reached || len(p.Hops) != 4 || p.Hops[1].Address == nil || p.Hops[3].Arrived == nil {
			t.Fatalf("path %+v: want 4 hops to the listener", p)
		}
		switch *p.Hops[1].Address {
		case "10.2.1.2": // B
			throughB++
			c := p.Changes
			if len(c) != 1 || c[0].Field != "ecn" || c[0].From != 2 || c[0].To != 3 || c[0].BeforeTTL != 2 || c[0].AtTTL != 3 || !c[0].CEMarked {
				t.Errorf("path through B: changes %+v, want ecn 2→3 between hops 2 and 3, congestion", c)
			}
			if p.Hops[3].Arrived.ECN != 3 {
				t.Errorf("the listener saw ECN %d through B, want 3 (CE)", p.Hops[3].Arrived.ECN)
			}
		case "10.2.0.2": // A
			if len(p.Changes) != 0 {
				t.Errorf("path through A: changes %+v, want none", p.Changes)
			}
		default:
			t.Errorf("hop 2 is %s, want a spine", *p.Hops[1].Address)
		}
	}
	if throughB == 0 {
		t.Errorf("no path through B: %s", r.stdout)
	}
	r = runIn(t, f.S, "trace", "--netdev", "s0", "--dst", "10.4.0.1", "--tclass", "106", "--paths", "4", "--timeout", "300ms")
	if want := "change: ecn 2→3 between hop 2 (10.2.1.2) and hop 3 (10.3.1.2): a congested queue's CE mark (RFC 3168), not a remark"; r.code != exitFinding || !strings.Contains(r.stdout, want) ||
		!strings.Contains(r.stderr, "a congested queue marked ECN CE on the way (no remark)") {
		t.Errorf("table: exit %d, want %d, %q and the CE finding:\n%s%s", r.code, exitFinding, want, r.stdout, r.stderr)
	}
	wait()
}
