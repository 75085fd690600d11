package ah

import (
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// FuzzFromWC feeds arbitrary GRH buffers and completion flags to both
// behaviours: no panic, and a success always names a source entry of the
// table; the kernel's only when that entry's rdma_read_gid_l2_fields VLAN
// is the completion's (find_gid_filter): 100 for wcTable's veth0.100
// entry, 10 — the inner tag — for the QinQ entry added here, none (0xffff)
// for the others.
func FuzzFromWC(f *testing.F) {
	qinq := ipv4Buf(nil, mustHex("45 00 00 3c 00 00 40 00 40 11 00 00 0a 0a 0a 02 0a 0a 0a 01"))
	for _, b := range [][40]byte{
		ipv4Buf(nil, hdrTOS), ipv4Buf(staleV6, hdrCarry),
		ipv6Buf(0x6A, 0xABCDE, 17, 63, "fd00::2", "fd00::1"), ipv6Buf(0x20, 7, 0x1B, 1, "fe80::2:2", "fe80::1:1"), qinq,
	} {
		f.Add(b[:], true, uint8(2), false, uint16(0), false)
		f.Add(b[:], true, uint8(3), true, uint16(10), true)
	}
	// The QinQ datagram as IPv4 (network_hdr_type 2) with the inner and
	// with the outer tag's VLAN: only the inner one may find entry 8.
	f.Add(qinq[:], true, uint8(2), true, uint16(10), true)
	f.Add(qinq[:], true, uint8(2), true, uint16(1000), true)
	tab := wcTable()
	tab.Entries = append(tab.Entries, gid.Entry{Device: "dev0", Port: 1, Index: 8, GID: gid.MustParse("::ffff:10.10.10.1"), Type: gid.TypeRoCEv2,
		Netdev: "veth0.q1000.10", VLAN: u16p(1000), VLANChain: []vlan.ChainTag{
			{Tag: vlan.Tag{ID: 1000, TPID: vlan.TPID8021AD}, Netdev: "veth0.q1000"},
			{Tag: vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}, Netdev: "veth0.q1000.10"},
		}})
	l2VLAN := map[int]uint16{3: 100, 8: 10}
	f.Fuzz(func(t *testing.T, buf []byte, grhFlag bool, nt uint8, withType bool, vid uint16, withVLAN bool) {
		var grh [40]byte
		copy(grh[:], buf)
		wc := WC{GRH: grhFlag}
		if withType {
			x := NetworkType(nt % 5)
			wc.NetworkHdrType = &x
		}
		wcVLAN := uint16(0xffff)
		if withVLAN {
			wc.VLAN, wcVLAN = &vid, vid
		}
		for _, b := range []Behaviour{Kernel, RDMACore} {
			r, err := FromWC(wc, grh, tab, FromWCOptions{Behaviour: b})
			if err != nil || !r.Attr.IsGlobal {
				continue
			}
			if r.Source == nil {
				t.Fatalf("%s: success without a source entry", b)
			}
			l2 := uint16(0xffff)
			if v, ok := l2VLAN[r.Source.Index]; ok {
				l2 = v
			}
			if b == Kernel && l2 != wcVLAN {
				t.Fatalf("kernel: entry %d (L2 VLAN %#x) chosen for a completion with VLAN %#x", r.Source.Index, l2, wcVLAN)
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
