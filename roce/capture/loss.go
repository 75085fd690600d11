package capture

import (
	"fmt"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/roce"
)

// Loss analysis: what a flow's PSNs and AETHs say about lost and resent
// packets.
//
// A flow carries up to two PSN sequences: the requests its sender numbers
// (SEND, RDMA WRITE, RDMA READ requests, atomics; every UD, UC, RD and XRC
// request), and the responses its sender returns to requests of the other
// direction (RDMA READ responses, ATOMIC ACKNOWLEDGE), which count the
// other side's PSNs. A request takes one PSN, an RDMA READ request one per
// response packet, ceil(length / path MTU) and at least one (rxe_req.c
// update_wqe_psn), and its responses are numbered from the request's PSN
// on (rxe_resp.c rxe_prepare_res, read_reply; Linux 6.1.192 and 7.3.4).
// ACKNOWLEDGE packets carry the PSN of the last request they acknowledge
// and are coalesced, so they are no sequence; their AETH is counted (NAKs
// by code, RNR NAKs).
//
// The analysis needs each sequence in capture order, which the chunks of
// Summarize do not have: a chunk cannot know the state the sequence was in
// when the chunk began. So Add records each sequence compactly, as runs of
// consecutive PSNs (one run per flow and chunk while nothing is lost), Merge
// appends the runs of the later Summary to the earlier one's, and Flows
// replays the whole sequence element by element through one state machine.
// The replay does not depend on where runs were cut, so a capture gives the
// same answer read in chunks or in one sequence. Memory grows with the
// number of discontinuities (a loss, a retransmission round, an RDMA READ
// of another length), not with the number of packets.

// seqClass says how a packet takes part in its flow's PSN sequences.
type seqClass uint8

const (
	seqNone      seqClass = iota // no sequence: ACKNOWLEDGE, CNP, unknown opcodes
	seqRequest                   // a request that takes one PSN
	seqRead                      // an RDMA READ request: one PSN per response packet
	seqRespStart                 // a response that starts a message: READ RESPONSE FIRST/ONLY, ATOMIC ACKNOWLEDGE
	seqRespCont                  // READ RESPONSE MIDDLE/LAST: follows the packet before it
)

// seqClasses is seqClass by opcode.
var seqClasses = func() (t [256]seqClass) {
	for i := range t {
		o := roce.Opcode(i)
		info := o.Info()
		if !info.Known {
			continue
		}
		switch o.Transport() {
		case roce.TransportRC, roce.TransportUC, roce.TransportRD, roce.TransportUD, roce.TransportXRC:
		default:
			continue
		}
		switch o.Operation() {
		case roce.OpAcknowledge:
			t[i] = seqNone
		case roce.OpRDMAReadRequest:
			t[i] = seqRead
		case roce.OpRDMAReadResponseFirst, roce.OpRDMAReadResponseOnly, roce.OpAtomicAcknowledge:
			t[i] = seqRespStart
		case roce.OpRDMAReadResponseMiddle, roce.OpRDMAReadResponseLast:
			t[i] = seqRespCont
		default:
			t[i] = seqRequest
		}
	}
	return t
}()

// pmtuOps are the opcodes whose payload is exactly one path MTU: the FIRST
// and MIDDLE packets of a multi-packet SEND, RDMA WRITE or READ response
// (a responder refuses other lengths: rxe_resp.c rxe_resp_check_length,
// "first or middle packet not mtu").
var pmtuOps = func() (t [256]bool) {
	for i := range t {
		o := roce.Opcode(i)
		if !o.Info().Known {
			continue
		}
		switch o.Operation() {
		case roce.OpSendFirst, roce.OpSendMiddle, roce.OpRDMAWriteFirst, roce.OpRDMAWriteMiddle,
			roce.OpRDMAReadResponseFirst, roce.OpRDMAReadResponseMiddle:
			t[i] = o.Transport() != roce.TransportCNP
		}
	}
	return t
}()

