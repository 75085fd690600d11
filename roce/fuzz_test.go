package roce

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Seeds besides roce/testdata/fuzz: one frame per encapsulation.
func addFrameSeeds(f *testing.F) {
	for i, e := range encaps {
		f.Add(buildFrame(f, specFor(e, OpcodeUDSendOnlyWithImmediate, i)))
		f.Add(buildFrame(f, specFor(e, Opcode(0x0B), i)))
		// every extension header: RDMA READ response (AETH), COMPARE_SWAP
		// (AtomicETH), ATOMIC_ACKNOWLEDGE, SEND with invalidate (IETH), XRC
		// RDMA WRITE (XRCETH, RETH), RD SEND (RDETH, DETH)
		for _, op := range []Opcode{0x0D, 0x13, 0x12, 0x17, 0xAA, 0x44} {
			f.Add(buildFrame(f, specFor(e, op, i)))
		}
	}
}

// FuzzDecoder: the zero-allocation decoder never panics, and what it
// accepts has consistent lengths.
func FuzzDecoder(f *testing.F) {
	addFrameSeeds(f)
	dec := NewDecoder()
	f.Fuzz(func(t *testing.T, frame []byte) {
		var p Packet
		if err := dec.Decode(frame, &p); err != nil {
			return
		}
		if p.PayloadLen+p.PadLen+ICRCLen > len(frame) || p.PadLen > 3 || p.PadLen != int(p.BTH.PadCount) {
			t.Fatalf("inconsistent packet: payload %d pad %d (BTH %d) in a %d-byte frame", p.PayloadLen, p.PadLen, p.BTH.PadCount, len(frame))
		}
		if p.Version != 1 && p.Version != 2 {
			t.Fatalf("version %d", p.Version)
		}
	})
}

// FuzzNewPacket: gopacket.NewPacket with the registered layers never
// panics (gopacket would turn a panic into a DecodeFailure layer; this
// checks there is none caused by our decoders).
func FuzzNewPacket(f *testing.F) {
	addFrameSeeds(f)
	f.Fuzz(func(t *testing.T, frame []byte) {
		pk := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{SkipDecodeRecovery: true})
		if pl, ok := pk.Layer(LayerTypePayload).(*Payload); ok {
			_, _ = pl.VerifyChecksum()
		}
	})
}

// FuzzLayers decodes data as one layer (chosen by the first byte) and, when
// that succeeds, serializes the layer again: SerializeTo must reproduce
// the decoded bytes (it mirrors DecodeFromBytes).
func FuzzLayers(f *testing.F) {
	for i := 0; i < 14; i++ {
		f.Add(append([]byte{byte(i)}, bytes.Repeat([]byte{0xA5, 0x5A, 0xFF, 0x00}, 12)...))
	}
	types := []gopacket.LayerType{LayerTypeGRH, LayerTypeBTH, LayerTypeRDETH, LayerTypeDETH, LayerTypeRETH,
		LayerTypeAETH, LayerTypeImmDt, LayerTypeIETH, LayerTypeAtomicETH, LayerTypeAtomicAckETH, LayerTypeXRCETH,
		LayerTypeFETH, LayerTypeCNP, LayerTypePayload}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		typ := types[int(data[0])%len(types)]
		data = data[1:]
		var l interface {
			gopacket.DecodingLayer
			gopacket.SerializableLayer
			LayerContents() []byte
		}
		switch typ {
		case LayerTypeGRH:
			l = &GRH{}
		case LayerTypeBTH:
			l = &BTH{}
		case LayerTypePayload:
			l = &Payload{bth: &BTH{PadCount: uint8(len(data) % 4)}}
		default:
			l = newExt(typ, &BTH{Opcode: Opcode(len(data))}).(interface {
				gopacket.DecodingLayer
				gopacket.SerializableLayer
				LayerContents() []byte
			})
		}
		if err := l.DecodeFromBytes(data, gopacket.NilDecodeFeedback); err != nil {
			return
		}
		_ = l.NextLayerType()
		buf := gopacket.NewSerializeBuffer()
		if err := l.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Fatalf("%v: decoded but does not serialize: %v", typ, err)
		}
		if !bytes.Equal(buf.Bytes(), l.LayerContents()) {
			t.Fatalf("%v: serialized % x, decoded from % x", typ, buf.Bytes(), l.LayerContents())
		}
	})
}

// FuzzICRC: ICRC verification and FillICRC never panic; the three ways of
// computing the ICRC (byte-wise masking, masked prefix, masked padded copy)
// agree on any packet they all take; a frame FillICRC accepts then
// verifies, and a bit flip in its covered bytes does not.
func FuzzICRC(f *testing.F) {
	addFrameSeeds(f)
	for _, v := range icrcVectors {
		f.Add(unhex(f, v.pkt+v.trailer))
	}
	var prefix [prefixLen]byte
	var scratch [icrcScratch]byte
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = VerifyICRC(data)
		if a, err := icrcMasked(data); err == nil {
			if b, ok := icrcPrefix(data, &prefix); ok && b != a {
				t.Fatalf("masked %#x, prefix %#x", a, b)
			}
			if c, ok := icrcCopy(data, scratch[:]); ok && c != a {
				t.Fatalf("masked %#x, copy %#x", a, c)
			}
		}
		frame := append([]byte(nil), data...)
		if err := FillICRC(frame); err != nil {
			return
		}
		if _, ok, err := VerifyFrameICRC(frame); err != nil || !ok {
			t.Fatalf("FillICRC then VerifyFrameICRC = %v, %v", ok, err)
		}
		// The last byte before the ICRC (BTH or payload, never masked) is
		// covered: a CRC-32 catches every single-bit flip there.
		pkt, err := roceNetworkPacket(frame)
		if err != nil {
			t.Fatal(err)
		}
		pkt[len(pkt)-ICRCLen-1] ^= 0x01
		if _, ok, err := VerifyFrameICRC(frame); err != nil || ok {
			t.Fatalf("a flipped covered bit: VerifyFrameICRC = %v, %v; want a mismatch", ok, err)
		}
	})
}

