package roce

import (
	"encoding/binary"
	"fmt"
)

// Walk is where the headers of an Ethernet frame carrying RoCE lie: the
// VLAN tags, and the offsets of the network header (IPv4, IPv6 or the RoCE
// v1 GRH), the UDP header, the BTH and the end of the RoCE packet (the end
// of its ICRC). WalkFrame fills it without allocating; Decoder, the ICRC
// functions (VerifyFrameICRC, FillICRC, SerializeFrame) and the probe's
// frame parser all walk frames with it, so they accept the same frames.
//
// One decision per edge case (docs/decode.md has the same table). "Not
// RoCE" errors wrap ErrNotRoCE; "malformed" errors name the field, its
// value and what is allowed. A frame is RoCE once its EtherType is 0x8915
// or its UDP destination port is 4791; from there on a broken header makes
// it malformed, not "not RoCE". Linux sources are from Linux 6.1.192
// (Debian's linux-source-6.1, the kernel of the lab); tshark is 4.0.17
// (Debian 12), whose behaviour TestWalkTshark checks.
//
//	case                               decision                      why
//	frame < 14 bytes                   not RoCE                      no EtherType
//	TPID 0x8100, 0x88a8                VLAN tag                      eth_type_vlan (include/linux/if_vlan.h)
//	TPID 0x9100                        VLAN tag                      tshark: packet-vlan.c dissect_vlan is registered for
//	                                                                 the qinq_ethertype preference, default 0x9100; Linux
//	                                                                 (eth_type_vlan) does not know it, but older switches
//	                                                                 push it and decode shows what is on the wire
//	number of tags                     no limit; the first           __netif_receive_skb_core (net/core/dev.c) strips
//	                                   MaxVLANTags kept,             one tag per round with no limit (tshark stops at
//	                                   NumVLANs counts all           VLAN_MAX_NESTED_TAGS 20)
//	priority tag (VID 0)               a tag like any other          __netif_receive_skb_core accepts VID 0 (802.1p)
//	frame ends inside a tag            not RoCE                      skb_vlan_untag's pskb_may_pull fails; no EtherType
//	other EtherType (incl. lengths)    not RoCE
//	IPv4 < 20 bytes, version != 4,     not RoCE                      ip_rcv_core (net/ipv4/ip_input.c): inhdr_error
//	  IHL < 5
//	IPv4 protocol != 17                not RoCE
//	IPv4 fragment (MF or offset)       not RoCE                      no reassembly: RoCE senders set DF (rxe: prepare4,
//	                                                                 rxe_net.c); tshark too shows a lone fragment as IP
//	                                                                 data
//	IPv6 < 40 bytes or version != 6    not RoCE                      ip6_rcv_core (net/ipv6/ip6_input.c)
//	IPv6 Hop-by-Hop (first only),      walked to the UDP header;     ip6_rcv_core/ip6_protocol_deliver_rcu deliver UDP
//	  Routing, Destination Options       ICRC unchecked              after them; rxe_icrc_hdr (rxe_icrc.c) hashes a fixed
//	                                                                 40+8-byte header, so no ICRC rule covers them
//	IPv6 Fragment header               not RoCE, unless an atomic    ipv6_frag_rcv (net/ipv6/reassembly.c): offset 0
//	                                   fragment: then walked as      and M 0 "is not a fragmented frame" (RFC 6946);
//	                                   the other extension headers   tshark decodes it too
//	other IPv6 next header             not RoCE
//	frame ends inside the UDP header   not RoCE                      (a snap length under 42 bytes): the port is not known
//	UDP destination port != 4791       not RoCE                      rxe's tunnel socket listens on 4791
//	                                                                 (rxe_net_ipv4_init, rxe_net.c: ROCE_V2_UDP_DPORT);
//	                                                                 the source port is the flow's entropy, any value
//	IPv4 header checksum wrong         malformed                     ip_rcv_core: csum_error, dropped (tshark does not
//	                                                                 check by default; the ICRC masks this field)
//	IPv4 total length < IHL*4 + 8,     malformed                     ip_rcv_core: inhdr_error (tshark takes 0 as TSO; a
//	  including 0                                                    RoCE packet never goes through TSO)
//	IPv4 options (IHL > 5)             decoded; ICRC unchecked       ip_rcv_core accepts them; rxe_icrc_hdr copies a
//	                                                                 fixed sizeof(struct iphdr) + udphdr, so no ICRC
//	                                                                 rule covers them
//	IPv6 payload length 0              malformed                     a jumbogram (RFC 2675): ip6_rcv_core reads a zero
//	                                                                 length without Hop-by-Hop as an empty payload, and a
//	                                                                 RoCE packet is never that large
//	IPv6 payload < ext headers + 8     malformed                     __udp6_lib_rcv: no room for the UDP header
//	IP length beyond the frame         Truncated: decoded as far     a capture cut by its snap length (tshark decodes as
//	                                   as it goes, ICRC unchecked    far as it can); Linux drops it (PKT_TOO_SMALL)
//	bytes after the IP length          ignored (padding, FCS)        ip_rcv_core, ip6_rcv_core: pskb_trim_rcsum; tshark:
//	                                                                 eth.padding / eth.trailer
//	UDP length 0                       malformed                     __udp4_lib_rcv (net/ipv4/udp.c): short_packet;
//	                                                                 __udp6_lib_rcv takes 0 as a jumbo length, but
//	                                                                 rxe_udp_encap_recv sets paylen = uh->len - 8
//	UDP length 1..7                    malformed                     __udp4_lib_rcv, __udp6_lib_rcv: short_packet
//	UDP length > IP payload            malformed                     __udp4_lib_rcv, __udp6_lib_rcv: short_packet
//	UDP length < IP payload            the RoCE packet ends at the   rxe_udp_encap_recv: paylen = uh->len - 8; UDP trims
//	                                   UDP length                    the rest (pskb_trim_rcsum)
//	UDP checksum                       not checked                   RoCE senders send 0; the ICRC covers the same bytes
//	                                                                 (tshark does not check by default)
//	EtherType 0x8915 (RoCE v1)         GRH, then BTH                 tshark's InfiniBand dissector decodes it; rxe has
//	                                                                 no RoCE v1 (it opens only the UDP tunnel)
//	GRH < 40 bytes                     malformed
//	GRH next header != 0x1B            not RoCE                      not a BTH: tshark decodes the GRH and no BTH
//	GRH PayLen beyond / short of       Truncated / padding ignored   as the IP lengths
//	  the frame
//
// The BTH and what follows are the layers' business: a RoCE packet too
// short for its BTH, extension headers, pad or ICRC is malformed there.
type Walk struct {
	VLANs     [MaxVLANTags]VLANTag // outermost first
	NumVLANs  int                  // tags in the frame (may exceed MaxVLANTags; only the first are kept)
	Version   int                  // RoCE version: 1 (EtherType 0x8915) or 2 (UDP port 4791)
	IPVersion int                  // 4 or 6 for RoCE v2; 0 for v1

	// Offsets into the frame.
	Net       int // the IPv4 or IPv6 header, or the GRH
	UDP       int // the UDP header (RoCE v2); 0 for v1
	Transport int // the BTH, where the InfiniBand transport headers start
	End       int // just after the ICRC: the end of the RoCE packet, at most len(frame)

	// IPOptions is set when the IPv4 header has options or IPv6 extension
	// headers precede UDP: no ICRC rule covers them, so the ICRC is not
	// checked.
	IPOptions bool
	// Truncated is set when the frame ends before the packet its headers
	// announce; End is then len(frame) and the ICRC is not checked.
	Truncated bool
}

