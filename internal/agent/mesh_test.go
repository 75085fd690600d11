package agent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/probe"
)

// The agent probes every peer with the flow's markings (Soft-RoCE's rule
// for the predicted rxe_eth0: the traffic class byte as is, TTL the
// route's 64, untagged), counts what each peer's listener saw arrive, and
// tells a remarking path and a silent peer from the rest.
func TestMeshMarkingsAndLoss(t *testing.T) {
	h := &fakeHost{peers: 3}
	n := newFakeNet()
	peers := n.addPeers(t, 3)
	peers[1].dscp.Store(0)    // the path to peer 2 remarks DSCP to 0
	peers[2].down.Store(true) // peer 3 answers nothing
	cfg := testConfig()
	for _, p := range peers {
		cfg.Peers.Static = append(cfg.Peers.Static, p.addr.String())
	}
	cfg.Peers.Static = append(cfg.Peers.Static, agentIP) // itself: left out
	ta := startAgent(t, cfg, h, n)
	p1, p2, p3 := peers[0].addr.String(), peers[1].addr.String(), peers[2].addr.String()

	eventually(t, 10*time.Second, "answers and losses", func() bool {
		f := gather(t, ta.Registry())
		a1, _ := value(f, metricProbesAnswered, "peer", p1, "flow", "rdma")
		a2, _ := value(f, metricProbesAnswered, "peer", p2, "flow", "rdma")
		l3, _ := value(f, metricProbesLost, "peer", p3, "flow", "rdma")
		return a1 >= 3 && a2 >= 3 && l3 >= 3
	})
	f := gather(t, ta.Registry())
	// What was sent: tclass 106 = DSCP 26 + ECT(0), TTL 64, untagged.
	for field, want := range map[string]float64{"dscp": 26, "ecn": 2, "ttl": 64} {
		if v, ok := value(f, metricProbeSentMarking, "peer", p1, "flow", "rdma", "field", field); !ok || v != want {
			t.Errorf("sent %s to %s: %v (%v), want %v", field, p1, v, ok, want)
		}
	}
	if _, ok := value(f, metricProbeSentMarking, "peer", p1, "field", "vlan"); ok {
		t.Error("a vlan marking is published for an untagged flow")
	}
	// What arrived.
	if v, _ := value(f, metricProbeReceived, "peer", p1, "field", "dscp"); v != 26 {
		t.Errorf("peer 1 received DSCP %v, want 26", v)
	}
	if v, _ := value(f, metricProbeReceived, "peer", p2, "field", "dscp"); v != 0 {
		t.Errorf("peer 2 received DSCP %v, want 0 (remarked)", v)
	}
	if _, ok := value(f, metricProbeReceived, "peer", p3); ok {
		t.Error("peer 3 never answered but has received markings")
	}
	if v, _ := value(f, metricMarkingEvents, "peer", p2, "field", "dscp", "event", "remarked"); v < 3 {
		t.Errorf("peer 2: %v DSCP remark events, want ≥ 3", v)
	}
	if _, ok := value(f, metricMarkingEvents, "peer", p1); ok {
		t.Error("peer 1's path changes nothing but has marking events")
	}
	if v, _ := value(f, metricProbesLost, "peer", p1); v != 0 {
		t.Errorf("peer 1: %v lost", v)
	}
	// The RTT is per flow and scope: the 3 peers are one mesh (no ToR
	// known, fewer than probe.sample_peers), and peers 1 and 2 answered.
	if v, _ := value(f, metricProbeRTT, "flow", "rdma", "scope", "tor"); v < 6 {
		t.Errorf("%v RTT samples of the mesh, want ≥ 6", v)
	}
	// sent = answered + lost + in flight (at most a few at 10/s with a 300 ms timeout).
	for _, p := range []string{p1, p2, p3} {
		s, _ := value(f, metricProbesSent, "peer", p)
		a, _ := value(f, metricProbesAnswered, "peer", p)
		l, _ := value(f, metricProbesLost, "peer", p)
		if s < a+l || s > a+l+5 {
			t.Errorf("peer %s: sent %v, answered %v, lost %v", p, s, a, l)
		}
	}
	if _, ok := value(f, metricProbesSent, "peer", agentIP); ok {
		t.Error("the agent probes its own address")
	}
	if v, _ := value(f, metricPeers); v != 3 {
		t.Errorf("%s = %v, want 3", metricPeers, v)
	}
	if v, _ := value(f, metricFlowPeers, "flow", "rdma"); v != 3 {
		t.Errorf("%s = %v, want 3", metricFlowPeers, v)
	}
	// The peers received the probes the agent says it sent (±1 in flight).
	s1, _ := value(f, metricProbesSent, "peer", p1)
	if got := float64(peers[0].got.Load()); got < s1 || got > s1+1 {
		t.Errorf("peer 1 got %v probes, the agent counts %v sent", got, s1)
	}
	if !strings.Contains(ta.logs.String(), "flow source") {
		t.Errorf("no flow source in the log:\n%s", ta.logs.String())
	}
}

