package roce

import (
	"fmt"

	"github.com/gopacket/gopacket"
)

// RDETH is the Reliable Datagram Extended Transport Header (4 bytes) of RD
// packets: reserved (8) | EE context (24).
type RDETH struct {
	extHeader
	Reserved uint8
	EEC      uint32 // 24 bits
}

// LayerType returns LayerTypeRDETH.
func (r *RDETH) LayerType() gopacket.LayerType { return LayerTypeRDETH }

// CanDecode returns LayerTypeRDETH.
func (r *RDETH) CanDecode() gopacket.LayerClass { return LayerTypeRDETH }

// NextLayerType returns the header the opcode calls for after the RDETH.
func (r *RDETH) NextLayerType() gopacket.LayerType { return r.next(LayerTypeRDETH) }

// DecodeFromBytes decodes the 4 RDETH bytes.
func (r *RDETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := r.split("RDETH", data, 4, df); err != nil {
		return err
	}
	r.Reserved = data[0]
	r.EEC = get24(data[1:4])
	return nil
}

// SerializeTo writes the 4 RDETH bytes.
func (r *RDETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if r.EEC > 0xFFFFFF {
		return fmt.Errorf("RDETH: EEC %#x out of range: want 0..0xffffff", r.EEC)
	}
	b, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	b[0] = r.Reserved
	put24(b[1:4], r.EEC)
	return nil
}
