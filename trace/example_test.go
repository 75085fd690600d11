package trace_test

import (
	"fmt"
	"net/netip"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
)

// An ICMP Time Exceeded message from a router that quotes only what RFC
// 792 asks for (the IP header and 8 bytes): the DSCP, ECN and TTL the
// probe arrived with, and its UDP ports and length.
func ExampleParseICMP() {
	msg := []byte{
		11, 0, 0, 0, 0, 0, 0, 0, // Time Exceeded, TTL exceeded in transit
		0x45, 0x02, 0, 116, 0, 0, 0x40, 0, 1, 17, 0, 0, // IPv4: TOS 0x02, length 116, TTL 1, UDP
		10, 1, 0, 1, 10, 4, 0, 1, // 10.1.0.1 → 10.4.0.1
		0xc0, 0x01, 0x12, 0xb7, 0, 96, 0, 0, // UDP 49153 → 4791, length 96
	}
	q, err := trace.ParseICMP(msg, false)
	fmt.Println(q.Kind, err)
	fmt.Printf("arrived with DSCP %d ECN %d TTL %d, %v → %v, UDP %d → %d length %d, BTH shown: %v\n",
		q.DSCP, q.ECN, q.TTL, q.Src, q.Dst, q.Sport, q.Dport, q.UDPLen, q.HasBTH)
	// Output:
	// time-exceeded <nil>
	// arrived with DSCP 0 ECN 2 TTL 1, 10.1.0.1 → 10.4.0.1, UDP 49153 → 4791 length 96, BTH shown: false
}

// Where a DSCP remark happens: hop 2's quote still shows DSCP 26, hop 3's
// shows 0, so the remarking is in the spine at hop 2 or on its link to hop 3.
func ExampleChanges() {
	a := netip.MustParseAddr
	te := func(dscp uint8) *trace.Quote {
		return &trace.Quote{Kind: trace.TimeExceeded, HasTOS: true, DSCP: dscp, ECN: probe.ECNECT0, HasTTL: true, TTL: 1}
	}
	hops := []trace.Hop{
		{TTL: 1, Status: trace.HopTimeExceeded, Address: a("10.1.0.254"), Quote: te(26)},
		{TTL: 2, Status: trace.HopTimeExceeded, Address: a("10.2.1.2"), Quote: te(26)},
		{TTL: 3, Status: trace.HopTimeExceeded, Address: a("10.3.1.2"), Quote: te(0)},
	}
	sent := probe.Markings{DSCP: 26, ECN: probe.ECNECT0}
	for _, c := range trace.Changes(sent, a("10.1.0.1"), hops) {
		fmt.Println(c)
	}
	// Output:
	// dscp 26→0 between hop 2 (10.2.1.2) and hop 3 (10.3.1.2)
}

// How many ports in a row must find no new path before a path search
// stops, after 1, 2 and 4 paths were found.
func ExamplePortsWithoutNewPath() {
	fmt.Println(trace.PortsWithoutNewPath(1), trace.PortsWithoutNewPath(2), trace.PortsWithoutNewPath(4))
	// Output: 5 8 14
}

// The UDP source port of a flow label (the kernel's and rdma-core's fold)
// and back: the smallest label that gives a port.
func ExampleFlowLabelFor() {
	l, _ := trace.FlowLabelFor(0xe341)
	fmt.Printf("%#x\n", l)
	fmt.Printf("%#x\n", trace.Ports(nil, 3))
	// Output:
	// 0x2341
	// [0xc001 0xc002 0xc003]
}

// The spine of a trace across a leaf-spine: the hops between the source's
// ToR (hop 1) and the destination's (the hop before the destination).
func ExampleTransit() {
	a := netip.MustParseAddr
	hops := []trace.Hop{
		{TTL: 1, Status: trace.HopTimeExceeded, Address: a("10.30.5.1")},
		{TTL: 2, Status: trace.HopTimeExceeded, Address: a("10.31.11.2")},
		{TTL: 3, Status: trace.HopTimeExceeded, Address: a("10.31.21.1")},
		{TTL: 4, Status: trace.HopDestination, Address: a("10.30.7.2")},
	}
	for _, h := range trace.Transit(hops) {
		fmt.Println(h.TTL, h.Address)
	}
	// Lost after the spine: the first hop past the source's ToR.
	fmt.Println(trace.Transit(hops[:3])[0].Address)
	// Output:
	// 2 10.31.11.2
	// 10.31.11.2
}
