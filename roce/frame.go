package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// MaxVLANTags is the number of VLAN tags a Packet records (outermost first).
const MaxVLANTags = 4

// VLANTag is one 802.1Q/802.1ad tag.
type VLANTag struct {
	TPID uint16 // 0x8100 (802.1Q), 0x88a8 (802.1ad S-tag) or 0x9100
	PCP  uint8
	DEI  bool
	ID   uint16
}

// Packet is the flat view of one decoded RoCE frame: everything the decode
// command prints. Decoder fills it without allocating.
type Packet struct {
	Version   int // RoCE version: 1 or 2
	VLANs     [MaxVLANTags]VLANTag
	NumVLANs  int // tags in the frame (may exceed MaxVLANTags; only the first are kept)
	IPVersion int // 4 or 6 for RoCE v2; 0 for v1

	// Src and Dst are the IP addresses (v2) or the GIDs as IPv6 addresses (v1).
	Src, Dst  netip.Addr
	TOS       uint8  // IPv4 TOS, IPv6 traffic class or GRH TClass: DSCP<<2 | ECN
	TTL       uint8  // IPv4 TTL, IPv6 hop limit or GRH HopLmt
	FlowLabel uint32 // IPv6/GRH flow label; 0 for IPv4
	SrcPort   uint16 // UDP source port (v2)
	DstPort   uint16 // UDP destination port (v2)

	BTH BTH // the BTH (Contents/Payload point into the frame)

	HasDETH bool
	QKey    uint32
	SrcQP   uint32

	HasImm bool
	Imm    uint32

	HasAETH bool
	AETH    AETH

	PayloadLen int // application data bytes, without pad
	PadLen     int
	ICRC       [4]byte // ICRC wire bytes
	ICRCStatus ICRCStatus
	Computed   uint32 // the ICRC the packet should carry (when checked)
	Truncated  bool   // the frame is shorter than its headers say
}

// DSCP returns the DSCP (TOS >> 2).
func (p *Packet) DSCP() uint8 { return p.TOS >> 2 }

// ECN returns the ECN bits (TOS & 3); 3 is CE (congestion experienced).
func (p *Packet) ECN() uint8 { return p.TOS & 3 }

// Decoder decodes Ethernet frames carrying RoCE v1 or v2 into Packets and
// verifies their ICRC, without allocating. It parses the Ethernet, VLAN,
// IP and UDP headers itself (a gopacket.DecodingLayerParser with
// gopacket's layers does the same work more slowly) and the RoCE headers
// with this package's layers, available afterwards from Layers. The
// gopacket.NewPacket path decodes the same frames to the same values
// (checked by FuzzDecoderMatchesNewPacket). A Decoder is not safe for
// concurrent use.
type Decoder struct {
	roce *DecodingLayers
	exts [16]extLayer // indexed by layer type - LayerTypeGRH
	fb   feedback
	buf  [icrcScratch]byte // ICRC scratch
}

// NewDecoder returns a Decoder for Ethernet frames.
func NewDecoder() *Decoder {
	d := &Decoder{roce: NewDecodingLayers()}
	for _, l := range d.roce.extLayers() {
		d.exts[l.LayerType()-LayerTypeGRH] = l
	}
	return d
}

// Layers returns the RoCE layers of the last decoded frame.
func (d *Decoder) Layers() *DecodingLayers { return d.roce }

// Reasons a frame is not RoCE (preallocated: decoding does not allocate).
var (
	errShortEthernet = fmt.Errorf("%w: frame shorter than an Ethernet header", ErrNotRoCE)
	errShortVLAN     = fmt.Errorf("%w: frame ends inside a VLAN tag", ErrNotRoCE)
	errEtherType     = fmt.Errorf("%w: EtherType is not IPv4, IPv6 or RoCE v1 (0x8915)", ErrNotRoCE)
	errBadIPv4       = fmt.Errorf("%w: truncated or invalid IPv4 header", ErrNotRoCE)
	errBadIPv6       = fmt.Errorf("%w: truncated or invalid IPv6 header", ErrNotRoCE)
	errNotUDP        = fmt.Errorf("%w: IP payload is not UDP (RoCE v2 uses no IPv6 extension headers)", ErrNotRoCE)
	errFragment      = fmt.Errorf("%w: IPv4 fragment", ErrNotRoCE)
	errShortUDP      = fmt.Errorf("%w: truncated UDP header", ErrNotRoCE)
	errNotPort       = fmt.Errorf("%w: UDP destination port is not 4791", ErrNotRoCE)
	errGRHNext       = fmt.Errorf("%w: GRH next header is not 0x1B (BTH)", ErrNotRoCE)
	errLinkType      = fmt.Errorf("%w: captured on an interface whose link type is not Ethernet", ErrNotRoCE)
)

