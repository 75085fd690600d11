package trace_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
)

// probePacket builds a probe with probe.Frame.Build (the frame `send`
// sends) and returns its IP packet, what a router quotes.
func probePacket(t testing.TB, src, dst string, ttl uint8, sport uint16, psn uint32, payloadLen int) []byte {
	t.Helper()
	pl, err := probe.Payload{Kind: probe.KindProbe, Len: payloadLen, Session: 0x1122334455667788, Seq: psn, SentNano: 1,
		Sent: probe.Markings{DSCP: 26, ECN: probe.ECNECT0, TTL: ttl, Sport: sport}}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f := probe.Frame{DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
		Src: netip.MustParseAddr(src), Dst: netip.MustParseAddr(dst), DSCP: 26, ECN: probe.ECNECT0, TTL: ttl, Sport: sport,
		PKey: 0xffff, DestQP: probe.DefaultDestQP, PSN: psn, QKey: probe.DefaultQKey, SrcQP: probe.DefaultSrcQP, Payload: pl}
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b[14:]
}

// icmpMsg wraps a quote in an ICMP header of type and code (RFC 792 /
// RFC 4443: type, code, checksum, 4 bytes, then the quote); length is
// RFC 4884's length byte (0: none).
func icmpMsg(v6 bool, typ, code uint8, length uint8, quote []byte) []byte {
	h := []byte{typ, code, 0, 0, 0, 0, 0, 0}
	if v6 {
		h[4] = length
	} else {
		h[5] = length
	}
	return append(h, quote...)
}

func TestParseICMPWholeQuote(t *testing.T) {
	for _, c := range []struct {
		name     string
		v6       bool
		src, dst string
		typ      uint8
		code     uint8
		kind     trace.MessageKind
	}{
		{"IPv4 time exceeded", false, "10.1.0.1", "10.4.0.1", 11, 0, trace.TimeExceeded},
		{"IPv4 port unreachable", false, "10.1.0.1", "10.4.0.1", 3, 3, trace.PortUnreachable},
		{"IPv4 admin prohibited", false, "10.1.0.1", "10.4.0.1", 3, 13, trace.Unreachable},
		{"IPv6 time exceeded", true, "fd00:1::1", "fd00:4::1", 3, 0, trace.TimeExceeded},
		{"IPv6 port unreachable", true, "fd00:1::1", "fd00:4::1", 1, 4, trace.PortUnreachable},
		{"IPv6 no route", true, "fd00:1::1", "fd00:4::1", 1, 0, trace.Unreachable},
	} {
		t.Run(c.name, func(t *testing.T) {
			pkt := probePacket(t, c.src, c.dst, 1, 0xc123, 0x000102, 64)
			q, err := trace.ParseICMP(icmpMsg(c.v6, c.typ, c.code, 0, pkt), c.v6)
			if err != nil {
				t.Fatal(err)
			}
			if q.Kind != c.kind || q.Len != len(pkt) {
				t.Errorf("kind %s len %d, want %s %d", q.Kind, q.Len, c.kind, len(pkt))
			}
			if !q.HasTOS || q.DSCP != 26 || q.ECN != 2 || !q.HasTTL || q.TTL != 1 || q.Missing() != "" {
				t.Errorf("header: %+v, want DSCP 26 ECN 2 TTL 1", q)
			}
			if !q.HasAddrs || q.Src != netip.MustParseAddr(c.src) || q.Dst != netip.MustParseAddr(c.dst) || q.Proto != 17 {
				t.Errorf("addresses %v → %v proto %d", q.Src, q.Dst, q.Proto)
			}
			// UDP length: 8 + BTH 12 + DETH 8 + payload 64 + ICRC 4.
			if !q.HasPorts || q.Sport != 0xc123 || q.Dport != 4791 || !q.HasUDPLen || q.UDPLen != 96 {
				t.Errorf("UDP: %d → %d len %d, want 49443 → 4791 len 96", q.Sport, q.Dport, q.UDPLen)
			}
			if !q.HasBTH || q.PSN != 0x000102 || q.DestQP != probe.DefaultDestQP {
				t.Errorf("BTH: PSN %#x dest QP %#x", q.PSN, q.DestQP)
			}
			if !q.HasProbeID || q.Session != 0x1122334455667788 || q.Seq != 0x102 {
				t.Errorf("payload: session %#x seq %d", q.Session, q.Seq)
			}
		})
	}
}