// psnRun is n elements of a PSN sequence: PSNs psn, psn+stride, ... For
// requests and responses stride is 1; for RDMA READ requests (class
// seqRead, each of dmaLen bytes) it is the PSN step between two reads,
// 0 while the run has one read.
type psnRun struct {
	psn    uint32
	n      uint32
	stride uint32
	dmaLen uint32
	class  seqClass
}

// seqLog is one PSN sequence of a flow, as runs.
type seqLog []psnRun

const psnMask = 0xFFFFFF

// add appends one element.
func (l *seqLog) add(psn uint32, c seqClass, dmaLen uint32) {
	if n := len(*l); n > 0 {
		r := &(*l)[n-1]
		switch {
		case c == seqRead && r.class == seqRead && r.dmaLen == dmaLen:
			step := (psn - r.psn) & psnMask
			if r.n == 1 && step != 0 && step < 1<<23 {
				r.stride, r.n = step, 2
				return
			}
			if r.n > 1 && psn == (r.psn+r.n*r.stride)&psnMask {
				r.n++
				return
			}
		case c != seqRead && r.class != seqRead && (c == seqRequest) == (r.class == seqRequest) &&
			psn == (r.psn+r.n)&psnMask:
			// a request after requests, a response after responses
			r.n++
			return
		}
	}
	*l = append(*l, psnRun{psn: psn & psnMask, n: 1, stride: 1, dmaLen: dmaLen, class: c})
	if c == seqRead {
		(*l)[len(*l)-1].stride = 0
	}
}

// appendLog appends o's runs to l (copying them).
func (l *seqLog) appendLog(o seqLog) {
	*l = append(*l, o...)
}

// NAKCounts counts NAKs by their code: the low 5 bits of an AETH syndrome
// whose type is NAK (roce.AETH.NAKCode; rxe_hdr.h enum aeth_syndrome:
// AETH_NAK_PSN_SEQ_ERROR 0x60 .. AETH_NAK_REM_OP_ERR 0x63).
type NAKCounts struct {
	PSNSequenceError       uint64 // code 0: the responder saw a PSN gap (a request was lost)
	InvalidRequest         uint64 // code 1
	RemoteAccessError      uint64 // code 2
	RemoteOperationalError uint64 // code 3
	InvalidRDRequest       uint64 // code 4
	Reserved               uint64 // codes 5-31
}

// Total returns the number of NAKs.
func (n NAKCounts) Total() uint64 {
	return n.PSNSequenceError + n.InvalidRequest + n.RemoteAccessError + n.RemoteOperationalError + n.InvalidRDRequest + n.Reserved
}

func (n *NAKCounts) count(c roce.NAKCode) {
	switch c {
	case roce.NAKPSNSequenceError:
		n.PSNSequenceError++
	case roce.NAKInvalidRequest:
		n.InvalidRequest++
	case roce.NAKRemoteAccessError:
		n.RemoteAccessError++
	case roce.NAKRemoteOperationalErr:
		n.RemoteOperationalError++
	case roce.NAKInvalidRDRequest:
		n.InvalidRDRequest++
	default:
		n.Reserved++
	}
}

func (n *NAKCounts) add(o NAKCounts) {
	n.PSNSequenceError += o.PSNSequenceError
	n.InvalidRequest += o.InvalidRequest
	n.RemoteAccessError += o.RemoteAccessError
	n.RemoteOperationalError += o.RemoteOperationalError
	n.InvalidRDRequest += o.InvalidRDRequest
	n.Reserved += o.Reserved
}

// Verdict is what a flow's loss analysis concludes.
type Verdict string

