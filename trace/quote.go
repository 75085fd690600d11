package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
)

// ICMP message types a trace reads (RFC 792, RFC 4443).
const (
	icmp4DestUnreachable = 3
	icmp4TimeExceeded    = 11
	icmp6DestUnreachable = 1
	icmp6TimeExceeded    = 3

	icmp4PortUnreachable = 3 // code of Destination Unreachable
	icmp6PortUnreachable = 4
)

// MessageKind is what an ICMP error says of a probe.
type MessageKind string

// Message kinds.
const (
	// TimeExceeded: the probe's TTL / hop limit ran out at the router
	// that sent the message (ICMP type 11, ICMPv6 type 3).
	TimeExceeded MessageKind = "time-exceeded"
	// PortUnreachable: the probe reached a host with no UDP socket on
	// port 4791 (ICMP type 3 code 3, ICMPv6 type 1 code 4): normally the
	// destination itself, when no RDMA stack owns the port.
	PortUnreachable MessageKind = "port-unreachable"
	// Unreachable: any other Destination Unreachable (no route,
	// administratively prohibited, ...): the probe went no further.
	Unreachable MessageKind = "unreachable"
)

// ErrNotAQuote is wrapped by ParseICMP's error for an ICMP message that is
// not an error quoting a packet (an echo, a redirect, ...) or is shorter
// than its own header.
var ErrNotAQuote = errors.New("trace: not an ICMP Time Exceeded or Destination Unreachable message")

// Quote is what an ICMP Time Exceeded or Destination Unreachable message
// shows of the packet it quotes (RFC 792: the IP header and at least 8
// bytes beyond; RFC 1812 4.3.2.3 and Linux: as much as fits in 576 bytes;
// ICMPv6, RFC 4443 2.4: as much as fits in 1280). Each field is known only
// when the quote holds its bytes: the Has fields say which are.
type Quote struct {
	Kind MessageKind
	Type uint8 // ICMP type
	Code uint8 // ICMP code
	IPv6 bool  // an ICMPv6 message quoting an IPv6 packet
	// Len is how many bytes of the packet are quoted (RFC 4884's length
	// when the message carries extensions).
	Len int

	// HasTOS: the quote holds the IPv4 TOS / IPv6 traffic class byte.
	HasTOS    bool
	DSCP, ECN uint8
	// HasTTL: the quote holds the TTL / hop limit as the packet arrived.
	HasTTL bool
	TTL    uint8
	// HasLen: the quote holds the IPv4 total length / IPv6 payload length.
	HasLen bool
	IPLen  uint16
	// HasAddrs: the quote holds both addresses (the whole fixed header).
	HasAddrs bool
	Src, Dst netip.Addr
	Proto    uint8 // IPv4 protocol / IPv6 next header (with HasAddrs)

	// HasPorts: the quote holds the UDP ports; HasUDPLen the UDP length.
	HasPorts      bool
	Sport, Dport  uint16
	HasUDPLen     bool
	UDPLen        uint16
	HasBTH        bool // the quote holds the BTH up to its PSN
	DestQP, PSN   uint32
	HasProbeID    bool // the quote holds the probe payload's signature, session and sequence number
	Session       uint64
	Seq           uint32
	headerMissing string
}

// Missing says which header fields the quote is too short to show ("" when
// it shows DSCP, ECN and TTL), for a hop to say why they are unknown.
func (q Quote) Missing() string { return q.headerMissing }

// Offsets in a quoted probe (include/rdma/ib_pack.h; docs/probe.md).
const (
	udpLen      = 8
	bthDestQPAt = 5 // the 24-bit destination QP, after a reserved byte
	bthPSNAt    = 9
	dethLen     = 8
	// payload fields a quote can show: signature, session, sequence
	payloadSessionAt = 12
	payloadSeqAt     = 20
)

