package roce

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// FrameSpec is a whole RoCE frame to build: the markings a sender puts on
// the wire (MACs, VLAN tags with TPIDs and PCPs, addresses, DSCP/ECN,
// TTL, flow label, UDP ports, IPv4 ID) and the transport headers. Build
// serializes it with gopacket's Ethernet, Dot1Q, IPv4, IPv6 and UDP layers
// and this package's GRH, BTH, extension headers and Payload. It is the one
// frame builder of roce-probe: the address-handle prediction
// (ah.Resolution.Frame), the probe (probe Frame.Build) and the
// test-capture generator (internal/rocegen) all fill a FrameSpec.
type FrameSpec struct {
	DstMAC, SrcMAC net.HardwareAddr

	// VLANs are the tags, outermost first; a zero TPID means 0x8100.
	// TPIDs 0x8100, 0x88a8 and 0x9100 are allowed (WalkFrame's tags).
	VLANs []VLANTag

	// Version is the RoCE version: 2 (IPv4 or IPv6, UDP) or 1 (GRH,
	// EtherType 0x8915); 0 means 2.
	Version int
	// Src and Dst are both IPv4 or both IPv6 for RoCE v2; for RoCE v1 they
	// are the GIDs (an IPv4 address stands for its IPv4-mapped GID).
	Src, Dst netip.Addr
	// TOS is the IPv4 TOS, IPv6 traffic class or GRH TClass: DSCP<<2 | ECN.
	TOS uint8
	// TTL is the IPv4 TTL, IPv6 hop limit or GRH HopLmt.
	TTL uint8
	// FlowLabel is the IPv6 or GRH flow label (20 bits); unused for IPv4.
	FlowLabel uint32
	// IPID is the IPv4 identification (the kernel picks it per destination:
	// copy it from a capture to compare frames byte for byte).
	IPID uint16
	// SrcPort is the RoCE v2 UDP source port; DstPort 0 means 4791.
	SrcPort, DstPort uint16

	// BTH is the Base Transport Header; its PadCount is set from the
	// payload's length.
	BTH BTH
	// Headers are the extension headers after the BTH, in order (DETH,
	// RETH, ImmDt, ...), as Opcode.Info lists them for BTH.Opcode.
	Headers []gopacket.SerializableLayer
	// Payload is the application data; pad bytes are added.
	Payload []byte
}

// Build serializes the frame with valid lengths, IPv4 header checksum
// and ICRC, UDP checksum 0 (as Linux rxe and RoCE NICs send it) and, for
// IPv4, the DF bit set (rxe: prepare4). Out-of-range fields are errors
// naming the field, its value and what is allowed.
func (s *FrameSpec) Build() ([]byte, error) {
	if len(s.SrcMAC) != 6 || len(s.DstMAC) != 6 {
		return nil, fmt.Errorf("roce: MAC addresses %v → %v: want 6 bytes each", s.SrcMAC, s.DstMAC)
	}
	version := s.Version
	if version == 0 {
		version = 2
	}
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("roce: RoCE version %d: want 1 or 2", s.Version)
	}
	if s.FlowLabel > 0xFFFFF {
		return nil, fmt.Errorf("roce: flow label %#x out of range: want 0..0xfffff", s.FlowLabel)
	}
	src, dst := s.Src.Unmap(), s.Dst.Unmap()
	if !src.IsValid() || !dst.IsValid() || (version == 2 && src.Is4() != dst.Is4()) {
		return nil, fmt.Errorf("roce: addresses %v → %v: want two IPv4 or two IPv6 addresses", s.Src, s.Dst)
	}
	var inner layers.EthernetType
	switch {
	case version == 1:
		inner = EthernetTypeRoCEv1
	case src.Is4():
		inner = layers.EthernetTypeIPv4
	default:
		inner = layers.EthernetTypeIPv6
	}
	ls := make([]gopacket.SerializableLayer, 0, 6+len(s.VLANs)+len(s.Headers))
	eth := &layers.Ethernet{SrcMAC: s.SrcMAC, DstMAC: s.DstMAC, EthernetType: inner}
	ls = append(ls, eth)
	next := &eth.EthernetType
	for i, t := range s.VLANs {
		tpid := t.TPID
		if tpid == 0 {
			tpid = TPIDDot1Q
		}
		if t.ID > 4095 || t.PCP > 7 || (tpid != TPIDDot1Q && tpid != TPIDDot1AD && tpid != TPIDQinQ) {
			return nil, fmt.Errorf("roce: VLAN tag %d (TPID %#04x, VID %d, PCP %d): want TPID 0x8100, 0x88a8 or 0x9100, VID 0..4095, PCP 0..7", i, tpid, t.ID, t.PCP)
		}
		*next = layers.EthernetType(tpid)
		q := &layers.Dot1Q{Priority: t.PCP, DropEligible: t.DEI, VLANIdentifier: t.ID, Type: inner}
		ls = append(ls, q)
		next = &q.Type
	}
	dport := s.DstPort
	if dport == 0 {
		dport = uint16(UDPPort)
	}
	udp := &layers.UDP{SrcPort: layers.UDPPort(s.SrcPort), DstPort: layers.UDPPort(dport)}
	switch {
	case version == 1:
		ls = append(ls, &GRH{IPVer: 6, TClass: s.TOS, FlowLabel: s.FlowLabel, NxtHdr: NextHeaderBTH, HopLmt: s.TTL,
			SGID: GIDFromAddr(src), DGID: GIDFromAddr(dst)})
	case src.Is4():
		ls = append(ls, &layers.IPv4{Version: 4, IHL: 5, TOS: s.TOS, Id: s.IPID, Flags: layers.IPv4DontFragment,
			TTL: s.TTL, Protocol: layers.IPProtocolUDP, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}, udp)
	default:
		ls = append(ls, &layers.IPv6{Version: 6, TrafficClass: s.TOS, FlowLabel: s.FlowLabel, NextHeader: layers.IPProtocolUDP,
			HopLimit: s.TTL, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}, udp)
	}
	bth := s.BTH
	ls = append(ls, &bth)
	ls = append(ls, s.Headers...)
	ls = append(ls, &Payload{Data: s.Payload})
	return SerializeFrame(ls...)
}
