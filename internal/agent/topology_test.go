package agent

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/topology"
)

// fakeLLDP is a netdev's LLDP listener the test feeds frames to.
type fakeLLDP struct {
	frames chan topology.Heard
	closed chan struct{}
	once   sync.Once
}

func (f *fakeLLDP) Next(deadline time.Time) (topology.Heard, error) {
	select {
	case h := <-f.frames:
		return h, nil
	case <-f.closed:
		return topology.Heard{}, os.ErrClosed
	case <-time.After(time.Until(deadline)):
		return topology.Heard{}, collect.ErrNoLLDP
	}
}

func (f *fakeLLDP) Close() error { f.once.Do(func() { close(f.closed) }); return nil }

// withTopology makes the fake host's snapshots carry the attachment of
// eth0 as collect decides it: from the configuration and the frames the
// agent heard (topology.Attach, the rule collect applies).
func withTopology(h *fakeHost) func(collect.Options) (*host.Snapshot, error) {
	return func(o collect.Options) (*host.Snapshot, error) {
		s, err := h.collect(o)
		if err == nil {
			s.Topology = &host.Topology{Attachments: topology.Attach([]string{"eth0"},
				topology.Observations{Now: time.Now(), Config: o.Switches, LLDP: o.LLDPHeard, LLDPDWhy: "not in the test"})}
		}
		return s, err
	}
}

// The agent listens for LLDP on the RoCE netdevs, exports each one's
// attachment (roce_probe_topology_info), tells peers that ask its ToR in
// its replies, asks its peers theirs and keeps what they say; a peer that
// does not know its ToR (an older one) is answered and probed as before.
func TestAgentTopology(t *testing.T) {
	h := &fakeHost{peers: 2}
	n := newFakeNet()
	peers := n.addPeers(t, 2)
	peers[0].tor = "leaf-1"
	peers[0].ask = true
	cfg := testConfig()
	cfg.Peers.Static = []string{peerAddr(1).String(), peerAddr(2).String()}
	lldp := &fakeLLDP{frames: make(chan topology.Heard, 1), closed: make(chan struct{})}
	opened := make(chan string, 4)
	ta := startAgent(t, cfg, h, n, func(d *Deps) {
		d.Collect = withTopology(h)
		d.ListenLLDP = func(nd string) (LLDPReader, error) {
			opened <- nd
			if nd != "eth0" {
				return nil, errors.New("no such netdev")
			}
			return lldp, nil
		}
	})
	select {
	case nd := <-opened:
		if nd != "eth0" {
			t.Fatalf("listening on %s, want eth0", nd)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no LLDP listener opened")
	}
	if v, ok := value(gather(t, ta.Registry()), metricTopologyInfo, "netdev", "eth0", "switch", "", "source", ""); !ok || v != 1 {
		t.Errorf("before any frame: topology info %v %v, want the unknown series", v, ok)
	}
	lldp.frames <- topology.Heard{At: time.Now(), Neighbor: topology.Neighbor{ChassisID: "d2:31:68:05:c7:9b", ChassisIDType: "mac",
		PortID: "Ethernet12", PortIDType: "ifname", SystemName: "leaf-9", TTL: 120}}
	eventually(t, 5*time.Second, "the attachment from LLDP", func() bool {
		v, ok := value(gather(t, ta.Registry()), metricTopologyInfo, "netdev", "eth0", "switch", "leaf-9", "switch_port", "Ethernet12", "source", "lldp")
		return ok && v == 1
	})
	if fams := gather(t, ta.Registry()); len(fams[metricTopologyInfo].GetMetric()) != 1 {
		t.Errorf("%d topology series, want one per RoCE netdev", len(fams[metricTopologyInfo].GetMetric()))
	}
	// The agent's probes ask; peer 1 tells, peer 2 (no ToR) answers plainly.
	eventually(t, 5*time.Second, "peer 1's ToR learned", func() bool { return ta.tors.get(peerAddr(1)) == "leaf-1" })
	if got := ta.tors.get(peerAddr(2)); got != "" {
		t.Errorf("peer 2 told %q", got)
	}
	// This host is under leaf-9 and peer 1 under leaf-1: another ToR, and
	// peer 2 of unknown ToR is sampled; both are counted by peer ToR
	// (docs/metrics.md).
	eventually(t, 5*time.Second, "peer 2 answered", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricToRProbesAnswered, "scope", "sampled", "peer_tor", "")
		return v > 0
	})
	eventually(t, 5*time.Second, "peer 1 probed as a NIC of leaf-1", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricToRProbesAnswered, "scope", "inter_tor", "peer_tor", "leaf-1")
		return v > 0
	})
	// Peer 1 asks the agent: the reply tells leaf-9.
	eventually(t, 5*time.Second, "the agent's ToR told", func() bool {
		n.probeAgent(t, peers[0])
		p := peers[0].told.Load()
		return p != nil && *p == "leaf-9"
	})
	// The configuration wins over LLDP.
	ta.stop(t)
	cfg.Topology.ToR = "rack7-leaf"
	ta = startAgent(t, cfg, h, n, func(d *Deps) { d.Collect = withTopology(h) })
	eventually(t, 5*time.Second, "the configured ToR", func() bool {
		v, ok := value(gather(t, ta.Registry()), metricTopologyInfo, "netdev", "eth0", "switch", "rack7-leaf", "switch_port", "", "source", "config")
		return ok && v == 1
	})
	if !strings.Contains(ta.logs.String(), "agent started") {
		t.Errorf("log: %s", ta.logs.String())
	}
}

