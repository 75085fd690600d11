package qos_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// rdma_cm's ToS 106 (DSCP 26, ECT(0)) becomes skb priority 2, and on a
// VLAN device with egress-qos-map 2:5 the SL / PCP 5.
func ExampleTOSToSL() {
	link := qos.Link{Netdev: "eth0.100", Real: "eth0", Tags: []vlan.ChainTag{
		{Netdev: "eth0.100", Tag: vlan.Tag{ID: 100, TPID: vlan.TPID8021Q}, EgressQoS: map[uint32]uint32{0: 3, 2: 5}},
	}}
	fmt.Println(qos.TOSToPriority(106), qos.TOSToSL(link, 106), qos.DSCP(106), qos.ECNOf(106))
	// Output: 2 5 26 ECT(0)
}

// Soft-RoCE ignores the SL: the PCP comes from the egress map entry for
// skb priority 0, the traffic class byte goes into the IP header as is.
func ExamplePredict() {
	link := qos.Link{Netdev: "veth0.100", Real: "veth0", Tags: []vlan.ChainTag{
		{Netdev: "veth0.100", Tag: vlan.Tag{ID: 100, TPID: vlan.TPID8021Q}, EgressQoS: map[uint32]uint32{0: 3}},
	}}
	w := qos.Predict(qos.DriverRXE, qos.WireInput{SL: 5, TrafficClass: 104, GIDType: gid.TypeRoCEv2, Link: link})
	fmt.Println(*w.Tags[0].PCP, *w.DSCP, *w.ECN, w.SLIgnored)
	// Output: 3 26 Not-ECT true
}

// An mlx5 flow on VLAN 10 with sl 3 and traffic class 106 on a port that
// trusts DSCP and has PFC on priority 3.
func ExampleCheck() {
	r, _ := qos.Check(qos.Flow{
		Device: "mlx5_0", Port: 1, GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: qos.DriverMLX5,
		Link: qos.Link{Netdev: "ens1f0.10", Real: "ens1f0", Tags: []vlan.ChainTag{{Netdev: "ens1f0.10", Tag: vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}}}},
		DCB: &qos.DCB{Netdev: "ens1f0", Supported: true,
			PFC:  &qos.PFC{Enabled: 1 << 3},
			Apps: []qos.App{{Selector: qos.AppSelDSCP, Priority: 3, Protocol: 26}}},
		SL: 3, TrafficClass: 106,
	})
	fmt.Println(r.Verdict, r.Trust, *r.Priority, *r.PCP, *r.DSCP)
	// Output: lossless dscp 3 3 26
}
