package roce

import (
	"fmt"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// SerializeFrame serializes a whole RoCE frame, Ethernet header first, and
// returns it with every length, the IPv4 header checksum and the ICRC
// filled in (FrameSpec.Build, which takes the markings rather than layers,
// is built on it):
//
//   - lengths (IPv4/IPv6/UDP lengths, GRH PayLen) are computed;
//   - a *BTH followed by a *Payload with a nil Pad gets
//     PadCount(len(Data)) and that many zero pad bytes;
//   - the UDP checksum is 0, as Linux rxe and most RoCE NICs send it;
//   - the ICRC is computed last (FillICRC).
//
// The layers are typically Ethernet, [Dot1Q...], IPv4 or IPv6, UDP (with
// DstPort UDPPort), BTH, extension headers, Payload for RoCE v2, or
// Ethernet, [Dot1Q...], GRH, BTH, ..., Payload for RoCE v1.
func SerializeFrame(ls ...gopacket.SerializableLayer) ([]byte, error) {
	var bth *BTH
	var net gopacket.NetworkLayer
	var udp *layers.UDP
	for _, l := range ls {
		switch l := l.(type) {
		case *BTH:
			bth = l
		case *Payload:
			if bth != nil && l.Pad == nil {
				bth.PadCount = PadCount(len(l.Data))
			}
		case *layers.IPv4:
			net = l
		case *layers.IPv6:
			net = l
		case *layers.UDP:
			udp = l
		}
	}
	if udp != nil && net != nil {
		if err := udp.SetNetworkLayerForChecksum(net); err != nil {
			return nil, err
		}
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		return nil, fmt.Errorf("serialize RoCE frame: %w", err)
	}
	frame := buf.Bytes()
	if udp != nil {
		zeroUDPChecksum(frame)
	}
	if err := FillICRC(frame); err != nil {
		return nil, fmt.Errorf("serialize RoCE frame: %w", err)
	}
	return frame, nil
}

// zeroUDPChecksum clears the UDP checksum of a RoCE v2 frame.
func zeroUDPChecksum(frame []byte) {
	pkt, err := roceNetworkPacket(frame)
	if err != nil {
		return
	}
	switch pkt[0] >> 4 {
	case 4:
		ihl := int(pkt[0]&0x0F) * 4
		if len(pkt) >= ihl+8 {
			pkt[ihl+6], pkt[ihl+7] = 0, 0
		}
	case 6:
		if pkt[6] == 17 && len(pkt) >= 48 {
			pkt[46], pkt[47] = 0, 0
		}
	}
}
