package qos

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func requireLittleEndian(t testing.TB) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("byte vectors are written for little-endian hosts (x86-64, arm64)")
	}
}

// ieee_pfc as the kernel lays it out (include/uapi/linux/dcbnl.h, x86-64):
// u8 pfc_cap, u8 pfc_en, u8 mbc, 1 byte padding, u16 delay (host order) at
// offset 4, 2 bytes padding, u64 requests[8] at 8, u64 indications[8] at 72.
func pfcVector() []byte {
	b := make([]byte, 136)
	b[0] = 8                // pfc_cap
	b[1] = 0x08             // pfc_en: priority 3
	b[2] = 0                // mbc
	b[3] = 0xEE             // padding, must be ignored
	b[4], b[5] = 0x00, 0x10 // delay 4096, little-endian
	b[8+3*8] = 5            // requests[3] = 5
	b[72+3*8+1] = 0x01      // indications[3] = 256
	return b
}

func TestPFCLayout(t *testing.T) {
	requireLittleEndian(t)
	var p PFC
	if err := p.UnmarshalBinary(pfcVector()); err != nil {
		t.Fatal(err)
	}
	if p.Cap != 8 || p.Enabled != 0x08 || p.Delay != 4096 || p.Requests[3] != 5 || p.Indications[3] != 256 {
		t.Fatalf("decoded %+v", p)
	}
	if !p.On(3) || p.On(2) || p.On(8) {
		t.Error("On: want only priority 3")
	}
	if got := p.EnabledPriorities(); len(got) != 1 || got[0] != 3 {
		t.Errorf("EnabledPriorities = %v", got)
	}
	enc, _ := p.MarshalBinary()
	want := pfcVector()
	want[3] = 0 // padding is written as zero
	if !bytes.Equal(enc, want) {
		t.Errorf("MarshalBinary:\n got %x\nwant %x", enc, want)
	}
	// A newer kernel's longer struct is accepted; a short one is not.
	if err := p.UnmarshalBinary(append(pfcVector(), 1, 2, 3, 4)); err != nil {
		t.Errorf("longer ieee_pfc rejected: %v", err)
	}
	if err := p.UnmarshalBinary(pfcVector()[:135]); err == nil {
		t.Error("135-byte ieee_pfc accepted")
	}
}

// ieee_ets: willing, ets_cap, cbs, then seven u8[8] arrays: tc_tx_bw (3),
// tc_rx_bw (11), tc_tsa (19), prio_tc (27), tc_reco_bw (35), tc_reco_tsa
// (43), reco_prio_tc (51); 59 bytes.
func etsVector() []byte {
	b := make([]byte, 59)
	b[0], b[1], b[2] = 1, 8, 0
	copy(b[3:], []byte{50, 50, 0, 0, 0, 0, 0, 0}) // tc_tx_bw
	copy(b[19:], []byte{2, 2, 0, 0, 0, 0, 0, 0})  // tc_tsa: ets, ets, strict...
	copy(b[27:], []byte{0, 0, 0, 1, 0, 0, 0, 0})  // prio_tc: priority 3 → TC 1
	copy(b[51:], []byte{7, 7, 7, 7, 7, 7, 7, 7})  // reco_prio_tc
	return b
}

func TestETSLayout(t *testing.T) {
	var e ETS
	if err := e.UnmarshalBinary(etsVector()); err != nil {
		t.Fatal(err)
	}
	if e.Willing != 1 || e.Cap != 8 || e.TCTxBW[0] != 50 || e.TCTSA[1] != TSAETS || e.PrioTC[3] != 1 || e.PrioTC[2] != 0 || e.RecoPrioTC[7] != 7 {
		t.Fatalf("decoded %+v", e)
	}
	enc, _ := e.MarshalBinary()
	if !bytes.Equal(enc, etsVector()) {
		t.Errorf("MarshalBinary:\n got %x\nwant %x", enc, etsVector())
	}
	if err := e.UnmarshalBinary(etsVector()[:58]); err == nil {
		t.Error("58-byte ieee_ets accepted")
	}
}

func TestAppLayout(t *testing.T) {
	requireLittleEndian(t)
	// dcb_app {u8 selector; u8 priority; u16 protocol}: dscp-prio 26:3.
	vec := []byte{5, 3, 26, 0}
	var a App
	if err := a.UnmarshalBinary(vec); err != nil {
		t.Fatal(err)
	}
	if a != (App{Selector: AppSelDSCP, Priority: 3, Protocol: 26}) {
		t.Fatalf("decoded %+v", a)
	}
	enc, _ := a.MarshalBinary()
	if !bytes.Equal(enc, vec) {
		t.Errorf("MarshalBinary = %x, want %x", enc, vec)
	}
	if err := a.UnmarshalBinary(vec[:3]); err == nil {
		t.Error("3-byte dcb_app accepted")
	}
}

