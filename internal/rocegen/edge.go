package rocegen

import (
	"encoding/binary"

	"github.com/gopacket/gopacket/layers"

	"github.com/roce-probe/roce-probe/roce"
)

// Edge is one frame for an edge case of the Ethernet/VLAN/IP/UDP walk
// (roce.WalkFrame's table): what the tests of the decoder, the ICRC and
// the probe's parser, and the tshark comparison, feed them.
type Edge struct {
	Name string
	Data []byte
}

// udFrame is a whole UD SEND_ONLY frame (valid checksums and ICRC).
func udFrame(ipv int, tags []tag, payload string) []byte {
	return v2(ipv, tags, 26<<2, 64, 0xc000,
		roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 0x12, PSN: 7},
		&roce.DETH{QKey: 0x11111111, SrcQP: 0x11}, &roce.Payload{Data: []byte(payload)})
}

// fixIPv4 rewrites the checksum of the IPv4 header at ip (RFC 1071).
func fixIPv4(ip []byte) {
	ihl := int(ip[0]&0x0F) * 4
	ip[10], ip[11] = 0, 0
	var s uint32
	for i := 0; i+1 < ihl; i += 2 {
		s += uint32(binary.BigEndian.Uint16(ip[i:]))
	}
	for s>>16 != 0 {
		s = s&0xFFFF + s>>16
	}
	binary.BigEndian.PutUint16(ip[10:], ^uint16(s))
}

// with returns a copy of b changed by each f in turn.
func with(b []byte, fs ...func(b []byte) []byte) []byte {
	b = append([]byte(nil), b...)
	for _, f := range fs {
		b = f(b)
	}
	return b
}

// icrc recomputes the ICRC after a change to covered bytes.
func icrc(b []byte) []byte {
	if err := roce.FillICRC(b); err != nil {
		panic(err)
	}
	return b
}

// insert returns b with ins inserted at off.
func insert(b []byte, off int, ins ...byte) []byte {
	out := append([]byte(nil), b[:off]...)
	out = append(out, ins...)
	return append(out, b[off:]...)
}

