package probe

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// A probe of TopologyPayloadLen bytes is a valid probe by the rules every
// listener applies (padding zero): a listener that predates the extension
// answers it plainly. A listener that knows its ToR puts it in a reply of
// the same length, byte by byte as TopologyPayloadLen's layout says; any
// other probe, or no ToR, gets the plain 56-byte reply.
func TestReplyCarriesToR(t *testing.T) {
	sent := Markings{DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 50000}
	ask := probeFrom(t, senderIP, senderMAC, sent, sent, TopologyPayloadLen)
	f, err := ParseFrame(ask)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ParsePayload(f.Payload); err != nil || p.Kind != KindProbe || p.Len != 124 || p.ToR != "" {
		t.Fatalf("asking probe: %+v, %v", p, err)
	}
	clk := &fakeClock{t: time.Unix(1000, 0)}
	r := newTestResponder(t, clk, RateConfig{})
	for _, tc := range []struct {
		name    string
		frame   []byte
		tor     string
		wantLen int
		wantToR string
	}{
		{"asks, knows", ask, "leaf-07", 124, "leaf-07"},
		{"asks, does not know", ask, "", PayloadLen, ""},
		{"asks, not a switch name", ask, "leaf 7", PayloadLen, ""},
		{"plain probe", probeFrom(t, senderIP, senderMAC, sent, sent, 0), "leaf-07", PayloadLen, ""},
		{"padded otherwise", probeFrom(t, senderIP, senderMAC, sent, sent, 128), "leaf-07", PayloadLen, ""},
	} {
		reply := r.HandleReplyToR(tc.frame, tc.tor)
		if reply == nil {
			t.Fatalf("%s: no reply", tc.name)
		}
		rf, err := ParseFrame(reply)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParsePayload(rf.Payload)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(rf.Payload) != tc.wantLen || p.ToR != tc.wantToR || p.Kind != KindReply || p.Seq != 7 {
			t.Errorf("%s: %d-byte reply with ToR %q, want %d bytes, %q", tc.name, len(rf.Payload), p.ToR, tc.wantLen, tc.wantToR)
		}
		if tc.wantToR != "" {
			want := append([]byte{1, byte(len(tc.wantToR))}, tc.wantToR...)
			if !bytes.Equal(rf.Payload[56:56+len(want)], want) || !bytes.Equal(rf.Payload[56+len(want):], make([]byte, 124-56-len(want))) {
				t.Errorf("%s: extension bytes % x", tc.name, rf.Payload[56:])
			}
		}
		if len(reply) > len(tc.frame) {
			t.Errorf("%s: reply of %d bytes to a probe of %d", tc.name, len(reply), len(tc.frame))
		}
	}
}

func TestToRPayloadRejects(t *testing.T) {
	good, err := Payload{Kind: KindReply, Len: TopologyPayloadLen, Sent: Markings{TTL: 64}, Received: Markings{TTL: 63}, ToR: "leaf-07"}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		mod  func(b []byte)
		want string
	}{
		"length 0":        {func(b []byte) { b[57] = 0 }, "ToR length 0"},
		"length 65":       {func(b []byte) { b[57] = 65 }, "ToR length 65"},
		"space":           {func(b []byte) { b[60] = ' ' }, "not a switch name"},
		"byte after":      {func(b []byte) { b[100] = 1 }, "padding byte 100"},
		"other extension": {func(b []byte) { b[56] = 2 }, "padding byte 56"},
		"in a probe":      {func(b []byte) { b[9] = byte(KindProbe); copy(b[44:56], make([]byte, 12)) }, "padding byte 56"},
	} {
		b := append([]byte(nil), good...)
		tc.mod(b)
		if _, err := ParsePayload(b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	for name, p := range map[string]Payload{
		"probe":       {Kind: KindProbe, Len: TopologyPayloadLen, Sent: Markings{TTL: 1}, ToR: "x"},
		"short reply": {Kind: KindReply, Sent: Markings{TTL: 1}, Received: Markings{TTL: 1}, ToR: "x"},
		"bad name":    {Kind: KindReply, Len: TopologyPayloadLen, Sent: Markings{TTL: 1}, Received: Markings{TTL: 1}, ToR: "a/b"},
	} {
		if _, err := p.Marshal(); err == nil {
			t.Errorf("%s: marshalled", name)
		}
	}
}
