package roce

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
)

// The ICRC (invariant CRC) is the standard reflected CRC-32 (IEEE 802.3,
// hash/crc32.ChecksumIEEE) over
//
//	8 × 0xFF (stands for the masked IB LRH) ‖ masked network header ‖
//	masked UDP header (v2) ‖ masked BTH ‖ extension headers ‖ payload ‖ pad
//
// written little-endian after the pad bytes. Masked fields are replaced by
// all-ones bits:
//
//	IPv4: TOS, TTL, header checksum
//	IPv6: traffic class, flow label, hop limit
//	GRH (RoCE v1): TClass, FlowLabel, HopLmt (the IPv6 rule; see below)
//	UDP: checksum
//	BTH: byte 4 (FECN, BECN and the 6 reserved bits)
//
// The RoCE v2 rules follow the kernel's rxe_icrc.c and are checked against
// two independent known-answer vectors. For RoCE v1, rxe has no
// implementation and no independent vector is known: the v1 rule (the IBTA
// rule for a packet with a GRH, the LRH replaced by ones as in v2) is
// unconfirmed.

// ErrNotRoCE is returned (wrapped) when a frame or packet is not RoCE.
var ErrNotRoCE = errors.New("not a RoCE packet")

// seedState is the CRC-32 register after the 8 0xFF bytes of the masked LRH.
var seedState = func() uint32 {
	s := ^uint32(0)
	for i := 0; i < 8; i++ {
		s = crc32.IEEETable[byte(s)^0xFF] ^ s>>8
	}
	return s
}()

// slicing8 holds the slicing-by-8 tables for the IEEE polynomial, used for
// the masked headers (the payload goes through hash/crc32, which uses
// carry-less multiplication where the CPU has it).
var slicing8 = func() *[8][256]uint32 {
	t := new([8][256]uint32)
	t[0] = *crc32.IEEETable
	for i := 0; i < 256; i++ {
		c := t[0][i]
		for j := 1; j < 8; j++ {
			c = t[0][c&0xFF] ^ c>>8
			t[j][i] = c
		}
	}
	return t
}()

// Header masks: 0xFF where the ICRC replaces a byte by ones.
var (
	// IPv4 (IHL 5): TOS, TTL, checksum | UDP: checksum | BTH: byte 4.
	maskIPv4 = [20 + 8 + BTHLen]byte{1: 0xFF, 8: 0xFF, 10: 0xFF, 11: 0xFF, 26: 0xFF, 27: 0xFF, 32: 0xFF}
	// IPv6: traffic class, flow label, hop limit | UDP: checksum | BTH: byte 4.
	maskIPv6 = [40 + 8 + BTHLen]byte{0: 0x0F, 1: 0xFF, 2: 0xFF, 3: 0xFF, 7: 0xFF, 46: 0xFF, 47: 0xFF, 52: 0xFF}
	// GRH: TClass, FlowLabel, HopLmt | BTH: byte 4.
	maskGRH = [GRHLen + BTHLen]byte{0: 0x0F, 1: 0xFF, 2: 0xFF, 3: 0xFF, 7: 0xFF, 44: 0xFF}
)

// updateMasked runs the CRC-32 register s over p|mask (len(p) == len(mask)).
func updateMasked(s uint32, p, mask []byte) uint32 {
	t := slicing8
	mask = mask[:len(p)]
	for len(p) >= 8 {
		w := binary.LittleEndian.Uint64(p) | binary.LittleEndian.Uint64(mask)
		s ^= uint32(w)
		s = t[0][byte(w>>56)] ^ t[1][byte(w>>48)] ^ t[2][byte(w>>40)] ^ t[3][byte(w>>32)] ^
			t[4][s>>24] ^ t[5][byte(s>>16)] ^ t[6][byte(s>>8)] ^ t[7][byte(s)]
		p, mask = p[8:], mask[8:]
	}
	for i := range p {
		s = t[0][byte(s)^(p[i]|mask[i])] ^ s>>8
	}
	return s
}

// ICRC computes the ICRC of a RoCE packet. pkt starts at the IPv4 or IPv6
// header (RoCE v2) or the GRH (RoCE v1) and ends just before the 4 ICRC
// bytes. Write the result with PutICRC (little-endian).
func ICRC(pkt []byte) (uint32, error) {
	if len(pkt) >= prefixLen-8 {
		buf := scratchPool.Get().(*[icrcScratch]byte)
		c, ok := icrcFast(pkt, buf)
		scratchPool.Put(buf)
		if ok {
			return c, nil
		}
	}
	return icrcMasked(pkt)
}

