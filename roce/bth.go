package roce

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// BTHLen is the length of the Base Transport Header.
const BTHLen = 12

// BTH is the InfiniBand Base Transport Header, the first header of every
// RoCE packet after the UDP header (v2) or the GRH (v1).
//
//	byte 0     OpCode
//	byte 1     SE (0x80) | MigReq (0x40) | PadCnt (0x30) | TVer (0x0F)
//	bytes 2-3  P_Key
//	byte 4     FECN (0x80) | BECN (0x40) | reserved (0x3F)
//	bytes 5-7  DestQP
//	byte 8     AckReq (0x80) | reserved (0x7F)
//	bytes 9-11 PSN
type BTH struct {
	layers.BaseLayer
	Opcode         Opcode
	SolicitedEvent bool  // SE
	MigReq         bool  // M: migration state
	PadCount       uint8 // PadCnt: pad bytes before the ICRC, 0-3
	TVer           uint8 // transport header version, 0
	PKey           uint16
	FECN           bool   // forward explicit congestion notification
	BECN           bool   // backward explicit congestion notification
	Reserved6      uint8  // the 6 reserved bits of byte 4 (0x3F)
	DestQP         uint32 // 24 bits
	AckReq         bool   // A: acknowledge request
	Reserved7      uint8  // the 7 reserved bits of byte 8 (0x7F)
	PSN            uint32 // packet sequence number, 24 bits
}

// LayerType returns LayerTypeBTH.
func (b *BTH) LayerType() gopacket.LayerType { return LayerTypeBTH }

// CanDecode returns LayerTypeBTH.
func (b *BTH) CanDecode() gopacket.LayerClass { return LayerTypeBTH }

// NextLayerType returns the first extension header the opcode calls for, or
// LayerTypePayload.
func (b *BTH) NextLayerType() gopacket.LayerType {
	if h := opcodeTable[b.Opcode].Headers; len(h) > 0 {
		return h[0]
	}
	return LayerTypePayload
}

// DecodeFromBytes decodes the 12 BTH bytes; the rest of data is the payload.
func (b *BTH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < BTHLen {
		df.SetTruncated()
		return fmt.Errorf("BTH: %d bytes, want at least %d", len(data), BTHLen)
	}
	b.Opcode = Opcode(data[0])
	b.SolicitedEvent = data[1]&0x80 != 0
	b.MigReq = data[1]&0x40 != 0
	b.PadCount = data[1] >> 4 & 0x3
	b.TVer = data[1] & 0x0F
	b.PKey = binary.BigEndian.Uint16(data[2:4])
	b.FECN = data[4]&0x80 != 0
	b.BECN = data[4]&0x40 != 0
	b.Reserved6 = data[4] & 0x3F
	b.DestQP = get24(data[5:8])
	b.AckReq = data[8]&0x80 != 0
	b.Reserved7 = data[8] & 0x7F
	b.PSN = get24(data[9:12])
	b.Contents = data[:BTHLen]
	b.Payload = data[BTHLen:]
	return nil
}

// SerializeTo writes the 12 BTH bytes. Fields out of range are an error.
func (b *BTH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	switch {
	case b.PadCount > 3:
		return fmt.Errorf("BTH: PadCount %d out of range: want 0..3", b.PadCount)
	case b.TVer > 0x0F:
		return fmt.Errorf("BTH: TVer %d out of range: want 0..15", b.TVer)
	case b.Reserved6 > 0x3F:
		return fmt.Errorf("BTH: Reserved6 %#x out of range: want 0..0x3f", b.Reserved6)
	case b.Reserved7 > 0x7F:
		return fmt.Errorf("BTH: Reserved7 %#x out of range: want 0..0x7f", b.Reserved7)
	case b.DestQP > 0xFFFFFF:
		return fmt.Errorf("BTH: DestQP %#x out of range: want 0..0xffffff", b.DestQP)
	case b.PSN > 0xFFFFFF:
		return fmt.Errorf("BTH: PSN %#x out of range: want 0..0xffffff", b.PSN)
	}
	d, err := buf.PrependBytes(BTHLen)
	if err != nil {
		return err
	}
	d[0] = byte(b.Opcode)
	d[1] = bit(b.SolicitedEvent, 0x80) | bit(b.MigReq, 0x40) | b.PadCount<<4 | b.TVer
	binary.BigEndian.PutUint16(d[2:4], b.PKey)
	d[4] = bit(b.FECN, 0x80) | bit(b.BECN, 0x40) | b.Reserved6
	put24(d[5:8], b.DestQP)
	d[8] = bit(b.AckReq, 0x80) | b.Reserved7
	put24(d[9:12], b.PSN)
	return nil
}

// PadCount returns the BTH PadCnt for a payload of n bytes: the number of
// pad bytes that bring it to a multiple of 4.
func PadCount(n int) uint8 { return uint8(-n & 3) }

func bit(v bool, m byte) byte {
	if v {
		return m
	}
	return 0
}

func put24(d []byte, v uint32) {
	d[0], d[1], d[2] = byte(v>>16), byte(v>>8), byte(v)
}

func get24(d []byte) uint32 {
	return uint32(d[0])<<16 | uint32(d[1])<<8 | uint32(d[2])
}
