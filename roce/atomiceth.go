package roce

import (
	"encoding/binary"

	"github.com/gopacket/gopacket"
)

// AtomicETH is the Atomic Extended Transport Header (28 bytes) of
// COMPARE_SWAP and FETCH_ADD: virtual address (64) | R_Key (32) |
// swap or add data (64) | compare data (64).
type AtomicETH struct {
	extHeader
	VA          uint64
	RKey        uint32
	SwapAddData uint64
	CompareData uint64
}

// LayerType returns LayerTypeAtomicETH.
func (a *AtomicETH) LayerType() gopacket.LayerType { return LayerTypeAtomicETH }

// CanDecode returns LayerTypeAtomicETH.
func (a *AtomicETH) CanDecode() gopacket.LayerClass { return LayerTypeAtomicETH }

// NextLayerType returns the header the opcode calls for after the AtomicETH.
func (a *AtomicETH) NextLayerType() gopacket.LayerType { return a.next(LayerTypeAtomicETH) }

// DecodeFromBytes decodes the 28 AtomicETH bytes.
func (a *AtomicETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := a.split("AtomicETH", data, 28, df); err != nil {
		return err
	}
	a.VA = binary.BigEndian.Uint64(data[0:8])
	a.RKey = binary.BigEndian.Uint32(data[8:12])
	a.SwapAddData = binary.BigEndian.Uint64(data[12:20])
	a.CompareData = binary.BigEndian.Uint64(data[20:28])
	return nil
}

// SerializeTo writes the 28 AtomicETH bytes.
func (a *AtomicETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	b, err := buf.PrependBytes(28)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint64(b[0:8], a.VA)
	binary.BigEndian.PutUint32(b[8:12], a.RKey)
	binary.BigEndian.PutUint64(b[12:20], a.SwapAddData)
	binary.BigEndian.PutUint64(b[20:28], a.CompareData)
	return nil
}
