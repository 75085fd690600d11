package capture

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/roce-probe/roce-probe/roce"
)

// Linux cooked captures (`tcpdump -i any`) have no Ethernet header: each
// frame starts with libpcap's "cooked" header, which keeps the protocol
// (the EtherType, or 0x8100 and the tag before it when libpcap puts back a
// VLAN tag the kernel took off) and the link-layer source address. The
// Reader turns such a frame into the Ethernet frame it stands for, in
// place, so that everything after it (roce.WalkFrame, the decoder, the
// summary) reads one kind of frame:
//
//	LINUX_SLL (113), 16 bytes:  packet type (2), ARPHRD type (2), address
//	                            length (2), address (8), protocol (2)
//	LINUX_SLL2 (276), 20 bytes: protocol (2), reserved (2), ifindex (4),
//	                            ARPHRD type (2), packet type (1), address
//	                            length (1), address (8)
//
// (https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html and
// LINKTYPE_LINUX_SLL2.html.) The Ethernet header made of it has the
// protocol as EtherType, the address as source MAC when it is 6 bytes long
// (zero otherwise) and a zero destination MAC (the cooked header has
// none): roce-probe prints neither MAC. A protocol value below 0x0600 (802.3
// or 802.2 frames without their header) is not an EtherType and the frame
// is not RoCE, as for tshark. A frame shorter than its cooked header keeps
// its link type and is not RoCE.

// Sizes of the cooked headers and of the Ethernet header made of them.
const (
	sllLen      = 16
	sll2Len     = 20
	ethernetLen = 14
)

// cookedLinkType reports whether lt is a Linux cooked capture's.
func cookedLinkType(lt layers.LinkType) bool {
	return lt == layers.LinkTypeLinuxSLL || lt == layers.LinkTypeLinuxSLL2
}

// uncook turns a Linux cooked frame (link type in ci, as
// roce.CaptureLinkType reads it) into an Ethernet frame, in place; other
// frames are returned as they are.
func uncook(data []byte, ci gopacket.CaptureInfo) ([]byte, gopacket.CaptureInfo) {
	var hdr int
	switch roce.CaptureLinkType(&ci) {
	case layers.LinkTypeLinuxSLL:
		if len(data) < sllLen {
			return data, ci
		}
		hdr = sllLen
		var mac [6]byte
		if data[4] == 0 && data[5] == 6 {
			copy(mac[:], data[6:12])
		}
		// protocol stays at 14..16
		copy(data[8:14], mac[:])
		clear(data[2:8])
	case layers.LinkTypeLinuxSLL2:
		if len(data) < sll2Len {
			return data, ci
		}
		hdr = sll2Len
		proto0, proto1 := data[0], data[1]
		if data[11] != 6 {
			clear(data[12:18])
		} // else the source MAC is at 12..18 already
		data[18], data[19] = proto0, proto1
		clear(data[6:12])
	default:
		return data, ci
	}
	d := hdr - ethernetLen
	ci.CaptureLength -= d
	ci.Length -= d
	ci.AncillaryData = nil // Ethernet
	return data[d:], ci
}

// linkTypeSource gives every frame of a pcap capture its file's link type,
// as pcapgo's NgReader gives the frames of a pcapng capture theirs.
type linkTypeSource struct {
	gopacket.ZeroCopyPacketDataSource
	lt []any
}

func (s linkTypeSource) ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := s.ZeroCopyPacketDataSource.ZeroCopyReadPacketData()
	ci.AncillaryData = s.lt
	return data, ci, err
}