// icrcMasked is ICRC with the headers masked byte by byte (slicing-by-8).
func icrcMasked(pkt []byte) (uint32, error) {
	if len(pkt) == 0 {
		return 0, fmt.Errorf("ICRC: empty packet, want an IPv4, IPv6 or GRH header: %w", ErrNotRoCE)
	}
	s := seedState
	var hdr int
	switch pkt[0] >> 4 {
	case 4:
		ihl := int(pkt[0]&0x0F) * 4
		if ihl != 20 {
			return 0, fmt.Errorf("ICRC: IPv4 IHL %d bytes, want 20: %w", ihl, errICRCNoRule)
		}
		hdr = ihl + 8 + BTHLen
		if len(pkt) < hdr {
			return 0, fmt.Errorf("ICRC: IPv4 packet %d bytes, want at least %d (IPv4, UDP and BTH headers)", len(pkt), hdr)
		}
		if pkt[9] != 17 {
			return 0, fmt.Errorf("ICRC: IPv4 protocol %d, want 17 (UDP): %w", pkt[9], ErrNotRoCE)
		}
		s = updateMasked(s, pkt[:hdr], maskIPv4[:])
	case 6:
		if len(pkt) < GRHLen {
			return 0, fmt.Errorf("ICRC: IPv6/GRH packet %d bytes, want at least %d", len(pkt), GRHLen)
		}
		mask := maskIPv6[:]
		switch pkt[6] {
		case 17:
			hdr = GRHLen + 8 + BTHLen
		case NextHeaderBTH:
			hdr = GRHLen + BTHLen
			mask = maskGRH[:]
		default:
			return 0, fmt.Errorf("ICRC: IPv6/GRH next header %d, want 17 (UDP, RoCE v2) or 27 (BTH, RoCE v1): %w", pkt[6], ErrNotRoCE)
		}
		if len(pkt) < hdr {
			return 0, fmt.Errorf("ICRC: packet %d bytes, want at least %d (network, UDP and BTH headers)", len(pkt), hdr)
		}
		s = updateMasked(s, pkt[:hdr], mask)
	default:
		return 0, fmt.Errorf("ICRC: IP version %d, want 4 or 6: %w", pkt[0]>>4, ErrNotRoCE)
	}
	return updateRest(s, pkt[hdr:]), nil
}

// updateRest runs the register over the unmasked rest of the packet and
// returns the final CRC. hash/crc32 is fastest on multiples of 16 bytes
// (it handles a shorter tail a byte at a time); the tail goes through
// slicing-by-8 here.
func updateRest(s uint32, p []byte) uint32 {
	n := len(p) &^ 15
	if n >= 64 {
		s = ^crc32.Update(^s, crc32.IEEETable, p[:n])
		p = p[n:]
	}
	t := slicing8
	for len(p) >= 8 {
		w := binary.LittleEndian.Uint64(p)
		s ^= uint32(w)
		s = t[0][byte(w>>56)] ^ t[1][byte(w>>48)] ^ t[2][byte(w>>40)] ^ t[3][byte(w>>32)] ^
			t[4][s>>24] ^ t[5][byte(s>>16)] ^ t[6][byte(s>>8)] ^ t[7][byte(s)]
		p = p[8:]
	}
	for _, b := range p {
		s = t[0][byte(s)^b] ^ s>>8
	}
	return ^s
}

// prefixLen is how much of a packet icrcPrefix copies: the masked headers
// (at most 60 bytes after the 8 0xFF bytes) rounded up so that hash/crc32,
// which uses carry-less multiplication from 64 bytes on, gets 80 bytes.
const prefixLen = 80

// icrcScratch is the size of the scratch buffer icrcCopy needs.
const icrcScratch = icrcCopyMax + 20

// scratchPool holds scratch buffers for ICRC; a buffer on the stack would
// escape into hash/crc32 and be allocated on every call.
var scratchPool = sync.Pool{New: func() any { return new([icrcScratch]byte) }}

