package probe_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/probe"
)

// A probe sent with VLAN 100 PCP 3 and traffic class 106 (DSCP 26, ECT(0))
// that arrived through a switch which rewrote PCP and DSCP and routed it once.
func ExampleCompare() {
	sent := probe.Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: probe.ECNECT0, TTL: 64, Sport: 0xc000}
	got := sent
	got.PCP, got.DSCP, got.TTL = 0, 0, 63
	for _, f := range probe.Compare(sent, &got) {
		fmt.Println(f.Kind, "|", f)
	}
	fmt.Println(len(probe.Compare(sent, &sent)), "findings when nothing changed")
	// Output:
	// pcp-remarked | PCP remarked 3→0
	// dscp-remarked | DSCP remarked 26→0
	// routed-hops | TTL 64→63: 1 routed hop
	// 0 findings when nothing changed
}

func ExamplePayload_Marshal() {
	p := probe.Payload{Kind: probe.KindProbe, Session: 0x1122334455667788, Seq: 7, SentNano: 1,
		Sent: probe.Markings{DSCP: 26, ECN: probe.ECNECT0, TTL: 64, Sport: 0xc001}}
	b, _ := p.Marshal()
	fmt.Printf("%d bytes, starts %q, version %d, kind %d\n", len(b), b[:8], b[8], b[9])
	back, err := probe.ParsePayload(b)
	fmt.Println(back.Seq, back.Sent.DSCP, err)
	// Output:
	// 56 bytes, starts "roceprob", version 1, kind 1
	// 7 26 <nil>
}
