package ah

import (
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/internal/testenv"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// goldenWires are three predicted wires, RoCE v2 and v1.
func goldenWires() []Wire {
	u8 := func(v uint8) *uint8 { return &v }
	u16 := func(v uint16) *uint16 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	smac := vlan.MAC{0x02, 0xfc, 0, 0, 0, 1}
	dmac := vlan.MAC{0x02, 0xfc, 0, 0, 0, 2}
	return []Wire{
		{RoCEVersion: 2, SMAC: smac, DMAC: dmac, IPVersion: 4, Src: netip.MustParseAddr("10.0.100.1"), Dst: netip.MustParseAddr("10.0.100.2"),
			VLANChain: []vlan.ChainTag{{Tag: vlan.Tag{ID: 1000, TPID: vlan.TPID8021AD}, PCP: u8(5)}, {Tag: vlan.Tag{ID: 10}, PCP: u8(2)}},
			TOS:       u8(0x6a), TTL: 64, UDPSport: u16(0xdf94), MTU: 1024},
		{RoCEVersion: 2, SMAC: smac, DMAC: dmac, IPVersion: 6, Src: netip.MustParseAddr("fd00::1"), Dst: netip.MustParseAddr("fd00::2"),
			TOS: u8(0x02), TTL: 63, FlowLabel: u32(0x12345), UDPSport: u16(0xc001), MTU: 4096},
		{RoCEVersion: 1, SMAC: smac, DMAC: dmac, Src: netip.MustParseAddr("fe80::fc:ff:fe00:1"), Dst: netip.MustParseAddr("fe80::fc:ff:fe00:2"),
			VLANChain: []vlan.ChainTag{{Tag: vlan.Tag{ID: 100, TPID: vlan.TPID8021Q}, PCP: u8(3)}},
			TOS:       u8(0x60), TTL: 1, FlowLabel: u32(0x54321), MTU: 1024},
	}
}

// resolutionFrameBytes are the frames TestResolutionFrameBytes wants:
// written by the layer assembly Resolution.Frame had before it used
// roce.FrameSpec, and checked field by field against goldenWires and the
// datagrams by tshark in TestResolutionFrameBytesTshark (an independent
// dissector), so that they are not only the code's own answer.
func resolutionFrameBytes() []string {
	return []string{
		"02fc0000000202fc0000000188a8a3e88100400a0800456a00404242400040111bfe0a0064010a006402df9412b7002c00006430ffff0000001200123456111111110000001168656c6c6f2c2072780000008477aa56",
		"02fc0000000202fc0000000186dd60212345002c113ffd000000000000000000000000000001fd000000000000000000000000000002c00112b7002c0000642080010000001200123456111111110000001268656c6c6f2c20727865000030329515",
		"02fc0000000202fc000000018100606489156605432100241b01fe8000000000000000fc00fffe000001fe8000000000000000fc00fffe000002641000020000001200123456111111110000001368656c6c6f2c207278652100a03cac2f",
	}
}

// frameBytesDatagram is the datagram of frame i of the test.
func frameBytesDatagram(i int) Datagram {
	return Datagram{SrcQPN: 0x11 + uint32(i), DestQPN: 0x12, QKey: 0x11111111, PSN: 0x123456, Payload: []byte("hello, rxe!")[:9+i], IPID: 0x4242, PKey: uint16(0x8001 * i)}
}

// Resolution.Frame builds with roce.FrameSpec the bytes its own layer
// assembly built before (QinQ IPv4 with an IPv4 ID, IPv6 with a flow
// label, RoCE v1 on a VLAN).
func TestResolutionFrameBytes(t *testing.T) {
	want := resolutionFrameBytes()
	for i, w := range goldenWires() {
		r := &Resolution{Wire: w}
		b, err := r.Frame(frameBytesDatagram(i))
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != want[i] {
			t.Errorf("frame %d:\n got  %s\n want %s", i, got, want[i])
		}
	}
}

// TestResolutionFrameBytesTshark: tshark reads in the wanted frames what
// goldenWires and the datagrams say, written out here by hand: the MACs,
// the tags (802.1ad 1000 PCP 5 then 802.1Q 10 PCP 2; 802.1Q 100 PCP 3),
// addresses, TOS / traffic class 0x6a, 0x02, 0x60, TTL 64, 63, 1, the IPv4
// ID 0x4242, the flow labels 0x12345 and 0x54321, UDP source ports 0xdf94
// and 0xc001, opcode 100 (UD SEND only), P_Keys 0xffff (0 means the
// default), 0x8001, 0x0002, destination QP 0x12, PSN 0x123456, Q_Key
// 0x11111111, source QPs 0x11..0x13 and 9..11 payload bytes padded to 12.
// tshark does not check the ICRC: roce.VerifyICRC, whose vectors come from
// rxe's frames (roce/rxe_capture_test.go), does.
func TestResolutionFrameBytesTshark(t *testing.T) {
	tshark := testenv.Tool(t, "tshark")
	path := filepath.Join(t.TempDir(), "frames.pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(f)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for i, h := range resolutionFrameBytes() {
		b, _ := hex.DecodeString(h)
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(b), Length: len(b)}, b); err != nil {
			t.Fatal(err)
		}
		// the ICRC covers the packet from the IP header (or GRH) on
		net := []int{14 + 8, 14, 14 + 4}[i]
		if _, ok, err := roce.VerifyICRC(b[net:]); !ok || err != nil {
			t.Errorf("frame %d: invalid ICRC (%v)", i, err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	fields := []string{"eth.src", "eth.dst", "ieee8021ad.id", "ieee8021ad.priority", "vlan.id", "vlan.priority",
		"ip.src", "ip.dst", "ip.dsfield", "ip.ttl", "ip.id", "ipv6.src", "ipv6.dst", "ipv6.tclass", "ipv6.hlim", "ipv6.flow",
		"infiniband.grh.sgid", "infiniband.grh.dgid", "infiniband.grh.tclass", "infiniband.grh.hoplmt", "infiniband.grh.flowlabel",
		"udp.srcport", "udp.dstport", "infiniband.bth.opcode", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.psn",
		"infiniband.deth.q_key", "infiniband.deth.srcqp", "data.len"}
	common := map[string]string{"eth.src": "02:fc:00:00:00:01", "eth.dst": "02:fc:00:00:00:02", "infiniband.bth.opcode": "100",
		"infiniband.bth.destqp": "0x000012", "infiniband.bth.psn": "1193046", "infiniband.deth.q_key": "0x0000000011111111", "data.len": "12"}
	want := []map[string]string{
		{"ieee8021ad.id": "1000", "ieee8021ad.priority": "5", "vlan.id": "10", "vlan.priority": "2", "ip.src": "10.0.100.1", "ip.dst": "10.0.100.2",
			"ip.dsfield": "0x6a", "ip.ttl": "64", "ip.id": "0x4242", "udp.srcport": "57236", "udp.dstport": "4791",
			"infiniband.bth.p_key": "65535", "infiniband.deth.srcqp": "0x00000011"},
		{"ipv6.src": "fd00::1", "ipv6.dst": "fd00::2", "ipv6.tclass": "0x00000002", "ipv6.hlim": "63", "ipv6.flow": "0x012345",
			"udp.srcport": "49153", "udp.dstport": "4791", "infiniband.bth.p_key": "32769", "infiniband.deth.srcqp": "0x00000012"},
		{"vlan.id": "100", "vlan.priority": "3", "infiniband.grh.sgid": "fe80::fc:ff:fe00:1", "infiniband.grh.dgid": "fe80::fc:ff:fe00:2",
			"infiniband.grh.tclass": "96", "infiniband.grh.hoplmt": "1", "infiniband.grh.flowlabel": "344865",
			"infiniband.bth.p_key": "2", "infiniband.deth.srcqp": "0x00000013"},
	}
	rows := testenv.TsharkFields(t, tshark, path, nil, fields...)
	if len(rows) != len(want) {
		t.Fatalf("tshark printed %d frames, want %d", len(rows), len(want))
	}
	for i, row := range rows {
		for _, fl := range fields {
			exp, ok := want[i][fl]
			if !ok {
				exp = common[fl]
			}
			if row[fl] != exp {
				t.Errorf("frame %d: tshark %s = %q, want %q", i, fl, row[fl], exp)
			}
		}
	}
}
