package trace

import (
	"encoding/binary"
	"fmt"

	"github.com/roce-probe/roce-probe/roce"
)

// IDOf returns the ProbeID of a probe frame as built (probe.Frame.Build):
// what a quote of it can show.
func IDOf(frame []byte, session uint64, seq uint32) (ProbeID, error) {
	var w roce.Walk
	if err := roce.WalkFrame(frame, &w); err != nil {
		return ProbeID{}, fmt.Errorf("trace: walking a probe: %w", err)
	}
	if w.Version != 2 || w.End < w.Transport+roce.BTHLen {
		return ProbeID{}, fmt.Errorf("trace: not a RoCE v2 probe")
	}
	ip := frame[w.Net:]
	var q Quote
	var l4 []byte
	if w.IPVersion == 6 {
		l4 = q.ipv6(ip)
	} else {
		l4 = q.ipv4(ip)
	}
	if l4 == nil || len(l4) < udpLen {
		return ProbeID{}, fmt.Errorf("trace: not a RoCE v2 probe")
	}
	bth := frame[w.Transport:]
	return ProbeID{Src: q.Src, Dst: q.Dst, Sport: binary.BigEndian.Uint16(l4), IPLen: q.IPLen, UDPLen: binary.BigEndian.Uint16(l4[4:]),
		DestQP:  uint32(bth[bthDestQPAt])<<16 | uint32(bth[bthDestQPAt+1])<<8 | uint32(bth[bthDestQPAt+2]),
		PSN:     uint32(bth[bthPSNAt])<<16 | uint32(bth[bthPSNAt+1])<<8 | uint32(bth[bthPSNAt+2]),
		Session: session, Seq: seq}, nil
}