// Edges returns one frame per edge case of the walk, named as
// roce.WalkFrame's tests name them.
func Edges() []Edge {
	const ip4, ip6 = 14, 14                           // offsets of the IP header in untagged frames
	const payload = "roce-probe edge-case frame 0123" // 31 bytes: pad 1
	f4 := udFrame(4, nil, payload)
	f6 := udFrame(6, nil, payload)
	v1frame := v1(nil, 0, 64, 0, roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 0x12, PSN: 7},
		&roce.DETH{QKey: 0x11111111, SrcQP: 0x11}, &roce.Payload{Data: []byte(payload)})
	six := make([]tag, 6)
	for i := range six {
		six[i] = tag{layers.EthernetTypeDot1Q, uint8(i), uint16(100 + i)}
	}
	u16 := func(off int, v uint16) func([]byte) []byte {
		return func(b []byte) []byte { binary.BigEndian.PutUint16(b[off:], v); return b }
	}
	fix4 := func(f func([]byte) []byte) func([]byte) []byte {
		return func(b []byte) []byte { b = f(b); fixIPv4(b[ip4:]); return b }
	}
	return []Edge{
		{"whole ipv4", f4},
		{"whole ipv6", f6},
		{"short ethernet", f4[:13]},
		{"tpid 0x9100", udFrame(4, []tag{{0x9100, 5, 1000}, {layers.EthernetTypeDot1Q, 2, 10}}, payload)},
		{"tpid 0x9200", with(udFrame(4, []tag{{0x9100, 5, 1000}}, payload), u16(12, 0x9200))},
		{"six tags", udFrame(6, six, payload)},
		{"priority tag", udFrame(4, []tag{{layers.EthernetTypeDot1Q, 5, 0}}, payload)},
		{"frame ends inside a tag", udFrame(4, []tag{{layers.EthernetTypeDot1Q, 5, 100}}, payload)[:16]},
		{"ethertype arp", with(f4, u16(12, 0x0806))},
		{"ipv4 version 5", with(f4, fix4(func(b []byte) []byte { b[ip4] = 0x55; return b }))},
		{"ipv4 ihl 4", with(f4, func(b []byte) []byte { b[ip4] = 0x44; return b })},
		{"ipv4 protocol tcp", with(f4, fix4(func(b []byte) []byte { b[ip4+9] = 6; return b }))},
		{"ipv4 more fragments", with(f4, fix4(u16(ip4+6, 0x2000)))},
		{"ipv4 fragment offset", with(f4, fix4(u16(ip4+6, 0x0010)))},
		{"ipv4 frame ends inside the udp header", f4[:ip4+20+6]},
		{"udp port 4792", with(f4, u16(ip4+22, 4792))},
		{"ipv4 bad checksum", with(f4, func(b []byte) []byte { b[ip4+10] ^= 0x40; return b })},
		{"ipv4 total length 0", with(f4, fix4(u16(ip4+2, 0)))},
		{"ipv4 total length 27", with(f4, fix4(u16(ip4+2, 27)))},
		{"ipv4 options", with(f4, func(b []byte) []byte {
			b = insert(b, ip4+20, 1, 1, 1, 0) // NOP, NOP, NOP, end of options
			b[ip4] = 0x46
			binary.BigEndian.PutUint16(b[ip4+2:], binary.BigEndian.Uint16(b[ip4+2:])+4)
			fixIPv4(b[ip4:])
			return b
		})},
		{"ipv4 ethernet padding", append(append([]byte(nil), f4...), 0, 0, 0, 0, 0, 0)},
		{"ipv4 truncated", f4[:len(f4)-10]},
		{"udp length 0", with(f4, u16(ip4+24, 0))},
		{"udp length 7", with(f4, u16(ip4+24, 7))},
		{"udp length beyond the ip packet", with(f4, u16(ip4+24, uint16(len(f4)-ip4-20+1)))},
		{"udp length short of the ip packet", with(f4, fix4(func(b []byte) []byte {
			// 4 bytes between the UDP datagram and the end of the IP packet
			b = insert(b, len(b), 0xEE, 0xEE, 0xEE, 0xEE)
			binary.BigEndian.PutUint16(b[ip4+2:], binary.BigEndian.Uint16(b[ip4+2:])+4)
			return b
		}), icrc)},
		{"udp checksum wrong", with(f4, u16(ip4+26, 0x1234))},
		{"ipv6 version 4", with(f6, func(b []byte) []byte { b[ip6] = 0x40 | b[ip6]&0x0F; return b })},
		{"ipv6 payload length 0", with(f6, u16(ip6+4, 0))},
		{"ipv6 hop-by-hop", with(f6, func(b []byte) []byte {
			b = insert(b, ip6+40, 17, 0, 1, 4, 0, 0, 0, 0) // next UDP, 8 bytes, PadN
			b[ip6+6] = 0
			binary.BigEndian.PutUint16(b[ip6+4:], binary.BigEndian.Uint16(b[ip6+4:])+8)
			return b
		})},
		{"ipv6 fragment header", with(f6, func(b []byte) []byte {
			b = insert(b, ip6+40, 17, 0, 0, 0, 0, 0, 0, 1) // offset 0, no more fragments
			b[ip6+6] = 44
			binary.BigEndian.PutUint16(b[ip6+4:], binary.BigEndian.Uint16(b[ip6+4:])+8)
			return b
		})},
		{"ipv6 fragment", with(f6, func(b []byte) []byte {
			b = insert(b, ip6+40, 17, 0, 0, 0, 0, 0, 0, 1)
			b[ip6+6] = 44
			b[ip6+40+3] = 1 // M: more fragments
			binary.BigEndian.PutUint16(b[ip6+4:], binary.BigEndian.Uint16(b[ip6+4:])+8)
			return b
		})},
		{"ipv6 payload length short of the udp header", with(f6, u16(ip6+4, 6))},
		{"ipv6 udp length 0", with(f6, u16(ip6+40+4, 0))},
		{"ipv6 truncated", f6[:len(f6)-10]},
		{"roce v1", v1frame},
		{"roce v1 next header udp", with(v1frame, func(b []byte) []byte { b[14+6] = 17; return b })},
		{"roce v1 short grh", v1frame[:14+30]},
		{"roce v1 padding", append(append([]byte(nil), v1frame...), 0, 0, 0, 0)},
	}
}
