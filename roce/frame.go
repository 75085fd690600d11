package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// MaxVLANTags is the number of VLAN tags a Walk (and so a Packet) records,
// outermost first; NumVLANs counts them all.
const MaxVLANTags = 4

// VLANTag is one 802.1Q/802.1ad tag.
type VLANTag struct {
	TPID uint16 // 0x8100 (802.1Q), 0x88a8 (802.1ad S-tag) or 0x9100
	PCP  uint8
	DEI  bool
	ID   uint16
}

// Packet is the flat view of one decoded RoCE frame: everything the decode
// command prints. Decoder fills it without allocating. The embedded Walk
// holds the VLAN tags, the RoCE and IP versions, the header offsets and
// whether the frame is truncated.
type Packet struct {
	Walk

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
	AETH    AETH // ACKs, READ responses: syndrome and MSN

	HasRETH bool
	RETH    RETH // RDMA WRITE FIRST/ONLY, READ requests, FLUSH, ATOMIC_WRITE: VA, R_Key, DMA length

	HasAtomicETH bool
	AtomicETH    AtomicETH // COMPARE_SWAP, FETCH_ADD

	HasAtomicAckETH bool
	AtomicAckETH    AtomicAckETH // ATOMIC_ACKNOWLEDGE: the original remote data

	HasIETH bool
	IETH    IETH // SEND with invalidate: the R_Key to invalidate

	HasXRCETH bool
	XRCETH    XRCETH // XRC requests: the XRC SRQ

	HasRDETH bool
	RDETH    RDETH // RD packets: the EE context

	PayloadLen int // application data bytes, without pad
	PadLen     int
	ICRC       [4]byte // ICRC wire bytes
	ICRCStatus ICRCStatus
	Computed   uint32 // the ICRC the packet should carry (when checked)
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

// errLinkType: a pcapng interface that is not Ethernet.
var errLinkType = fmt.Errorf("%w: captured on an interface whose link type is not Ethernet", ErrNotRoCE)

// Decode decodes one Ethernet frame into p. A frame that is not RoCE
// returns an error wrapping ErrNotRoCE; a RoCE frame (UDP destination port
// 4791 or EtherType 0x8915) whose headers are cut short or inconsistent
// returns another error naming the header.
func (d *Decoder) Decode(frame []byte, p *Packet) error {
	*p = Packet{}
	if err := p.Walk.walk(frame); err != nil {
		return err
	}
	ip := frame[p.Net:]
	switch p.IPVersion {
	case 4:
		p.Src = netip.AddrFrom4([4]byte(ip[12:16]))
		p.Dst = netip.AddrFrom4([4]byte(ip[16:20]))
		p.TOS, p.TTL = ip[1], ip[8]
	case 6:
		p.Src = netip.AddrFrom16([16]byte(ip[8:24]))
		p.Dst = netip.AddrFrom16([16]byte(ip[24:40]))
		w := binary.BigEndian.Uint32(ip[0:4])
		p.TOS, p.FlowLabel, p.TTL = uint8(w>>20), w&0xFFFFF, ip[7]
	default: // RoCE v1: the GRH layer, for Layers
		g := &d.roce.GRH
		if err := g.DecodeFromBytes(frame[p.Net:p.End], gopacket.NilDecodeFeedback); err != nil {
			return err
		}
		p.Src, p.Dst = netip.AddrFrom16(g.SGID), netip.AddrFrom16(g.DGID)
		p.TOS, p.FlowLabel, p.TTL = g.TClass, g.FlowLabel, g.HopLmt
	}
	if p.Version == 2 {
		p.SrcPort, p.DstPort = binary.BigEndian.Uint16(frame[p.UDP:]), uint16(UDPPort)
	}
	r := d.roce
	fb := &d.fb
	fb.truncated = false
	if err := r.BTH.DecodeFromBytes(frame[p.Transport:p.End], fb); err != nil {
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
		case LayerTypeRETH:
			p.HasRETH, p.RETH = true, r.RETH
		case LayerTypeAtomicETH:
			p.HasAtomicETH, p.AtomicETH = true, r.AtomicETH
		case LayerTypeAtomicAckETH:
			p.HasAtomicAckETH, p.AtomicAckETH = true, r.AtomicAckETH
		case LayerTypeIETH:
			p.HasIETH, p.IETH = true, r.IETH
		case LayerTypeXRCETH:
			p.HasXRCETH, p.XRCETH = true, r.XRCETH
		case LayerTypeRDETH:
			p.HasRDETH, p.RDETH = true, r.RDETH
		}
	}
	pl := &r.Payload
	if err := pl.DecodeFromBytes(data, fb); err != nil {
		return fmt.Errorf("RoCE %s: %w", r.BTH.Opcode, err)
	}
	p.PayloadLen, p.PadLen, p.ICRC = len(pl.Data), len(pl.Pad), pl.ICRC
	if !p.Truncated && !p.IPOptions {
		p.Computed, p.ICRCStatus = d.check(frame[p.Net:p.End])
	}
	pl.ICRCStatus, pl.ComputedICRC = p.ICRCStatus, p.Computed
	return nil
}

// check computes the ICRC of a walked RoCE packet (network header to the
// end of the ICRC) and compares it with the one it carries.
func (d *Decoder) check(pkt []byte) (uint32, ICRCStatus) {
	if len(pkt) < ICRCLen {
		return 0, ICRCUnchecked
	}
	n := len(pkt) - ICRCLen
	c, ok := icrcFast(pkt[:n], &d.buf)
	if !ok {
		var err error
		if c, err = icrcMasked(pkt[:n]); err != nil {
			return 0, ICRCUnchecked
		}
	}
	if binary.LittleEndian.Uint32(pkt[n:]) == c {
		return c, ICRCValid
	}
	return c, ICRCInvalid
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
	return d.DecodeLengths(frame, ci.CaptureLength, ci.Length, p)
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

// DecodeLengths is DecodeCaptured for a frame of an Ethernet capture given
// its captured and original lengths (package capture keeps them apart from
// a gopacket.CaptureInfo in its batches).
func (d *Decoder) DecodeLengths(frame []byte, capLen, length int, p *Packet) error {
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