// icrcPrefix computes the same ICRC as the byte-wise masking in ICRC: it
// copies 0xFF×8 and the first bytes of the packet into scratch, masks
// there, runs hash/crc32 over the scratch and then over the rest of the
// packet in place. It reports false when the packet is not of a kind it
// handles (IPv4 options, too short, not RoCE); ICRC then does the work.
func icrcPrefix(pkt []byte, scratch *[prefixLen]byte) (uint32, bool) {
	mask := icrcMask(pkt)
	if mask == nil || len(pkt) < prefixLen-8 {
		return 0, false
	}
	b := scratch[:]
	binary.LittleEndian.PutUint64(b, ^uint64(0))
	copy(b[8:], pkt[:prefixLen-8])
	orMask(b[8:], mask)
	c := crc32.Update(0, crc32.IEEETable, b)
	return updateRest(^c, pkt[prefixLen-8:]), true
}

// icrcMask returns the header mask for a RoCE packet of a kind icrcPrefix
// and icrcCopy handle (IPv4 without options, IPv6 or GRH, carrying UDP or
// BTH), or nil.
func icrcMask(pkt []byte) []byte {
	if len(pkt) < 40 {
		return nil
	}
	switch pkt[0] >> 4 {
	case 4:
		if pkt[0]&0x0F == 5 && pkt[9] == 17 {
			return maskIPv4[:]
		}
	case 6:
		if pkt[6] == 17 {
			return maskIPv6[:]
		} else if pkt[6] == NextHeaderBTH {
			return maskGRH[:]
		}
	}
	return nil
}

// orMask sets the masked header bytes of h to ones (len(h) >= len(mask)).
func orMask(h, mask []byte) {
	for i := 0; i+8 <= len(mask); i += 8 {
		binary.LittleEndian.PutUint64(h[i:], binary.LittleEndian.Uint64(h[i:])|binary.LittleEndian.Uint64(mask[i:]))
	}
	for i := len(mask) &^ 7; i < len(mask); i++ {
		h[i] |= mask[i]
	}
}

// icrcCopyMax is the longest packet icrcCopy takes: beyond it, copying
// costs more than the second hash/crc32 call icrcPrefix makes.
const icrcCopyMax = 2048

// icrcFast computes the ICRC with icrcCopy, or icrcPrefix for a longer
// packet; false means neither takes the packet (icrcMasked does).
func icrcFast(pkt []byte, scratch *[icrcScratch]byte) (uint32, bool) {
	if c, ok := icrcCopy(pkt, scratch[:]); ok {
		return c, true
	}
	return icrcPrefix(pkt, (*[prefixLen]byte)(scratch[:prefixLen]))
}

// icrcCopy computes the same ICRC as icrcPrefix with one hash/crc32 call
// over a masked copy of the whole packet in scratch (icrcScratch bytes).
// hash/crc32 costs about as much per call as for 1 KiB of data, and it
// hashes a length that is not a multiple of 16 with a byte-wise tail, so
// the copy is laid out to be a multiple of 16 bytes long: zero bytes,
// then 0xFF×4, then the packet. With the register
// started at 0 (crc 0xFFFFFFFF) leading zeros leave it at 0, and 0xFF×4
// from 0 gives the register that 0xFF×8 gives from the standard start.
// ok is false for a packet icrcPrefix does not handle or that is longer
// than icrcCopyMax.
func icrcCopy(pkt []byte, scratch []byte) (uint32, bool) {
	mask := icrcMask(pkt)
	if mask == nil || len(pkt) > icrcCopyMax || len(pkt) < len(mask) {
		return 0, false
	}
	z := (16 - (4+len(pkt))%16) % 16
	b := scratch[:z+4+len(pkt)]
	clear(b[:z])
	binary.LittleEndian.PutUint32(b[z:], ^uint32(0))
	h := b[z+4:]
	copy(h, pkt)
	orMask(h, mask)
	return crc32.Update(^uint32(0), crc32.IEEETable, b), true
}

// PutICRC writes an ICRC value in wire order (little-endian).
func PutICRC(b []byte, icrc uint32) { binary.LittleEndian.PutUint32(b, icrc) }

// WantICRC returns the ICRC the packet should carry, in wire order (the
// form of Packet.ICRC): what a packet with ICRCStatus ICRCInvalid should
// have had. Zero when the ICRC was not checked.
func (p *Packet) WantICRC() [ICRCLen]byte {
	var b [ICRCLen]byte
	if p.ICRCStatus != ICRCUnchecked {
		PutICRC(b[:], p.Computed)
	}
	return b
}

