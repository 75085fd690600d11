package roce

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/gopacket/gopacket"
)

// ICRCStatus says whether a packet's ICRC was checked and what was found.
type ICRCStatus uint8

// ICRC verification results.
const (
	// ICRCUnchecked: the ICRC could not be checked (no IP header or GRH
	// in front of the BTH, or the frame was cut short by the capture).
	ICRCUnchecked ICRCStatus = iota
	ICRCValid
	ICRCInvalid
)

// String returns "unchecked", "valid" or "invalid".
func (s ICRCStatus) String() string {
	switch s {
	case ICRCValid:
		return "valid"
	case ICRCInvalid:
		return "invalid"
	}
	return "unchecked"
}

// Payload is the end of a RoCE packet after the BTH and its extension
// headers: the data, 0-3 pad bytes (BTH PadCnt) and the 4-byte ICRC. It
// is the last layer of every decoded RoCE packet, also for packets without
// data (ACKs, READ requests, CNPs), where Data is empty.
//
// When gopacket.NewPacket decodes a whole frame, ICRCStatus and
// ComputedICRC are filled in; the layer also implements
// gopacket.LayerWithChecksum, so Packet.VerifyChecksums reports a bad ICRC.
type Payload struct {
	Data []byte  // application data, without pad
	Pad  []byte  // pad bytes (BTH PadCnt of them)
	ICRC [4]byte // the ICRC as it is on the wire (little-endian CRC-32)

	ICRCStatus   ICRCStatus // set by gopacket.NewPacket and Decoder
	ComputedICRC uint32     // the CRC-32 the ICRC should hold, when checked

	contents []byte
	bth      *BTH
}

// ICRCValue returns the ICRC as a number: the 4 wire bytes read
// little-endian, which is how the CRC-32 is stored.
func (p *Payload) ICRCValue() uint32 { return binary.LittleEndian.Uint32(p.ICRC[:]) }

// ICRCHex returns the ICRC wire bytes in hex, in wire order.
func (p *Payload) ICRCHex() string { return hex.EncodeToString(p.ICRC[:]) }

// LayerType returns LayerTypePayload.
func (p *Payload) LayerType() gopacket.LayerType { return LayerTypePayload }

// LayerContents returns data, pad and ICRC.
func (p *Payload) LayerContents() []byte { return p.contents }

// LayerPayload returns nil: nothing follows the ICRC.
func (p *Payload) LayerPayload() []byte { return nil }

// Payload returns the application data (gopacket.ApplicationLayer).
func (p *Payload) Payload() []byte { return p.Data }

// CanDecode returns LayerTypePayload.
func (p *Payload) CanDecode() gopacket.LayerClass { return LayerTypePayload }

// NextLayerType returns gopacket.LayerTypeZero.
func (p *Payload) NextLayerType() gopacket.LayerType { return gopacket.LayerTypeZero }

// DecodeFromBytes splits data into data, pad and ICRC. The pad count comes
// from the linked BTH (see NewDecodingLayers); without one it is 0.
func (p *Payload) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	pad := 0
	if p.bth != nil {
		pad = int(p.bth.PadCount)
	}
	if len(data) < ICRCLen+pad {
		df.SetTruncated()
		return fmt.Errorf("RoCE payload: %d bytes, want at least %d (%d pad bytes and the 4-byte ICRC)", len(data), ICRCLen+pad, pad)
	}
	n := len(data) - ICRCLen
	p.contents = data
	p.Data = data[:n-pad]
	p.Pad = data[n-pad : n]
	copy(p.ICRC[:], data[n:])
	p.ICRCStatus = ICRCUnchecked
	p.ComputedICRC = 0
	return nil
}

// SerializeTo writes data, pad and ICRC. With opts.FixLengths and a nil
// Pad, PadCount(len(Data)) zero bytes are written as pad (set the BTH's
// PadCount to match). The ICRC is written as given; FillICRC computes it
// once the whole frame is serialized.
func (p *Payload) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	pad := p.Pad
	if opts.FixLengths && pad == nil {
		pad = make([]byte, PadCount(len(p.Data)))
	}
	if len(pad) > 3 {
		return fmt.Errorf("RoCE payload: %d pad bytes, want 0..3", len(pad))
	}
	b, err := buf.PrependBytes(len(p.Data) + len(pad) + ICRCLen)
	if err != nil {
		return err
	}
	n := copy(b, p.Data)
	n += copy(b[n:], pad)
	copy(b[n:], p.ICRC[:])
	return nil
}

// VerifyChecksum implements gopacket.LayerWithChecksum. It reports an error
// when the ICRC could not be checked.
func (p *Payload) VerifyChecksum() (error, gopacket.ChecksumVerificationResult) {
	res := gopacket.ChecksumVerificationResult{Correct: p.ComputedICRC, Actual: p.ICRCValue()}
	if p.ICRCStatus == ICRCUnchecked {
		return fmt.Errorf("RoCE ICRC not checked: the packet has no IP header or GRH in front of the BTH, or it is truncated"), res
	}
	res.Valid = p.ICRCStatus == ICRCValid
	return nil, res
}
