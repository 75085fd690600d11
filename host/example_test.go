package host_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
)

// Analyse a snapshot written by `roce-probe collect` on another host: the
// GID entry a flow uses, its VLAN chain and the frame its AH produces.
// Nothing is read from the machine this runs on.
func ExampleSnapshot_View() {
	s, err := host.Load("testdata/rxe.json") // the Soft-RoCE lab host
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := s.View("") // the namespace the snapshot was taken in
	if err != nil {
		fmt.Println(err)
		return
	}
	src, _ := v.Source("rxe0", 1, 10)
	fmt.Println("GID 10:", src.Entry.GID, "on", src.Entry.Netdev, "driver", src.Driver.Driver)
	for _, t := range src.Desc.Chain {
		fmt.Println("  tag", t, "added by", t.Netdev)
	}
	r, _ := v.ResolveAH(host.AHRequest{Device: "rxe0", Attr: ah.Attr{IsGlobal: true,
		GRH: ah.GlobalRoute{DGID: gid.MustParse("10.10.10.2"), SGIDIndex: 10, HopLimit: 64, TrafficClass: 106}}})
	w := r.Wire
	fmt.Println("wire: vlan", *w.VLAN, "pcp", *w.PCP, "dscp", *w.DSCP, "ecn", *w.ECN, "ttl", w.TTL)
	// Output:
	// GID 10: ::ffff:10.10.10.1 on veth0.q1000.10 driver rxe
	//   tag 802.1ad:1000 added by veth0.q1000
	//   tag 10 added by veth0.q1000.10
	// wire: vlan 1000 pcp 0 dscp 26 ecn 2 ttl 64
}