// VerifyICRC checks the ICRC of a RoCE packet that starts at the IPv4/IPv6
// header or GRH and ends with the 4 ICRC bytes. It returns the computed
// ICRC and whether the packet carries it.
func VerifyICRC(pkt []byte) (computed uint32, ok bool, err error) {
	if len(pkt) < ICRCLen {
		return 0, false, fmt.Errorf("ICRC: packet %d bytes, want at least %d", len(pkt), ICRCLen)
	}
	n := len(pkt) - ICRCLen
	c, err := ICRC(pkt[:n])
	if err != nil {
		return 0, false, err
	}
	return c, binary.LittleEndian.Uint32(pkt[n:]) == c, nil
}

// FillICRC computes the ICRC of a serialized Ethernet frame carrying RoCE
// v1 or v2 (untagged, 802.1Q or 802.1ad/QinQ) and writes it in place into
// the packet's last 4 bytes, as given by the IPv4 total length, the IPv6
// payload length or the GRH PayLen (Ethernet padding after the packet is
// left alone). Use it on gopacket.SerializeLayers output. A non-zero UDP
// checksum (RoCE senders normally send 0) is recomputed afterwards, since
// it covers the ICRC bytes.
func FillICRC(frame []byte) error {
	pkt, err := roceNetworkPacket(frame)
	if err != nil {
		return err
	}
	n := len(pkt) - ICRCLen
	c, err := ICRC(pkt[:n])
	if err != nil {
		return err
	}
	PutICRC(pkt[n:], c)
	fixUDPChecksum(pkt)
	return nil
}

// fixUDPChecksum recomputes a non-zero UDP checksum of a RoCE v2 packet.
func fixUDPChecksum(pkt []byte) {
	var sum uint32
	var udp []byte
	switch pkt[0] >> 4 {
	case 4:
		ihl := int(pkt[0]&0x0F) * 4
		udp = pkt[ihl:]
		sum = onesSum(sum, pkt[12:20])
	case 6:
		if pkt[6] != 17 {
			return // RoCE v1: no UDP
		}
		udp = pkt[40:]
		sum = onesSum(sum, pkt[8:40])
	}
	if len(udp) < 8 || (udp[6] == 0 && udp[7] == 0) {
		return
	}
	ulen := int(binary.BigEndian.Uint16(udp[4:6]))
	if ulen < 8 || ulen > len(udp) {
		ulen = len(udp)
	}
	udp = udp[:ulen]
	sum += 17 + uint32(ulen)
	udp[6], udp[7] = 0, 0
	sum = onesSum(sum, udp)
	for sum > 0xFFFF {
		sum = sum>>16 + sum&0xFFFF
	}
	cs := ^uint16(sum)
	if cs == 0 {
		cs = 0xFFFF
	}
	binary.BigEndian.PutUint16(udp[6:8], cs)
}

func onesSum(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

// VerifyFrameICRC checks the ICRC of an Ethernet frame carrying RoCE v1 or
// v2 and returns the computed value and whether the frame carries it.
func VerifyFrameICRC(frame []byte) (computed uint32, ok bool, err error) {
	pkt, err := roceNetworkPacket(frame)
	if err != nil {
		return 0, false, err
	}
	return VerifyICRC(pkt)
}

// roceNetworkPacket returns the RoCE packet inside an Ethernet frame: from
// the IP header or GRH to the end of the ICRC, as WalkFrame finds it. A
// frame whose ICRC cannot be checked (truncated, IPv4 options, IPv6
// extension headers) is an error.
func roceNetworkPacket(frame []byte) ([]byte, error) {
	var w Walk
	if err := WalkFrame(frame, &w); err != nil {
		return nil, err
	}
	if r := w.UncheckedReason(); r != "" {
		return nil, fmt.Errorf("ICRC: not computed for this packet (%s): %w", r, errNoICRCRule(r))
	}
	min := BTHLen + ICRCLen
	if n := w.End - w.Transport; n < min {
		return nil, fmt.Errorf("RoCE packet: %d bytes after the network and UDP headers, want at least %d (BTH and ICRC)", n, min)
	}
	return frame[w.Net:w.End], nil
}

// errNoICRCRule returns the reason the ICRC of a packet is unchecked as an
// error.
func errNoICRCRule(reason string) error {
	switch reason {
	case "truncated":
		return errICRCTruncated
	}
	return errICRCNoRule
}

// Why an ICRC is not computed.
var (
	errICRCTruncated = errors.New("the frame is shorter than its headers say")
	errICRCNoRule    = errors.New("no ICRC rule covers IPv4 options or IPv6 extension headers (rxe_icrc_hdr hashes a fixed 20- or 40-byte IP header and the UDP header after it)")
)