func TestTopologyConfig(t *testing.T) {
	for _, tc := range []struct {
		edit func(*TopologyConfig)
		msg  string
	}{
		{func(c *TopologyConfig) { c.ToR = "leaf 1" }, `topology.tor: "leaf 1": want 1..64 characters`},
		{func(c *TopologyConfig) { c.Netdevs = map[string]string{"eth0": "a/b"} }, `topology.netdevs.eth0: "a/b"`},
		{func(c *TopologyConfig) { c.Netdevs = map[string]string{"a/b": "leaf-1"} }, `topology.netdevs: "a/b" is not a netdev name`},
	} {
		c := Default()
		tc.edit(&c.Topology)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%+v: %v, want %q", c.Topology, err, tc.msg)
		}
	}
	c := Default()
	c.Topology = TopologyConfig{ToR: "leaf-1", Netdevs: map[string]string{"eth1": "leaf-2"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if m := c.Topology.switches(); m[""] != "leaf-1" || m["eth1"] != "leaf-2" || len(m) != 2 {
		t.Errorf("switches %v", m)
	}
}

// TestLearnedToRsChanges: a reply telling the ToR the plan already has
// (the peer list's) is recorded but is no change — the agent would index
// 100,000 peers again for every round's new sample — while a peer of
// unknown ToR telling one, or a ToR that moved, is.
func TestLearnedToRsChanges(t *testing.T) {
	var l learnedToRs
	a, b := netip.MustParseAddr("10.0.0.2"), netip.MustParseAddr("10.0.0.3")
	l.set(a, "leaf-1", "leaf-1")
	if l.changes() != 0 || l.get(a) != "leaf-1" {
		t.Fatalf("the list's own ToR told: %d changes, %q recorded; want 0 and leaf-1", l.changes(), l.get(a))
	}
	l.set(b, "leaf-2", "")
	l.set(b, "leaf-2", "leaf-2") // told again once planned
	if l.changes() != 1 {
		t.Fatalf("a peer of unknown ToR told one: %d changes, want 1", l.changes())
	}
	l.set(b, "leaf-3", "leaf-2")
	if l.changes() != 2 || l.get(b) != "leaf-3" {
		t.Fatalf("a ToR that moved: %d changes, %q; want 2 and leaf-3", l.changes(), l.get(b))
	}
}
