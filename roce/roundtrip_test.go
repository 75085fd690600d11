package roce

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// encap describes the outer headers of a test frame.
type encap struct {
	name    string
	version int // RoCE 1 or 2
	ipv     int // 4 or 6 for v2
	vlans   []VLANTag
}

var encaps = []encap{
	{"v2-ipv4-untagged", 2, 4, nil},
	{"v2-ipv6-untagged", 2, 6, nil},
	{"v2-ipv4-dot1q", 2, 4, []VLANTag{{TPID: 0x8100, PCP: 3, ID: 100}}},
	{"v2-ipv6-dot1q", 2, 6, []VLANTag{{TPID: 0x8100, PCP: 5, DEI: true, ID: 200}}},
	{"v2-ipv4-qinq", 2, 4, []VLANTag{{TPID: 0x88a8, PCP: 1, ID: 1000}, {TPID: 0x8100, PCP: 6, ID: 10}}},
	{"v2-ipv6-qinq", 2, 6, []VLANTag{{TPID: 0x88a8, PCP: 7, ID: 4094}, {TPID: 0x8100, PCP: 2, ID: 1}}},
	{"v1-untagged", 1, 0, nil},
	{"v1-dot1q", 1, 0, []VLANTag{{TPID: 0x8100, PCP: 4, ID: 300}}},
	{"v1-qinq", 1, 0, []VLANTag{{TPID: 0x88a8, PCP: 0, ID: 5}, {TPID: 0x8100, PCP: 3, ID: 6}}},
}

var (
	srcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 1}
	dstMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 2}
	src4   = netip.MustParseAddr("192.168.100.1")
	dst4   = netip.MustParseAddr("192.168.100.2")
	src6   = netip.MustParseAddr("fd00:100::1")
	dst6   = netip.MustParseAddr("fd00:100::2")
)

// sampleExt returns an extension header of type t with distinct field values.
func sampleExt(t gopacket.LayerType, seed uint32) gopacket.SerializableLayer {
	s := uint64(seed)
	switch t {
	case LayerTypeRDETH:
		return &RDETH{Reserved: 0, EEC: 0xABCDE0 + seed&0xF}
	case LayerTypeDETH:
		return &DETH{QKey: 0x11110000 + seed, SrcQP: 0x10000 + seed}
	case LayerTypeRETH:
		return &RETH{VA: 0x00007f7e91000000 + s, RKey: 0x01709a33 + seed, DMALen: 4096 + seed}
	case LayerTypeAETH:
		return &AETH{Syndrome: uint8(seed) & 0x7F, MSN: 0x123456 ^ seed}
	case LayerTypeImmDt:
		return &ImmDt{Immediate: 0xdeadbeef ^ seed}
	case LayerTypeIETH:
		return &IETH{RKey: 0xcafe0000 + seed}
	case LayerTypeAtomicETH:
		return &AtomicETH{VA: 0x1000 + s, RKey: 0x22 + seed, SwapAddData: 0x0102030405060708 + s, CompareData: 0x1112131415161718 + s}
	case LayerTypeAtomicAckETH:
		return &AtomicAckETH{OrigRemoteData: 0xfedcba9876543210 ^ s}
	case LayerTypeXRCETH:
		return &XRCETH{XRCSRQ: 0x00abc0 + seed}
	case LayerTypeFETH:
		return &FETH{Selectivity: uint8(seed) & 3, PlacementType: uint8(seed>>2) & 0xF}
	case LayerTypeCNP:
		return &CNP{}
	}
	panic(fmt.Sprintf("no sample for %v", t))
}

type frameSpec struct {
	encap
	bth     BTH
	exts    []gopacket.SerializableLayer
	payload []byte
	tos     uint8
	ttl     uint8
	fl      uint32
	sport   uint16
}

// buildFrame builds f with FrameSpec, the one frame builder.
func buildFrame(t testing.TB, f frameSpec) []byte {
	t.Helper()
	s := FrameSpec{SrcMAC: srcMAC, DstMAC: dstMAC, VLANs: f.vlans, Version: f.version, Src: src4, Dst: dst4,
		TOS: f.tos, TTL: f.ttl, IPID: 0x1234, SrcPort: f.sport, BTH: f.bth, Headers: f.exts, Payload: f.payload}
	if f.version == 1 || f.ipv == 6 {
		s.Src, s.Dst, s.FlowLabel = src6, dst6, f.fl
	}
	frame, err := s.Build()
	if err != nil {
		t.Fatalf("FrameSpec.Build: %v", err)
	}
	return frame
}

