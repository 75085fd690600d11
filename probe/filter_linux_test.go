//go:build linux

package probe

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/roce-probe/roce-probe/roce"
)

// filterCase is a frame and what it is, known from how it was built and
// from ParseFrame/ParsePayload, not from the filter's offsets.
type filterCase struct {
	name  string
	frame []byte
	roce  bool // a RoCE v2 frame (UDP to 4791) in an encapsulation the filter knows
	reply bool // it holds a payload byte 9 and that byte is 2 (KindReply)
}

// filterCases are probes, replies, other RoCE v2 payloads, frames cut
// short before and after the payload's kind byte, and UDP to another port,
// untagged, with one and two tags, over IPv4 and IPv6.
func filterCases(t *testing.T) []filterCase {
	t.Helper()
	other := make([]byte, 64) // not a probe payload; its byte 9 says reply
	other[9] = 2
	other2 := make([]byte, 64) // neither
	other2[9] = 1
	var out []filterCase
	for _, e := range testEncaps {
		payloads := []struct {
			name string
			b    []byte
		}{{"probe", nil}, {"reply", nil}, {"other-2", other}, {"other-1", other2}}
		for i, kind := range []Kind{KindProbe, KindReply} {
			pl, err := Payload{Kind: kind, Session: 42, Seq: 7, SentNano: 99, Sent: Markings{DSCP: 26, TTL: 64}}.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			payloads[i].b = pl
		}
		for _, p := range payloads {
			f := testFrame(e.tags, e.v6)
			f.Payload = p.b
			b, err := f.Build()
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := ParseFrame(b)
			if err != nil {
				t.Fatalf("%s/%s: %v", e.name, p.name, err)
			}
			isReply := parsed.Payload[9] == 2
			if pp, err := ParsePayload(parsed.Payload); err == nil && (pp.Kind == KindReply) != isReply {
				t.Fatalf("%s/%s: ParsePayload says %v", e.name, p.name, pp.Kind)
			}
			// Where the payload starts, by ParseFrame: the ICRC follows it.
			start := len(b) - 4 - len(parsed.Payload)
			out = append(out,
				filterCase{e.name + "/" + p.name, b, true, isReply},
				// Cut just before the kind byte: too short to tell.
				filterCase{e.name + "/" + p.name + "/cut-before-kind", b[:start+9], true, false},
				// Cut just after it: the byte is there.
				filterCase{e.name + "/" + p.name + "/cut-after-kind", b[:start+10], true, isReply})
			// The same frame to another UDP port: not RoCE v2.
			port := append([]byte(nil), b...)
			udp := start - 8 - 12 - 8 // UDP header, BTH, DETH before the payload
			if binary.BigEndian.Uint16(port[udp+2:]) != uint16(roce.UDPPort) {
				t.Fatalf("%s/%s: no UDP port 4791 where the UDP header should be", e.name, p.name)
			}
			binary.BigEndian.PutUint16(port[udp+2:], 4792)
			out = append(out, filterCase{e.name + "/" + p.name + "/port-4792", port, false, false})
		}
	}
	return append(out, otherFrames(t)...)
}

// otherFrames are reply frames changed into what the filter does not take
// (docs/probe.md: UDP to port 4791, untagged or with one or two tags, IPv4
// without options or IPv6): IPv4 with options (IHL 6), TCP over IPv4 and
// IPv6 to port 4791, three tags, RoCE v1 (EtherType 0x8915) and ARP. Each
// is a reply otherwise, payload byte 9 included.
func otherFrames(t *testing.T) []filterCase {
	t.Helper()
	pl, err := Payload{Kind: KindReply, Session: 42, Seq: 7, SentNano: 99, Sent: Markings{DSCP: 26, TTL: 64}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	build := func(tags []roce.VLANTag, v6 bool) []byte {
		f := testFrame(tags, v6)
		f.Payload = pl
		b, err := f.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const ip = 14 // untagged: the IP header follows the Ethernet header
	v4, v6 := build(nil, false), build(nil, true)
	if v4[ip] != 0x45 || v4[ip+9] != 17 || v6[ip]>>4 != 6 || v6[ip+6] != 17 {
		t.Fatal("the untagged frames' IP headers are not where this test expects them")
	}
	options := append([]byte(nil), v4...)
	options[ip] = 0x46 // IHL 6: 4 bytes of options (the bytes after stay: only the length field says so)
	tcp4 := append([]byte(nil), v4...)
	tcp4[ip+9] = 6
	tcp6 := append([]byte(nil), v6...)
	tcp6[ip+6] = 6
	three := build([]roce.VLANTag{{TPID: 0x88a8, ID: 10}, {TPID: 0x8100, ID: 20}, {TPID: 0x8100, ID: 30}}, false)
	v1 := append([]byte(nil), v4...)
	binary.BigEndian.PutUint16(v1[12:], 0x8915)
	arp := append([]byte(nil), v4...)
	binary.BigEndian.PutUint16(arp[12:], 0x0806)
	return []filterCase{
		{"ipv4-options", options, false, false}, {"tcp-v4", tcp4, false, false}, {"tcp-v6", tcp6, false, false},
		{"three-tags", three, false, false}, {"ethertype-8915", v1, false, false}, {"arp", arp, false, false},
	}
}

// runFilter runs a Conn's RoCE v2 filter for sel on frame in x/net/bpf's
// VM (which knows no packet type: the direction check is left out).
func runFilter(t *testing.T, sel Selection, frame []byte) bool {
	t.Helper()
	vm, err := bpf.NewVM(filterRoCE(sel))
	if err != nil {
		t.Fatal(err)
	}
	n, err := vm.Run(frame)
	if err != nil {
		t.Fatalf("selection %d: %v", sel, err)
	}
	return n > 0
}

// The filter's selections, run in a BPF VM on built frames: AllFrames
// takes every RoCE v2 frame; Replies exactly those whose payload byte 9 is
// 2 (a reply's kind); NoReplies exactly the rest of AllFrames, frames too
// short to hold the byte included.
func TestFilterSelection(t *testing.T) {
	for _, c := range filterCases(t) {
		all, rep, norep := runFilter(t, AllFrames, c.frame), runFilter(t, Replies, c.frame), runFilter(t, NoReplies, c.frame)
		got := fmt.Sprintf("all %v replies %v no-replies %v", all, rep, norep)
		want := fmt.Sprintf("all %v replies %v no-replies %v", c.roce, c.roce && c.reply, c.roce && !c.reply)
		if got != want {
			t.Errorf("%s (%d bytes): %s, want %s", c.name, len(c.frame), got, want)
		}
	}
}