// Reasons a frame is not RoCE (preallocated: walking does not allocate).
var (
	errShortEthernet = fmt.Errorf("%w: frame shorter than an Ethernet header", ErrNotRoCE)
	errShortVLAN     = fmt.Errorf("%w: frame ends inside a VLAN tag", ErrNotRoCE)
	errEtherType     = fmt.Errorf("%w: EtherType is not IPv4, IPv6 or RoCE v1 (0x8915)", ErrNotRoCE)
	errBadIPv4       = fmt.Errorf("%w: truncated or invalid IPv4 header", ErrNotRoCE)
	errBadIPv6       = fmt.Errorf("%w: truncated or invalid IPv6 header", ErrNotRoCE)
	errNotUDP        = fmt.Errorf("%w: IP payload is not UDP", ErrNotRoCE)
	errFragment      = fmt.Errorf("%w: IP fragment (RoCE senders set DF; fragments are not reassembled)", ErrNotRoCE)
	errShortUDP      = fmt.Errorf("%w: frame ends before the UDP destination port", ErrNotRoCE)
	errNotPort       = fmt.Errorf("%w: UDP destination port is not 4791", ErrNotRoCE)
	errGRHNext       = fmt.Errorf("%w: GRH next header is not 0x1B (BTH)", ErrNotRoCE)
)