// ParseICMP decodes an ICMP (ipv6 false) or ICMPv6 message, starting at
// its type byte, as a raw socket hands it over (without the IP header of
// the message itself), and returns what it quotes. Only Time Exceeded and
// Destination Unreachable are accepted (others wrap ErrNotAQuote). It
// never panics; a quote too short to hold a field leaves it unknown.
func ParseICMP(msg []byte, ipv6 bool) (Quote, error) {
	var q Quote
	if len(msg) < 8 {
		return q, fmt.Errorf("%w: %d bytes, want at least 8", ErrNotAQuote, len(msg))
	}
	q.Type, q.Code, q.IPv6 = msg[0], msg[1], ipv6
	// RFC 4884: a message with extensions gives the quoted packet's
	// length, in 32-bit words (ICMP, byte 5) or 64-bit words (ICMPv6,
	// byte 4); 0 means the quote runs to the end.
	var words, unit int
	switch {
	case !ipv6 && q.Type == icmp4TimeExceeded:
		q.Kind, words, unit = TimeExceeded, int(msg[5]), 4
	case !ipv6 && q.Type == icmp4DestUnreachable:
		q.Kind, words, unit = Unreachable, int(msg[5]), 4
		if q.Code == icmp4PortUnreachable {
			q.Kind = PortUnreachable
		}
	case ipv6 && q.Type == icmp6TimeExceeded:
		q.Kind, words, unit = TimeExceeded, int(msg[4]), 8
	case ipv6 && q.Type == icmp6DestUnreachable:
		q.Kind, words, unit = Unreachable, int(msg[4]), 8
		if q.Code == icmp6PortUnreachable {
			q.Kind = PortUnreachable
		}
	default:
		return q, fmt.Errorf("%w: ICMP%s type %d code %d", ErrNotAQuote, map[bool]string{true: "v6"}[ipv6], q.Type, q.Code)
	}
	b := msg[8:]
	if words > 0 && words*unit < len(b) {
		b = b[:words*unit]
	}
	q.Len = len(b)
	var l4 []byte
	if ipv6 {
		l4 = q.ipv6(b)
	} else {
		l4 = q.ipv4(b)
	}
	switch {
	case !q.HasTOS:
		q.headerMissing = "the quote is too short to show DSCP, ECN and TTL"
	case !q.HasTTL:
		q.headerMissing = "the quote is too short to show the TTL"
	}
	if l4 == nil || (q.HasAddrs && q.Proto != 17) {
		return q, nil
	}
	if len(l4) >= 4 {
		q.HasPorts = true
		q.Sport, q.Dport = binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:])
	}
	if len(l4) >= 6 {
		q.HasUDPLen, q.UDPLen = true, binary.BigEndian.Uint16(l4[4:])
	}
	if q.Dport != uint16(roce.UDPPort) || len(l4) < udpLen+bthPSNAt+3 {
		return q, nil
	}
	bth := l4[udpLen:]
	q.HasBTH = true
	q.DestQP = uint32(bth[bthDestQPAt])<<16 | uint32(bth[bthDestQPAt+1])<<8 | uint32(bth[bthDestQPAt+2])
	q.PSN = uint32(bth[bthPSNAt])<<16 | uint32(bth[bthPSNAt+1])<<8 | uint32(bth[bthPSNAt+2])
	pl := bth[roce.BTHLen:]
	if len(pl) < dethLen+payloadSeqAt+4 {
		return q, nil
	}
	pl = pl[dethLen:]
	if [8]byte(pl[:8]) != probe.Signature {
		return q, nil
	}
	q.HasProbeID = true
	q.Session = binary.BigEndian.Uint64(pl[payloadSessionAt:])
	q.Seq = binary.BigEndian.Uint32(pl[payloadSeqAt:])
	return q, nil
}

// ipv4 reads a quoted IPv4 header and returns what follows it (nil when the
// header is not whole or is not IPv4).
func (q *Quote) ipv4(b []byte) []byte {
	if len(b) < 1 || b[0]>>4 != 4 {
		return nil
	}
	ihl := int(b[0]&0x0f) * 4
	if len(b) >= 2 {
		q.HasTOS, q.DSCP, q.ECN = true, b[1]>>2, b[1]&3
	}
	if len(b) >= 4 {
		q.HasLen, q.IPLen = true, binary.BigEndian.Uint16(b[2:])
	}
	if len(b) >= 9 {
		q.HasTTL, q.TTL = true, b[8]
	}
	if ihl < 20 || len(b) < 20 {
		return nil
	}
	q.HasAddrs, q.Proto = true, b[9]
	q.Src, q.Dst = netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
	if len(b) < ihl {
		return nil
	}
	return b[ihl:]
}

// ipv6 reads a quoted IPv6 header and returns what follows it (nil when the
// header is not whole or is not IPv6). A probe has no extension headers:
// a next header other than UDP ends the reading.
func (q *Quote) ipv6(b []byte) []byte {
	if len(b) < 1 || b[0]>>4 != 6 {
		return nil
	}
	if len(b) >= 2 {
		tc := b[0]<<4 | b[1]>>4
		q.HasTOS, q.DSCP, q.ECN = true, tc>>2, tc&3
	}
	if len(b) >= 6 {
		q.HasLen, q.IPLen = true, binary.BigEndian.Uint16(b[4:])
	}
	if len(b) >= 8 {
		q.HasTTL, q.TTL = true, b[7]
	}
	if len(b) < 40 {
		return nil
	}
	q.HasAddrs, q.Proto = true, b[6]
	q.Src, q.Dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
	return b[40:]
}

// ProbeID is what identifies one sent probe in a quote: its addresses,
// UDP source port, lengths (a trace pads each TTL's probe to its own
// length, so a quote that stops after the UDP header, RFC 792's minimum,
// still tells the TTL apart), BTH PSN and payload session and sequence
// number.
type ProbeID struct {
	Src, Dst netip.Addr
	Sport    uint16
	IPLen    uint16 // IPv4 total length / IPv6 payload length
	UDPLen   uint16
	DestQP   uint32
	PSN      uint32
	Session  uint64
	Seq      uint32
}

// Matches reports whether q can quote the probe id: every field q shows
// equals id's, and q shows at least the probe's addresses or its length
// (a quote that shows neither tells nothing apart).
func (q Quote) Matches(id ProbeID) bool {
	if !q.HasAddrs && !q.HasLen {
		return false
	}
	switch {
	case q.HasLen && q.IPLen != id.IPLen,
		q.HasAddrs && (q.Proto != 17 || q.Src != id.Src.Unmap() || q.Dst != id.Dst.Unmap()),
		q.HasPorts && (q.Sport != id.Sport || q.Dport != uint16(roce.UDPPort)),
		q.HasUDPLen && q.UDPLen != id.UDPLen,
		q.HasBTH && (q.PSN != id.PSN&0xffffff || q.DestQP != id.DestQP&0xffffff),
		q.HasProbeID && (q.Session != id.Session || q.Seq != id.Seq):
		return false
	}
	return true
}

// Match returns the index of the one probe of sent that q quotes, and
// true; false when none or more than one could be the quoted probe (a
// quote too short to tell them apart is matched to none).
func Match(q Quote, sent []ProbeID) (int, bool) {
	found := -1
	for i, id := range sent {
		if !q.Matches(id) {
			continue
		}
		if found >= 0 {
			return -1, false
		}
		found = i
	}
	return found, found >= 0
}
