package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/gopacket/gopacket"
	"github.com/roce-probe/roce-probe/roce"
)

// DefaultDestQP is the destination QP number probes are sent to. It is a
// QP that an RDMA stack on the listener's host is unlikely to have: such a
// stack drops the probe as addressed to an unknown QP (rxe counts it), while
// the listener's raw socket still sees it.
const DefaultDestQP = 0x7e5701

// DefaultQKey is the Q_Key probes carry (a non-GSI key, high bit clear).
const DefaultQKey = 0x0000cafe

// DefaultSrcQP is the source QP number probes carry.
const DefaultSrcQP = 0x7e5702

// Frame is a RoCE v2 UD SEND_ONLY frame: Ethernet, up to two VLAN tags,
// IPv4 or IPv6, UDP to port 4791, BTH, DETH, payload and ICRC.
type Frame struct {
	DstMAC, SrcMAC net.HardwareAddr
	Tags           []roce.VLANTag // outermost first; nil for untagged
	Src, Dst       netip.Addr     // both IPv4 or both IPv6
	DSCP, ECN      uint8
	TTL            uint8 // IPv4 TTL or IPv6 hop limit
	Sport          uint16
	PKey           uint16
	DestQP         uint32 // 24 bits
	PSN            uint32 // 24 bits
	QKey           uint32
	SrcQP          uint32 // 24 bits
	Payload        []byte
}

// Markings returns the frame's markings. VLAN and PCP are the outermost
// tag's, which is the one a switch classifies by.
func (f Frame) Markings() Markings {
	m := Markings{DSCP: f.DSCP, ECN: f.ECN, TTL: f.TTL, Sport: f.Sport, IPv6: f.Src.Is6() && !f.Src.Is4In6()}
	if len(f.Tags) > 0 {
		m.Tagged, m.VLAN, m.PCP = true, f.Tags[0].ID, f.Tags[0].PCP
	}
	return m
}

// SetMarkings sets the frame's DSCP, ECN, TTL, UDP source port and the
// outermost tag's VLAN ID and PCP from m. It adds an 802.1Q tag to an
// untagged frame when m is tagged and removes all tags when it is not.
func (f *Frame) SetMarkings(m Markings) {
	f.DSCP, f.ECN, f.TTL, f.Sport = m.DSCP, m.ECN, m.TTL, m.Sport
	switch {
	case !m.Tagged:
		f.Tags = nil
	case len(f.Tags) == 0:
		f.Tags = []roce.VLANTag{{TPID: 0x8100, ID: m.VLAN, PCP: m.PCP}}
	default:
		f.Tags = append([]roce.VLANTag(nil), f.Tags...)
		f.Tags[0].ID, f.Tags[0].PCP = m.VLAN, m.PCP
	}
}

// Header sizes (kernel include/rdma/ib_pack.h).
const (
	bthLen  = roce.BTHLen
	dethLen = 8
	icrcLen = roce.ICRCLen
	// bthPSNOff is the offset of the 24-bit PSN in the BTH (IBTA 9.2).
	bthPSNOff = 9
)

// Build serializes the frame with roce.FrameSpec (BTH opcode 0x64, DETH,
// payload and pad, a valid IPv4 header checksum, UDP checksum 0 as RoCE v2
// senders send it, and a valid ICRC), after checking the probe's limits.
func (f Frame) Build() ([]byte, error) {
	if len(f.DstMAC) != 6 || len(f.SrcMAC) != 6 {
		return nil, fmt.Errorf("probe: MAC addresses %v → %v: want 6 bytes each", f.SrcMAC, f.DstMAC)
	}
	// As many tags as roce.WalkFrame keeps, so that every frame ParseFrame
	// returns builds again (a probe itself is sent untagged, 802.1Q or QinQ).
	if len(f.Tags) > roce.MaxVLANTags {
		return nil, fmt.Errorf("probe: %d VLAN tags: want at most %d", len(f.Tags), roce.MaxVLANTags)
	}
	for i, t := range f.Tags {
		// The TPIDs roce.WalkFrame reads as tags, so a frame ParseFrame
		// accepts builds again.
		if t.ID > 4095 || t.PCP > 7 || (t.TPID != roce.TPIDDot1Q && t.TPID != roce.TPIDDot1AD && t.TPID != roce.TPIDQinQ) {
			return nil, fmt.Errorf("probe: tag %d (TPID 0x%04x VID %d PCP %d) is not valid: want TPID 0x8100, 0x88a8 or 0x9100, VID 0..4095, PCP 0..7", i, t.TPID, t.ID, t.PCP)
		}
	}
	if f.DSCP > 63 {
		return nil, fmt.Errorf("probe: DSCP %d is out of range: want 0..63", f.DSCP)
	}
	if f.ECN > 3 {
		return nil, fmt.Errorf("probe: ECN %d is out of range: want 0..3", f.ECN)
	}
	for _, x := range []struct {
		name string
		v    uint32
	}{{"dest QP", f.DestQP}, {"src QP", f.SrcQP}, {"PSN", f.PSN}} {
		if x.v > 0xffffff {
			return nil, fmt.Errorf("probe: %s 0x%x is out of range: want 0..0xffffff (24 bits)", x.name, x.v)
		}
	}
	src, dst := f.Src.Unmap(), f.Dst.Unmap()
	if !src.IsValid() || !dst.IsValid() || src.Is4() != dst.Is4() {
		return nil, fmt.Errorf("probe: addresses %v → %v: want two IPv4 or two IPv6 addresses", f.Src, f.Dst)
	}
	spec := roce.FrameSpec{SrcMAC: f.SrcMAC, DstMAC: f.DstMAC, VLANs: f.Tags, Src: src, Dst: dst,
		TOS: f.Markings().ToS(), TTL: f.TTL, SrcPort: f.Sport,
		BTH:     roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: f.PKey, DestQP: f.DestQP, PSN: f.PSN},
		Headers: []gopacket.SerializableLayer{&roce.DETH{QKey: f.QKey, SrcQP: f.SrcQP}},
		Payload: f.Payload,
	}
	b, err := spec.Build()
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	return b, nil
}