// Quotes cut short: each field is known exactly when its bytes are there.
func TestParseICMPShortQuote(t *testing.T) {
	pkt := probePacket(t, "10.1.0.1", "10.4.0.1", 1, 0xc123, 7, 64)
	for _, c := range []struct {
		n                                   int
		tos, ttl, addrs, ports, udpLen, bth bool
	}{
		{0, false, false, false, false, false, false},
		{1, false, false, false, false, false, false},
		{2, true, false, false, false, false, false},
		{9, true, true, false, false, false, false},
		{20, true, true, true, false, false, false},
		{24, true, true, true, true, false, false},
		{28, true, true, true, true, true, false}, // RFC 792's minimum: IP header + 8 bytes
		{48, true, true, true, true, true, true},
	} {
		q, err := trace.ParseICMP(icmpMsg(false, 11, 0, 0, pkt[:c.n]), false)
		if err != nil {
			t.Fatalf("%d bytes: %v", c.n, err)
		}
		if q.HasTOS != c.tos || q.HasTTL != c.ttl || q.HasAddrs != c.addrs || q.HasPorts != c.ports || q.HasUDPLen != c.udpLen || q.HasBTH != c.bth {
			t.Errorf("%d bytes quoted: %+v", c.n, q)
		}
		if (q.Missing() == "") != c.ttl {
			t.Errorf("%d bytes quoted: Missing() %q", c.n, q.Missing())
		}
	}
	// RFC 4884: a length of 7 words (28 bytes) stops the quote there,
	// even though extension bytes follow.
	q, err := trace.ParseICMP(icmpMsg(false, 11, 0, 7, append(pkt[:28:28], make([]byte, 40)...)), false)
	if err != nil || q.Len != 28 || !q.HasUDPLen || q.HasBTH {
		t.Errorf("RFC 4884 length 7: len %d, UDP length %v, BTH %v, %v; want 28 bytes, UDP length, no BTH", q.Len, q.HasUDPLen, q.HasBTH, err)
	}
	for _, bad := range [][]byte{nil, {11, 0, 0}, icmpMsg(false, 0, 0, 0, pkt), icmpMsg(false, 5, 1, 0, pkt), icmpMsg(true, 128, 0, 0, pkt)} {
		if _, err := trace.ParseICMP(bad, len(bad) > 0 && bad[0] == 128); err == nil {
			t.Errorf("ParseICMP(% x...) accepted a message that quotes nothing", bad[:min(len(bad), 4)])
		}
	}
}

func idOf(t *testing.T, pkt []byte, seq uint32) trace.ProbeID {
	t.Helper()
	frame := append([]byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0}, pkt...)
	if pkt[0]>>4 == 6 {
		binary.BigEndian.PutUint16(frame[12:], 0x86dd)
	}
	id, err := trace.IDOf(frame, 0x1122334455667788, seq)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// Two ports, two TTLs each: a whole quote and an RFC 792 quote find their
// probe; a quote of the IP header alone cannot tell the ports apart.
func TestMatch(t *testing.T) {
	var pkts [][]byte
	var ids []trace.ProbeID
	seq := uint32(0)
	for _, sport := range []uint16{0xc001, 0xc002} {
		for ttl := 1; ttl <= 2; ttl++ {
			p := probePacket(t, "10.1.0.1", "10.4.0.1", uint8(ttl), sport, seq, probe.PayloadLen+4*(ttl-1))
			pkts = append(pkts, p)
			ids = append(ids, idOf(t, p, seq))
			seq++
		}
	}
	for i, p := range pkts {
		for _, n := range []int{len(p), 28} {
			q, _ := trace.ParseICMP(icmpMsg(false, 11, 0, 0, p[:n]), false)
			if j, ok := trace.Match(q, ids); !ok || j != i {
				t.Errorf("probe %d, %d bytes quoted: matched %d %v", i, n, j, ok)
			}
		}
		q, _ := trace.ParseICMP(icmpMsg(false, 11, 0, 0, p[:20]), false)
		if j, ok := trace.Match(q, ids); ok {
			t.Errorf("probe %d, IP header only: matched %d, want no match (two ports have that length)", i, j)
		}
	}
	// Another sender's packet to the same destination matches nothing.
	other := probePacket(t, "10.1.0.9", "10.4.0.1", 1, 0xc001, 0, probe.PayloadLen)
	q, _ := trace.ParseICMP(icmpMsg(false, 11, 0, 0, other), false)
	if j, ok := trace.Match(q, ids); ok {
		t.Errorf("another source's probe matched %d", j)
	}
}

func FuzzParseICMP(f *testing.F) {
	pkt := probePacket(f, "10.1.0.1", "10.4.0.1", 1, 0xc123, 7, 64)
	pkt6 := probePacket(f, "fd00:1::1", "fd00:4::1", 1, 0xc123, 7, 64)
	f.Add(icmpMsg(false, 11, 0, 0, pkt), false)
	f.Add(icmpMsg(false, 3, 3, 7, pkt[:40]), false)
	f.Add(icmpMsg(true, 3, 0, 0, pkt6), true)
	f.Add(icmpMsg(true, 1, 4, 5, pkt6[:44]), true)
	id := trace.ProbeID{Src: netip.MustParseAddr("10.1.0.1"), Dst: netip.MustParseAddr("10.4.0.1"), Sport: 0xc123, IPLen: 116, UDPLen: 96,
		DestQP: probe.DefaultDestQP, PSN: 7, Session: 0x1122334455667788, Seq: 7}
	f.Fuzz(func(t *testing.T, msg []byte, v6 bool) {
		q, err := trace.ParseICMP(msg, v6)
		if err != nil {
			return
		}
		if q.Len > len(msg)-8 {
			t.Fatalf("quote of %d bytes from a %d-byte message", q.Len, len(msg))
		}
		if (q.HasBTH && !q.HasPorts) || (q.HasProbeID && !q.HasBTH) || (q.HasPorts && !q.HasAddrs) || (q.HasAddrs && !q.HasTTL) {
			t.Fatalf("fields known out of order: %+v", q)
		}
		if i, ok := trace.Match(q, []trace.ProbeID{id, id}); ok {
			t.Fatalf("two equal probes cannot be told apart, matched %d", i)
		}
		if _, ok := trace.Match(q, []trace.ProbeID{id}); ok != q.Matches(id) {
			t.Fatalf("Match and Matches disagree")
		}
	})
}