// specFor returns a frame for opcode op in encapsulation e.
func specFor(e encap, op Opcode, n int) frameSpec {
	info := op.Info()
	f := frameSpec{encap: e, tos: uint8(0x68 | n&3), ttl: uint8(64 + n), fl: uint32(0x12345 + n), sport: RXESourcePort(uint32(n))}
	f.bth = BTH{Opcode: op, SolicitedEvent: n&1 == 1, MigReq: n&2 == 2, PKey: 0xFFFF - uint16(n), FECN: n&4 == 4,
		BECN: n&8 == 8, DestQP: 0x000100 + uint32(n), AckReq: n&16 == 16, PSN: 0xFFFFF0 + uint32(n)&0xF}
	for i, h := range info.Headers {
		f.exts = append(f.exts, sampleExt(h, uint32(n*7+i)))
	}
	if info.HasPayload {
		f.payload = bytes.Repeat([]byte{byte(n), 0xA5, 0x5A}, 1+n%23)[:1+n%23+n%3]
	}
	return f
}

func knownOpcodes() []Opcode {
	var ops []Opcode
	for i := 0; i < 256; i++ {
		if opcodeTable[i].Known {
			ops = append(ops, Opcode(i))
		}
	}
	return ops
}

// strip clears what DecodeFromBytes sets besides the fields (Contents,
// Payload, the BTH link) so decoded and original headers compare equal.
func strip(l gopacket.Layer) any {
	v := reflect.ValueOf(l).Elem()
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	for _, name := range []string{"extHeader", "BaseLayer"} {
		if f := c.FieldByName(name); f.IsValid() && f.CanSet() {
			f.Set(reflect.Zero(f.Type()))
		} else if f.IsValid() {
			// unexported embedded field: zero it through the address
			reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem().Set(reflect.Zero(f.Type()))
		}
	}
	return c.Interface()
}

func TestRoundTripEveryOpcode(t *testing.T) {
	ops := knownOpcodes()
	// RC 25 (0x00-0x14, 0x16, 0x17, 0x1C, 0x1D), UC 12, RD 22 (0x40-0x55),
	// UD 2, XRC 23 (as RC without RESYNC, FLUSH, ATOMIC_WRITE), CNP 1.
	if len(ops) != 85 {
		t.Fatalf("%d known opcodes, want 85", len(ops))
	}
	dec := NewDecoder()
	n := 0
	for _, e := range encaps {
		for _, op := range ops {
			n++
			f := specFor(e, op, n)
			frame := buildFrame(t, f)
			name := fmt.Sprintf("%s/%s", e.name, op)
			checkNewPacket(t, name, frame, f)
			checkDecoder(t, name, dec, frame, f)

			// A flipped payload (or last header) bit makes the ICRC invalid.
			bad := append([]byte(nil), frame...)
			bad[len(bad)-ICRCLen-1-int(f.bth.PadCount)] ^= 0x10
			var p Packet
			if err := dec.Decode(bad, &p); err != nil {
				t.Fatalf("%s: flipped frame: %v", name, err)
			}
			if p.ICRCStatus != ICRCInvalid {
				t.Errorf("%s: flipped bit: ICRC status %v, want invalid", name, p.ICRCStatus)
			}
			pk := gopacket.NewPacket(bad, layers.LayerTypeEthernet, gopacket.Default)
			if pl, _ := pk.Layer(LayerTypePayload).(*Payload); pl == nil || pl.ICRCStatus != ICRCInvalid {
				t.Errorf("%s: NewPacket with flipped bit: payload %v, want ICRC invalid", name, pl)
			} else if err, res := pl.VerifyChecksum(); err != nil || res.Valid || res.Actual == res.Correct {
				t.Errorf("%s: VerifyChecksum = %v, %+v; want a mismatch", name, err, res)
			}
		}
	}
}

