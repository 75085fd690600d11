package roce

import (
	"errors"
	"io"
	"os"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// testdata/rxe-ud-send.pcapng holds real frames from Linux 6.1's Soft-RoCE
// driver, captured in the lab by internal/lab's TestUDSendOnTheWire and
// written by testdata/make-rxe-captures.sh: one UD SEND Only over IPv4 and
// one over IPv6 on each lab network (untagged, 802.1Q 100 PCP 3, 802.1Q 200
// PCP 0, 802.1ad 1000 + 802.1Q 10 PCP 2), traffic class 0x6a, TTL 64. The
// kernel computed their ICRCs, so they are known-answer vectors that do not
// come from this package.
func TestRXECaptureDecodes(t *testing.T) {
	f, err := os.Open("testdata/rxe-ud-send.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions) // (package capture reads it in its tests)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		ip   int
		vlan []VLANTag
	}{
		{4, nil}, {6, nil},
		{4, []VLANTag{{TPID: 0x8100, PCP: 3, ID: 100}}}, {6, []VLANTag{{TPID: 0x8100, PCP: 3, ID: 100}}},
		{4, []VLANTag{{TPID: 0x8100, ID: 200}}}, {6, []VLANTag{{TPID: 0x8100, ID: 200}}},
		{4, []VLANTag{{TPID: 0x88a8, ID: 1000}, {TPID: 0x8100, PCP: 2, ID: 10}}},
		{6, []VLANTag{{TPID: 0x88a8, ID: 1000}, {TPID: 0x8100, PCP: 2, ID: 10}}},
	}
	d := NewDecoder()
	n := 0
	for ; ; n++ {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("after %d frames: %v", n, err)
		}
		if n >= len(want) {
			continue
		}
		w := want[n]
		var p Packet
		if err := d.Decode(data, &p); err != nil {
			t.Errorf("frame %d: %v", n+1, err)
			continue
		}
		if p.ICRCStatus != ICRCValid {
			t.Errorf("frame %d: ICRC %s (wire % x, computed %#08x), want valid", n+1, p.ICRCStatus, p.ICRC, p.Computed)
		}
		if p.Version != 2 || p.IPVersion != w.ip || p.TOS != 0x6a || p.TTL != 64 || p.DstPort != 4791 {
			t.Errorf("frame %d: RoCE v%d IPv%d TOS %#x TTL %d port %d, want v2 IPv%d 0x6a 64 4791", n+1, p.Version, p.IPVersion, p.TOS, p.TTL, p.DstPort, w.ip)
		}
		if p.BTH.Opcode != 0x64 || !p.HasDETH || p.QKey != 0x1234abcd || p.BTH.DestQP != 0xabcd {
			t.Errorf("frame %d: opcode %#x DETH %v Q_Key %#x DestQP %#x, want UD SEND Only 0x1234abcd 0xabcd", n+1, uint8(p.BTH.Opcode), p.HasDETH, p.QKey, p.BTH.DestQP)
		}
		// The kernel chose the UDP source port from the source QPN 0x11
		// (tshark: udp.srcport 57236, deth.srcqp 0x11): a real-kernel check
		// of RXESourcePort, independent of TestFlowLabelVectors.
		if p.SrcQP != 0x11 || p.SrcPort != 57236 || RXESourcePort(p.SrcQP) != p.SrcPort {
			t.Errorf("frame %d: SrcQP %#x UDP source port %d, RXESourcePort gives %d; want 0x11, 57236 (0xdf94)", n+1, p.SrcQP, p.SrcPort, RXESourcePort(p.SrcQP))
		}
		if p.NumVLANs != len(w.vlan) {
			t.Errorf("frame %d: %d VLAN tags, want %d", n+1, p.NumVLANs, len(w.vlan))
			continue
		}
		for i, v := range w.vlan {
			if p.VLANs[i] != v {
				t.Errorf("frame %d tag %d: %+v, want %+v", n+1, i, p.VLANs[i], v)
			}
		}
		// One flipped bit anywhere in the IBA part must break the ICRC.
		bad := append([]byte(nil), data...)
		bad[len(bad)-10] ^= 1
		if _, ok, err := VerifyFrameICRC(bad); err != nil || ok {
			t.Errorf("frame %d with a flipped payload bit: ICRC ok=%v err=%v, want a mismatch", n+1, ok, err)
		}
	}
	if n != len(want) {
		t.Errorf("%d frames, want %d", n, len(want))
	}
}
