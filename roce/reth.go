package roce

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// RETH is the RDMA Extended Transport Header (16 bytes) of RDMA WRITE and
// READ requests: virtual address (64) | R_Key (32) | DMA length (32).
type RETH struct {
	extHeader
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// LayerType returns LayerTypeRETH.
func (r *RETH) LayerType() gopacket.LayerType { return LayerTypeRETH }

// CanDecode returns LayerTypeRETH.
func (r *RETH) CanDecode() gopacket.LayerClass { return LayerTypeRETH }

// NextLayerType returns the header the opcode calls for after the RETH.
func (r *RETH) NextLayerType() gopacket.LayerType { return r.next(LayerTypeRETH) }

// DecodeFromBytes decodes the 16 RETH bytes.
func (r *RETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := r.split("RETH", data, 16, df); err != nil {
		return err
	}
	r.VA = binary.BigEndian.Uint64(data[0:8])
	r.RKey = binary.BigEndian.Uint32(data[8:12])
	r.DMALen = binary.BigEndian.Uint32(data[12:16])
	return nil
}

// SerializeTo writes the 16 RETH bytes.
func (r *RETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	b, err := buf.PrependBytes(16)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(b[0:8], r.VA)
	binary.BigEndian.PutUint32(b[8:12], r.RKey)
	binary.BigEndian.PutUint32(b[12:16], r.DMALen)
	return nil
}
