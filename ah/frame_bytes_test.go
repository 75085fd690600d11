package ah

import (
	"encoding/hex"
	"net/netip"
	"testing"

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

// Resolution.Frame builds with roce.FrameSpec the bytes its own layer
// assembly built before (QinQ IPv4 with an IPv4 ID, IPv6 with a flow
// label, RoCE v1 on a VLAN): the frames below were written by that code.
func TestResolutionFrameBytes(t *testing.T) {
	want := []string{
		"02fc0000000202fc0000000188a8a3e88100400a0800456a00404242400040111bfe0a0064010a006402df9412b7002c00006430ffff0000001200123456111111110000001168656c6c6f2c2072780000008477aa56",
		"02fc0000000202fc0000000186dd60212345002c113ffd000000000000000000000000000001fd000000000000000000000000000002c00112b7002c0000642080010000001200123456111111110000001268656c6c6f2c20727865000030329515",
		"02fc0000000202fc000000018100606489156605432100241b01fe8000000000000000fc00fffe000001fe8000000000000000fc00fffe000002641000020000001200123456111111110000001368656c6c6f2c207278652100a03cac2f",
	}
	for i, w := range goldenWires() {
		r := &Resolution{Wire: w}
		b, err := r.Frame(Datagram{SrcQPN: 0x11 + uint32(i), DestQPN: 0x12, QKey: 0x11111111, PSN: 0x123456, Payload: []byte("hello, rxe!")[:9+i], IPID: 0x4242, PKey: uint16(0x8001 * i)})
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != want[i] {
			t.Errorf("frame %d:\n got  %s\n want %s", i, got, want[i])
		}
	}
}
