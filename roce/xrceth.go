package roce

import (
	"fmt"

	"github.com/gopacket/gopacket"
)

// XRCETH is the XRC Extended Transport Header (4 bytes) of XRC requests:
// reserved (8) | XRC SRQ number (24).
type XRCETH struct {
	extHeader
	Reserved uint8
	XRCSRQ   uint32 // 24 bits
}

// LayerType returns LayerTypeXRCETH.
func (x *XRCETH) LayerType() gopacket.LayerType { return LayerTypeXRCETH }

// CanDecode returns LayerTypeXRCETH.
func (x *XRCETH) CanDecode() gopacket.LayerClass { return LayerTypeXRCETH }

// NextLayerType returns the header the opcode calls for after the XRCETH.
func (x *XRCETH) NextLayerType() gopacket.LayerType { return x.next(LayerTypeXRCETH) }

// DecodeFromBytes decodes the 4 XRCETH bytes.
func (x *XRCETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := x.split("XRCETH", data, 4, df); err != nil {
		return err
	}
	x.Reserved = data[0]
	x.XRCSRQ = get24(data[1:4])
	return nil
}

// SerializeTo writes the 4 XRCETH bytes.
func (x *XRCETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if x.XRCSRQ > 0xFFFFFF {
		return fmt.Errorf("XRCETH: XRCSRQ %#x out of range: want 0..0xffffff", x.XRCSRQ)
	}
	b, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	b[0] = x.Reserved
	put24(b[1:4], x.XRCSRQ)
	return nil
}