// TPIDs of the VLAN tags WalkFrame recognises.
const (
	TPIDDot1Q  = 0x8100 // IEEE 802.1Q C-tag
	TPIDDot1AD = 0x88A8 // IEEE 802.1ad S-tag
	TPIDQinQ   = 0x9100 // pre-standard QinQ S-tag (tshark's default qinq_ethertype)
)

// WalkFrame walks the Ethernet, VLAN, IP and UDP headers (or the GRH) of an
// Ethernet frame into w, deciding every edge case as the table on Walk
// says. It does not allocate on success or when the frame is not RoCE.
func WalkFrame(frame []byte, w *Walk) error {
	*w = Walk{}
	return w.walk(frame)
}

// walk is WalkFrame on a zeroed Walk.
func (w *Walk) walk(frame []byte) error {
	if len(frame) < 14 {
		return errShortEthernet
	}
	et := binary.BigEndian.Uint16(frame[12:14])
	off := 14
	for et == TPIDDot1Q || et == TPIDDot1AD || et == TPIDQinQ {
		if len(frame) < off+4 {
			return errShortVLAN
		}
		tci := binary.BigEndian.Uint16(frame[off:])
		if w.NumVLANs < MaxVLANTags {
			w.VLANs[w.NumVLANs] = VLANTag{TPID: et, PCP: uint8(tci >> 13), DEI: tci&0x1000 != 0, ID: tci & 0x0FFF}
		}
		w.NumVLANs++
		et = binary.BigEndian.Uint16(frame[off+2:])
		off += 4
	}
	w.Net = off
	switch et {
	case 0x0800:
		return w.ipv4(frame)
	case 0x86DD:
		return w.ipv6(frame)
	case uint16(EthernetTypeRoCEv1):
		return w.grh(frame)
	}
	return errEtherType
}

func (w *Walk) ipv4(frame []byte) error {
	ip := frame[w.Net:]
	if len(ip) < 20 || ip[0]>>4 != 4 || ip[0]&0x0F < 5 {
		return errBadIPv4
	}
	ihl := int(ip[0]&0x0F) * 4
	if ip[9] != 17 {
		return errNotUDP
	}
	if binary.BigEndian.Uint16(ip[6:8])&0x3FFF != 0 {
		return errFragment
	}
	if err := w.roceV2(ip, ihl, 4); err != nil {
		return err
	}
	w.IPOptions = ihl > 20
	if ipv4Sum(ip[:ihl]) != 0xFFFF {
		return ipv4ChecksumError(ip[:ihl])
	}
	tl := int(binary.BigEndian.Uint16(ip[2:4]))
	if tl < ihl+8 {
		return fmt.Errorf("IPv4: total length %d, want at least %d (the %d-byte header and the UDP header)", tl, ihl+8, ihl)
	}
	return w.udp(frame, w.Net+tl)
}

// ipv4ChecksumError names a wrong IPv4 header checksum and the right one.
func ipv4ChecksumError(h []byte) error {
	var z [60]byte
	copy(z[:], h)
	z[10], z[11] = 0, 0
	return fmt.Errorf("IPv4: header checksum %#04x is wrong, want %#04x (Linux drops the packet: ip_rcv_core)",
		binary.BigEndian.Uint16(h[10:12]), ^uint16(ipv4Sum(z[:len(h)])))
}

// roceV2 reads the UDP destination port of the IP packet ip, whose UDP
// header starts at hl: the frame is RoCE v2 when it is 4791.
func (w *Walk) roceV2(ip []byte, hl, ipVersion int) error {
	if len(ip) < hl+8 {
		return errShortUDP
	}
	if binary.BigEndian.Uint16(ip[hl+2:]) != uint16(UDPPort) {
		return errNotPort
	}
	w.Version, w.IPVersion, w.UDP = 2, ipVersion, w.Net+hl
	return nil
}

