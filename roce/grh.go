package roce

import (
	"encoding/binary"
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// GRHLen is the length of the Global Route Header.
const GRHLen = 40

// GRH is the InfiniBand Global Route Header, the network header of RoCE v1
// (EtherType 0x8915). It has the layout of an IPv6 header with GIDs as
// addresses and next header 0x1B for a BTH:
//
//	IPVer (4) | TClass (8) | FlowLabel (20) ; PayLen (16) ; NxtHdr (8) ;
//	HopLmt (8) ; SGID (128) ; DGID (128)
//
// PayLen counts the bytes after the GRH up to and including the ICRC.
type GRH struct {
	layers.BaseLayer
	IPVer     uint8 // 6
	TClass    uint8
	FlowLabel uint32 // 20 bits
	PayLen    uint16
	NxtHdr    uint8 // 0x1B: BTH
	HopLmt    uint8
	SGID      GID
	DGID      GID
}

// LayerType returns LayerTypeGRH.
func (g *GRH) LayerType() gopacket.LayerType { return LayerTypeGRH }

// CanDecode returns LayerTypeGRH.
func (g *GRH) CanDecode() gopacket.LayerClass { return LayerTypeGRH }

// NextLayerType returns LayerTypeBTH for next header 0x1B, otherwise
// gopacket.LayerTypePayload.
func (g *GRH) NextLayerType() gopacket.LayerType {
	if g.NxtHdr == NextHeaderBTH {
		return LayerTypeBTH
	}
	return gopacket.LayerTypePayload
}

// NetworkFlow returns the SGID → DGID flow (endpoint type EndpointGID).
func (g *GRH) NetworkFlow() gopacket.Flow {
	return gopacket.NewFlow(EndpointGID, g.SGID[:], g.DGID[:])
}

// DecodeFromBytes decodes the 40 GRH bytes. The payload is cut to PayLen
// (Ethernet padding is dropped); a shorter frame is reported as truncated.
func (g *GRH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if len(data) < GRHLen {
		df.SetTruncated()
		return fmt.Errorf("GRH: %d bytes, want at least %d", len(data), GRHLen)
	}
	w := binary.BigEndian.Uint32(data[0:4])
	g.IPVer = uint8(w >> 28)
	g.TClass = uint8(w >> 20)
	g.FlowLabel = w & 0xFFFFF
	g.PayLen = binary.BigEndian.Uint16(data[4:6])
	g.NxtHdr = data[6]
	g.HopLmt = data[7]
	copy(g.SGID[:], data[8:24])
	copy(g.DGID[:], data[24:40])
	end := GRHLen + int(g.PayLen)
	if end > len(data) {
		df.SetTruncated()
		end = len(data)
	}
	g.Contents = data[:GRHLen]
	g.Payload = data[GRHLen:end]
	return nil
}

// SerializeTo writes the 40 GRH bytes. With opts.FixLengths, PayLen is set
// to the length of everything serialized after the GRH, and IPVer 0 becomes 6.
func (g *GRH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if opts.FixLengths {
		n := len(buf.Bytes())
		if n > 0xFFFF {
			return fmt.Errorf("GRH: payload %d bytes, want at most 65535", n)
		}
		g.PayLen = uint16(n)
		if g.IPVer == 0 {
			g.IPVer = 6
		}
	}
	switch {
	case g.IPVer > 15:
		return fmt.Errorf("GRH: IPVer %d out of range: want 0..15", g.IPVer)
	case g.FlowLabel > 0xFFFFF:
		return fmt.Errorf("GRH: FlowLabel %#x out of range: want 0..0xfffff", g.FlowLabel)
	}
	d, err := buf.PrependBytes(GRHLen)
	if err != nil {
		return err
	}
	binary.BigEndian.PutUint32(d[0:4], uint32(g.IPVer)<<28|uint32(g.TClass)<<20|g.FlowLabel)
	binary.BigEndian.PutUint16(d[4:6], g.PayLen)
	d[6] = g.NxtHdr
	d[7] = g.HopLmt
	copy(d[8:24], g.SGID[:])
	copy(d[24:40], g.DGID[:])
	return nil
}
