//go:build lab

package agent

import (
	"os/exec"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// startLabAgent runs the lab's roce-probe binary (LAB_ROCE_PROBE) as an
// agent in fabric host h's namespace.
func startLabAgent(t *testing.T, h lab.Host, args ...string) *agentProc {
	t.Helper()
	bin, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"agent", "--listen", "127.0.0.1:9469", "--log-level", "debug"}, args...)...)
	return runAgentProc(t, h.Name, cmd, func(c *exec.Cmd) error { return lab.StartIn(h.Name, c) })
}

// An agent in every host of the 7.x fabric probing the others on the
// untagged network and on VLAN 100 (Soft-RoCE: the traffic class byte 106
// as is, the PCP of VLAN 100 the sender's egress-qos-map entry for
// priority 0, lab.Hosts): the markings arrive as configured; a switch
// port that remarks DSCP 26 to 0 shows as remark events for the pairs
// through it, and only for those; an agent stopped (SIGTERM, exit 0)
// shows as loss at the others.
func TestLabAgentFabric(t *testing.T) {
	sw := lab.UseFabric(t)
	untagged, err := lab.FabricNetByName("untagged")
	if err != nil {
		t.Fatal(err)
	}
	v100, err := lab.FabricNetByName("vlan100")
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]*agentProc{}
	for _, h := range lab.Hosts {
		args := []string{"--interval", "5s", "--probe-rate", "1", "--probe-timeout", "3s",
			"--flow", "name=untagged,netdev=" + untagged.Netdev + ",family=ipv4,tclass=106,sl=3",
			"--flow", "name=vlan100,netdev=" + v100.Netdev + ",family=ipv4,tclass=106,sl=3"}
		for _, o := range lab.Hosts {
			if o.Name != h.Name {
				args = append(args, "--peer", o.Name+"="+o.Addr(untagged, false).String(), "--peer", o.Name+".100="+o.Addr(v100, false).String())
			}
		}
		agents[h.Name] = startLabAgent(t, h, args...)
	}
	answered := func(from, peer, flow string) float64 {
		return agents[from].value(t, metricProbesAnswered, "peer", peer, "flow", flow)
	}
	// Every pair answers on both networks.
	for _, h := range lab.Hosts {
		for _, o := range lab.Hosts {
			if o.Name == h.Name {
				continue
			}
			h, o := h, o
			eventually(t, 2*time.Minute, h.Name+" → "+o.Name+" answered on both networks", func() bool {
				return answered(h.Name, o.Name, "untagged") >= 2 && answered(h.Name, o.Name+".100", "vlan100") >= 2
			})
		}
	}
	// The markings as configured: DSCP 26, ECT(0) everywhere; on VLAN 100
	// the sender's PCP for priority 0 (0 without an egress map).
	for _, h := range lab.Hosts {
		f := agents[h.Name].metrics(t)
		pcp := float64(h.EgressMap(v100)[0])
		for _, o := range lab.Hosts {
			if o.Name == h.Name {
				continue
			}
			for _, c := range []struct {
				peer, flow, field string
				want              float64
			}{
				{o.Name, "untagged", "dscp", 26}, {o.Name, "untagged", "ecn", 2},
				{o.Name + ".100", "vlan100", "dscp", 26}, {o.Name + ".100", "vlan100", "ecn", 2},
				{o.Name + ".100", "vlan100", "vlan", 100}, {o.Name + ".100", "vlan100", "pcp", pcp},
			} {
				if v, ok := value(f, metricProbeSentMarking, "peer", c.peer, "flow", c.flow, "field", c.field); !ok || v != c.want {
					t.Errorf("%s → %s %s: sent %s %v (%v), want %v", h.Name, c.peer, c.flow, c.field, v, ok, c.want)
				}
				if v, ok := value(f, metricProbeReceived, "peer", c.peer, "flow", c.flow, "field", c.field); !ok || v != c.want {
					t.Errorf("%s → %s %s: received %s %v (%v), want %v", h.Name, c.peer, c.flow, c.field, v, ok, c.want)
				}
			}
			if _, ok := value(f, metricProbeReceived, "peer", o.Name, "flow", "untagged", "field", "vlan"); ok {
				t.Errorf("%s → %s untagged: a VLAN arrived", h.Name, o.Name)
			}
		}
	}

	// h3's switch port remarks DSCP 26 → 0 on what it sends to h3: the
	// probes of h1, h2 and h4 to h3 arrive with DSCP 0; h3's own probes
	// (through the other ports) do not.
	remarks := func(from, peer, flow string) float64 {
		return agents[from].value(t, metricMarkingEvents, "peer", peer, "flow", flow, "field", "dscp", "event", "remarked")
	}
	before := map[string]float64{}
	for _, h := range lab.Hosts {
		for _, o := range lab.Hosts {
			if o.Name != h.Name {
				before[h.Name+o.Name] = remarks(h.Name, o.Name, "untagged")
			}
		}
	}
	sw.Port("h3").RemarkDSCP(26, 0)
	for _, from := range []string{"h1", "h2", "h4"} {
		from := from
		eventually(t, 2*time.Minute, from+" → h3 remark events", func() bool {
			return remarks(from, "h3", "untagged") >= before[from+"h3"]+2 && remarks(from, "h3.100", "vlan100") >= 2
		})
		if v, _ := value(agents[from].metrics(t), metricProbeReceived, "peer", "h3", "flow", "untagged", "field", "dscp"); v != 0 {
			t.Errorf("%s → h3: received DSCP %v, want 0", from, v)
		}
	}
	for _, h := range lab.Hosts {
		for _, o := range lab.Hosts {
			if o.Name == h.Name || o.Name == "h3" {
				continue
			}
			if r := remarks(h.Name, o.Name, "untagged"); r != before[h.Name+o.Name] {
				t.Errorf("%s → %s: %v remark events, %v before h3's port remarked: the pair does not go through it", h.Name, o.Name, r, before[h.Name+o.Name])
			}
		}
	}

	// h4's agent stops: the others lose their probes to it.
	lost := map[string]float64{}
	for _, from := range []string{"h1", "h2", "h3"} {
		lost[from] = agents[from].value(t, metricProbesLost, "peer", "h4", "flow", "untagged")
	}
	took, err := agents["h4"].stop(t, 30*time.Second)
	if err != nil {
		t.Fatalf("h4's agent after SIGTERM: %v", err)
	}
	t.Logf("h4's agent stopped %v after SIGTERM", took.Round(time.Millisecond))
	for _, from := range []string{"h1", "h2", "h3"} {
		from := from
		eventually(t, 2*time.Minute, from+" loses its probes to the stopped h4", func() bool {
			return agents[from].value(t, metricProbesLost, "peer", "h4", "flow", "untagged") >= lost[from]+2
		})
	}
}
