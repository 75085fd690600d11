package rocegen

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/roce"
)

// Frame is one generated frame and its capture timestamp.
type Frame struct {
	Data []byte
	Time time.Time
	Note string // what the frame is, for docs and tests
}

// Base is the timestamp of the first generated frame.
var Base = time.Date(2026, 1, 2, 3, 4, 5, 1, time.UTC)

var (
	macA = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x0a}
	macB = net.HardwareAddr{0x02, 0x00, 0x00, 0x00, 0x00, 0x0b}
	ip4A = netip.MustParseAddr("192.168.100.1")
	ip4B = netip.MustParseAddr("192.168.100.2")
	ip6A = netip.MustParseAddr("fd00:100::1")
	ip6B = netip.MustParseAddr("fd00:100::2")
)

// tag is one VLAN tag: TPID, PCP, VID.
type tag struct {
	tpid layers.EthernetType
	pcp  uint8
	vid  uint16
}

// spec returns the roce.FrameSpec of a frame from A to B with tags,
// the BTH and what follows it (extension headers, then a *roce.Payload).
func spec(tags []tag, bth roce.BTH, rest []gopacket.SerializableLayer) roce.FrameSpec {
	s := roce.FrameSpec{SrcMAC: macA, DstMAC: macB, BTH: bth}
	for _, t := range tags {
		s.VLANs = append(s.VLANs, roce.VLANTag{TPID: uint16(t.tpid), PCP: t.pcp, ID: t.vid})
	}
	if n := len(rest); n > 0 {
		if pl, ok := rest[n-1].(*roce.Payload); ok {
			s.Payload, rest = pl.Data, rest[:n-1]
		}
	}
	s.Headers = rest
	return s
}

// v2 builds a RoCE v2 frame from A to B.
func v2(ipv int, tags []tag, tos, ttl uint8, sport uint16, bth roce.BTH, rest ...gopacket.SerializableLayer) []byte {
	s := spec(tags, bth, rest)
	s.Src, s.Dst, s.IPID = ip4A, ip4B, 0x4d2
	if ipv == 6 {
		s.Src, s.Dst = ip6A, ip6B
	}
	s.TOS, s.TTL, s.SrcPort = tos, ttl, sport
	return must(s.Build())
}

// v1 builds a RoCE v1 frame (GRH) from A to B, with IPv4-mapped GIDs.
func v1(tags []tag, tclass, hop uint8, fl uint32, bth roce.BTH, rest ...gopacket.SerializableLayer) []byte {
	s := spec(tags, bth, rest)
	s.Version, s.Src, s.Dst = 1, ip4A, ip4B
	s.TOS, s.TTL, s.FlowLabel = tclass, hop, fl
	return must(s.Build())
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Sample returns the frames of roce/testdata/sample.pcapng.
func Sample() []Frame {
	dot1q := []tag{{layers.EthernetTypeDot1Q, 3, 100}}
	qinq := []tag{{layers.EthernetTypeQinQ, 5, 1000}, {layers.EthernetTypeDot1Q, 2, 10}}
	udQP, udPeer := uint32(0x11), uint32(0x12)
	sport := roce.RXESourcePort(udQP)
	payload := []byte("roce-probe sample")
	ud := func(psn uint32) roce.BTH {
		return roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: udPeer, PSN: psn}
	}
	deth := &roce.DETH{QKey: 0x11111111, SrcQP: udQP}
	rcSport := roce.UDPSourcePort(0, 0x20, 0x21)
	var fs []Frame
	add := func(note string, data []byte) {
		fs = append(fs, Frame{Data: data, Time: Base.Add(time.Duration(len(fs)) * time.Millisecond), Note: note})
	}
	add("RoCE v2 IPv4 untagged UD SEND_ONLY", v2(4, nil, 0, 64, sport, ud(1), deth, &roce.Payload{Data: payload}))
	add("RoCE v2 IPv4 VLAN 100 PCP 3 UD SEND_ONLY_WITH_IMMEDIATE, DSCP 26 ECN 2", v2(4, dot1q, 26<<2|2, 64, sport,
		roce.BTH{Opcode: roce.OpcodeUDSendOnlyWithImmediate, PKey: 0xFFFF, DestQP: udPeer, PSN: 2, SolicitedEvent: true},
		deth, &roce.ImmDt{Immediate: 0xdeadbeef}, &roce.Payload{Data: payload[:6]}))
	add("RoCE v2 IPv6 untagged RC RDMA_WRITE_ONLY", v2(6, nil, 0, 64, rcSport,
		roce.BTH{Opcode: roce.OpcodeRCRDMAWriteOnly, PKey: 0xFFFF, DestQP: 0x21, PSN: 100, AckReq: true},
		&roce.RETH{VA: 0x7f7e91000000, RKey: 0x1234, DMALen: 16}, &roce.Payload{Data: bytes.Repeat([]byte{0xab}, 16)}))
	add("RoCE v2 IPv6 QinQ 1000/10 RC ACKNOWLEDGE", v2(6, qinq, 0, 64, rcSport,
		roce.BTH{Opcode: roce.OpcodeRCAcknowledge, PKey: 0xFFFF, DestQP: 0x20, PSN: 100},
		&roce.AETH{Syndrome: 0x1F, MSN: 1}, &roce.Payload{}))
	add("RoCE v2 IPv4 VLAN 100 RC RDMA_WRITE_ONLY, ECN CE", v2(4, dot1q, 26<<2|3, 64, rcSport,
		roce.BTH{Opcode: roce.OpcodeRCRDMAWriteOnly, PKey: 0xFFFF, DestQP: 0x21, PSN: 101, AckReq: true, FECN: true},
		&roce.RETH{VA: 0x7f7e91000010, RKey: 0x1234, DMALen: 3}, &roce.Payload{Data: []byte{1, 2, 3}}))
	add("RoCE v2 IPv4 VLAN 100 CNP", v2(4, dot1q, 48<<2, 64, rcSport,
		roce.BTH{Opcode: roce.OpcodeCNP, PKey: 0xFFFF, DestQP: 0x20, BECN: true}, &roce.CNP{}, &roce.Payload{}))
	add("RoCE v1 untagged UD SEND_ONLY", v1(nil, 0, 1, 0, ud(3), deth, &roce.Payload{Data: payload}))
	add("RoCE v1 VLAN 100 PCP 3 RC SEND_ONLY", v1(dot1q, 0x60, 64, 0x12345,
		roce.BTH{Opcode: roce.OpcodeRCSendOnly, PKey: 0xFFFF, DestQP: 0x21, PSN: 7, AckReq: true}, &roce.Payload{Data: payload[:5]}))
	bad := v2(4, nil, 0, 64, sport, ud(4), deth, &roce.Payload{Data: payload})
	bad[len(bad)-roce.ICRCLen-5] ^= 0x01 // a payload bit flipped after the ICRC was computed
	add("RoCE v2 IPv4 UD SEND_ONLY with a flipped payload bit (bad ICRC)", bad)
	add("not RoCE: IPv4 UDP DNS query", must(serialize(
		&layers.Ethernet{SrcMAC: macA, DstMAC: macB, EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: ip4A.AsSlice(), DstIP: ip4B.AsSlice()},
		&layers.UDP{SrcPort: 40000, DstPort: 53}, gopacket.Payload([]byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0}))))
	return fs
}

