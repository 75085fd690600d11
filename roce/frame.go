package roce

import (
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

// Decoder decodes Ethernet frames carrying RoCE v1 or v2 into Packets with
// a gopacket.DecodingLayerParser and verifies the ICRC. Decoding allocates
// nothing. A Decoder is not safe for concurrent use.
type Decoder struct {
	eth    layers.Ethernet
	vlan   vlanStack
	ip4    layers.IPv4
	ip6    layers.IPv6
	udp    layers.UDP
	roce   *DecodingLayers
	parser *gopacket.DecodingLayerParser
	types  []gopacket.LayerType
}

// NewDecoder returns a Decoder for Ethernet frames.
func NewDecoder() *Decoder {
	d := &Decoder{roce: NewDecodingLayers(), types: make([]gopacket.LayerType, 0, 16)}
	d.parser = gopacket.NewDecodingLayerParser(layers.LayerTypeEthernet)
	// An array indexed by layer type is faster than the default map.
	d.parser.SetDecodingLayerContainer(gopacket.DecodingLayerSparse(nil))
	for _, l := range []gopacket.DecodingLayer{&d.eth, &d.vlan, &d.ip4, &d.ip6, &d.udp} {
		d.parser.AddDecodingLayer(l)
	}
	d.roce.AddTo(d.parser)
	return d
}

// Layers returns the RoCE layers of the last decoded frame.
func (d *Decoder) Layers() *DecodingLayers { return d.roce }

// Decode decodes one Ethernet frame into p. A frame that is not RoCE
// returns an error wrapping ErrNotRoCE; a RoCE frame whose headers are cut
// short or inconsistent returns another error naming the header.
func (d *Decoder) Decode(frame []byte, p *Packet) error {
	d.vlan.reset()
	err := d.parser.DecodeLayers(frame, &d.types)
	_, unsupported := err.(gopacket.UnsupportedLayerType)
	if unsupported || (err == nil && !d.has(LayerTypeBTH)) {
		return fmt.Errorf("%w: no BTH after %s", ErrNotRoCE, d.lastType())
	}
	if err != nil {
		if !d.has(LayerTypeBTH) {
			return fmt.Errorf("%w: %v", ErrNotRoCE, err)
		}
		return err
	}
	*p = Packet{}
	p.Truncated = d.parser.Truncated
	n := d.vlan.n
	p.NumVLANs = n
	if n > MaxVLANTags {
		n = MaxVLANTags
	}
	copy(p.VLANs[:n], d.vlan.tags[:n])
	for i := 0; i < n; i++ {
		if i == 0 {
			p.VLANs[i].TPID = uint16(d.eth.EthernetType)
		} else {
			p.VLANs[i].TPID = d.vlan.next[i-1]
		}
	}
	var net []byte
	switch {
	case d.has(layers.LayerTypeIPv4):
		p.Version, p.IPVersion = 2, 4
		p.Src = netip.AddrFrom4([4]byte(d.ip4.SrcIP))
		p.Dst = netip.AddrFrom4([4]byte(d.ip4.DstIP))
		p.TOS, p.TTL = d.ip4.TOS, d.ip4.TTL
		net = d.ip4.Contents
	case d.has(layers.LayerTypeIPv6):
		p.Version, p.IPVersion = 2, 6
		p.Src = netip.AddrFrom16([16]byte(d.ip6.SrcIP))
		p.Dst = netip.AddrFrom16([16]byte(d.ip6.DstIP))
		p.TOS, p.TTL, p.FlowLabel = d.ip6.TrafficClass, d.ip6.HopLimit, d.ip6.FlowLabel
		net = d.ip6.Contents
	default:
		g := &d.roce.GRH
		p.Version = 1
		p.Src = netip.AddrFrom16(g.SGID)
		p.Dst = netip.AddrFrom16(g.DGID)
		p.TOS, p.TTL, p.FlowLabel = g.TClass, g.HopLmt, g.FlowLabel
		net = g.Contents
	}
	if p.Version == 2 {
		p.SrcPort, p.DstPort = uint16(d.udp.SrcPort), uint16(d.udp.DstPort)
	}
	r := d.roce
	p.BTH = r.BTH
	hs := opcodeTable[r.BTH.Opcode].Headers
	for _, h := range hs {
		switch h {
		case LayerTypeDETH:
			p.HasDETH, p.QKey, p.SrcQP = true, r.DETH.QKey, r.DETH.SrcQP
		case LayerTypeImmDt:
			p.HasImm, p.Imm = true, r.ImmDt.Immediate
		case LayerTypeAETH:
			p.HasAETH, p.AETH = true, r.AETH
		}
	}
	if !d.has(LayerTypePayload) {
		// The DecodingLayerParser stops when no bytes are left: the
		// extension headers used up the packet, so there is no ICRC.
		want := BTHLen + opcodeTable[r.BTH.Opcode].HeaderLen + ICRCLen
		return fmt.Errorf("RoCE %s packet ends before its ICRC: want at least %d bytes after the network header", r.BTH.Opcode, want)
	}
	pl := &r.Payload
	p.PayloadLen, p.PadLen, p.ICRC = len(pl.Data), len(pl.Pad), pl.ICRC
	if !p.Truncated {
		if pkt, ok := extendTo(net, pl.contents); ok {
			if c, valid, err := VerifyICRC(pkt); err == nil {
				p.Computed = c
				p.ICRCStatus = ICRCInvalid
				if valid {
					p.ICRCStatus = ICRCValid
				}
			}
		}
	}
	pl.ICRCStatus, pl.ComputedICRC = p.ICRCStatus, p.Computed
	return nil
}

func (d *Decoder) has(t gopacket.LayerType) bool {
	for _, x := range d.types {
		if x == t {
			return true
		}
	}
	return false
}

func (d *Decoder) lastType() gopacket.LayerType {
	if len(d.types) == 0 {
		return gopacket.LayerTypeZero
	}
	return d.types[len(d.types)-1]
}

// vlanStack decodes every VLAN tag of a frame with one DecodingLayer and
// remembers them in order (a DecodingLayerParser has one layer per type).
type vlanStack struct {
	cur  layers.Dot1Q
	tags [MaxVLANTags]VLANTag
	next [MaxVLANTags]uint16 // the EtherType after each tag
	n    int
}

func (v *vlanStack) reset() { v.n = 0 }

func (v *vlanStack) CanDecode() gopacket.LayerClass    { return layers.LayerTypeDot1Q }
func (v *vlanStack) NextLayerType() gopacket.LayerType { return v.cur.NextLayerType() }
func (v *vlanStack) LayerPayload() []byte              { return v.cur.Payload }
func (v *vlanStack) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := v.cur.DecodeFromBytes(data, df); err != nil {
		return err
	}
	if v.n < MaxVLANTags {
		v.tags[v.n] = VLANTag{PCP: v.cur.Priority, DEI: v.cur.DropEligible, ID: v.cur.VLANIdentifier}
		v.next[v.n] = uint16(v.cur.Type)
	}
	v.n++
	return nil
}

// DecodeCaptured is Decode for a frame read from a capture: a frame cut
// short by the capture's snap length (CaptureLength < Length) is marked
// Truncated and its ICRC left unchecked.
func (d *Decoder) DecodeCaptured(frame []byte, ci gopacket.CaptureInfo, p *Packet) error {
	if err := d.Decode(frame, p); err != nil {
		return err
	}
	if ci.CaptureLength < ci.Length {
		p.Truncated = true
		p.ICRCStatus, p.Computed = ICRCUnchecked, 0
	}
	return nil
}
