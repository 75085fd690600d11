package rocegen

import (
	"bytes"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/roce"
)

// RCOp is one work request of a simulated RC connection.
type RCOp struct {
	Kind string // "write", "send" or "read"
	Len  int    // bytes
}

// RCConn is an RC connection between A (the requester) and B (the
// responder) whose requests cross a lossy link, simulated packet by packet
// as go-back-N (IBTA vol. 1, 9.7; what Linux rxe does): B accepts only the
// PSN it expects, answers the first packet after a gap with a PSN sequence
// error NAK carrying the PSN it expects and drops the rest until that PSN
// comes, and acknowledges duplicates again; A goes back to the NAK's PSN,
// or to the first unacknowledged PSN when nothing comes back (a timeout).
type RCConn struct {
	Ops      []RCOp
	PMTU     int    // path MTU (256..4096)
	FirstPSN uint32 // A's first PSN (PSNs wrap at 2^24)
	Window   int    // packets A sends before it waits for responses (0: 8)
	// Drop reports whether the link loses the n-th transmission (from 0)
	// of the request packet with this PSN.
	Drop func(psn uint32, n int) bool
	// Reorder, if set, makes the link deliver the request packet with
	// this PSN (first transmission) after the one that follows it.
	Reorder func(psn uint32) bool
	// DropResp, if set, loses the n-th response (ACK, NAK or READ
	// response) B sends with this PSN on the way back to A.
	DropResp func(psn uint32, n int) bool
	// QPA and QPB are the QP numbers (0: 0x11a and 0x22b).
	QPA, QPB uint32
	// UC makes the connection unreliable (UC opcodes): B takes what
	// comes, answers nothing, and A never sends anything again. Ops are
	// SENDs and RDMA WRITEs.
	UC bool
}

// RCTruth is what the simulation did: the known answers for a capture of
// the connection.
type RCTruth struct {
	Sent          int // request packets A sent, retransmissions included
	Resent        int // request packets A sent with a PSN it had sent before
	Rounds        int // times A went back (NAK or timeout) and sent again
	Dropped       int // request packets the link lost
	Reordered     int // request packets the link delivered after a later one
	NAKs          int // PSN sequence error NAKs B sent
	NAKsAtA       int // of which reached A
	Duplicates    int // request packets B received with a PSN below the one it expected
	ReadResponses int // READ response packets B sent
	RespResent    int // READ response packets B sent with a PSN it had sent before
	RespAgainAtA  int // READ response packets A received with a PSN it had received before
	RespDropped   int // responses lost on the way back

	// What B received, as a capture after the link sees it.
	RecvAgain   int // request packets with a PSN received before
	RecvResent  int // request packets received for the first time after a later one, sent again after a loss
	RecvLate    int // request packets received for the first time after a later one, reordered (first transmission)
	RecvRewinds int // received packets that went back: not after the one before, and not beyond every one before
	RecvGaps    int // received packets beyond the one after the packet received before
	RecvMissing int // PSNs of request packets never received, below the last one received
}

// RCFrames is the simulation's traffic as captured at A (everything A
// sent, the responses A received) and at B (the requests B received,
// everything B answered), in time order: Before and After the lossy
// links.
type RCFrames struct {
	Before, After []Frame
	Truth         RCTruth
	QPA, QPB      uint32
}

type rcPkt struct {
	psn     uint32
	op      roce.Opcode
	reth    *roce.RETH
	payload int
}

