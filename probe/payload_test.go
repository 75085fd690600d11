package probe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func validProbe(t testing.TB) []byte {
	t.Helper()
	b, err := Payload{Kind: KindProbe, Session: 0xa1a2a3a4a5a6a7a8, Seq: 0x01020304, SentNano: 0x1112131415161718,
		Sent: Markings{Tagged: true, VLAN: 0x0abc, PCP: 5, DSCP: 46, ECN: ECNECT1, TTL: 9, Sport: 0xc0de}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The layout is the one documented on PayloadLen, written out by hand here.
func TestPayloadLayout(t *testing.T) {
	want := unhex(t, `
		726f636570726f62 01 01 0038
		a1a2a3a4a5a6a7a8 01020304 1112131415161718
		81 05 0abc 2e 01 09 00 c0de 0000
		000000000000000000000000`)
	if got := validProbe(t); !bytes.Equal(got, want) {
		t.Fatalf("probe payload\n got %x\nwant %x", got, want)
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, p := range []Payload{
		{Kind: KindProbe, Len: PayloadLen, Session: 1, Seq: 2, SentNano: -3, Sent: Markings{DSCP: 63, ECN: 3, TTL: 255, Sport: 65535, IPv6: true}},
		{Kind: KindProbe, Len: 1024, Session: ^uint64(0), Seq: ^uint32(0), Sent: Markings{Tagged: true, VLAN: 4095, PCP: 7}},
		{Kind: KindReply, Len: PayloadLen, Seq: 9, Sent: Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: 2, TTL: 64, Sport: 0xc000},
			Received: Markings{DSCP: 0, ECN: 3, TTL: 63, Sport: 0xc000}},
	} {
		b, err := p.Marshal()
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if len(b) != p.Len {
			t.Errorf("length %d, want %d", len(b), p.Len)
		}
		got, err := ParsePayload(b)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if got != p {
			t.Errorf("round trip\n got %+v\nwant %+v", got, p)
		}
	}
}

func TestParsePayloadRejects(t *testing.T) {
	mutate := func(f func(b []byte) []byte) []byte { return f(validProbe(t)) }
	reply, err := Payload{Kind: KindReply, Sent: Markings{TTL: 1}, Received: Markings{TTL: 1}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want string // in the error
	}{
		{"empty", nil, "signature"},
		{"other data", []byte("GET / HTTP/1.1\r\n\r\n"), "signature"},
		{"signature only", Signature[:], "at least 56"},
		{"truncated", validProbe(t)[:55], "at least 56"},
		{"version 2", mutate(func(b []byte) []byte { b[8] = 2; return b }), "version 2"},
		{"kind 0", mutate(func(b []byte) []byte { b[9] = 0; return b }), "kind 0"},
		{"kind 3", mutate(func(b []byte) []byte { b[9] = 3; return b }), "kind 3"},
		{"length field short", mutate(func(b []byte) []byte { binary.BigEndian.PutUint16(b[10:], 52); return b }), "length field 52"},
		{"trailing byte", append(validProbe(t), 0), "length field 56"},
		{"length not multiple of 4", mutate(func(b []byte) []byte {
			b = append(b, 0, 0)
			binary.BigEndian.PutUint16(b[10:], 58)
			return b
		}), "multiple of 4"},
		{"padding not zero", mutate(func(b []byte) []byte {
			b = append(b, 0, 0, 0, 1)
			binary.BigEndian.PutUint16(b[10:], 60)
			return b
		}), "padding byte 59"},
		{"sent missing", mutate(func(b []byte) []byte { clear(b[32:44]); return b }), "sent markings are missing"},
		{"sent flags", mutate(func(b []byte) []byte { b[32] = 0x84; return b }), "flags 0x84"},
		{"sent flags without valid bit", mutate(func(b []byte) []byte { b[32] = 0x01; return b }), "flags 0x01"},
		{"sent reserved", mutate(func(b []byte) []byte { b[39] = 1; return b }), "reserved"},
		{"pcp 8", mutate(func(b []byte) []byte { b[33] = 8; return b }), "PCP 8"},
		{"vlan 4096", mutate(func(b []byte) []byte { binary.BigEndian.PutUint16(b[34:], 4096); return b }), "VLAN ID 4096"},
		{"dscp 64", mutate(func(b []byte) []byte { b[36] = 64; return b }), "DSCP 64"},
		{"ecn 4", mutate(func(b []byte) []byte { b[37] = 4; return b }), "ECN 4"},
		{"untagged with pcp", mutate(func(b []byte) []byte { b[32] = 0x80; return b }), "untagged markings carry VLAN"},
		{"probe with received", mutate(func(b []byte) []byte { copy(b[44:56], b[32:44]); return b }), "a probe carries received"},
		{"reply without received", func() []byte { b := bytes.Clone(reply); clear(b[44:56]); return b }(), "no received markings"},
	} {
		_, err := ParsePayload(tc.b)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %q does not mention %q", tc.name, err, tc.want)
		}
		if tc.want == "signature" != errors.Is(err, ErrNoSignature) {
			t.Errorf("%s: errors.Is(ErrNoSignature) = %v", tc.name, errors.Is(err, ErrNoSignature))
		}
	}
}

func TestMarshalRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    Payload
		want string
	}{
		{"no kind", Payload{Sent: Markings{TTL: 1}}, "kind 0"},
		{"short", Payload{Kind: KindProbe, Len: 52}, "length 52"},
		{"long", Payload{Kind: KindProbe, Len: MaxPayloadLen + 4}, "length 8196"},
		{"odd", Payload{Kind: KindProbe, Len: 57}, "multiple of 4"},
		{"dscp", Payload{Kind: KindProbe, Sent: Markings{DSCP: 64}}, "DSCP 64"},
		{"reply received", Payload{Kind: KindReply, Received: Markings{PCP: 9, Tagged: true}}, "PCP 9"},
	} {
		if _, err := tc.p.Marshal(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParsePayload: never panics; whatever it accepts marshals back to the
// same bytes (the format has exactly one encoding per payload).
func FuzzParsePayload(f *testing.F) {
	f.Add(validProbe(f))
	r, _ := Payload{Kind: KindReply, Len: 64, Sent: Markings{TTL: 1}, Received: Markings{Tagged: true, VLAN: 1}}.Marshal()
	f.Add(r)
	r, _ = Payload{Kind: KindReply, Len: TopologyPayloadLen, Sent: Markings{TTL: 1}, Received: Markings{TTL: 1}, ToR: "leaf-07"}.Marshal()
	f.Add(r)
	f.Add([]byte("roceprob"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePayload(b)
		if err != nil {
			return
		}
		again, err := p.Marshal()
		if err != nil {
			t.Fatalf("accepted payload does not marshal: %v (%+v)", err, p)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, marshals to %x", b, again)
		}
	})
}