// Decode decodes one Ethernet frame into p. A frame that is not RoCE
// returns an error wrapping ErrNotRoCE; a RoCE frame (UDP destination port
// 4791 or EtherType 0x8915) whose headers are cut short or inconsistent
// returns another error naming the header.
func (d *Decoder) Decode(frame []byte, p *Packet) error {
	*p = Packet{}
	if len(frame) < 14 {
		return errShortEthernet
	}
	et := binary.BigEndian.Uint16(frame[12:14])
	off := 14
	for et == 0x8100 || et == 0x88A8 || et == 0x9100 {
		if len(frame) < off+4 {
			return errShortVLAN
		}
		tci := binary.BigEndian.Uint16(frame[off:])
		if p.NumVLANs < MaxVLANTags {
			p.VLANs[p.NumVLANs] = VLANTag{TPID: et, PCP: uint8(tci >> 13), DEI: tci&0x1000 != 0, ID: tci & 0x0FFF}
		}
		p.NumVLANs++
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += 4
	}
	rest := frame[off:]
	var net, bth []byte
	switch et {
	case 0x0800:
		if len(rest) < 20 || rest[0]>>4 != 4 {
			return errBadIPv4
		}
		ihl := int(rest[0]&0x0F) * 4
		tl := int(binary.BigEndian.Uint16(rest[2:4]))
		if tl == 0 { // unset (segmentation offload): use the frame
			tl = len(rest)
		}
		if ihl < 20 || len(rest) < ihl || tl < ihl {
			return errBadIPv4
		}
		if rest[9] != 17 {
			return errNotUDP
		}
		if binary.BigEndian.Uint16(rest[6:8])&0x3FFF != 0 {
			return errFragment
		}
		if tl > len(rest) {
			p.Truncated, tl = true, len(rest)
		}
		net = rest[:tl]
		p.Version, p.IPVersion = 2, 4
		p.Src = netip.AddrFrom4([4]byte(rest[12:16]))
		p.Dst = netip.AddrFrom4([4]byte(rest[16:20]))
		p.TOS, p.TTL = rest[1], rest[8]
		bth = net[ihl:]
	case 0x86DD:
		if len(rest) < 40 || rest[0]>>4 != 6 {
			return errBadIPv6
		}
		if rest[6] != 17 {
			return errNotUDP
		}
		end := 40 + int(binary.BigEndian.Uint16(rest[4:6]))
		if end > len(rest) {
			p.Truncated, end = true, len(rest)
		}
		net = rest[:end]
		p.Version, p.IPVersion = 2, 6
		p.Src = netip.AddrFrom16([16]byte(rest[8:24]))
		p.Dst = netip.AddrFrom16([16]byte(rest[24:40]))
		w := binary.BigEndian.Uint32(rest[0:4])
		p.TOS, p.FlowLabel, p.TTL = uint8(w>>20), w&0xFFFFF, rest[7]
		bth = net[40:]
	case uint16(EthernetTypeRoCEv1):
		g := &d.roce.GRH
		fb := &d.fb
		fb.truncated = false
		if err := g.DecodeFromBytes(rest, fb); err != nil {
			return err
		}
		if g.NxtHdr != NextHeaderBTH {
			return errGRHNext
		}
		p.Truncated = fb.truncated
		net = rest[:GRHLen+len(g.Payload)]
		p.Version = 1
		p.Src, p.Dst = netip.AddrFrom16(g.SGID), netip.AddrFrom16(g.DGID)
		p.TOS, p.FlowLabel, p.TTL = g.TClass, g.FlowLabel, g.HopLmt
		bth = g.Payload
	default:
		return errEtherType
	}
	if p.Version == 2 {
		if len(bth) < 8 {
			return errShortUDP
		}
		if binary.BigEndian.Uint16(bth[2:4]) != uint16(UDPPort) {
			return errNotPort
		}
		p.SrcPort, p.DstPort = binary.BigEndian.Uint16(bth[0:2]), uint16(UDPPort)
		switch ul := int(binary.BigEndian.Uint16(bth[4:6])); {
		case ul == 0: // unset: the rest of the IP packet
		case ul < 8:
			return fmt.Errorf("UDP: length %d, want at least 8", ul)
		case ul > len(bth):
			p.Truncated = true
		default:
			bth = bth[:ul]
		}
		bth = bth[8:]
	}
	r := d.roce
	fb := &d.fb
	if err := r.BTH.DecodeFromBytes(bth, fb); err != nil {
		return err
	}
	p.BTH = r.BTH
	data := r.BTH.Payload
	for _, h := range opcodeTable[r.BTH.Opcode].Headers {
		l := d.exts[h-LayerTypeGRH]
		if err := l.DecodeFromBytes(data, fb); err != nil {
			return fmt.Errorf("RoCE %s: %w", r.BTH.Opcode, err)
		}
		data = l.LayerPayload()
		switch h {
		case LayerTypeDETH:
			p.HasDETH, p.QKey, p.SrcQP = true, r.DETH.QKey, r.DETH.SrcQP
		case LayerTypeImmDt:
			p.HasImm, p.Imm = true, r.ImmDt.Immediate
		case LayerTypeAETH:
			p.HasAETH, p.AETH = true, r.AETH
		}
	}
	pl := &r.Payload
	if err := pl.DecodeFromBytes(data, fb); err != nil {
		return fmt.Errorf("RoCE %s: %w", r.BTH.Opcode, err)
	}
	p.PayloadLen, p.PadLen, p.ICRC = len(pl.Data), len(pl.Pad), pl.ICRC
	if !p.Truncated {
		if pkt, ok := extendTo(net, pl.contents); ok {
			n := len(pkt) - ICRCLen
			c, ok := icrcFast(pkt[:n], &d.buf)
			var err error
			if !ok {
				c, err = icrcMasked(pkt[:n])
			}
			if err == nil {
				p.Computed = c
				p.ICRCStatus = ICRCInvalid
				if binary.LittleEndian.Uint32(pkt[n:]) == c {
					p.ICRCStatus = ICRCValid
				}
			}
		}
	}
	pl.ICRCStatus, pl.ComputedICRC = p.ICRCStatus, p.Computed
	return nil
}

