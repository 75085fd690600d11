package fleet_test

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/roce-probe/roce-probe/fleet"
)

// A fleet of 4 ToRs of 8 NICs each, seen from the first NIC of leaf1: its
// 7 ToR-mates are probed every round, and one NIC of 2 of the 3 other
// ToRs; the 8 agents of leaf1 together probe every other ToR each round.
func Example() {
	var peers []fleet.Peer
	for t := 1; t <= 4; t++ {
		for n := 1; n <= 8; n++ {
			peers = append(peers, fleet.Peer{Addr: netip.AddrFrom4([4]byte{10, 0, byte(t), byte(n)}), ToR: fmt.Sprintf("leaf%d", t)})
		}
	}
	s := fleet.DefaultSettings()
	s.SampleToRs = 2
	p, err := fleet.New(peers[0], peers, s, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	plan := p.Plan(p.Round(time.Unix(1800000000, 0)))
	for _, t := range plan.Targets {
		fmt.Printf("%-9s %-10s %-5s %.1f/s ports %d\n", t.Kind, peers[t.Peer].Addr, peers[t.Peer].ToR, t.Rate, t.Sports)
	}
	fmt.Printf("send %.0f/s, busiest host receives %.0f/s, every ToR within %v\n", plan.SendRate, plan.ReceiveRate, plan.ToRWindow)
	// Output:
	// tor       10.0.1.2   leaf1 1.0/s ports 115
	// tor       10.0.1.3   leaf1 1.0/s ports 115
	// tor       10.0.1.4   leaf1 1.0/s ports 115
	// tor       10.0.1.5   leaf1 1.0/s ports 115
	// tor       10.0.1.6   leaf1 1.0/s ports 115
	// tor       10.0.1.7   leaf1 1.0/s ports 115
	// tor       10.0.1.8   leaf1 1.0/s ports 115
	// inter_tor 10.0.4.5   leaf4 1.0/s ports 115
	// inter_tor 10.0.2.4   leaf2 1.0/s ports 115
	// send 9/s, busiest host receives 9/s, every ToR within 30s
}

// To plan for every agent of a fleet (a simulation, a central planner),
// index the peers once and take each agent's planner from the index:
// here the 8 agents of leaf1, which together probe each of the 3 other
// ToRs in every round.
func ExampleIndex() {
	var peers []fleet.Peer
	for t := 1; t <= 4; t++ {
		for n := 1; n <= 8; n++ {
			peers = append(peers, fleet.Peer{Addr: netip.AddrFrom4([4]byte{10, 0, byte(t), byte(n)}), ToR: fmt.Sprintf("leaf%d", t)})
		}
	}
	x := fleet.NewIndex(peers)
	s := fleet.DefaultSettings()
	s.SampleToRs = 2
	reached := map[string]bool{}
	for _, self := range peers[:8] {
		p, err := x.Planner(self, s, 1)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, t := range p.Plan(60000000).Targets {
			if t.Kind == fleet.InterToR {
				reached[peers[t.Peer].ToR] = true
			}
		}
	}
	fmt.Printf("%d peers indexed; leaf1's agents reach %d other ToRs in a round\n", x.Len(), len(reached))
	// Output:
	// 32 peers indexed; leaf1's agents reach 3 other ToRs in a round
}