// Parse errors that the listener counts apart.
var (
	// ErrNotRoCEv2 marks a frame that is not a RoCE v2 UD SEND_ONLY frame
	// (other EtherType, protocol, port or opcode, or truncated headers).
	ErrNotRoCEv2 = errors.New("probe: not a RoCE v2 UD SEND_ONLY frame")
	// ErrBadICRC marks a RoCE v2 frame whose ICRC does not match.
	ErrBadICRC = errors.New("probe: ICRC mismatch")
)

// decoders are the frameParsers ParseFrame borrows.
var decoders = sync.Pool{New: func() any { return new(frameParser) }}

// frameParser is ParseFrame with its roce.Decoder, which decodes without
// allocating but not concurrently: a Responder keeps one for its frames.
type frameParser struct {
	d *roce.Decoder
	p roce.Packet
}

// ParseFrame decodes a RoCE v2 UD SEND_ONLY frame and checks its ICRC.
// Errors wrap ErrNotRoCEv2 or ErrBadICRC; one for a frame that is not
// RoCE at all wraps roce.ErrNotRoCE too. The frame is decoded by
// roce.Decoder, the one decoder of the decode command, the capture
// summaries and the ICRC checks (roce.WalkFrame's doc has the decision for
// every edge case of its headers); a probe must moreover be RoCE v2 with
// BTH opcode UD SEND_ONLY (0x64) and transport version 0, whole, with an
// ICRC that can be checked (no IPv4 options or IPv6 extension headers)
// and matches. Frame.Payload aliases data.
func ParseFrame(data []byte) (Frame, error) {
	dec := decoders.Get().(*frameParser)
	defer decoders.Put(dec)
	return dec.parse(data)
}

// parse is ParseFrame.
func (dec *frameParser) parse(data []byte) (Frame, error) {
	if dec.d == nil {
		dec.d = roce.NewDecoder()
	}
	var f Frame
	p := &dec.p
	if err := dec.d.Decode(data, p); err != nil {
		return f, fmt.Errorf("%w: %w", ErrNotRoCEv2, err)
	}
	f.DstMAC = net.HardwareAddr(data[0:6])
	f.SrcMAC = net.HardwareAddr(data[6:12])
	if p.NumVLANs > 0 {
		f.Tags = make([]roce.VLANTag, min(p.NumVLANs, roce.MaxVLANTags))
		copy(f.Tags, p.VLANs[:])
	}
	switch {
	case p.Version != 2:
		return f, fmt.Errorf("%w: RoCE v1 (EtherType 0x8915)", ErrNotRoCEv2)
	case p.BTH.Opcode != roce.OpcodeUDSendOnly:
		return f, fmt.Errorf("%w: BTH opcode 0x%02x", ErrNotRoCEv2, uint8(p.BTH.Opcode))
	case p.BTH.TVer != 0:
		return f, fmt.Errorf("%w: BTH transport version %d", ErrNotRoCEv2, p.BTH.TVer)
	case p.ICRCStatus == roce.ICRCUnchecked:
		why := p.UncheckedReason()
		if why == "" {
			why = "it cannot be computed"
		}
		return f, fmt.Errorf("%w: the ICRC cannot be checked (%s)", ErrNotRoCEv2, why)
	}
	f.Src, f.Dst = p.Src, p.Dst
	f.DSCP, f.ECN, f.TTL, f.Sport = p.DSCP(), p.ECN(), p.TTL, p.SrcPort
	f.PKey, f.DestQP, f.PSN = p.BTH.PKey, p.BTH.DestQP, p.BTH.PSN
	f.QKey, f.SrcQP = p.QKey, p.SrcQP
	if p.ICRCStatus != roce.ICRCValid {
		return f, fmt.Errorf("%w: frame carries 0x%08x, computed 0x%08x", ErrBadICRC, binary.LittleEndian.Uint32(p.ICRC[:]), p.Computed)
	}
	f.Payload = dec.d.Layers().Payload.Data
	return f, nil
}