func checkNewPacket(t *testing.T, name string, frame []byte, f frameSpec) {
	t.Helper()
	pk := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.Default)
	if el := pk.ErrorLayer(); el != nil {
		t.Fatalf("%s: decode error: %v", name, el.Error())
	}
	ls := pk.Layers()
	i := 0
	for i < len(ls) && ls[i].LayerType() != LayerTypeBTH {
		i++
	}
	if i == len(ls) {
		t.Fatalf("%s: no BTH in %v", name, ls)
	}
	bth := ls[i].(*BTH)
	want := f.bth
	want.PadCount = PadCount(len(f.payload))
	if !reflect.DeepEqual(strip(bth), strip(&want)) {
		t.Errorf("%s: BTH\n got %+v\nwant %+v", name, strip(bth), strip(&want))
	}
	rest := ls[i+1:]
	if len(rest) != len(f.exts)+1 {
		t.Fatalf("%s: %d layers after BTH, want %d", name, len(rest), len(f.exts)+1)
	}
	for j, x := range f.exts {
		got := rest[j]
		if got.LayerType() != x.LayerType() {
			t.Fatalf("%s: layer %d after BTH is %v, want %v", name, j, got.LayerType(), x.LayerType())
		}
		if !reflect.DeepEqual(strip(got), strip(x.(gopacket.Layer))) {
			t.Errorf("%s: %v\n got %+v\nwant %+v", name, x.LayerType(), strip(got), strip(x.(gopacket.Layer)))
		}
	}
	pl, ok := rest[len(rest)-1].(*Payload)
	if !ok {
		t.Fatalf("%s: last layer %v, want RoCE payload", name, rest[len(rest)-1].LayerType())
	}
	if !bytes.Equal(pl.Data, f.payload) || len(pl.Pad) != int(PadCount(len(f.payload))) {
		t.Errorf("%s: payload %x pad %d, want %x pad %d", name, pl.Data, len(pl.Pad), f.payload, PadCount(len(f.payload)))
	}
	if pl.ICRCStatus != ICRCValid {
		t.Errorf("%s: ICRC %v (wire % x, computed %#08x), want valid", name, pl.ICRCStatus, pl.ICRC, pl.ComputedICRC)
	}
	if pk.ApplicationLayer() != pl {
		t.Errorf("%s: application layer is not the RoCE payload", name)
	}
	// (Packet.VerifyChecksums is not used: gopacket cannot check the zero
	// UDP checksum of IPv6 RoCE frames.)
	if err, res := pl.VerifyChecksum(); err != nil || !res.Valid || res.Actual != res.Correct {
		t.Errorf("%s: VerifyChecksum = %v, %+v", name, err, res)
	}
}

