package roce

import (
	"github.com/gopacket/gopacket"
)

// CNPLen is the length of the reserved block of a RoCE v2 CNP.
const CNPLen = 16

// CNP is the body of a RoCE v2 Congestion Notification Packet (BTH opcode
// 0x81): 16 reserved bytes between the BTH and the ICRC. A CNP tells the
// sender of the flow named by the BTH DestQP to slow down; its BTH
// normally has BECN set (RoCE v2 annex A17).
type CNP struct {
	extHeader
	Reserved [CNPLen]byte
}

// LayerType returns LayerTypeCNP.
func (c *CNP) LayerType() gopacket.LayerType { return LayerTypeCNP }

// CanDecode returns LayerTypeCNP.
func (c *CNP) CanDecode() gopacket.LayerClass { return LayerTypeCNP }

// NextLayerType returns LayerTypePayload (which holds the ICRC).
func (c *CNP) NextLayerType() gopacket.LayerType { return c.next(LayerTypeCNP) }

// DecodeFromBytes decodes the 16 reserved bytes.
func (c *CNP) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := c.split("CNP", data, CNPLen, df); err != nil {
		return err
	}
	copy(c.Reserved[:], data[:CNPLen])
	return nil
}

// SerializeTo writes the 16 reserved bytes.
func (c *CNP) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	b, err := buf.PrependBytes(CNPLen)
	if err != nil {
		return err
	}
	copy(b, c.Reserved[:])
	return nil
}
