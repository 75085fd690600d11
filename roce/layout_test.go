package roce

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
)

// Extended transport headers against byte layouts written out by hand from
// drivers/infiniband/sw/rxe/rxe_hdr.h, struct rxe_deth, rxe_reth, rxe_aeth,
// rxe_immdt, rxe_ieth, rxe_atmeth, rxe_atmack and rxe_rdeth (Linux 6.1;
// big-endian fields, 24-bit QPNs after a reserved byte; XRCETH the same way,
// 4 bytes as include/rdma/ib_pack.h, IB_EXT_XRC_BYTES), not from this package: SerializeTo must write exactly
// these bytes and DecodeFromBytes must read them back into the fields.
func TestExtHeaderLayouts(t *testing.T) {
	type layer interface {
		gopacket.DecodingLayer
		gopacket.SerializableLayer
	}
	for _, tc := range []struct {
		name  string
		l     layer
		fresh func() layer
		wire  string
	}{
		{"DETH", &DETH{QKey: 0x80010000, Reserved: 0x5a, SrcQP: 0x00abcdef}, func() layer { return &DETH{} },
			"80 01 00 00 | 5a | ab cd ef"},
		{"RETH", &RETH{VA: 0x00007f7e91000000, RKey: 0x01709a33, DMALen: 128}, func() layer { return &RETH{} },
			"00 00 7f 7e 91 00 00 00 | 01 70 9a 33 | 00 00 00 80"}, // the RETH of icrcVectors[0]
		{"AETH", &AETH{Syndrome: 0x1F, MSN: 0x123456}, func() layer { return &AETH{} },
			"1f | 12 34 56"},
		{"ImmDt", &ImmDt{Immediate: 0xdeadbeef}, func() layer { return &ImmDt{} },
			"de ad be ef"},
		{"IETH", &IETH{RKey: 0x0badcafe}, func() layer { return &IETH{} },
			"0b ad ca fe"},
		{"AtomicETH", &AtomicETH{VA: 0x1122334455667788, RKey: 0x99aabbcc, SwapAddData: 0x0102030405060708, CompareData: 0xf1f2f3f4f5f6f7f8},
			func() layer { return &AtomicETH{} },
			"11 22 33 44 55 66 77 88 | 99 aa bb cc | 01 02 03 04 05 06 07 08 | f1 f2 f3 f4 f5 f6 f7 f8"},
		{"AtomicAckETH", &AtomicAckETH{OrigRemoteData: 0x0807060504030201}, func() layer { return &AtomicAckETH{} },
			"08 07 06 05 04 03 02 01"},
		{"RDETH", &RDETH{Reserved: 0x01, EEC: 0x00fedcba}, func() layer { return &RDETH{} },
			"01 | fe dc ba"},
		{"XRCETH", &XRCETH{Reserved: 0x02, XRCSRQ: 0x00123abc}, func() layer { return &XRCETH{} },
			"02 | 12 3a bc"},
	} {
		want := unhex(t, tc.wire)
		buf := gopacket.NewSerializeBuffer()
		if err := tc.l.SerializeTo(buf, gopacket.SerializeOptions{}); err != nil {
			t.Errorf("%s: SerializeTo: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s: serialized % x, want % x", tc.name, buf.Bytes(), want)
		}
		got := tc.fresh()
		if err := got.DecodeFromBytes(append(want, 0xee), gopacket.NilDecodeFeedback); err != nil {
			t.Errorf("%s: DecodeFromBytes: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(strip(got.(gopacket.Layer)), strip(tc.l.(gopacket.Layer))) {
			t.Errorf("%s: decoded %+v, want %+v", tc.name, strip(got.(gopacket.Layer)), strip(tc.l.(gopacket.Layer)))
		}
		if short := want[:len(want)-1]; got.DecodeFromBytes(short, gopacket.NilDecodeFeedback) == nil {
			t.Errorf("%s: %d bytes decoded, want an error", tc.name, len(short))
		}
	}
}