func checkDecoder(t *testing.T, name string, dec *Decoder, frame []byte, f frameSpec) {
	t.Helper()
	var p Packet
	if err := dec.Decode(frame, &p); err != nil {
		t.Fatalf("%s: Decoder: %v", name, err)
	}
	if p.Version != f.version || p.IPVersion != f.ipv {
		t.Errorf("%s: version %d/IPv%d, want %d/IPv%d", name, p.Version, p.IPVersion, f.version, f.ipv)
	}
	if p.NumVLANs != len(f.vlans) || !reflect.DeepEqual(p.VLANs[:p.NumVLANs], f.vlans[:len(f.vlans):len(f.vlans)]) && len(f.vlans) > 0 {
		t.Errorf("%s: VLANs %+v, want %+v", name, p.VLANs[:p.NumVLANs], f.vlans)
	}
	if p.TOS != f.tos || p.TTL != f.ttl {
		t.Errorf("%s: TOS %#x TTL %d, want %#x %d", name, p.TOS, p.TTL, f.tos, f.ttl)
	}
	wantFL := f.fl
	if f.ipv == 4 {
		wantFL = 0
	}
	if p.FlowLabel != wantFL {
		t.Errorf("%s: flow label %#x, want %#x", name, p.FlowLabel, wantFL)
	}
	switch {
	case f.version == 1:
		if p.Src != src6 || p.Dst != dst6 {
			t.Errorf("%s: GIDs %v > %v", name, p.Src, p.Dst)
		}
	case f.ipv == 4:
		if p.Src != src4 || p.Dst != dst4 || p.SrcPort != f.sport || p.DstPort != 4791 {
			t.Errorf("%s: %v:%d > %v:%d", name, p.Src, p.SrcPort, p.Dst, p.DstPort)
		}
	default:
		if p.Src != src6 || p.Dst != dst6 || p.SrcPort != f.sport {
			t.Errorf("%s: %v:%d > %v", name, p.Src, p.SrcPort, p.Dst)
		}
	}
	if p.BTH.Opcode != f.bth.Opcode || p.BTH.PSN != f.bth.PSN || p.BTH.DestQP != f.bth.DestQP || p.BTH.FECN != f.bth.FECN || p.BTH.BECN != f.bth.BECN {
		t.Errorf("%s: BTH %+v", name, p.BTH)
	}
	for _, x := range f.exts {
		switch h := x.(type) {
		case *DETH:
			if !p.HasDETH || p.QKey != h.QKey || p.SrcQP != h.SrcQP {
				t.Errorf("%s: DETH %v %#x %#x, want %#x %#x", name, p.HasDETH, p.QKey, p.SrcQP, h.QKey, h.SrcQP)
			}
		case *ImmDt:
			if !p.HasImm || p.Imm != h.Immediate {
				t.Errorf("%s: ImmDt %v %#x, want %#x", name, p.HasImm, p.Imm, h.Immediate)
			}
		case *RETH:
			if !p.HasRETH || !reflect.DeepEqual(strip(&p.RETH), strip(h)) {
				t.Errorf("%s: RETH %v %+v, want %+v", name, p.HasRETH, p.RETH, *h)
			}
		case *AETH:
			if !p.HasAETH || !reflect.DeepEqual(strip(&p.AETH), strip(h)) {
				t.Errorf("%s: AETH %v %+v, want %+v", name, p.HasAETH, p.AETH, *h)
			}
		case *AtomicETH:
			if !p.HasAtomicETH || !reflect.DeepEqual(strip(&p.AtomicETH), strip(h)) {
				t.Errorf("%s: AtomicETH %v %+v, want %+v", name, p.HasAtomicETH, p.AtomicETH, *h)
			}
		case *AtomicAckETH:
			if !p.HasAtomicAckETH || !reflect.DeepEqual(strip(&p.AtomicAckETH), strip(h)) {
				t.Errorf("%s: AtomicAckETH %v %+v, want %+v", name, p.HasAtomicAckETH, p.AtomicAckETH, *h)
			}
		case *IETH:
			if !p.HasIETH || !reflect.DeepEqual(strip(&p.IETH), strip(h)) {
				t.Errorf("%s: IETH %v %+v, want %+v", name, p.HasIETH, p.IETH, *h)
			}
		case *XRCETH:
			if !p.HasXRCETH || !reflect.DeepEqual(strip(&p.XRCETH), strip(h)) {
				t.Errorf("%s: XRCETH %v %+v, want %+v", name, p.HasXRCETH, p.XRCETH, *h)
			}
		case *RDETH:
			if !p.HasRDETH || !reflect.DeepEqual(strip(&p.RDETH), strip(h)) {
				t.Errorf("%s: RDETH %v %+v, want %+v", name, p.HasRDETH, p.RDETH, *h)
			}
		}
	}
	// a header the opcode does not call for is not there
	has := map[gopacket.LayerType]bool{LayerTypeRETH: p.HasRETH, LayerTypeAETH: p.HasAETH, LayerTypeAtomicETH: p.HasAtomicETH,
		LayerTypeAtomicAckETH: p.HasAtomicAckETH, LayerTypeIETH: p.HasIETH, LayerTypeXRCETH: p.HasXRCETH,
		LayerTypeRDETH: p.HasRDETH, LayerTypeDETH: p.HasDETH, LayerTypeImmDt: p.HasImm}
	for _, h := range f.bth.Opcode.Info().Headers {
		delete(has, h)
	}
	for h, on := range has {
		if on {
			t.Errorf("%s: Packet has a %v, which %s does not carry", name, h, f.bth.Opcode)
		}
	}
	if p.PayloadLen != len(f.payload) || p.PadLen != int(PadCount(len(f.payload))) {
		t.Errorf("%s: payload %d pad %d, want %d %d", name, p.PayloadLen, p.PadLen, len(f.payload), PadCount(len(f.payload)))
	}
	if p.ICRCStatus != ICRCValid {
		t.Errorf("%s: Decoder ICRC %v", name, p.ICRCStatus)
	}
}

func TestPadCounts(t *testing.T) {
	dec := NewDecoder()
	for n := 0; n < 8; n++ {
		f := frameSpec{encap: encaps[0], bth: BTH{Opcode: OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 5},
			exts: []gopacket.SerializableLayer{&DETH{QKey: 1, SrcQP: 2}}, payload: bytes.Repeat([]byte{0xEE}, n), ttl: 64}
		frame := buildFrame(t, f)
		var p Packet
		if err := dec.Decode(frame, &p); err != nil {
			t.Fatal(err)
		}
		wantPad := (4 - n%4) % 4
		if p.PadLen != wantPad || p.BTH.PadCount != uint8(wantPad) || p.PayloadLen != n {
			t.Errorf("payload %d: pad %d (BTH %d), payload %d; want pad %d", n, p.PadLen, p.BTH.PadCount, p.PayloadLen, wantPad)
		}
		if (n+p.PadLen)%4 != 0 || p.ICRCStatus != ICRCValid {
			t.Errorf("payload %d: pad %d ICRC %v", n, p.PadLen, p.ICRCStatus)
		}
	}
}
