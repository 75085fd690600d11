package roce

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// IETH is the Invalidate Extended Transport Header (4 bytes) of SEND with
// invalidate: the R_Key to invalidate.
type IETH struct {
	extHeader
	RKey uint32
}

// LayerType returns LayerTypeIETH.
func (i *IETH) LayerType() gopacket.LayerType { return LayerTypeIETH }

// CanDecode returns LayerTypeIETH.
func (i *IETH) CanDecode() gopacket.LayerClass { return LayerTypeIETH }

// NextLayerType returns the header the opcode calls for after the IETH.
func (i *IETH) NextLayerType() gopacket.LayerType { return i.next(LayerTypeIETH) }

// DecodeFromBytes decodes the 4 IETH bytes.
func (i *IETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := i.split("IETH", data, 4, df); err != nil {
		return err
	}
	i.RKey = binary.BigEndian.Uint32(data[0:4])
	return nil
}

// SerializeTo writes the 4 IETH bytes.
func (i *IETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	b, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b, i.RKey)
	return nil
}
