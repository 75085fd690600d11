package ah

import (
	"testing"
)

// FuzzFromWC feeds arbitrary GRH buffers and completion flags to both
// behaviours: no panic, and a success always names a source entry of the
// table with a GID equal to the buffer's destination.
func FuzzFromWC(f *testing.F) {
	for _, b := range [][40]byte{
		ipv4Buf(nil, hdrTOS), ipv4Buf(staleV6, hdrCarry),
		ipv6Buf(0x6A, 0xABCDE, 17, 63, "fd00::2", "fd00::1"), ipv6Buf(0x20, 7, 0x1B, 1, "fe80::2:2", "fe80::1:1"),
	} {
		f.Add(b[:], true, uint8(2), false)
		f.Add(b[:], true, uint8(3), true)
	}
	tab := wcTable()
	f.Fuzz(func(t *testing.T, buf []byte, grhFlag bool, nt uint8, withType bool) {
		var grh [40]byte
		copy(grh[:], buf)
		wc := WC{GRH: grhFlag}
		if withType {
			x := NetworkType(nt % 5)
			wc.NetworkHdrType = &x
		}
		for _, b := range []Behaviour{Kernel, RDMACore} {
			r, err := FromWC(wc, grh, tab, FromWCOptions{Behaviour: b})
			if err != nil || !r.Attr.IsGlobal {
				continue
			}
			if r.Source == nil {
				t.Fatalf("%s: success without a source entry", b)
			}
			if v, _, _ := HeaderVersion(grh, b); b == RDMACore && v != r.HeaderVersion {
				t.Fatalf("rdma-core: header version %d, HeaderVersion says %d", r.HeaderVersion, v)
			}
		}
	})
}

// FuzzValidate: any attribute against the test table gives nil or a
// *ValidationError whose problems all name a field, a value and a range.
func FuzzValidate(f *testing.F) {
	f.Add(true, uint8(1), uint8(0), uint8(0), uint8(1), uint32(0), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2})
	f.Fuzz(func(t *testing.T, global bool, port, sl, rate, sgid uint8, fl uint32, dgid []byte) {
		a := Attr{IsGlobal: global, PortNum: port, SL: sl, StaticRate: rate, GRH: GlobalRoute{SGIDIndex: sgid, FlowLabel: fl}}
		copy(a.GRH.DGID[:], dgid)
		err := a.Validate(rxeTable())
		if err == nil {
			return
		}
		ve, ok := err.(*ValidationError)
		if !ok || len(ve.Problems) == 0 {
			t.Fatalf("Validate: %v", err)
		}
		for _, p := range ve.Problems {
			if p.Field == "" || p.Value == "" || p.Allowed == "" || p.Reason == "" {
				t.Fatalf("incomplete problem %+v", p)
			}
		}
	})
}
