package roce_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/roce-probe/roce-probe/roce"
)

// Build a RoCE v2 UD SEND_ONLY frame on VLAN 100 and decode it again.
func Example() {
	frame, err := roce.SerializeFrame(
		&layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
			EthernetType: layers.EthernetTypeDot1Q},
		&layers.Dot1Q{Priority: 3, VLANIdentifier: 100, Type: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TOS: 0x6a, TTL: 64, Protocol: layers.IPProtocolUDP,
			SrcIP: net.IP{192, 168, 0, 2}, DstIP: net.IP{192, 168, 0, 3}},
		&layers.UDP{SrcPort: layers.UDPPort(roce.RXESourcePort(17)), DstPort: roce.UDPPort},
		&roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 0x12, PSN: 1},
		&roce.DETH{QKey: 0x11111111, SrcQP: 17},
		&roce.Payload{Data: []byte("hello")},
	)
	if err != nil {
		panic(err)
	}
	pk := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	bth := pk.Layer(roce.LayerTypeBTH).(*roce.BTH)
	deth := pk.Layer(roce.LayerTypeDETH).(*roce.DETH)
	pl := pk.Layer(roce.LayerTypePayload).(*roce.Payload)
	fmt.Println(bth.Opcode, "dest QP", bth.DestQP, "src QP", deth.SrcQP, "pad", bth.PadCount)
	fmt.Printf("%q ICRC %s\n", pl.Data, pl.ICRCStatus)

	frame[len(frame)-5] ^= 1 // flip a pad bit
	var p roce.Packet
	if err := roce.NewDecoder().Decode(frame, &p); err != nil {
		panic(err)
	}
	fmt.Println("after a bit flip: ICRC", p.ICRCStatus)
	// Output:
	// UD_SEND_ONLY dest QP 18 src QP 17 pad 3
	// "hello" ICRC valid
	// after a bit flip: ICRC invalid
}

func ExampleFlowLabelToUDPSourcePort() {
	fl := roce.FlowLabelFromQPNs(0x11, 0x12)
	fmt.Printf("flow label %#05x → UDP source port %#x\n", fl, roce.FlowLabelToUDPSourcePort(fl))
	// Output: flow label 0x00132 → UDP source port 0xc132
}

func ExampleOpcode_Info() {
	info := roce.Opcode(0x0B).Info()
	fmt.Println(roce.Opcode(0x0B), info.Transport, info.Headers, info.HeaderLen)
	// Output: RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE RC [IB-RETH IB-ImmDt] 20
}

// A GID as sysfs prints it, as an address and classified.
func ExampleParseGID() {
	g, _ := roce.ParseGID("0000:0000:0000:0000:0000:ffff:c0a8:0002")
	fmt.Println(g, g.Addr(), g.Kind())
	fmt.Println(g.SysfsString())
	// Output:
	// ::ffff:192.168.0.2 192.168.0.2 ipv4
	// 0000:0000:0000:0000:0000:ffff:c0a8:0002
}

// Build a RoCE v2 UD SEND_ONLY on an 802.1ad + 802.1Q stack with
// FrameSpec and walk it again.
func ExampleFrameSpec_Build() {
	s := roce.FrameSpec{
		SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2},
		VLANs: []roce.VLANTag{{TPID: 0x88a8, ID: 1000, PCP: 5}, {ID: 10, PCP: 2}},
		Src:   netip.MustParseAddr("10.0.0.1"), Dst: netip.MustParseAddr("10.0.0.2"),
		TOS: 26<<2 | 2, TTL: 64, SrcPort: roce.RXESourcePort(0x11),
		BTH:     roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 0x12, PSN: 1},
		Headers: []gopacket.SerializableLayer{&roce.DETH{QKey: 0x11111111, SrcQP: 0x11}},
		Payload: []byte("hi"),
	}
	frame, err := s.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	var w roce.Walk
	err = roce.WalkFrame(frame, &w)
	fmt.Println(len(frame), err, w.NumVLANs, w.VLANs[0].TPID == 0x88a8, w.Net, w.UDP, w.Transport, w.End)
	_, ok, _ := roce.VerifyFrameICRC(frame)
	fmt.Println("icrc ok:", ok)
	// Output:
	// 78 <nil> 2 true 22 42 50 78
	// icrc ok: true
}
