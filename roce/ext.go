package roce

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// extHeader is embedded in every extension header. What follows an
// extension header depends on the packet's opcode, which only the BTH
// carries, so each header keeps a link to the BTH it was decoded with.
// gopacket.NewPacket sets the link itself; for a DecodingLayerParser use
// NewDecodingLayers, which links a set of layers to one BTH. A header
// without a link is followed by the payload.
type extHeader struct {
	layers.BaseLayer
	bth *BTH
}

// next returns the layer type after t in the linked BTH's header sequence.
func (e *extHeader) next(t gopacket.LayerType) gopacket.LayerType {
	if e.bth == nil {
		return LayerTypePayload
	}
	hs := opcodeTable[e.bth.Opcode].Headers
	for i, h := range hs {
		if h == t {
			if i+1 < len(hs) {
				return hs[i+1]
			}
			break
		}
	}
	return LayerTypePayload
}

// split sets Contents and Payload for a header of n bytes.
func (e *extHeader) split(name string, data []byte, n int, df gopacket.DecodeFeedback) error {
	if len(data) < n {
		df.SetTruncated()
		return fmt.Errorf("%s: %d bytes, want at least %d", name, len(data), n)
	}
	e.Contents = data[:n]
	e.Payload = data[n:]
	return nil
}

// extLayer is what every extension header implements.
type extLayer interface {
	gopacket.Layer
	gopacket.DecodingLayer
	link(*BTH)
}

func (e *extHeader) link(b *BTH) { e.bth = b }

// newExt returns an empty extension header of layer type t linked to b.
func newExt(t gopacket.LayerType, b *BTH) extLayer {
	var l extLayer
	switch t {
	case LayerTypeRDETH:
		l = &RDETH{}
	case LayerTypeDETH:
		l = &DETH{}
	case LayerTypeRETH:
		l = &RETH{}
	case LayerTypeAETH:
		l = &AETH{}
	case LayerTypeImmDt:
		l = &ImmDt{}
	case LayerTypeIETH:
		l = &IETH{}
	case LayerTypeAtomicETH:
		l = &AtomicETH{}
	case LayerTypeAtomicAckETH:
		l = &AtomicAckETH{}
	case LayerTypeXRCETH:
		l = &XRCETH{}
	case LayerTypeFETH:
		l = &FETH{}
	case LayerTypeCNP:
		l = &CNP{}
	default:
		return nil
	}
	l.link(b)
	return l
}
