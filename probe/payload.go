package probe

import (
	"encoding/binary"
	"fmt"

	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/topology"
)

// Signature opens every probe and reply payload. A frame whose payload does
// not start with it is not a probe, whatever else it carries.
var Signature = [8]byte{'r', 'o', 'c', 'e', 'p', 'r', 'o', 'b'}

// Version is the payload format version this package writes and accepts.
const Version = 1

// Kind tells a probe from a reply.
type Kind uint8

// Payload kinds.
const (
	KindProbe Kind = 1 // sent by `roce-probe send`
	KindReply Kind = 2 // sent by `roce-probe listen` to the probe's sender
)

// String returns "probe" or "reply".
func (k Kind) String() string {
	switch k {
	case KindProbe:
		return "probe"
	case KindReply:
		return "reply"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// PayloadLen is the length of a payload without padding. Every field has a
// fixed offset:
//
//	 0  8  signature "roceprob"
//	 8  1  version (1)
//	 9  1  kind (1 probe, 2 reply)
//	10  2  payload length, padding included (≥ 56, a multiple of 4)
//	12  8  session ID (random per sender run)
//	20  4  sequence number
//	24  8  sender's timestamp, Unix nanoseconds
//	32 12  markings sent (see Markings)
//	44 12  markings received: zero in a probe, filled in by the listener
//	56  …  padding, zero bytes (a reply to a probe of TopologyPayloadLen
//	       bytes may carry the listener's ToR there: TopologyPayloadLen)
const PayloadLen = 56

// TopologyPayloadLen is the length of a probe that asks the listener for
// its ToR, the switch its netdev is plugged into. A listener that knows
// its ToR answers a probe of exactly this length (padding zero, as every
// probe's) with a reply of the same length whose padding carries it:
//
//	56  1  extension type: 1, the ToR
//	57  1  length N of the ToR, 1..64
//	58  N  the ToR (topology.ValidSwitch: letters, digits, '_', '.', ':', '-')
//	58+N … zero bytes
//
// Every other probe gets a plain reply of PayloadLen bytes, as does every
// probe sent to a listener that does not know its ToR or predates the
// extension: the asking sender then learns nothing, and loses nothing.
// A sender that predates it and pads its probes to exactly this length
// would take such a reply for a malformed one; roce-probe's own senders
// (send, the agent before this extension) never padded.
const TopologyPayloadLen = 124

// extToR is the extension type of a reply's ToR.
const extToR = 1

// Offsets of the payload's kind and of the fields that differ from probe to
// probe.
const (
	payloadKindOff = 9
	payloadSeqOff  = 20
	payloadSentOff = 24
)

// MaxPayloadLen is the largest payload accepted, padding included: what
// fits a 9000-byte jumbo frame's IPv6 RoCE v2 packet with room to spare.
const MaxPayloadLen = 8192

// markingsLen is the encoded size of Markings.
const markingsLen = 12

// Markings flag bits, byte 0 of an encoded Markings.
const (
	flagTagged = 0x01 // the frame carried a VLAN tag
	flagIPv6   = 0x02 // the frame was IPv6 (TTL means hop limit)
	flagValid  = 0x80 // the block is filled in (a zero block means "none")
	knownFlags = flagTagged | flagIPv6 | flagValid
)

// Markings are the header fields a fabric may change on a RoCE v2 frame.
//
// Encoded (12 bytes): flags (0x80 set, 0x01 tagged, 0x02 IPv6), PCP, VLAN
// ID (2 bytes), DSCP, ECN, TTL, one zero byte, UDP source port (2 bytes),
// two zero bytes.
type Markings struct {
	Tagged bool   `json:"-"`     // the frame carried an 802.1Q/802.1ad tag
	VLAN   uint16 `json:"vlan"`  // VLAN ID of the (outermost) tag, 0..4095; meaningful only when Tagged
	PCP    uint8  `json:"pcp"`   // priority code point of that tag, 0..7
	DSCP   uint8  `json:"dscp"`  // IP DSCP, 0..63
	ECN    uint8  `json:"ecn"`   // IP ECN field, 0..3 (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE)
	TTL    uint8  `json:"ttl"`   // IPv4 TTL or IPv6 hop limit
	IPv6   bool   `json:"-"`     // the frame was IPv6
	Sport  uint16 `json:"sport"` // UDP source port
}

// ToS returns the IPv4 TOS / IPv6 traffic-class byte: DSCP << 2 | ECN.
func (m Markings) ToS() uint8 { return m.DSCP<<2 | m.ECN&3 }

// ECN codepoints (RFC 3168) as Markings.ECN holds them: qos.ECN's as the
// uint8 of Markings' field (qos.ECN(m.ECN).String() names one).
const (
	ECNNotECT = uint8(qos.NotECT)
	ECNECT1   = uint8(qos.ECT1)
	ECNECT0   = uint8(qos.ECT0)
	ECNCE     = uint8(qos.CE)
)

// Validate reports the first field out of range.
func (m Markings) Validate() error {
	switch {
	case m.VLAN > 4095:
		return fmt.Errorf("probe: VLAN ID %d is out of range: want 0..4095", m.VLAN)
	case m.PCP > 7:
		return fmt.Errorf("probe: PCP %d is out of range: want 0..7", m.PCP)
	case m.DSCP > 63:
		return fmt.Errorf("probe: DSCP %d is out of range: want 0..63", m.DSCP)
	case m.ECN > 3:
		return fmt.Errorf("probe: ECN %d is out of range: want 0..3", m.ECN)
	case !m.Tagged && (m.VLAN != 0 || m.PCP != 0):
		return fmt.Errorf("probe: untagged markings carry VLAN %d PCP %d: want 0 and 0", m.VLAN, m.PCP)
	}
	return nil
}

func (m Markings) put(b []byte) {
	f := byte(flagValid)
	if m.Tagged {
		f |= flagTagged
	}
	if m.IPv6 {
		f |= flagIPv6
	}
	b[0] = f
	b[1] = m.PCP
	binary.BigEndian.PutUint16(b[2:], m.VLAN)
	b[4] = m.DSCP
	b[5] = m.ECN
	b[6] = m.TTL
	b[7] = 0
	binary.BigEndian.PutUint16(b[8:], m.Sport)
	b[10], b[11] = 0, 0
}

// parseMarkings decodes a 12-byte block. ok is false for an all-zero block.
func parseMarkings(b []byte, field string) (m Markings, ok bool, err error) {
	zero := true
	for _, c := range b[:markingsLen] {
		if c != 0 {
			zero = false
			break
		}
	}
	if zero {
		return Markings{}, false, nil
	}
	f := b[0]
	if f&flagValid == 0 || f&^knownFlags != 0 {
		return Markings{}, false, fmt.Errorf("probe: %s flags 0x%02x are not valid: want 0x80 with 0x01 (tagged) and 0x02 (IPv6)", field, f)
	}
	if b[7] != 0 || b[10] != 0 || b[11] != 0 {
		return Markings{}, false, fmt.Errorf("probe: %s reserved bytes are not zero", field)
	}
	m = Markings{
		Tagged: f&flagTagged != 0,
		IPv6:   f&flagIPv6 != 0,
		PCP:    b[1],
		VLAN:   binary.BigEndian.Uint16(b[2:]),
		DSCP:   b[4],
		ECN:    b[5],
		TTL:    b[6],
		Sport:  binary.BigEndian.Uint16(b[8:]),
	}
	if err := m.Validate(); err != nil {
		return Markings{}, false, fmt.Errorf("%s: %w", field, err)
	}
	return m, true, nil
}

// Payload is the decoded payload of a probe or a reply.
type Payload struct {
	Kind     Kind
	Len      int    // payload length, padding included: PayloadLen..MaxPayloadLen, a multiple of 4
	Session  uint64 // random per sender run; replies echo it
	Seq      uint32 // sequence number; replies echo it
	SentNano int64  // sender's timestamp (Unix nanoseconds); replies echo it
	Sent     Markings
	// Received holds what arrived at the listener; only in a reply.
	Received Markings
	// ToR is the listener's ToR, in a reply of TopologyPayloadLen bytes
	// to a probe that asked for it; "" when none.
	ToR string
}

// Marshal encodes p. Len 0 means PayloadLen. A probe must not carry
// Received markings; a reply must.
func (p Payload) Marshal() ([]byte, error) {
	n := p.Len
	if n == 0 {
		n = PayloadLen
	}
	if n < PayloadLen || n > MaxPayloadLen || n%4 != 0 {
		return nil, fmt.Errorf("probe: payload length %d is out of range: want %d..%d, a multiple of 4", n, PayloadLen, MaxPayloadLen)
	}
	if p.Kind != KindProbe && p.Kind != KindReply {
		return nil, fmt.Errorf("probe: payload kind %d is not valid: want 1 (probe) or 2 (reply)", p.Kind)
	}
	if err := p.Sent.Validate(); err != nil {
		return nil, fmt.Errorf("sent markings: %w", err)
	}
	b := make([]byte, n)
	copy(b, Signature[:])
	b[8] = Version
	b[payloadKindOff] = byte(p.Kind)
	binary.BigEndian.PutUint16(b[10:], uint16(n))
	binary.BigEndian.PutUint64(b[12:], p.Session)
	binary.BigEndian.PutUint32(b[payloadSeqOff:], p.Seq)
	binary.BigEndian.PutUint64(b[payloadSentOff:], uint64(p.SentNano))
	p.Sent.put(b[32:44])
	if p.Kind == KindReply {
		if err := p.Received.Validate(); err != nil {
			return nil, fmt.Errorf("received markings: %w", err)
		}
		p.Received.put(b[44:56])
	}
	if p.ToR != "" {
		if p.Kind != KindReply || n != TopologyPayloadLen {
			return nil, fmt.Errorf("probe: a ToR rides only in a reply of %d bytes: this is a %s of %d", TopologyPayloadLen, p.Kind, n)
		}
		if !topology.ValidSwitch(p.ToR) {
			return nil, fmt.Errorf("probe: ToR %q: want 1..%d characters of letters, digits, '_', '.', ':' and '-'", p.ToR, topology.MaxSwitchLen)
		}
		b[PayloadLen] = extToR
		b[PayloadLen+1] = byte(len(p.ToR))
		copy(b[PayloadLen+2:], p.ToR)
	}
	return b, nil
}

// ErrNoSignature is returned by ParsePayload for data that does not start
// with Signature: not a probe at all, as opposed to a malformed one.
var ErrNoSignature = fmt.Errorf("probe: payload does not start with the signature %q", Signature[:])

// ParsePayload decodes and strictly checks a payload: signature, version,
// kind, declared length equal to len(b), every field in range, reserved
// and padding bytes zero, sent markings present, received markings present
// in a reply and absent in a probe. It never panics.
func ParsePayload(b []byte) (Payload, error) {
	if len(b) < len(Signature) || [8]byte(b[:8]) != Signature {
		return Payload{}, ErrNoSignature
	}
	if len(b) < PayloadLen {
		return Payload{}, fmt.Errorf("probe: payload is %d bytes: want at least %d", len(b), PayloadLen)
	}
	if b[8] != Version {
		return Payload{}, fmt.Errorf("probe: payload version %d is not supported: want %d", b[8], Version)
	}
	p := Payload{Kind: Kind(b[payloadKindOff])}
	if p.Kind != KindProbe && p.Kind != KindReply {
		return Payload{}, fmt.Errorf("probe: payload kind %d is not valid: want 1 (probe) or 2 (reply)", b[payloadKindOff])
	}
	p.Len = int(binary.BigEndian.Uint16(b[10:]))
	if p.Len != len(b) {
		return Payload{}, fmt.Errorf("probe: payload length field %d does not match the %d bytes received", p.Len, len(b))
	}
	if p.Len > MaxPayloadLen || p.Len%4 != 0 {
		return Payload{}, fmt.Errorf("probe: payload length %d is out of range: want %d..%d, a multiple of 4", p.Len, PayloadLen, MaxPayloadLen)
	}
	p.Session = binary.BigEndian.Uint64(b[12:])
	p.Seq = binary.BigEndian.Uint32(b[20:])
	p.SentNano = int64(binary.BigEndian.Uint64(b[24:]))
	var ok bool
	var err error
	if p.Sent, ok, err = parseMarkings(b[32:44], "sent markings"); err != nil {
		return Payload{}, err
	} else if !ok {
		return Payload{}, fmt.Errorf("probe: sent markings are missing")
	}
	if p.Received, ok, err = parseMarkings(b[44:56], "received markings"); err != nil {
		return Payload{}, err
	}
	switch {
	case p.Kind == KindProbe && ok:
		return Payload{}, fmt.Errorf("probe: a probe carries received markings: want none")
	case p.Kind == KindReply && !ok:
		return Payload{}, fmt.Errorf("probe: a reply carries no received markings")
	}
	pad := PayloadLen
	if p.Kind == KindReply && p.Len == TopologyPayloadLen && b[PayloadLen] == extToR {
		n := int(b[PayloadLen+1])
		if n < 1 || n > topology.MaxSwitchLen {
			return Payload{}, fmt.Errorf("probe: a reply's ToR length %d is out of range: want 1..%d", n, topology.MaxSwitchLen)
		}
		p.ToR = string(b[PayloadLen+2 : PayloadLen+2+n])
		if !topology.ValidSwitch(p.ToR) {
			return Payload{}, fmt.Errorf("probe: a reply's ToR %q is not a switch name: want letters, digits, '_', '.', ':' and '-'", p.ToR)
		}
		pad = PayloadLen + 2 + n
	}
	for i := pad; i < len(b); i++ {
		if b[i] != 0 {
			return Payload{}, fmt.Errorf("probe: padding byte %d is 0x%02x: want 0", i, b[i])
		}
	}
	return p, nil
}
