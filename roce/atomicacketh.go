package roce

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// AtomicAckETH is the Atomic Acknowledge Extended Transport Header (8
// bytes) of ATOMIC_ACKNOWLEDGE: the original remote data.
type AtomicAckETH struct {
	extHeader
	OrigRemoteData uint64
}

// LayerType returns LayerTypeAtomicAckETH.
func (a *AtomicAckETH) LayerType() gopacket.LayerType { return LayerTypeAtomicAckETH }

// CanDecode returns LayerTypeAtomicAckETH.
func (a *AtomicAckETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicAckETH }

// NextLayerType returns the header the opcode calls for after the AtomicAckETH.
func (a *AtomicAckETH) NextLayerType() gopacket.LayerType { return a.next(LayerTypeAtomicAckETH) }

// DecodeFromBytes decodes the 8 AtomicAckETH bytes.
func (a *AtomicAckETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := a.split("AtomicAckETH", data, 8, df); err != nil {
		return err
	}
	a.OrigRemoteData = binary.BigEndian.Uint64(data[0:8])
	return nil
}

// SerializeTo writes the 8 AtomicAckETH bytes.
func (a *AtomicAckETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	b, err := buf.PrependBytes(8)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(b, a.OrigRemoteData)
	return nil
}