// Simulate runs the connection and returns its frames.
func (c RCConn) Simulate() RCFrames {
	qpA, qpB := uint32(0x11a), uint32(0x22b)
	if c.QPA != 0 {
		qpA = c.QPA
	}
	if c.QPB != 0 {
		qpB = c.QPB
	}
	win := c.Window
	if win == 0 {
		win = 8
	}
	mtu := c.PMTU
	// the request packets, in PSN order, and the READ spans
	var pkts []rcPkt
	psn := c.FirstPSN & 0xFFFFFF
	for i, o := range c.Ops {
		va := uint64(0x7f0000000000) + uint64(i)<<20
		n := (o.Len + mtu - 1) / mtu
		if n == 0 {
			n = 1
		}
		switch o.Kind {
		case "read":
			pkts = append(pkts, rcPkt{psn: psn, op: roce.OpcodeRCRDMAReadRequest,
				reth: &roce.RETH{VA: va, RKey: 0x1234, DMALen: uint32(o.Len)}})
			psn = (psn + uint32(n)) & 0xFFFFFF
			continue
		case "write", "send":
		default:
			panic("rocegen: RCOp kind " + o.Kind)
		}
		for k := 0; k < n; k++ {
			var op uint8
			size := mtu
			switch {
			case n == 1:
				op, size = roce.OpSendOnly, o.Len
			case k == 0:
				op = roce.OpSendFirst
			case k == n-1:
				op, size = roce.OpSendLast, o.Len-(n-1)*mtu
			default:
				op = roce.OpSendMiddle
			}
			var reth *roce.RETH
			if o.Kind == "write" {
				op += roce.OpRDMAWriteFirst // SEND_x + 6 = RDMA_WRITE_x
				if k == 0 {
					reth = &roce.RETH{VA: va, RKey: 0x1234, DMALen: uint32(o.Len)}
				}
			}
			pkts = append(pkts, rcPkt{psn: psn, op: roce.Opcode(op), reth: reth, payload: size})
			psn = (psn + 1) & 0xFFFFFF
		}
	}
	var out RCFrames
	out.QPA, out.QPB = qpA, qpB
	t := Base
	emit := func(dst *[]Frame, data []byte) {
		t = t.Add(time.Microsecond)
		*dst = append(*dst, Frame{Data: data, Time: t})
	}
	req := func(p rcPkt) []byte {
		bth := roce.BTH{Opcode: p.op, PKey: 0xFFFF, DestQP: qpB, PSN: p.psn, AckReq: !c.UC}
		if c.UC {
			bth.Opcode |= 0x20
		}
		var hdrs []gopacket.SerializableLayer
		if p.reth != nil {
			hdrs = append(hdrs, p.reth)
		}
		return rcFrame(false, bth, hdrs, p.payload, qpA, qpB)
	}
	resp := func(op roce.Opcode, psn uint32, syndrome uint8, msn uint32, payload int) []byte {
		bth := roce.BTH{Opcode: op, PKey: 0xFFFF, DestQP: qpA, PSN: psn}
		var hdrs []gopacket.SerializableLayer
		if op != roce.Opcode(roce.OpRDMAReadResponseMiddle) {
			hdrs = append(hdrs, &roce.AETH{Syndrome: syndrome, MSN: msn})
		}
		return rcFrame(true, bth, hdrs, payload, qpA, qpB)
	}

	sent := map[uint32]int{} // transmissions per PSN
	respSent := map[uint32]int{}
	respAtA := map[uint32]bool{}
	// what B received: count per packet, the highest and the last index
	recv := make([]int, len(pkts))
	maxRecv, lastRecv := -1, -1
	// B's state
	expect, msn, nakSent := 0, uint32(0), false
	// A's state: index of the first unacknowledged packet and the next to send
	acked, next := 0, 0
	var held *rcPkt // a packet the link holds back (reorder)
	// sendResp sends a response and reports whether it reached A
	sendResp := func(op roce.Opcode, psn uint32, syn uint8, m uint32, n int) bool {
		isRead := op != roce.OpcodeRCAcknowledge
		key := psn | uint32(op)<<24 // ACKs and READ responses apart
		if isRead {
			key = psn | 0xFF<<24
		}
		k := respSent[key]
		respSent[key]++
		if k > 0 && isRead {
			out.Truth.RespResent++
		}
		f := resp(op, psn, syn, m, n)
		emit(&out.After, f)
		if c.DropResp != nil && c.DropResp(psn, k) {
			out.Truth.RespDropped++
			return false
		}
		if syn == 0x60 {
			out.Truth.NAKsAtA++
		}
		if isRead {
			if respAtA[psn] {
				out.Truth.RespAgainAtA++
			}
			respAtA[psn] = true
		}
		emit(&out.Before, f)
		return true
	}
	deliver := func(i int) (nak bool, ackTo int) {
		p := pkts[i]
		ackTo = -1
		switch {
		case recv[i] > 0:
			out.Truth.RecvAgain++
		case i < maxRecv && sent[p.psn] > 1:
			out.Truth.RecvResent++
		case i < maxRecv:
			out.Truth.RecvLate++
		}
		if i <= maxRecv && i != lastRecv+1 {
			out.Truth.RecvRewinds++
		}
		if lastRecv >= 0 && i > lastRecv+1 {
			out.Truth.RecvGaps++
		}
		recv[i]++
		maxRecv, lastRecv = max(maxRecv, i), i
		if c.UC {
			return false, i
		}
		switch {
		case i > expect:
			if !nakSent {
				nakSent = true
				out.Truth.NAKs++
				return sendResp(roce.OpcodeRCAcknowledge, pkts[expect].psn, 0x60, msn, 0), -1
			}
			return false, -1
		case i < expect:
			// a duplicate: a READ is answered again, anything else
			// acknowledged up to the last packet received
			out.Truth.Duplicates++
			if p.op == roce.OpcodeRCRDMAReadRequest {
				n, ok := c.readResponses(p, msn, sendResp)
				out.Truth.ReadResponses += n
				if !ok {
					return false, -1
				}
				return false, i
			}
			if !sendResp(roce.OpcodeRCAcknowledge, pkts[expect-1].psn, 0x1F, msn, 0) {
				return false, -1
			}
			return false, expect - 1
		}
		expect++
		nakSent = false
		if p.op == roce.OpcodeRCRDMAReadRequest {
			msn++
			n, ok := c.readResponses(p, msn, sendResp)
			out.Truth.ReadResponses += n
			if !ok {
				return false, -1
			}
			return false, i
		}
		if last := p.op.Operation(); last == roce.OpSendOnly || last == roce.OpSendLast || last == roce.OpRDMAWriteOnly || last == roce.OpRDMAWriteLast {
			msn++
		}
		if !sendResp(roce.OpcodeRCAcknowledge, p.psn, 0x1F, msn, 0) {
			return false, -1
		}
		return false, i
	}
	for acked < len(pkts) {
		progress := false
		goBack := -1
		for ; next < len(pkts) && next < acked+win; next++ {
			p := pkts[next]
			n := sent[p.psn]
			sent[p.psn]++
			out.Truth.Sent++
			if n > 0 {
				out.Truth.Resent++
			}
			emit(&out.Before, req(p))
			if c.Drop != nil && c.Drop(p.psn, n) {
				out.Truth.Dropped++
				continue
			}
			if held == nil && n == 0 && c.Reorder != nil && c.Reorder(p.psn) && next+1 < len(pkts) {
				hp := p
				held = &hp
				out.Truth.Reordered++
				continue
			}
			for _, d := range []*rcPkt{&p, held} {
				if d == nil {
					continue
				}
				if d == held {
					held = nil
				}
				emit(&out.After, req(*d))
				i := c.index(pkts, d.psn)
				nak, to := deliver(i)
				if nak && goBack < 0 {
					goBack = expect
				}
				if to >= acked {
					acked, progress = to+1, true
				}
			}
		}
		if held != nil { // the link lets it go at the end of the burst
			d := *held
			held = nil
			emit(&out.After, req(d))
			nak, to := deliver(c.index(pkts, d.psn))
			if nak && goBack < 0 {
				goBack = expect
			}
			if to >= acked {
				acked, progress = to+1, true
			}
		}
		if c.UC {
			acked = next
			continue
		}
		switch {
		case goBack >= 0:
			// back to the PSN the NAK names, as rxe's req_retry does
			// (qp->comp.psn, which the NAK set), even if later ACKs
			// acknowledged some of what follows
			next = goBack
			out.Truth.Rounds++
		case !progress && acked < len(pkts):
			next = acked // timeout
			out.Truth.Rounds++
		}
	}
	for i := 0; i < maxRecv; i++ {
		if recv[i] == 0 {
			out.Truth.RecvMissing += c.span(pkts[i])
		}
	}
	return out
}

