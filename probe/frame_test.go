package probe

import (
	"bytes"
	"encoding/hex"
	"strings"

	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"

	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// testEncaps are the encapsulations frames are built in by the tests:
// untagged, 802.1Q and QinQ (802.1ad and the pre-standard 0x9100 S-tag),
// over IPv4 and IPv6.
var testEncaps = []struct {
	name string
	tags []roce.VLANTag
	v6   bool
}{
	{"untagged-v4", nil, false},
	{"untagged-v6", nil, true},
	{"dot1q-v4", []roce.VLANTag{{TPID: 0x8100, ID: 4095, PCP: 7, DEI: true}}, false},
	{"dot1q-v6", []roce.VLANTag{{TPID: 0x8100, ID: 100, PCP: 3}}, true},
	{"qinq-v4", []roce.VLANTag{{TPID: 0x88a8, ID: 10, PCP: 1}, {TPID: 0x8100, ID: 200, PCP: 1}}, false},
	{"qinq-v6", []roce.VLANTag{{TPID: 0x88a8, ID: 1000, PCP: 2}, {TPID: 0x8100, ID: 10, PCP: 5}}, true},
	{"qinq9100-v4", []roce.VLANTag{{TPID: 0x9100, ID: 300, PCP: 4}, {TPID: 0x8100, ID: 30, PCP: 4}}, false},
}

func testFrame(tags []roce.VLANTag, v6 bool) Frame {
	f := Frame{
		DstMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 2}, SrcMAC: net.HardwareAddr{0x02, 0, 0, 0, 0, 1},
		Tags: tags, Src: netip.MustParseAddr("192.0.2.1"), Dst: netip.MustParseAddr("192.0.2.2"),
		DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc123, PKey: 0xffff,
		DestQP: DefaultDestQP, SrcQP: DefaultSrcQP, PSN: 0x000102, QKey: DefaultQKey,
		Payload: []byte{1, 2, 3, 4, 5, 6, 7}, // 7 bytes: one pad byte
	}
	if v6 {
		f.Src, f.Dst = netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2")
	}
	return f
}

// The header bytes a RoCE v2 UD SEND_ONLY must carry, checked at their
// fixed offsets (Ethernet, 802.1Q, IPv4, UDP; BTH and DETH as
// include/rdma/ib_pack.h lays them out) rather than through ParseFrame.
func TestBuildLayout(t *testing.T) {
	f := testFrame([]roce.VLANTag{{TPID: 0x8100, ID: 100, PCP: 3}}, false)
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	eth := b[:18]
	if !bytes.Equal(eth[12:18], []byte{0x81, 0x00, 0x60, 0x64, 0x08, 0x00}) {
		t.Errorf("VLAN tag and EtherType % x, want 81 00 60 64 08 00 (PCP 3, VID 100, IPv4)", eth[12:18])
	}
	ip := b[18:38]
	if ip[0] != 0x45 || ip[1] != 0x6a || ip[8] != 64 || ip[9] != 17 || binary.BigEndian.Uint16(ip[6:]) != 0x4000 {
		t.Errorf("IPv4 header % x: want version/IHL 45, TOS 6a, DF, TTL 64, protocol 17", ip)
	}
	if ipv4Checksum(ip) != 0 {
		t.Errorf("IPv4 header checksum is wrong")
	}
	udp := b[38:46]
	if !bytes.Equal(udp[:4], []byte{0xc1, 0x23, 0x12, 0xb7}) || binary.BigEndian.Uint16(udp[6:]) != 0 {
		t.Errorf("UDP header % x: want ports c123 → 12b7 (4791), checksum 0", udp)
	}
	// 12 BTH + 8 DETH + 7 payload + 1 pad + 4 ICRC = 32 bytes after UDP.
	if got := binary.BigEndian.Uint16(udp[4:]); got != 8+32 {
		t.Errorf("UDP length %d, want 40", got)
	}
	bth := b[46:58]
	if !bytes.Equal(bth, []byte{0x64, 0x10, 0xff, 0xff, 0x00, 0x7e, 0x57, 0x01, 0x00, 0x00, 0x01, 0x02}) {
		t.Errorf("BTH % x: want opcode 64, pad 1, P_Key ffff, DestQP 7e5701, PSN 000102", bth)
	}
	deth := b[58:66]
	if !bytes.Equal(deth, []byte{0x00, 0x00, 0xca, 0xfe, 0x00, 0x7e, 0x57, 0x02}) {
		t.Errorf("DETH % x: want Q_Key 0000cafe, SrcQP 7e5702", deth)
	}
	if !bytes.Equal(b[66:74], []byte{1, 2, 3, 4, 5, 6, 7, 0}) {
		t.Errorf("payload and pad % x", b[66:74])
	}
	if len(b) != 78 {
		t.Errorf("frame is %d bytes, want 78", len(b))
	}
	if _, ok, err := roce.VerifyICRC(b[18:]); !ok || err != nil {
		t.Errorf("ICRC does not verify with roce.VerifyICRC (%v)", err)
	}
}