func serialize(ls ...gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: false}, ls...)
	return buf.Bytes(), err
}

// Synthetic returns n frames cycling through eight RoCE v2 UD and RC flows
// (IPv4 and IPv6, untagged and VLAN 100) with 256-byte payloads, every
// 100th ECN-marked: a stand-in for a busy capture in benchmarks.
func Synthetic(n int) []Frame {
	dot1q := []tag{{layers.EthernetTypeDot1Q, 3, 100}}
	payload := bytes.Repeat([]byte{0x5a}, 256)
	fs := make([]Frame, n)
	for i := range fs {
		flow := uint32(i % 8)
		tags := dot1q
		if flow&1 == 0 {
			tags = nil
		}
		ipv := 4
		if flow&2 != 0 {
			ipv = 6
		}
		tos := uint8(26 << 2)
		if i%100 == 99 {
			tos |= 3
		}
		psn := uint32(i/8) & 0xFFFFFF
		var data []byte
		if flow&4 == 0 {
			data = v2(ipv, tags, tos, 64, roce.RXESourcePort(0x100+flow),
				roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: 0xFFFF, DestQP: 0x200 + flow, PSN: psn},
				&roce.DETH{QKey: 0x11111111, SrcQP: 0x100 + flow}, &roce.Payload{Data: payload})
		} else {
			data = v2(ipv, tags, tos, 64, roce.UDPSourcePort(0, 0x100+flow, 0x200+flow),
				roce.BTH{Opcode: roce.Opcode(0x00 | roce.OpSendMiddle), PKey: 0xFFFF, DestQP: 0x200 + flow, PSN: psn},
				&roce.Payload{Data: payload})
		}
		fs[i] = Frame{Data: data, Time: Base.Add(time.Duration(i) * time.Microsecond)}
	}
	return fs
}

// WritePcapNG writes frames as a pcapng capture of one Ethernet interface
// with nanosecond timestamps. The output depends only on the frames.
func WritePcapNG(w io.Writer, frames []Frame) error {
	intf := pcapgo.NgInterface{Name: "roce0", LinkType: layers.LinkTypeEthernet, SnapLength: 0, TimestampResolution: 9}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Application: "roce-probe rocegen"}}
	nw, err := pcapgo.NewNgWriterInterface(w, intf, opts)
	if err != nil {
		return err
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: len(f.Data)}
		if err := nw.WritePacket(ci, f.Data); err != nil {
			return fmt.Errorf("frame %d: %w", i+1, err)
		}
	}
	return nw.Flush()
}

// WritePcap writes frames as a classic pcap capture (nanosecond timestamps).
func WritePcap(w io.Writer, frames []Frame) error {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		return err
	}
	for i, f := range frames {
		ci := gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(f.Data), Length: len(f.Data)}
		if err := pw.WritePacket(ci, f.Data); err != nil {
			return fmt.Errorf("frame %d: %w", i+1, err)
		}
	}
	return nil
}

// Gzip returns b compressed with gzip, as `gzip capture.pcap` writes it.
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b) // writing to a bytes.Buffer does not fail
	zw.Close()
	return buf.Bytes()
}
