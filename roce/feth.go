package roce

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
)

// FETH is the Flush Extended Transport Header (4 bytes) of RC FLUSH:
// reserved (26) | selectivity level (2) | placement type (4), as in the
// kernel's rxe_hdr.h.
type FETH struct {
	extHeader
	Reserved      uint32 // 26 bits
	Selectivity   uint8  // 2 bits
	PlacementType uint8  // 4 bits
}

// LayerType returns LayerTypeFETH.
func (f *FETH) LayerType() gopacket.LayerType { return LayerTypeFETH }

// CanDecode returns LayerTypeFETH.
func (f *FETH) CanDecode() gopacket.LayerClass { return LayerTypeFETH }

// NextLayerType returns the header the opcode calls for after the FETH.
func (f *FETH) NextLayerType() gopacket.LayerType { return f.next(LayerTypeFETH) }

// DecodeFromBytes decodes the 4 FETH bytes.
func (f *FETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := f.split("FETH", data, 4, df); err != nil {
		return err
	}
	v := binary.BigEndian.Uint32(data[0:4])
	f.Reserved = v >> 6
	f.Selectivity = uint8(v>>4) & 0x3
	f.PlacementType = uint8(v) & 0xF
	return nil
}

// SerializeTo writes the 4 FETH bytes.
func (f *FETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	switch {
	case f.Reserved > 0x3FFFFFF:
		return fmt.Errorf("FETH: Reserved %#x out of range: want 0..0x3ffffff", f.Reserved)
	case f.Selectivity > 3:
		return fmt.Errorf("FETH: Selectivity %d out of range: want 0..3", f.Selectivity)
	case f.PlacementType > 15:
		return fmt.Errorf("FETH: PlacementType %d out of range: want 0..15", f.PlacementType)
	}
	b, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b, f.Reserved<<6|uint32(f.Selectivity)<<4|uint32(f.PlacementType))
	return nil
}
