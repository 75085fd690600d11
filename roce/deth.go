package roce

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
)

// GSIQKey is the well-known Q_Key of QP1 (the GSI/CM QP).
const GSIQKey = 0x80010000

// DETH is the Datagram Extended Transport Header (8 bytes) of UD and RD
// packets: Q_Key (32) | reserved (8) | SrcQP (24).
type DETH struct {
	extHeader
	QKey     uint32
	Reserved uint8
	SrcQP    uint32 // 24 bits
}

// LayerType returns LayerTypeDETH.
func (d *DETH) LayerType() gopacket.LayerType { return LayerTypeDETH }

// CanDecode returns LayerTypeDETH.
func (d *DETH) CanDecode() gopacket.LayerClass { return LayerTypeDETH }

// NextLayerType returns the header the opcode calls for after the DETH.
func (d *DETH) NextLayerType() gopacket.LayerType { return d.next(LayerTypeDETH) }

// DecodeFromBytes decodes the 8 DETH bytes.
func (d *DETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := d.split("DETH", data, 8, df); err != nil {
		return err
	}
	d.QKey = binary.BigEndian.Uint32(data[0:4])
	d.Reserved = data[4]
	d.SrcQP = get24(data[5:8])
	return nil
}

// SerializeTo writes the 8 DETH bytes.
func (d *DETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if d.SrcQP > 0xFFFFFF {
		return fmt.Errorf("DETH: SrcQP %#x out of range: want 0..0xffffff", d.SrcQP)
	}
	b, err := buf.PrependBytes(8)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(b[0:4], d.QKey)
	b[4] = d.Reserved
	put24(b[5:8], d.SrcQP)
	return nil
}