// nla builds a netlink attribute: u16 len (header + payload, unpadded),
// u16 type, payload, zero padding to 4 bytes.
func nla(typ uint16, payload []byte) []byte {
	l := 4 + len(payload)
	b := []byte{byte(l), byte(l >> 8), byte(typ), byte(typ >> 8)}
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// ieeeReply is an RTM_GETDCB DCB_CMD_IEEE_GET reply payload shaped like
// dcbnl_ieee_fill's: IFNAME, IEEE{ETS, PFC, APP_TABLE{...}, ...}, DCBX —
// with attributes a newer kernel may add (REWR table 12, an unknown 40 in
// the nest, an unknown 42 at top level, an unknown APP-table member 3).
func ieeeReply() []byte {
	const nested = 0x8000 // NLA_F_NESTED
	apps := cat(
		nla(1, []byte{5, 3, 26, 0}),      // IEEE_APP dscp 26 → 3
		nla(1, []byte{5, 3, 24, 0}),      // IEEE_APP dscp 24 → 3
		nla(2, []byte{255, 4, 2, 0}),     // DCB_APP pcp 2 → 4
		nla(3, []byte{9, 9, 9, 9, 9}),    // unknown member: skipped
		nla(1, []byte{1, 5, 0x15, 0x89}), // ethertype 0x8915 → 5
	)
	ieee := cat(
		nla(1, etsVector()),
		nla(2, pfcVector()),
		nla(3|nested, apps),
		nla(11|nested, cat(nla(1, []byte{5}), nla(2, []byte{255}))), // trust: dscp, pcp
		nla(12|nested, nla(2, []byte{255, 1, 3, 0})),                // rewrite table: skipped
		nla(40, []byte{1, 2, 3}),                                    // unknown
	)
	return cat(
		[]byte{0, 21, 0, 0}, // dcbmsg: AF_UNSPEC, DCB_CMD_IEEE_GET
		nla(1, []byte("eth2\x00")),
		nla(13|nested, ieee),
		nla(14, []byte{DCBXHost | DCBXVerIEEE}),
		nla(42, []byte{0xAA, 0xBB}),
	)
}

func TestParseDCBReply(t *testing.T) {
	requireLittleEndian(t)
	var d DCB
	if err := ParseDCBReply(ieeeReply(), &d); err != nil {
		t.Fatal(err)
	}
	if d.Netdev != "eth2" {
		t.Errorf("netdev %q", d.Netdev)
	}
	if d.PFC == nil || d.PFC.Enabled != 0x08 || d.PFC.Delay != 4096 {
		t.Errorf("PFC %+v", d.PFC)
	}
	if d.ETS == nil || d.ETS.PrioTC[3] != 1 {
		t.Errorf("ETS %+v", d.ETS)
	}
	wantApps := []App{{5, 3, 26}, {5, 3, 24}, {255, 4, 2}, {1, 5, 0x8915}}
	if len(d.Apps) != len(wantApps) {
		t.Fatalf("apps %+v, want %+v", d.Apps, wantApps)
	}
	for i := range wantApps {
		if d.Apps[i] != wantApps[i] {
			t.Errorf("app %d = %+v, want %+v", i, d.Apps[i], wantApps[i])
		}
	}
	if len(d.AppTrust) != 2 || d.AppTrust[0] != AppSelDSCP || d.AppTrust[1] != AppSelPCP {
		t.Errorf("app trust %v", d.AppTrust)
	}
	if d.DCBX == nil || *d.DCBX != 0x09 || DCBXString(*d.DCBX) != "host,ieee" {
		t.Errorf("dcbx %v", d.DCBX)
	}
	d.Supported = true
	if d.Trust() != TrustDSCP {
		t.Errorf("trust %v, want dscp", d.Trust())
	}
	if p, ok := d.DSCPPriority(26); !ok || p != 3 {
		t.Errorf("DSCPPriority(26) = %d %v", p, ok)
	}
	if _, ok := d.DSCPPriority(46); ok {
		t.Error("DSCP 46 has no entry")
	}
	if p, ok := d.PCPPriority(2); !ok || p != 4 {
		t.Errorf("PCPPriority(2) = %d %v", p, ok)
	}
	if p, ok := d.RoCEAppPriority(); !ok || p != 5 {
		t.Errorf("RoCEAppPriority = %d %v", p, ok)
	}
	if m := d.DSCPMap(); len(m) != 2 || m[24][0] != 3 {
		t.Errorf("DSCPMap %v", m)
	}
}

func TestParseDCBReplyGDCBX(t *testing.T) {
	// dcbnl_getdcbx: dcbmsg {AF_UNSPEC, DCB_CMD_GDCBX} + DCB_ATTR_DCBX u8.
	var d DCB
	if err := ParseDCBReply(cat([]byte{0, 22, 0, 0}, nla(14, []byte{DCBXLLDManaged | DCBXVerCEE})), &d); err != nil {
		t.Fatal(err)
	}
	if d.DCBX == nil || *d.DCBX != 0x06 || DCBXString(*d.DCBX) != "lld-managed,cee" {
		t.Errorf("dcbx %v", d.DCBX)
	}
}

func TestParseDCBReplyErrors(t *testing.T) {
	requireLittleEndian(t)
	good := ieeeReply()
	bad := [][]byte{
		nil,
		{0, 21},
		cat([]byte{0, 21, 0, 0}, []byte{3, 0}), // 2 bytes of header
		cat([]byte{0, 21, 0, 0}, []byte{40, 0, 1, 0, 'e'}),              // length beyond the buffer
		cat([]byte{0, 21, 0, 0}, []byte{2, 0, 1, 0}),                    // length below the header
		cat([]byte{0, 21, 0, 0}, nla(13, nla(2, pfcVector()[:100]))),    // short ieee_pfc
		cat([]byte{0, 21, 0, 0}, nla(13, nla(1, etsVector()[:20]))),     // short ieee_ets
		cat([]byte{0, 21, 0, 0}, nla(13, nla(3, nla(1, []byte{5, 3})))), // short dcb_app
	}
	for i, b := range bad {
		var d DCB
		if err := ParseDCBReply(b, &d); err == nil {
			t.Errorf("case %d: no error for %x", i, b)
		}
	}
	var d DCB
	if err := ParseDCBReply(good[:len(good)-3], &d); !errors.Is(err, errTruncated) {
		t.Errorf("cut reply: err %v, want a truncation error", err)
	}
}

func FuzzParseDCBReply(f *testing.F) {
	f.Add(ieeeReply())
	f.Add([]byte{0, 22, 0, 0, 5, 0, 14, 0, 9, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d DCB
		if err := ParseDCBReply(b, &d); err != nil {
			return
		}
		d.Supported = true
		d.Trust()
		d.DSCPMap()
		if d.PFC != nil {
			enc, _ := d.PFC.MarshalBinary()
			var p PFC
			if err := p.UnmarshalBinary(enc); err != nil || p != *d.PFC {
				t.Fatalf("PFC round trip: %+v vs %+v (%v)", p, *d.PFC, err)
			}
		}
	})
}

func TestBytesJSON(t *testing.T) {
	b, err := json.Marshal(struct {
		A Bytes
		B Bytes
		C Bytes
	}{Bytes{3, 255}, Bytes{}, nil})
	if err != nil || string(b) != `{"A":[3,255],"B":[],"C":null}` {
		t.Fatalf("%s %v", b, err)
	}
	var v Bytes
	if err := json.Unmarshal([]byte("[1,2,255]"), &v); err != nil || len(v) != 3 || v[2] != 255 {
		t.Errorf("%v %v", v, err)
	}
	if err := json.Unmarshal([]byte("[256]"), &v); err == nil {
		t.Error("256 accepted")
	}
}

func TestDCBValidate(t *testing.T) {
	// Ranges from include/uapi/linux/dcbnl.h (IEEE_8021QAZ_MAX_TCS = 8
	// priorities and TCs; bandwidth in percent) and iproute2's dcb app
	// (DSCP 0..63, PCP|DEI<<3 0..15).
	ok := func() *DCB {
		return &DCB{Netdev: "enp1s0f0", Supported: true,
			ETS:  &ETS{PrioTC: [8]uint8{0, 0, 0, 1, 0, 0, 0, 7}, TCTxBW: [8]uint8{50, 50}},
			Apps: []App{{Selector: AppSelDSCP, Priority: 3, Protocol: 26}, {Selector: AppSelDSCP, Priority: 7, Protocol: 63}, {Selector: AppSelPCP, Priority: 3, Protocol: 15}}}
	}
	if err := ok().Validate(); err != nil {
		t.Fatalf("valid DCB rejected: %v", err)
	}
	if err := (*DCB)(nil).Validate(); err != nil {
		t.Errorf("nil DCB: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*DCB)
		want string
	}{
		{"app priority", func(d *DCB) { d.Apps[0].Priority = 8 }, "app[0].priority 8 is out of range: want 0..7"},
		{"dscp protocol", func(d *DCB) { d.Apps[1].Protocol = 64 }, "app[1].protocol 64 is out of range for the DSCP selector: want a DSCP 0..63"},
		{"pcp protocol", func(d *DCB) { d.Apps[2].Protocol = 16 }, "app[2].protocol 16 is out of range for the PCP selector"},
		{"prio_tc", func(d *DCB) { d.ETS.PrioTC[3] = 8 }, "ets.prio_tc[3] 8 is out of range: want 0..7"},
		{"tc_tx_bw", func(d *DCB) { d.ETS.TCTxBW[1] = 101 }, "ets.tc_tx_bw[1] 101 is out of range: want 0..100"},
	} {
		d := ok()
		c.mod(d)
		err := d.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "enp1s0f0") {
			t.Errorf("%s: Validate() = %v, want an error naming enp1s0f0 and %q", c.name, err, c.want)
		}
	}
}
