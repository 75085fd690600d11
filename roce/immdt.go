package roce

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// ImmDt is the Immediate Data Extended Transport Header (4 bytes) of the
// *_WITH_IMMEDIATE opcodes. Immediate holds the 4 wire bytes as a
// big-endian number (the verbs API's imm_data is big-endian too).
type ImmDt struct {
	extHeader
	Immediate uint32
}

// LayerType returns LayerTypeImmDt.
func (i *ImmDt) LayerType() gopacket.LayerType { return LayerTypeImmDt }

// CanDecode returns LayerTypeImmDt.
func (i *ImmDt) CanDecode() gopacket.LayerClass { return LayerTypeImmDt }

// NextLayerType returns the header the opcode calls for after the ImmDt.
func (i *ImmDt) NextLayerType() gopacket.LayerType { return i.next(LayerTypeImmDt) }

// DecodeFromBytes decodes the 4 ImmDt bytes.
func (i *ImmDt) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := i.split("ImmDt", data, 4, df); err != nil {
		return err
	}
	i.Immediate = binary.BigEndian.Uint32(data[0:4])
	return nil
}

// SerializeTo writes the 4 ImmDt bytes.
func (i *ImmDt) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	b, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b, i.Immediate)
	return nil
}