func TestFrameRoundTrip(t *testing.T) {
	for _, tc := range testEncaps {
		f := testFrame(tc.tags, tc.v6)
		b, err := f.Build()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// Ethernet padding after the packet must be ignored.
		got, err := ParseFrame(append(b, 0, 0, 0, 0))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got.Payload, f.Payload) {
			t.Errorf("%s: payload % x, want % x", tc.name, got.Payload, f.Payload)
		}
		got.Payload, f.Payload = nil, nil
		if got.Src != f.Src || got.Dst != f.Dst || got.Markings() != f.Markings() || got.PSN != f.PSN ||
			got.DestQP != f.DestQP || got.SrcQP != f.SrcQP || got.QKey != f.QKey || got.PKey != f.PKey ||
			!bytes.Equal(got.SrcMAC, f.SrcMAC) || !bytes.Equal(got.DstMAC, f.DstMAC) || len(got.Tags) != len(f.Tags) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v", tc.name, got, f)
		}
		for i := range f.Tags {
			if got.Tags[i] != f.Tags[i] {
				t.Errorf("%s: tag %d %+v, want %+v", tc.name, i, got.Tags[i], f.Tags[i])
			}
		}
	}
}

// Variant fields (TOS, TTL, PCP) may change in flight without breaking the
// ICRC; invariant ones (addresses, BTH, payload) may not.
func TestParseFrameICRC(t *testing.T) {
	b, err := testFrame([]roce.VLANTag{{TPID: 0x8100, ID: 5}}, false).Build()
	if err != nil {
		t.Fatal(err)
	}
	ip := 18
	variant := bytes.Clone(b)
	variant[14] = 0xe0 // PCP 7
	variant[ip+1] = 0x03
	variant[ip+8] = 1
	// fix the IPv4 header checksum after the rewrite, as a router does
	variant[ip+10], variant[ip+11] = 0, 0
	binary.BigEndian.PutUint16(variant[ip+10:], ipv4Checksum(variant[ip:ip+20]))
	if _, err := ParseFrame(variant); err != nil {
		t.Errorf("rewritten TOS/TTL/PCP: %v", err)
	}
	for _, off := range []int{ip + 12, ip + 20, ip + 28 + 5, ip + 28 + 12, len(b) - 6, len(b) - 1} {
		bad := bytes.Clone(b)
		bad[off] ^= 0x01
		if off == ip+12 { // keep the IPv4 checksum right so the ICRC is what fails
			bad[ip+10], bad[ip+11] = 0, 0
			binary.BigEndian.PutUint16(bad[ip+10:], ipv4Checksum(bad[ip:ip+20]))
		}
		_, err := ParseFrame(bad) // source address, UDP port, BTH, payload, ICRC itself
		if !errors.Is(err, ErrBadICRC) {
			t.Errorf("byte %d flipped: error %v, want ErrBadICRC", off, err)
		}
	}
}

func TestParseFrameRejects(t *testing.T) {
	good, err := testFrame(nil, false).Build()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mut  func(b []byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:10] }},
		{"arp", func(b []byte) []byte { b[12], b[13] = 0x08, 0x06; return b }},
		{"ip options", func(b []byte) []byte { b[14] = 0x46; return b }},
		{"tcp", func(b []byte) []byte { b[23] = 6; return b }},
		{"fragment", func(b []byte) []byte { b[20] |= 0x20; return b }},
		{"other port", func(b []byte) []byte { b[36] = 0x13; return b }},
		{"opcode RC SEND", func(b []byte) []byte { b[42] = 0x04; return b }},
		{"tver", func(b []byte) []byte { b[43] |= 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:50] }},
		{"udp length", func(b []byte) []byte { b[38]++; return b }},
	} {
		_, err := ParseFrame(tc.mut(bytes.Clone(good)))
		if !errors.Is(err, ErrNotRoCEv2) {
			t.Errorf("%s: error %v, want ErrNotRoCEv2", tc.name, err)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		mut  func(f *Frame)
		want string // the error names the field, the value and what is allowed
	}{
		{"mac", func(f *Frame) { f.DstMAC = nil }, "want 6 bytes each"},
		{"tags", func(f *Frame) { f.Tags = make([]roce.VLANTag, 5) }, "5 VLAN tags: want at most 4"},
		{"tpid", func(f *Frame) { f.Tags = []roce.VLANTag{{TPID: 0x9200}} }, "TPID 0x9200 VID 0 PCP 0) is not valid: want TPID 0x8100, 0x88a8 or 0x9100"},
		{"vid", func(f *Frame) { f.Tags = []roce.VLANTag{{TPID: 0x8100, ID: 4096}} }, "VID 4096 PCP 0) is not valid"},
		{"pcp", func(f *Frame) { f.Tags = []roce.VLANTag{{TPID: 0x8100, ID: 1, PCP: 8}} }, "PCP 8) is not valid"},
		{"dscp", func(f *Frame) { f.DSCP = 64 }, "DSCP 64 is out of range: want 0..63"},
		{"ecn", func(f *Frame) { f.ECN = 4 }, "ECN 4 is out of range: want 0..3"},
		{"dest qpn", func(f *Frame) { f.DestQP = 1 << 24 }, "dest QP 0x1000000 is out of range: want 0..0xffffff"},
		{"src qpn", func(f *Frame) { f.SrcQP = 1 << 24 }, "src QP 0x1000000 is out of range"},
		{"psn", func(f *Frame) { f.PSN = 1 << 24 }, "PSN 0x1000000 is out of range"},
		{"family", func(f *Frame) { f.Dst = netip.MustParseAddr("fd00::2") }, "192.0.2.1 → fd00::2: want two IPv4 or two IPv6 addresses"},
	} {
		f := testFrame(nil, false)
		tc.mut(&f)
		b, err := f.Build()
		if err == nil || !strings.Contains(err.Error(), tc.want) || b != nil {
			t.Errorf("%s: Build = %d bytes, %v; want no frame and an error containing %q", tc.name, len(b), err, tc.want)
		}
	}
}

