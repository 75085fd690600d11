package fabric_test

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/roce-probe/roce-probe/fabric"
)

// Two hosts' snapshots: the fresh rxe table and the same table after
// churn, where 10.0.0.1 moved from index 1 to 13.
func ExampleAnalyze() {
	hosts, err := fabric.ReadFiles([]string{"../host/testdata/rxe.json", "../host/testdata/rxe-churned.json"}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := fabric.Analyze(hosts, fabric.SourceFiles)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range r.Findings {
		fmt.Println(f.Check, f.Network, f.Type)
		for _, g := range f.Groups {
			fmt.Println(" ", g.Text, fabric.HostList(g.Ports, 3))
		}
	}
	// Output:
	// gid_index 10.0.0.0/24 RoCE v2
	//   1 fixture-rxe
	//   13 fixture-rxe-churned
}

// One window of probe results: nic4's probes fail with every peer, its
// ToR-mates nic5 and nic6 among them, while nic5 and nic6 lose nothing
// between themselves: the NIC is the suspect, not its ToR or a link.
func ExampleLocalize() {
	lost := func(src, dst, srcToR, dstToR string) fabric.PairObservation {
		return fabric.PairObservation{Src: src, Dst: dst, SrcToR: srcToR, DstToR: dstToR, Sent: 30, Lost: 30}
	}
	in := fabric.LocalizeInput{Pairs: []fabric.PairObservation{
		lost("nic4", "nic5", "leaf1", "leaf1"), lost("nic6", "nic4", "leaf1", "leaf1"),
		lost("nic4", "nic1", "leaf1", "leaf0"), lost("nic9", "nic4", "leaf2", "leaf1"),
	}}
	for _, s := range fabric.Localize(in) {
		fmt.Println(s.Kind, s.NIC, s.ToR)
		fmt.Println(s.Evidence)
	}
	// Output:
	// nic nic4 leaf1
	// its probes failed in every direction: with 4 peers, 2 of them ToR-mates, while its ToR-mates lost nothing among themselves
}

// The report of two hosts as one self-contained HTML page: the finding,
// each host's GID index (the churned host's marked ≠), and no probe
// results (snapshots carry none), which the page says.
func ExampleWriteHTML() {
	hosts, err := fabric.ReadFiles([]string{"../host/testdata/rxe.json", "../host/testdata/rxe-churned.json"}, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := fabric.Analyze(hosts, fabric.SourceFiles)
	if err != nil {
		fmt.Println(err)
		return
	}
	var b strings.Builder
	if err := fabric.WriteHTML(&b, fabric.HTMLInput{Report: r, Hosts: hosts}); err != nil {
		fmt.Println(err)
		return
	}
	page := b.String()
	fmt.Println(strings.Contains(page, `<section class="finding" data-check="gid_index">`))
	fmt.Println(strings.Contains(page, "rxe0/1 v2 13 (differs)"))
	fmt.Println(strings.Contains(page, "No probe results in this source"))
	// Output:
	// true
	// true
	// true
}

// An agent's pair detail (its GET /pairs) read and turned into
// localisation's input: the agent's own NIC is its port on the peer's
// network, the peers' ToRs are what their probe replies said.
func ExampleDecodeAgentPairs() {
	body := `{"round": 88600000, "probe_scale": 1, "pairs": [
	  {"peer": "node-2", "address": "10.0.0.2", "tor": "leaf-a", "flow": "rdma", "scope": "tor", "probes": 100, "answered": 0, "lost": 100},
	  {"peer": "node-9", "address": "10.0.0.9", "tor": "leaf-c", "flow": "rdma", "scope": "inter_tor", "probes": 20, "answered": 20, "lost": 0}]}`
	p, err := fabric.DecodeAgentPairs(strings.NewReader(body), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	self := fabric.Host{Name: "node-1", Attachments: []fabric.Attachment{{Network: "10.0.0.0/16", Family: "ipv4", Addr: netip.MustParseAddr("10.0.0.1"), Switch: "leaf-a"}}}
	for _, o := range fabric.AgentObservations([]fabric.Host{self}, []fabric.AgentPairs{p}).Pairs {
		fmt.Printf("%s (%s) -> %s (%s): %d sent, %d lost\n", o.Src, o.SrcToR, o.Dst, o.DstToR, o.Sent, o.Lost)
	}
	// Output:
	// 10.0.0.1 (leaf-a) -> 10.0.0.2 (leaf-a): 100 sent, 100 lost
	// 10.0.0.1 (leaf-a) -> 10.0.0.9 (leaf-c): 20 sent, 0 lost
}

// An agent's probe series as Prometheus answers fabric's queries
// (ProbeQueries) turned into localisation's input: its NIC is the
// address of its flow's source GID entry, under the switch its topology
// names; a ToR-mate that lost, a worst pair with another ToR, and the
// probes sent to that ToR's other NICs.
func ExampleObservationsFromMetrics() {
	node := func(kv ...string) map[string]string {
		m := map[string]string{"node": "node-1"}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	m := fabric.ProbeMetrics{
		GIDInfo:       []fabric.Sample{{Labels: node("device", "mlx5_0", "port", "1", "index", "3", "gid", "::ffff:10.0.0.1"), Value: 1}},
		FlowSource:    []fabric.Sample{{Labels: node("flow", "rdma", "device", "mlx5_0", "port", "1", "index", "3", "netdev", "eth0"), Value: 1}},
		Topology:      []fabric.Sample{{Labels: node("netdev", "eth0", "switch", "leaf-a"), Value: 1}},
		MateLost:      []fabric.Sample{{Labels: node("flow", "rdma", "peer", "node-2", "address", "10.0.0.2"), Value: 300}},
		MateLossySent: []fabric.Sample{{Labels: node("flow", "rdma", "peer", "node-2", "address", "10.0.0.2"), Value: 300}},
		WorstLost:     []fabric.Sample{{Labels: node("flow", "rdma", "scope", "inter_tor", "peer", "node-9", "address", "10.0.0.9", "peer_tor", "leaf-c"), Value: 3}},
		WorstLoss:     []fabric.Sample{{Labels: node("flow", "rdma", "scope", "inter_tor", "peer", "node-9", "address", "10.0.0.9", "peer_tor", "leaf-c"), Value: 0.1}},
		ToRSent:       []fabric.Sample{{Labels: node("flow", "rdma", "scope", "inter_tor", "peer_tor", "leaf-c"), Value: 300}},
	}
	in, _ := fabric.ObservationsFromMetrics(m, "node")
	for _, o := range in.Pairs {
		fmt.Printf("%s (%s) -> %s (%s): %d sent, %d lost\n", o.Src, o.SrcToR, o.Dst, o.DstToR, o.Sent, o.Lost)
	}
	// Output:
	// 10.0.0.1 (leaf-a) -> (NICs of leaf-c) (leaf-c): 270 sent, 0 lost
	// 10.0.0.1 (leaf-a) -> 10.0.0.2 (leaf-a): 300 sent, 300 lost
	// 10.0.0.1 (leaf-a) -> 10.0.0.9 (leaf-c): 30 sent, 3 lost
}