// FuzzDecoderMatchesNewPacket compares the two decoding paths: whatever
// Decoder decodes, gopacket.NewPacket with the registered layers decodes
// to the same fields and ICRC verdict; and a frame NewPacket finds a valid
// ICRC in, Decoder decodes.
func FuzzDecoderMatchesNewPacket(f *testing.F) {
	addFrameSeeds(f)
	dec := NewDecoder()
	f.Fuzz(func(t *testing.T, frame []byte) {
		var p Packet
		derr := dec.Decode(frame, &p)
		pk := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.NoCopy)
		pl, _ := pk.Layer(LayerTypePayload).(*Payload)
		bth, _ := pk.Layer(LayerTypeBTH).(*BTH)
		if derr != nil {
			if pl != nil && pl.ICRCStatus == ICRCValid && !gopacketRawEtherType(pk) {
				t.Fatalf("NewPacket finds a valid RoCE packet, Decoder says %v", derr)
			}
			return
		}
		for i := 0; i < p.NumVLANs && i < MaxVLANTags; i++ {
			if p.VLANs[i].TPID == 0x9100 {
				return // gopacket does not decode the legacy 0x9100 TPID
			}
		}
		if bth == nil || pl == nil {
			t.Fatalf("Decoder decodes %s, NewPacket has BTH %v payload %v (error layer %v)", p.BTH.Opcode, bth, pl, pk.ErrorLayer())
		}
		if !reflect.DeepEqual(strip(bth), strip(&p.BTH)) || (bth.Opcode != p.BTH.Opcode || bth.PSN != p.BTH.PSN || bth.DestQP != p.BTH.DestQP ||
			bth.PKey != p.BTH.PKey || bth.PadCount != p.BTH.PadCount || bth.FECN != p.BTH.FECN || bth.BECN != p.BTH.BECN) {
			t.Fatalf("BTH: NewPacket %+v, Decoder %+v", bth, p.BTH)
		}
		if len(pl.Data) != p.PayloadLen || len(pl.Pad) != p.PadLen || pl.ICRC != p.ICRC {
			t.Fatalf("payload: NewPacket %d+%d %x, Decoder %d+%d %x", len(pl.Data), len(pl.Pad), pl.ICRC, p.PayloadLen, p.PadLen, p.ICRC)
		}
		// the extension headers: the same set, with the same fields
		for _, h := range []struct {
			t   gopacket.LayerType
			has bool
			l   gopacket.Layer
		}{{LayerTypeRETH, p.HasRETH, &p.RETH}, {LayerTypeAETH, p.HasAETH, &p.AETH}, {LayerTypeAtomicETH, p.HasAtomicETH, &p.AtomicETH},
			{LayerTypeAtomicAckETH, p.HasAtomicAckETH, &p.AtomicAckETH}, {LayerTypeIETH, p.HasIETH, &p.IETH},
			{LayerTypeXRCETH, p.HasXRCETH, &p.XRCETH}, {LayerTypeRDETH, p.HasRDETH, &p.RDETH}} {
			l := pk.Layer(h.t)
			if (l != nil) != h.has {
				t.Fatalf("%v: NewPacket has it %v, Decoder %v", h.t, l != nil, h.has)
			}
			if l != nil && !reflect.DeepEqual(strip(l), strip(h.l)) {
				t.Fatalf("%v: NewPacket %+v, Decoder %+v", h.t, l, h.l)
			}
		}
		if pl.ICRCStatus != p.ICRCStatus {
			t.Fatalf("ICRC: NewPacket %v, Decoder %v (truncated %v)", pl.ICRCStatus, p.ICRCStatus, p.Truncated)
		}
	})
}

// gopacketRawEtherType reports whether gopacket decoded the frame through
// EtherType 0xFFFF, which it treats as "raw IPv4" (layers.EthernetTypeRaw).
// 0xFFFF is a reserved EtherType, not a RoCE encapsulation, so Decoder
// rightly rejects such frames; the two decoders may differ there.
func gopacketRawEtherType(pk gopacket.Packet) bool {
	for _, l := range pk.Layers() {
		switch l := l.(type) {
		case *layers.Ethernet:
			if l.EthernetType == layers.EthernetTypeRaw {
				return true
			}
		case *layers.Dot1Q:
			if l.Type == layers.EthernetTypeRaw {
				return true
			}
		}
	}
	return false
}