// A path that marks the agent's ECT(0) probes CE is congested, as RFC
// 3168 has a router mark an ECN-capable packet instead of dropping it:
// ecn ce_marked events, and no remarked UDP source port (nothing for a
// trace to locate: /pairs sport_faults stays empty). A path that bleaches
// ECN to Not-ECT remarks: ecn remarked events and remarked ports.
func TestMeshCEMarkIsNoRemark(t *testing.T) {
	h := &fakeHost{peers: 2}
	n := newFakeNet()
	peers := n.addPeers(t, 2)
	peers[0].ecn.Store(int32(probe.ECNCE))     // congested
	peers[1].ecn.Store(int32(probe.ECNNotECT)) // bleached
	cfg := testConfig()
	for _, p := range peers {
		cfg.Peers.Static = append(cfg.Peers.Static, p.addr.String())
	}
	ta := startAgent(t, cfg, h, n)
	p1, p2 := peers[0].addr.String(), peers[1].addr.String()
	eventually(t, 10*time.Second, "answers", func() bool {
		f := gather(t, ta.Registry())
		a1, _ := value(f, metricProbesAnswered, "peer", p1, "flow", "rdma")
		a2, _ := value(f, metricProbesAnswered, "peer", p2, "flow", "rdma")
		return a1 >= 3 && a2 >= 3
	})
	f := gather(t, ta.Registry())
	a1, _ := value(f, metricProbesAnswered, "peer", p1, "flow", "rdma")
	if v, _ := value(f, metricMarkingEvents, "peer", p1, "field", "ecn", "event", "ce_marked"); v < 3 || v > a1 {
		t.Errorf("peer 1 (CE): %v ce_marked events of %v answered, want ≥ 3", v, a1)
	}
	if v, ok := value(f, metricMarkingEvents, "peer", p1, "field", "ecn", "event", "remarked"); ok {
		t.Errorf("peer 1 (CE): %v ECN remarked events, want none", v)
	}
	if v, _ := value(f, metricMarkingEvents, "peer", p2, "field", "ecn", "event", "remarked"); v < 3 {
		t.Errorf("peer 2 (bleached): %v ECN remarked events, want ≥ 3", v)
	}
	if v, ok := value(f, metricMarkingEvents, "peer", p2, "field", "ecn", "event", "ce_marked"); ok {
		t.Errorf("peer 2 (bleached): %v ce_marked events, want none", v)
	}
	remarked := map[string]uint64{}
	for _, p := range getPairs(t, ta.url).Pairs {
		for _, sf := range p.SportFaults {
			remarked[p.Address] += sf.Remarked
		}
	}
	if remarked[p1] != 0 || remarked[p2] < 3 {
		t.Errorf("/pairs sport_faults remarked probes: peer 1 (CE) %d, want 0; peer 2 (bleached) %d, want ≥ 3", remarked[p1], remarked[p2])
	}
}

// The listener answers the peers' probes, and counts what it is sent.
func TestListenerAnswers(t *testing.T) {
	h := &fakeHost{peers: 2}
	n := newFakeNet()
	peers := n.addPeers(t, 2)
	ta := startAgent(t, testConfig(), h, n)
	eventually(t, 5*time.Second, "capture open", func() bool { return n.openPorts() > 0 })
	for i := 0; i < 5; i++ {
		n.probeAgent(t, peers[0])
	}
	eventually(t, 5*time.Second, "answers", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricListenerFrames, "result", "answered")
		return v == 5
	})
	// A probe to another address is not for us.
	pr, _ := probe.NewProber(probe.Frame{SrcMAC: peers[1].mac, DstMAC: mac(agentMAC), Src: peers[1].addr, Dst: peerAddr(9)})
	frame, _, _ := pr.Next(probe.Markings{TTL: 64}, time.Now())
	n.deliver(frame)
	eventually(t, 5*time.Second, "not for us", func() bool {
		v, _ := value(gather(t, ta.Registry()), metricListenerFrames, "result", "not_for_us")
		return v == 1
	})
}

// keepMost keeps the label sets with the most ports, ties by label order,
// and nothing more than it is allowed: the traced-fault series' bound.
func TestKeepMost(t *testing.T) {
	counts := map[tracedSports]int{}
	for i := range 40 {
		counts[tracedSports{flow: "v4", address: fmt.Sprintf("10.0.0.%02d", i), spine: "spine1", event: "lost"}] = 1 + i%4
	}
	got := keepMost(counts, maxTracedSeries, func(a, b tracedSports) int { return strings.Compare(a.address, b.address) })
	// 10 label sets have 4 ports (i%4 == 3: .03, .07, ..., .39), then
	// the 6 lowest addresses of the 3-port ones (.02, .06, ..., .22).
	var want []string
	for i := 3; i < 40; i += 4 {
		want = append(want, fmt.Sprintf("10.0.0.%02d", i))
	}
	for i := 2; len(want) < 16; i += 4 {
		want = append(want, fmt.Sprintf("10.0.0.%02d", i))
	}
	if len(got) != 16 {
		t.Fatalf("%d label sets kept, want 16", len(got))
	}
	for _, a := range want {
		k := tracedSports{flow: "v4", address: a, spine: "spine1", event: "lost"}
		if got[k] != counts[k] {
			t.Errorf("%s: kept %d ports, want %d", a, got[k], counts[k])
		}
	}
	small := map[tracedSports]int{{spine: "s"}: 2}
	if k := keepMost(small, maxTracedSeries, func(a, b tracedSports) int { return 0 }); len(k) != 1 || k[tracedSports{spine: "s"}] != 2 {
		t.Errorf("under the bound: %v, want it as it was", k)
	}
}