// Verdicts, from the strongest evidence down.
const (
	// VerdictLoss: packets of the flow were lost. PSNs are missing (a gap
	// never filled in the capture: lost before the capture point), packets
	// lost before the capture point came again in a retransmission round,
	// the responder NAKed a PSN sequence error (it saw a gap: requests to
	// it were lost), or packets have an invalid ICRC (a receiver drops
	// them).
	VerdictLoss Verdict = "loss"
	// VerdictRetransmitted: PSNs were sent again, with no gap or
	// sequence-error NAK in this flow: a loss after the capture point (the
	// NAKs are in the flow of the other direction), an ACK timeout, or an
	// RNR NAK.
	VerdictRetransmitted Verdict = "retransmitted"
	// VerdictReordered: packets arrived after higher PSNs, nothing was
	// sent twice and nothing is missing.
	VerdictReordered Verdict = "reordered"
	// VerdictNone: no sign of loss.
	VerdictNone Verdict = "none"
	// VerdictUnknown (""): the flow has no PSN sequence and no AETH (only
	// CNPs, or opcodes this package does not know).
	VerdictUnknown Verdict = ""
)

// Loss is what a flow's PSNs and AETHs say about lost and resent packets.
// Packets with an invalid ICRC are left out (a receiver drops them; their
// PSN cannot be trusted) and counted in FlowSummary.ICRCFailures.
type Loss struct {
	// Sequenced counts the packets that took part in the PSN analysis:
	// requests, RDMA READ responses and ATOMIC ACKNOWLEDGEs.
	Sequenced uint64
	// Retransmitted counts packets whose PSN had been seen before in the
	// flow (a PSN seen again; for a READ request, a PSN its responses
	// took).
	Retransmitted uint64
	// Missing counts PSNs the sequence skipped and that never came later
	// in the capture: lost before the capture point (or outside the
	// capture's time). Jumps between two RDMA READ responses of different
	// messages are not gaps (other requests' PSNs lie between them).
	Missing uint64
	// LostResent counts packets lost before the capture point and sent
	// again: seen for the first time below the highest PSN, in a
	// retransmission round (go-back-N): right after packets sent again, or
	// followed by a PSN seen before or by a jump forward over PSNs lost
	// again that stays at or below the highest PSN.
	LostResent uint64
	// OutOfOrder counts the other packets seen for the first time below
	// the highest PSN: reordered on the way. (A packet reordered on the way
	// and followed at once by a retransmission round over it reads as lost
	// and sent again.)
	OutOfOrder uint64
	// Gaps counts the times the sequence skipped ahead: a packet whose PSN
	// is beyond the one that would follow the packet before it (a gap
	// opened, or PSNs skipped again in a retransmission round), filled
	// later or not. A responder NAKs a PSN sequence error at most once per
	// gap (rxe_resp.c check_psn).
	Gaps uint64
	// Rewinds counts the times the sequence went back: a packet at or
	// below the highest PSN seen that does not follow the packet before
	// it. A go-back-N retransmission round is one rewind; so is a packet
	// reordered on the way.
	Rewinds uint64
	// NAKs counts the AETHs with a NAK syndrome, by code.
	NAKs NAKCounts
	// RNRNAKs counts receiver-not-ready NAKs (the responder had no
	// receive WQE: the request is sent again after the timer; not loss).
	RNRNAKs uint64
	// PMTU is the path MTU the flow's FIRST/MIDDLE packets show (0:
	// unknown); with it an RDMA READ request takes ceil(len/PMTU) PSNs.
	PMTU uint32
	// Verdict and Reason: the conclusion and the numbers behind it.
	Verdict Verdict
	Reason  string
}

// lossAcc is a flow's loss analysis input, as Add and Merge build it.
type lossAcc struct {
	req, resp seqLog
	naks      NAKCounts
	rnr       uint64
	acks      uint64 // ACKNOWLEDGE packets
	pmtu      uint32
}

