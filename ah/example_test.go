package ah_test

import (
	"fmt"
	"net/netip"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// table is rxe0 port 1 on veth0 (10.0.0.1/24, MAC 02:00:00:00:00:01),
// with slot 2 empty.
func table() ah.Table {
	mac := vlan.MAC{2, 0, 0, 0, 0, 1}
	return ah.Table{Len: 4, Entries: []gid.Entry{
		{Device: "rxe0", Port: 1, Index: 0, GID: gid.MustParse("fe80::ff:fe00:1"), Type: gid.TypeRoCEv2, Netdev: "veth0", MAC: mac, MTU: 1500},
		{Device: "rxe0", Port: 1, Index: 1, GID: gid.MustParse("10.0.0.1"), Type: gid.TypeRoCEv2, Netdev: "veth0", MAC: mac, MTU: 1500},
		{Device: "rxe0", Port: 1, Index: 2, Empty: true},
	}}
}

func ExampleAttr_Validate() {
	a := ah.Attr{PortNum: 1, StaticRate: 1, GRH: ah.GlobalRoute{DGID: gid.MustParse("10.0.0.2"), SGIDIndex: 2}}
	err := a.Validate(table())
	for _, p := range err.(*ah.ValidationError).Problems {
		fmt.Printf("%s %s (%s)\n", p.Field, p.Value, p.Errno)
	}
	// Output:
	// is_global 0 (EINVAL)
	// static_rate 1 (EINVAL)
}

func ExampleResolve() {
	// The sender's network namespace as roce-probe's collector records it
	// (a host snapshot's namespace, or vlan.Decode of its JSON): veth0, its
	// connected route and the peer's neighbour entry.
	net := &vlan.Namespace{
		Links: []vlan.Link{{Name: "veth0", Index: 2, Kind: vlan.KindVeth, MAC: vlan.MAC{2, 0, 0, 0, 0, 1}, MTU: 1500, OperState: "up", Ether: true,
			Addrs: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/24")}}},
		Routes:    []vlan.Route{{Table: vlan.TableMain, Type: vlan.RouteUnicast, Dst: netip.MustParsePrefix("10.0.0.0/24"), Dev: "veth0", Ifindex: 2}},
		Neighbors: []vlan.Neighbor{{IP: netip.MustParseAddr("10.0.0.2"), Dev: "veth0", Ifindex: 2, MAC: vlan.MAC{2, 0, 0, 0, 0, 2}, State: vlan.NUDReachable}},
	}
	net.Freeze() // complete: build the lookup tables once
	a := ah.Attr{IsGlobal: true, PortNum: 1, SL: 3, GRH: ah.GlobalRoute{DGID: gid.MustParse("10.0.0.2"), SGIDIndex: 1, HopLimit: 8, TrafficClass: 0x6A}}
	r, err := ah.Resolve(a, table(), net, ah.ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 17})
	if err != nil {
		fmt.Println(err)
		return
	}
	w := r.Wire
	fmt.Println(w.SMAC, "→", w.DMAC, "untagged:", w.VLAN == nil)
	fmt.Printf("IPv%d %s → %s DSCP %d ECN %d TTL %d UDP %#x MTU %d\n", w.IPVersion, w.Src, w.Dst, *w.DSCP, *w.ECN, w.TTL, *w.UDPSport, w.MTU)
	for _, x := range r.Warnings {
		fmt.Println("warning:", x.Field, x.Requested, "→", x.OnWire)
	}
	f, _ := r.Frame(ah.Datagram{SrcQPN: 17, DestQPN: 0x12, QKey: 0x11111111, Payload: []byte("hi")})
	fmt.Println("frame bytes:", len(f)) // 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 8 DETH + 2 payload + 2 pad + 4 ICRC
	// Output:
	// 02:00:00:00:00:01 → 02:00:00:00:00:02 untagged: true
	// IPv4 10.0.0.1 → 10.0.0.2 DSCP 26 ECN 2 TTL 64 UDP 0xdf94 MTU 1024
	// warning: grh.hop_limit 8 → 64
	// warning: sl 3 → ignored
	// frame bytes: 70
}

func ExampleFromWC() {
	// What rxe puts in the GRH area for IPv4: 20 zero bytes, then the
	// IPv4 header (10.0.0.2 → 10.0.0.1, TOS 0x68, TTL 64).
	var grh [40]byte
	copy(grh[20:], []byte{0x45, 0x68, 0x00, 0x3c, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x13, 10, 0, 0, 2, 10, 0, 0, 1})
	wc := ah.WC{GRH: true, SrcQP: 0x11}
	for _, b := range []ah.Behaviour{ah.Kernel, ah.RDMACore} {
		r, err := ah.FromWC(wc, grh, table(), ah.FromWCOptions{Behaviour: b})
		if err != nil {
			fmt.Println(err)
			continue
		}
		g := r.Attr.GRH
		fmt.Printf("%s: dgid %s sgid_index %d hop_limit %d traffic_class %#x\n", b, g.DGID, g.SGIDIndex, g.HopLimit, g.TrafficClass)
	}
	// Output:
	// kernel: dgid ::ffff:10.0.0.2 sgid_index 1 hop_limit 255 traffic_class 0x0
	// rdma-core: dgid ::ffff:10.0.0.2 sgid_index 1 hop_limit 64 traffic_class 0x68
}