// feedback is a gopacket.DecodeFeedback that remembers truncation.
type feedback struct{ truncated bool }

func (f *feedback) SetTruncated() { f.truncated = true }

// DecodeCaptured is Decode for a frame read from a capture: a frame cut
// short by the capture's snap length (CaptureLength < Length) is marked
// Truncated and its ICRC left unchecked, and a frame of a pcapng interface
// whose link type is not Ethernet (a layers.LinkType in the capture info's
// AncillaryData, as CaptureReader gives) is not RoCE.
func (d *Decoder) DecodeCaptured(frame []byte, ci gopacket.CaptureInfo, p *Packet) error {
	if CaptureLinkType(&ci) != layers.LinkTypeEthernet {
		*p = Packet{}
		return errLinkType
	}
	return d.decodeLens(frame, ci.CaptureLength, ci.Length, p)
}

// CaptureLinkType returns the link type of a frame read by pcapgo with
// mixed link types allowed (pcapgo's NgReader puts it in the capture
// info's AncillaryData, as package capture reads pcapng), or Ethernet when
// the capture info does not say.
func CaptureLinkType(ci *gopacket.CaptureInfo) layers.LinkType {
	if len(ci.AncillaryData) > 0 {
		if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok {
			return lt
		}
	}
	return layers.LinkTypeEthernet
}

// decodeLens is DecodeCaptured given the capture and original lengths.
func (d *Decoder) decodeLens(frame []byte, capLen, length int, p *Packet) error {
	if err := d.Decode(frame, p); err != nil {
		if capLen < length && !errors.Is(err, ErrNotRoCE) {
			return fmt.Errorf("cut short by the capture's snap length (%d of %d bytes): %w", capLen, length, err)
		}
		return err
	}
	if capLen < length {
		p.Truncated = true
		p.ICRCStatus, p.Computed = ICRCUnchecked, 0
	}
	return nil
}