// span returns how many PSNs a request packet takes.
func (c RCConn) span(p rcPkt) int {
	if p.op != roce.OpcodeRCRDMAReadRequest {
		return 1
	}
	return max(1, (int(p.reth.DMALen)+c.PMTU-1)/c.PMTU)
}

// index returns the position of the request packet with this PSN.
func (c RCConn) index(pkts []rcPkt, psn uint32) int {
	for i := range pkts {
		if pkts[i].psn == psn {
			return i
		}
	}
	panic("rocegen: no request packet with that PSN")
}

// readResponses sends the responses of a READ request; it returns how many
// and whether A got them all (A then has the READ's data).
func (c RCConn) readResponses(p rcPkt, msn uint32, send func(roce.Opcode, uint32, uint8, uint32, int) bool) (int, bool) {
	all := true
	l := int(p.reth.DMALen)
	n := (l + c.PMTU - 1) / c.PMTU
	if n == 0 {
		n = 1
	}
	for k := 0; k < n; k++ {
		op, size := roce.OpRDMAReadResponseMiddle, c.PMTU
		switch {
		case n == 1:
			op, size = roce.OpRDMAReadResponseOnly, l
		case k == 0:
			op = roce.OpRDMAReadResponseFirst
		case k == n-1:
			op, size = roce.OpRDMAReadResponseLast, l-(n-1)*c.PMTU
		}
		all = send(roce.Opcode(op), (p.psn+uint32(k))&0xFFFFFF, 0x1F, msn, size) && all
	}
	return n, all
}

// rcFrame builds an RC frame over IPv4: A to B, or B to A.
func rcFrame(fromB bool, bth roce.BTH, hdrs []gopacket.SerializableLayer, payload int, qpA, qpB uint32) []byte {
	s := spec(nil, bth, hdrs)
	s.Payload = bytes.Repeat([]byte{0xc3}, payload)
	s.Src, s.Dst, s.IPID = ip4A, ip4B, 0x4d2
	s.SrcPort = roce.UDPSourcePort(0, qpA, qpB)
	if fromB {
		s.Src, s.Dst = ip4B, ip4A
		s.SrcMAC, s.DstMAC = macB, macA
		s.SrcPort = roce.UDPSourcePort(0, qpB, qpA)
	}
	s.TOS, s.TTL = 26<<2, 64
	return must(s.Build())
}
