package probe

import (
	"encoding/binary"
	"hash/crc32"
)

// putBTH writes a 12-byte Base Transport Header (kernel
// drivers/infiniband/sw/rxe/rxe_hdr.h): opcode, SE 0, M 0, pad count,
// TVer 0, P_Key, FECN/BECN 0, DestQP, AckReq 0, PSN.
func putBTH(b []byte, opcode uint8, pad int, pkey uint16, destQP, psn uint32) {
	b[0] = opcode
	b[1] = uint8(pad&3) << 4
	binary.BigEndian.PutUint16(b[2:], pkey)
	binary.BigEndian.PutUint32(b[4:], destQP&0xffffff)
	binary.BigEndian.PutUint32(b[8:], psn&0xffffff)
}

// ICRC returns the RoCE v2 invariant CRC of pkt, which starts at the IP
// header and ends just before the ICRC: CRC-32 (IEEE) over eight 0xff bytes
// and the packet with the variant fields masked to ones (IPv4 TOS, TTL and
// header checksum; IPv6 traffic class, flow label and hop limit; UDP
// checksum; BTH byte 4). It goes on the wire little-endian.
func ICRC(pkt []byte) uint32 {
	var lrh = [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	c := crc32.Update(0, crc32.IEEETable, lrh[:])
	var hdr [40 + 8 + bthLen]byte
	ipLen := 40
	if len(pkt) > 0 && pkt[0]>>4 == 4 {
		ipLen = int(pkt[0]&0x0f) * 4
	}
	n := ipLen + 8 + bthLen
	if n > len(pkt) || n > len(hdr) {
		return crc32.Update(c, crc32.IEEETable, pkt)
	}
	copy(hdr[:], pkt[:n])
	h := hdr[:n]
	if ipLen == 40 {
		h[0] |= 0x0f
		h[1], h[2], h[3] = 0xff, 0xff, 0xff
		h[7] = 0xff
	} else {
		h[1] = 0xff
		h[8] = 0xff
		h[10], h[11] = 0xff, 0xff
	}
	h[ipLen+6], h[ipLen+7] = 0xff, 0xff
	h[ipLen+8+4] = 0xff
	c = crc32.Update(c, crc32.IEEETable, h)
	return crc32.Update(c, crc32.IEEETable, pkt[n:])
}