// FuzzParseFrame: never panics; an accepted frame's payload lies inside
// the input and a rebuilt frame parses to the same fields.
func FuzzParseFrame(f *testing.F) {
	for _, tags := range [][]roce.VLANTag{nil, {{TPID: 0x8100, ID: 1}}, {{TPID: 0x88a8, ID: 2}, {TPID: 0x8100, ID: 3}}} {
		for _, v6 := range []bool{false, true} {
			b, _ := testFrame(tags, v6).Build()
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := ParseFrame(b)
		if err != nil {
			return
		}
		again, err := fr.Build()
		if err != nil {
			t.Fatalf("accepted frame does not rebuild: %v", err)
		}
		fr2, err := ParseFrame(again)
		if err != nil {
			t.Fatalf("rebuilt frame does not parse: %v", err)
		}
		if fr2.Markings() != fr.Markings() || !bytes.Equal(fr2.Payload, fr.Payload) || fr2.PSN != fr.PSN {
			t.Fatalf("rebuild changed the frame: %+v vs %+v", fr2, fr)
		}
	})
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "\n", "", "|", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ParseFrame reads the UD SEND_ONLY frames Linux's Soft-RoCE driver built
// (roce/testdata/rxe-ud-send.pcapng; values as tshark shows them): what a
// listener parses is what a real RoCE stack sends, not only what Build
// writes.
func TestParseFrameRealRXE(t *testing.T) {
	fh, err := os.Open("../roce/testdata/rxe-ud-send.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	cr, err := capture.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for ; ; n++ {
		data, _, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := ParseFrame(data)
		if err != nil {
			t.Errorf("frame %d: %v", n+1, err)
			continue
		}
		// tshark: DSCP 26, ECN 2, TTL 64, UDP 57236 → 4791, DestQP 0xabcd,
		// Q_Key 0x1234abcd, SrcQP 0x11, P_Key 0xffff; payload = udp.length
		// (68, 68, 68 ×4, 72, 72) - 8 UDP - 12 BTH - 8 DETH - 4 ICRC -
		// bth.padcnt (0, 0, 1 ×6).
		wantPayload := []int{36, 36, 35, 35, 35, 35, 39, 39}[min(n, 7)]
		if f.DSCP != 26 || f.ECN != 2 || f.TTL != 64 || f.Sport != 57236 || f.DestQP != 0xabcd || f.QKey != 0x1234abcd ||
			f.SrcQP != 0x11 || f.PKey != 0xffff || len(f.Payload) != wantPayload {
			t.Errorf("frame %d: DSCP %d ECN %d TTL %d sport %d DestQP %#x Q_Key %#x SrcQP %#x P_Key %#x payload %d",
				n+1, f.DSCP, f.ECN, f.TTL, f.Sport, f.DestQP, f.QKey, f.SrcQP, f.PKey, len(f.Payload))
		}
		if wantTags := []int{0, 0, 1, 1, 1, 1, 2, 2}[min(n, 7)]; len(f.Tags) != wantTags {
			t.Errorf("frame %d: %d VLAN tags, want %d", n+1, len(f.Tags), wantTags)
		}
	}
	if n != 8 {
		t.Errorf("%d frames, want 8", n)
	}
}

// ipv4Checksum is RFC 1071's checksum over an IPv4 header: 0 when a header
// with its checksum is right, the checksum when the field is zeroed.
func ipv4Checksum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return ^uint16(s)
}
