package roce

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// decoderID names the gopacket decoder of each layer type. (A type with a
// Decode method, rather than function values, keeps the layer-type
// variables free of initialization cycles.)
type decoderID uint8

const (
	decGRH decoderID = iota
	decBTH
	decRDETH
	decDETH
	decRETH
	decAETH
	decImmDt
	decIETH
	decAtomicETH
	decAtomicAckETH
	decXRCETH
	decFETH
	decCNP
	decPayload
)

// Decode implements gopacket.Decoder.
func (d decoderID) Decode(data []byte, p gopacket.PacketBuilder) error {
	switch d {
	case decGRH:
		return decodeGRH(data, p)
	case decBTH:
		return decodeBTH(data, p)
	case decPayload:
		return decodePayload(data, p, nil)
	}
	var t gopacket.LayerType
	switch d {
	case decRDETH:
		t = LayerTypeRDETH
	case decDETH:
		t = LayerTypeDETH
	case decRETH:
		t = LayerTypeRETH
	case decAETH:
		t = LayerTypeAETH
	case decImmDt:
		t = LayerTypeImmDt
	case decIETH:
		t = LayerTypeIETH
	case decAtomicETH:
		t = LayerTypeAtomicETH
	case decAtomicAckETH:
		t = LayerTypeAtomicAckETH
	case decXRCETH:
		t = LayerTypeXRCETH
	case decFETH:
		t = LayerTypeFETH
	default:
		t = LayerTypeCNP
	}
	// A lone extension header (no BTH before it): followed by the payload.
	l := newExt(t, nil)
	if err := l.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(l)
	return decodePayload(l.LayerPayload(), p, nil)
}

func decodeGRH(data []byte, p gopacket.PacketBuilder) error {
	g := &GRH{}
	if err := g.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(g)
	p.SetNetworkLayer(g)
	return p.NextDecoder(g.NextLayerType())
}

// decodeBTH decodes the BTH, the extension headers its opcode calls for
// and the payload with pad and ICRC.
func decodeBTH(data []byte, p gopacket.PacketBuilder) error {
	b := &BTH{}
	if err := b.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(b)
	rest := b.Payload
	for _, t := range opcodeTable[b.Opcode].Headers {
		l := newExt(t, b)
		if err := l.DecodeFromBytes(rest, p); err != nil {
			return err
		}
		p.AddLayer(l)
		rest = l.LayerPayload()
	}
	return decodePayload(rest, p, b)
}

func decodePayload(data []byte, p gopacket.PacketBuilder, b *BTH) error {
	pl := &Payload{bth: b}
	if err := pl.DecodeFromBytes(data, p); err != nil {
		return err
	}
	p.AddLayer(pl)
	p.SetApplicationLayer(pl)
	if pk, ok := p.(gopacket.Packet); ok && b != nil {
		checkPacketICRC(pk, pl)
	}
	return nil
}

// checkPacketICRC verifies the ICRC of a packet being decoded by
// gopacket.NewPacket. A packet that starts with an Ethernet header is
// walked as Decoder walks it (WalkFrame), so both give the same verdict;
// otherwise the network header in front of the BTH is found among the
// decoded layers and everything from there to the ICRC is covered.
func checkPacketICRC(pk gopacket.Packet, pl *Payload) {
	md := pk.Metadata()
	if md != nil && md.CaptureLength < md.Length {
		return
	}
	ls := pk.Layers()
	if len(ls) > 0 && ls[0].LayerType() == layers.LayerTypeEthernet {
		var w Walk
		if WalkFrame(pk.Data(), &w) != nil || w.UncheckedReason() != "" {
			return
		}
		setICRC(pl, pk.Data()[w.Net:w.End])
		return
	}
	if md != nil && md.Truncated {
		return
	}
	var net []byte
	for i := len(ls) - 1; i >= 0; i-- {
		switch l := ls[i].(type) {
		case *layers.IPv4, *layers.IPv6, *GRH:
			net = l.LayerContents()
		}
		if net != nil {
			break
		}
	}
	if net == nil {
		return
	}
	if pkt, ok := extendTo(net, pl.contents); ok {
		setICRC(pl, pkt)
	}
}

// setICRC verifies the ICRC of pkt (network header to ICRC) into pl.
func setICRC(pl *Payload, pkt []byte) {
	c, valid, err := VerifyICRC(pkt)
	if err != nil {
		return
	}
	pl.ComputedICRC = c
	pl.ICRCStatus = ICRCInvalid
	if valid {
		pl.ICRCStatus = ICRCValid
	}
}

// extendTo returns the bytes from the start of start to the end of tail,
// when tail lies in start's backing array after start's first byte (as
// layers decoded from one frame do). Capacities give the offset; the
// addresses of the last bytes confirm it is the same array.
func extendTo(start, tail []byte) ([]byte, bool) {
	n := cap(start) - cap(tail) + len(tail)
	if len(tail) == 0 || n <= 0 || n > cap(start) {
		return nil, false
	}
	ext := start[:n]
	if &ext[n-1] != &tail[len(tail)-1] {
		return nil, false
	}
	return ext, true
}

// DecodingLayers is a set of RoCE layers for a gopacket.DecodingLayerParser,
// linked to one BTH so that each extension header knows which header
// follows it (that depends on the BTH opcode) and the payload knows the
// pad count. Add them to a parser with AddTo. Set the parser's container
// to gopacket.DecodingLayerSparse first: the layer types are numbered
// 1791-1804, and an array lookup is much faster than the default map.
type DecodingLayers struct {
	GRH          GRH
	BTH          BTH
	RDETH        RDETH
	DETH         DETH
	RETH         RETH
	AETH         AETH
	ImmDt        ImmDt
	IETH         IETH
	AtomicETH    AtomicETH
	AtomicAckETH AtomicAckETH
	XRCETH       XRCETH
	FETH         FETH
	CNP          CNP
	Payload      Payload
}

// NewDecodingLayers returns a linked set of RoCE decoding layers.
func NewDecodingLayers() *DecodingLayers {
	d := &DecodingLayers{}
	for _, l := range d.extLayers() {
		l.link(&d.BTH)
	}
	d.Payload.bth = &d.BTH
	return d
}

func (d *DecodingLayers) extLayers() []extLayer {
	return []extLayer{&d.RDETH, &d.DETH, &d.RETH, &d.AETH, &d.ImmDt, &d.IETH,
		&d.AtomicETH, &d.AtomicAckETH, &d.XRCETH, &d.FETH, &d.CNP}
}

// AddTo adds every layer of the set to a DecodingLayerParser.
func (d *DecodingLayers) AddTo(p *gopacket.DecodingLayerParser) {
	p.AddDecodingLayer(&d.GRH)
	p.AddDecodingLayer(&d.BTH)
	for _, l := range d.extLayers() {
		p.AddDecodingLayer(l)
	}
	p.AddDecodingLayer(&d.Payload)
}