// add records a decoded packet.
func (l *lossAcc) add(p *roce.Packet) {
	if p.ICRCStatus == roce.ICRCInvalid {
		return
	}
	op := p.BTH.Opcode
	switch c := seqClasses[op]; c {
	case seqRequest:
		l.req.add(p.BTH.PSN, c, 0)
	case seqRead:
		var n uint32
		if p.HasRETH {
			n = p.RETH.DMALen
		}
		l.req.add(p.BTH.PSN, c, n)
	case seqRespStart, seqRespCont:
		l.resp.add(p.BTH.PSN, c, 0)
	default:
		if op.Operation() == roce.OpAcknowledge && op.Info().Known {
			l.acks++
		}
	}
	if p.HasAETH {
		switch p.AETH.Kind() {
		case roce.AckKindNAK:
			l.naks.count(p.AETH.NAKCode())
		case roce.AckKindRNRNAK:
			l.rnr++
		}
	}
	if l.pmtu == 0 && pmtuOps[op] && validPMTU(p.PayloadLen) {
		l.pmtu = uint32(p.PayloadLen)
	}
}

func validPMTU(n int) bool {
	switch n {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// merge appends o, which came after l.
func (l *lossAcc) merge(o *lossAcc) {
	l.req.appendLog(o.req)
	l.resp.appendLog(o.resp)
	l.naks.add(o.naks)
	l.rnr += o.rnr
	l.acks += o.acks
	if l.pmtu == 0 {
		l.pmtu = o.pmtu
	}
}

// clone returns a copy that shares no memory with l.
func (l *lossAcc) clone() lossAcc {
	c := *l
	c.req = append(seqLog(nil), l.req...)
	c.resp = append(seqLog(nil), l.resp...)
	return c
}

// span is a set of PSNs [lo, hi] in the unwrapped PSN space.
type span struct{ lo, hi int64 }

// spanSet is a sorted list of disjoint, non-adjacent spans.
type spanSet []span

// find returns the index of the first span whose hi ≥ v.
func (s spanSet) find(v int64) int {
	return sort.Search(len(s), func(i int) bool { return s[i].hi >= v })
}

// overlap returns how many PSNs of [lo, hi] the set holds.
func (s spanSet) overlap(lo, hi int64) int64 {
	var n int64
	for i := s.find(lo); i < len(s) && s[i].lo <= hi; i++ {
		n += min(hi, s[i].hi) - max(lo, s[i].lo) + 1
	}
	return n
}

// insert adds [lo, hi].
func (s *spanSet) insert(lo, hi int64) {
	t := *s
	if n := len(t); n > 0 && t[n-1].hi+1 >= lo && t[n-1].lo <= lo {
		// the common case: at or next to the end
		t[n-1].hi = max(t[n-1].hi, hi)
		return
	}
	if n := len(t); n == 0 || t[n-1].hi+1 < lo {
		*s = append(t, span{lo, hi})
		return
	}
	i := sort.Search(len(t), func(i int) bool { return t[i].hi+1 >= lo })
	j := i
	for j < len(t) && t[j].lo <= hi+1 {
		lo, hi = min(lo, t[j].lo), max(hi, t[j].hi)
		j++
	}
	t = append(t[:i], append([]span{{lo, hi}}, t[j:]...)...)
	*s = t
}

// remove takes [lo, hi] out.
func (s *spanSet) remove(lo, hi int64) {
	t := *s
	i := t.find(lo)
	j := i
	for j < len(t) && t[j].lo <= hi {
		j++
	}
	if i == j {
		return
	}
	// spans i..j-1 meet [lo, hi]: keep what lies outside it
	var keep [2]span
	k := 0
	if t[i].lo < lo {
		keep[k] = span{t[i].lo, lo - 1}
		k++
	}
	if t[j-1].hi > hi {
		keep[k] = span{hi + 1, t[j-1].hi}
		k++
	}
	*s = append(t[:i], append(keep[:k:k], t[j:]...)...)
}

// size returns the number of PSNs in the set.
func (s spanSet) size() int64 {
	var n int64
	for _, r := range s {
		n += r.hi - r.lo + 1
	}
	return n
}

// seqState replays one PSN sequence.
type seqState struct {
	started bool
	hi      int64 // highest PSN seen or taken (a READ takes one per response packet)
	next    int64 // the PSN that follows the element before
	seen    spanSet
	holes   spanSet
	pmtu    uint32
	// an RDMA READ whose number of PSNs is not known yet (no PMTU): it
	// takes every PSN up to the next element, at most maxReadSpan
	readOpen bool
	readAt   int64
	readMax  int64
	// late packets whose successor has not come yet, the last of them,
	// and whether they came in a retransmission round (right after
	// packets sent again); whether the element before was at or below
	// the highest PSN
	late       uint64
	lateLast   int64
	lateRound  bool
	prevBehind bool

	out *Loss
}

// unwrap places a 24-bit PSN next to the highest PSN seen.
func (s *seqState) unwrap(psn uint32) int64 {
	d := int64((psn - uint32(s.hi)) & psnMask)
	if d >= 1<<23 {
		d -= 1 << 24
	}
	return s.hi + d
}

// readSpan returns how many PSNs an RDMA READ of n bytes takes: one per
// response packet, at least one (a zero-length READ has one response).
func readSpan(n, pmtu uint32) int64 {
	if n == 0 {
		return 1
	}
	return (int64(n) + int64(pmtu) - 1) / int64(pmtu)
}

// element processes one packet of the sequence.
func (s *seqState) element(psn uint32, c seqClass, dmaLen uint32) {
	s.out.Sequenced++
	if !s.started {
		s.started = true
		s.hi = int64(psn)
		s.first(int64(psn), c, dmaLen)
		return
	}
	q := s.unwrap(psn)
	follows := q == s.next
	if s.readOpen && q > s.readAt {
		// (a rewind to the READ or before it leaves it open: the
		// retransmission round sends it again)
		s.readOpen = false
		// the READ before took the PSNs up to this one (at most its
		// largest span); what it did not take is a gap
		end := s.readAt + s.readMax - 1
		if q-1 <= end {
			end, follows = q-1, true
		}
		if end > s.readAt {
			s.take(s.readAt+1, end)
		}
	}
	if !follows && q > s.next && c != seqRespStart {
		s.out.Gaps++
	}
	if q > s.hi {
		s.settleLate(false)
		if q > s.hi+1 && c != seqRespStart {
			s.holes.insert(s.hi+1, q-1)
		}
		s.hi = q
		s.prevBehind = false
	} else {
		if !follows {
			// late packets before a jump forward, at or below the highest
			// PSN, were in a retransmission round that skipped PSNs lost
			// again; before a jump back (to themselves or earlier), they
			// came late on their own
			s.settleLate(q > s.lateLast)
			s.out.Rewinds++
		}
		s.behind(q, q, follows && s.prevBehind)
		s.prevBehind = true
	}
	s.first(q, c, dmaLen)
	s.trim()
}

// behind processes PSNs lo..top, at or below the highest PSN, each
// following the one before: a PSN seen before is a retransmission, a PSN
// not seen before is late. Late PSNs followed by one seen before, or by a
// jump forward that stays at or below the highest PSN, came in a
// retransmission round (the sender went back): lost before the capture
// point and sent again. Late PSNs followed by a new PSN or a jump back
// came late on their own: reordered (settleLate counts them).
func (s *seqState) behind(lo, top int64, inRound bool) {
	for from := lo; from <= top; {
		i := s.seen.find(from)
		if i < len(s.seen) && s.seen[i].lo <= from {
			end := min(top, s.seen[i].hi)
			s.settleLate(true)
			s.out.Retransmitted += uint64(end - from + 1)
			from = end + 1
			continue
		}
		end := top
		if i < len(s.seen) {
			end = min(top, s.seen[i].lo-1)
		}
		if s.late == 0 {
			// late packets right after packets sent again are in the
			// same retransmission round
			s.lateRound = from > lo || inRound
		}
		s.late += uint64(end - from + 1)
		s.lateLast = end
		s.holes.remove(from, end)
		from = end + 1
	}
	s.seen.insert(lo, top)
}

// settleLate counts the late packets waiting for what follows them: sent
// again after a loss (in a retransmission round, or followed by a PSN seen
// before or a jump forward over PSNs lost again) or reordered.
func (s *seqState) settleLate(resent bool) {
	if resent || s.lateRound {
		s.out.LostResent += s.late
	} else {
		s.out.OutOfOrder += s.late
	}
	s.late = 0
}

// first records q as seen and, for a READ, the PSNs it takes.
func (s *seqState) first(q int64, c seqClass, dmaLen uint32) {
	s.seen.insert(q, q)
	s.next = q + 1
	if c != seqRead {
		return
	}
	if s.pmtu != 0 {
		if n := readSpan(dmaLen, s.pmtu); n > 1 {
			s.take(q+1, q+n-1)
		}
		return
	}
	// no PMTU: the READ takes up to ceil(len/256) PSNs, decided by the next
	// element
	if n := readSpan(dmaLen, 256); n > 1 {
		s.readOpen, s.readAt, s.readMax = true, q, n
	}
}

// take marks [lo, hi], the PSNs after its first that a READ takes, as
// seen (a READ seen again was counted once, by its first PSN) and raises
// the highest PSN.
func (s *seqState) take(lo, hi int64) {
	if hi > s.hi {
		s.hi = hi
	}
	s.holes.remove(lo, hi)
	s.seen.insert(lo, hi)
	s.next = hi + 1
}

// run processes the elements of one run.
func (s *seqState) run(r psnRun) {
	if r.class == seqRead {
		for i := uint32(0); i < r.n; i++ {
			s.element((r.psn+i*r.stride)&psnMask, r.class, r.dmaLen)
		}
		return
	}
	s.element(r.psn, r.class, 0)
	if r.n == 1 {
		return
	}
	if s.readOpen {
		// a READ waits for the element that decides its length, which
		// may be in this run
		for i := uint32(1); i < r.n; i++ {
			s.element((r.psn+i)&psnMask, r.class, 0)
		}
		return
	}
	// the rest follow one another: PSNs q+1 .. q+n-1
	lo := s.next
	hi := lo + int64(r.n) - 2
	s.out.Sequenced += uint64(r.n - 1)
	if top := min(hi, s.hi); lo <= top {
		s.behind(lo, top, s.prevBehind)
		s.prevBehind = true
	}
	if hi > s.hi {
		s.settleLate(false)
		s.seen.insert(max(lo, s.hi+1), hi)
		s.hi = hi
		s.prevBehind = false
	}
	s.next = hi + 1
	s.trim()
}

// maxSpans bounds the seen PSN ranges and the gaps a sequence remembers,
// so that a capture whose PSNs jump at random (damage, a fuzzer) costs
// time and memory in proportion to its packets: beyond it, the two oldest
// seen ranges become one (PSNs between them would then read as sent
// again, not late) and the oldest gap is counted missing and forgotten.
// A real flow has a handful of each: go-back-N fills its gaps at once.
const maxSpans = 1024

func (s *seqState) trim() {
	for len(s.seen) > maxSpans {
		s.seen[1].lo = s.seen[0].lo
		s.seen = s.seen[1:]
	}
	for len(s.holes) > maxSpans {
		h := s.holes[0]
		s.out.Missing += uint64(h.hi - h.lo + 1)
		s.holes = s.holes[1:]
	}
}

// end closes the sequence: gaps never filled are missing.
func (s *seqState) end() {
	s.settleLate(false)
	s.out.Missing += uint64(s.holes.size())
}

// analyze replays the flow's sequences.
func (l *lossAcc) analyze(f *FlowSummary, pmtu uint32) Loss {
	out := Loss{NAKs: l.naks, RNRNAKs: l.rnr, PMTU: pmtu}
	for _, log := range []seqLog{l.req, l.resp} {
		s := seqState{out: &out, pmtu: pmtu}
		for _, r := range log {
			s.run(r)
		}
		s.end()
	}
	out.Verdict, out.Reason = verdict(f, &out, l.acks)
	return out
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// verdict concludes and says why.
func verdict(f *FlowSummary, l *Loss, acks uint64) (Verdict, string) {
	if l.Sequenced == 0 && acks == 0 && f.ICRCFailures == 0 {
		what := "no request or response with a PSN"
		if f.CNPs == f.Packets {
			what = "CNPs only"
		}
		return VerdictUnknown, "no PSN sequence to judge: " + what
	}
	var why []string
	v := VerdictNone
	if l.Missing > 0 {
		s := plural(l.Missing, "PSN missing", "PSNs missing") + " (skipped and never seen later: lost before the capture point)"
		if f.HasSrcQP {
			s += "; UD numbers a QP's packets to every destination together, so a gap is loss only if the QP sent to this one alone"
		}
		why = append(why, s)
		v = VerdictLoss
	}
	if n := l.NAKs.PSNSequenceError; n > 0 {
		why = append(why, plural(n, "PSN sequence error NAK", "PSN sequence error NAKs")+" (the responder saw a gap: requests to it were lost)")
		v = VerdictLoss
	}
	if l.LostResent > 0 {
		why = append(why, plural(l.LostResent, "packet", "packets")+" lost before the capture point and sent again (first seen late, in a round that resent PSNs seen before)")
		v = VerdictLoss
	}
	if f.ICRCFailures > 0 {
		s := plural(f.ICRCFailures, "packet", "packets") + " with an invalid ICRC (a receiver drops them)"
		if f.Version == 1 {
			s += "; the RoCE v1 ICRC rule is unconfirmed"
		}
		why = append(why, s)
		v = VerdictLoss
	}
	if l.Retransmitted > 0 {
		s := plural(l.Retransmitted, "packet", "packets") + " sent again (PSN seen before) in " + plural(l.Rewinds, "rewind", "rewinds")
		if v == VerdictNone {
			s += ", with no gap and no sequence-error NAK in this flow: a loss after the capture point (its NAKs travel in the other direction), an ACK timeout or an RNR NAK"
			v = VerdictRetransmitted
		}
		why = append(why, s)
	}
	if l.OutOfOrder > 0 {
		why = append(why, plural(l.OutOfOrder, "packet", "packets")+" out of order (first seen after a higher PSN, and not in a retransmission round: reordered on the way)")
		if v == VerdictNone {
			v = VerdictReordered
		}
	}
	if l.RNRNAKs > 0 {
		why = append(why, plural(l.RNRNAKs, "RNR NAK", "RNR NAKs")+" (receiver not ready: no receive posted; the request is sent again, not lost)")
	}
	if other := l.NAKs.Total() - l.NAKs.PSNSequenceError; other > 0 {
		why = append(why, plural(other, "NAK", "NAKs")+" reporting an error, not loss (invalid request, remote access or operational error)")
	}
	if f.CE > 0 || f.CNPs > 0 {
		why = append(why, fmt.Sprintf("congestion, not loss: %s, %s", plural(f.CE, "packet CE-marked", "packets CE-marked"), plural(f.CNPs, "CNP", "CNPs")))
	}
	if v != VerdictNone {
		return v, strings.Join(why, "; ")
	}
	ok := "every PSN once and in order"
	if l.Sequenced == 0 {
		ok = "ACKs only"
	}
	if l.NAKs.Total() == 0 && l.RNRNAKs == 0 {
		ok += ", no NAK"
	}
	return v, strings.Join(append([]string{ok}, why...), "; ")
}