// ipv4Sum returns the folded one's-complement sum of an IPv4 header: 0xFFFF
// when its checksum is right.
func ipv4Sum(h []byte) uint32 {
	var s uint64
	if len(h) >= 20 { // the 20 bytes every header has, unrolled
		be := binary.BigEndian
		s = uint64(be.Uint32(h[0:4])) + uint64(be.Uint32(h[4:8])) + uint64(be.Uint32(h[8:12])) +
			uint64(be.Uint32(h[12:16])) + uint64(be.Uint32(h[16:20]))
		h = h[20:]
	}
	for len(h) >= 4 {
		s += uint64(binary.BigEndian.Uint32(h))
		h = h[4:]
	}
	for s>>16 != 0 {
		s = s&0xFFFF + s>>16
	}
	return uint32(s)
}

func (w *Walk) ipv6(frame []byte) error {
	ip := frame[w.Net:]
	if len(ip) < 40 || ip[0]>>4 != 6 {
		return errBadIPv6
	}
	nh, hl := ip[6], 40
	for nh != 17 {
		switch nh {
		case 0, 43, 60: // Hop-by-Hop (first only), Routing, Destination Options
			if nh == 0 && hl != 40 {
				return errNotUDP
			}
			if len(ip) < hl+2 {
				return errShortUDP
			}
			nh, hl = ip[hl], hl+(int(ip[hl+1])+1)*8
			w.IPOptions = true
		case 44: // Fragment: only an atomic fragment (offset 0, M 0) is whole
			if len(ip) < hl+8 {
				return errShortUDP
			}
			if binary.BigEndian.Uint16(ip[hl+2:])&0xFFF9 != 0 {
				return errFragment
			}
			nh, hl = ip[hl], hl+8
			w.IPOptions = true
		default:
			return errNotUDP
		}
	}
	if err := w.roceV2(ip, hl, 6); err != nil {
		return err
	}
	pl := int(binary.BigEndian.Uint16(ip[4:6]))
	if pl == 0 {
		return fmt.Errorf("IPv6: payload length 0 (a jumbogram), want 8..65535: RoCE packets are never that large")
	}
	if 40+pl < hl+8 {
		return fmt.Errorf("IPv6: payload length %d, want at least %d (the extension headers and the UDP header)", pl, hl-40+8)
	}
	return w.udp(frame, w.Net+40+pl)
}

// udp checks the UDP length against the IP packet, which ends at ipEnd
// (possibly beyond the frame). The frame holds the UDP header.
func (w *Walk) udp(frame []byte, ipEnd int) error {
	ul := int(binary.BigEndian.Uint16(frame[w.UDP+4:]))
	if ul < 8 || ul > ipEnd-w.UDP {
		return udpLengthError(ul, ipEnd-w.UDP)
	}
	w.Transport, w.End = w.UDP+8, w.UDP+ul
	if w.End > len(frame) {
		w.Truncated, w.End = true, len(frame)
	}
	return nil
}

// udpLengthError explains a UDP length that is not 8..room.
func udpLengthError(ul, room int) error {
	switch {
	case ul == 0:
		return fmt.Errorf("UDP: length 0, want 8..%d (a jumbo length: RoCE packets are never that large)", room)
	case ul < 8:
		return fmt.Errorf("UDP: length %d, want 8..%d", ul, room)
	}
	return fmt.Errorf("UDP: length %d exceeds the %d bytes the IP header leaves for it", ul, room)
}

func (w *Walk) grh(frame []byte) error {
	g := frame[w.Net:]
	if len(g) < GRHLen {
		return fmt.Errorf("GRH: %d bytes, want at least %d", len(g), GRHLen)
	}
	if g[6] != NextHeaderBTH {
		return errGRHNext
	}
	w.Version = 1
	w.Transport = w.Net + GRHLen
	w.End = w.Transport + int(binary.BigEndian.Uint16(g[4:6]))
	if w.End > len(frame) {
		w.Truncated, w.End = true, len(frame)
	}
	return nil
}

// UncheckedReason says why the ICRC of a walked packet is not checked:
// "truncated", "IPv4 options", "IPv6 extension headers", or "" when it is.
func (w *Walk) UncheckedReason() string {
	switch {
	case w.Truncated:
		return "truncated"
	case w.IPOptions && w.IPVersion == 4:
		return "IPv4 options"
	case w.IPOptions:
		return "IPv6 extension headers"
	}
	return ""
}
