package capture

import (
	"math/bits"
	"net/netip"
	"sort"

	"github.com/roce-probe/roce-probe/roce"
)

// FlowKey identifies a RoCE flow: addresses, UDP ports and QPs. SrcQP is
// known only for packets with a DETH (UD, RD); HasSrcQP says so.
type FlowKey struct {
	Version  int
	Src, Dst netip.Addr
	SrcPort  uint16
	DstPort  uint16
	DestQP   uint32
	SrcQP    uint32
	HasSrcQP bool
}

// FlowSummary is what a capture showed for one flow.
type FlowSummary struct {
	FlowKey
	Packets       uint64
	Bytes         uint64 // frame bytes as on the wire (capture "original length")
	FirstPSN      uint32
	LastPSN       uint32
	VLANs         []uint16 // outermost VLAN IDs seen, sorted
	Untagged      uint64   // packets without a VLAN tag
	PCPs          []uint8  // PCPs of the outermost tag, sorted
	DSCPs         []uint8
	ECNs          []uint8
	CE            uint64 // packets with ECN 3 (congestion experienced)
	CNPs          uint64 // CNP packets (opcode 0x81)
	ICRCFailures  uint64 // packets whose ICRC is invalid
	ICRCUnchecked uint64 // packets whose ICRC could not be checked (truncated)
	// Loss is what the flow's PSNs and AETHs say about lost and resent
	// packets, and the verdict.
	Loss Loss
}

type flowAcc struct {
	s     FlowSummary
	loss  lossAcc
	vlans [4096 / 64]uint64
	pcps  uint8
	dscps uint64
	ecns  uint8
}

// Summary accumulates per-flow statistics over decoded packets, in the
// order flows first appear.
type Summary struct {
	flows map[FlowKey]*flowAcc
	order []*flowAcc
	cache [64]*flowAcc // recently used flows, direct-mapped, to skip hashing
	spare []*flowAcc   // emptied by Reset, for reuse
}

// NewSummary returns an empty Summary.
func NewSummary() *Summary { return &Summary{flows: map[FlowKey]*flowAcc{}} }

// KeyOf returns the flow a packet belongs to.
func KeyOf(p *roce.Packet) FlowKey {
	k := FlowKey{Version: p.Version, Src: p.Src, Dst: p.Dst, SrcPort: p.SrcPort, DstPort: p.DstPort, DestQP: p.BTH.DestQP}
	if p.HasDETH {
		k.SrcQP, k.HasSrcQP = p.SrcQP, true
	}
	return k
}

// isFlowOf says whether p belongs to the flow k (KeyOf(p) == k, srcQP
// being p's source QP or 0), field by field with the likeliest difference
// first, without building p's key: a FlowKey built field by field and then
// copied whole makes the CPU wait for the stores to drain before the copy's
// wide loads (a failed store-to-load forwarding, in Add for every packet).
func (k *FlowKey) isFlowOf(p *roce.Packet, srcQP uint32) bool {
	return k.DestQP == p.BTH.DestQP && k.SrcPort == p.SrcPort && k.SrcQP == srcQP && k.Src == p.Src && k.Dst == p.Dst &&
		k.DstPort == p.DstPort && k.Version == p.Version && k.HasSrcQP == p.HasDETH
}

// Add counts a packet of wireLen bytes.
func (s *Summary) Add(p *roce.Packet, wireLen int) {
	var srcQP uint32
	if p.HasDETH {
		srcQP = p.SrcQP
	}
	slot := &s.cache[(p.BTH.DestQP^srcQP^uint32(p.SrcPort)^uint32(p.SrcPort>>6))&63]
	a := *slot
	if a == nil || !a.s.FlowKey.isFlowOf(p, srcQP) {
		k := KeyOf(p)
		a = s.flows[k]
		if a == nil {
			if n := len(s.spare); n > 0 {
				a, s.spare = s.spare[n-1], s.spare[:n-1]
				*a = flowAcc{s: FlowSummary{FlowKey: k, FirstPSN: p.BTH.PSN}}
			} else {
				a = &flowAcc{s: FlowSummary{FlowKey: k, FirstPSN: p.BTH.PSN}}
			}
			s.flows[k] = a
			s.order = append(s.order, a)
		}
		*slot = a
	}
	a.s.Packets++
	a.s.Bytes += uint64(wireLen)
	a.s.LastPSN = p.BTH.PSN
	if p.NumVLANs > 0 {
		v := p.VLANs[0]
		a.vlans[v.ID/64] |= 1 << (v.ID % 64)
		a.pcps |= 1 << v.PCP
	} else {
		a.s.Untagged++
	}
	a.dscps |= 1 << p.DSCP()
	a.ecns |= 1 << p.ECN()
	if p.ECN() == 3 {
		a.s.CE++
	}
	if p.BTH.Opcode == roce.OpcodeCNP {
		a.s.CNPs++
	}
	switch p.ICRCStatus {
	case roce.ICRCInvalid:
		a.s.ICRCFailures++
	case roce.ICRCUnchecked:
		a.s.ICRCUnchecked++
	}
	a.loss.add(p)
}

// Flows returns the flows in the order they first appeared, each with its
// loss analysis.
func (s *Summary) Flows() []FlowSummary {
	out := make([]FlowSummary, 0, len(s.order))
	pmtus := s.pathMTUs()
	for _, a := range s.order {
		f := a.s
		f.VLANs = []uint16{}
		for i, w := range a.vlans {
			for w != 0 {
				b := bits.TrailingZeros64(w)
				f.VLANs = append(f.VLANs, uint16(i*64+b))
				w &= w - 1
			}
		}
		f.PCPs = setBits8(a.pcps)
		f.ECNs = setBits8(a.ecns)
		f.DSCPs = []uint8{}
		for w := a.dscps; w != 0; w &= w - 1 {
			f.DSCPs = append(f.DSCPs, uint8(bits.TrailingZeros64(w)))
		}
		sort.Slice(f.VLANs, func(i, j int) bool { return f.VLANs[i] < f.VLANs[j] })
		pmtu := a.loss.pmtu
		if pmtu == 0 {
			pmtu = pmtus[addrPair{f.Version, f.Dst, f.Src}]
		}
		f.Loss = a.loss.analyze(&f, pmtu)
		out = append(out, f)
	}
	return out
}

// addrPair is a direction between two addresses.
type addrPair struct {
	version  int
	src, dst netip.Addr
}

// pathMTUs returns, per direction, the path MTU its flows' FIRST and
// MIDDLE packets show, when they all agree. A flow whose own packets show
// none (RDMA READ requests only) takes the one of the other direction: the
// READ responses of the same connection carry it.
func (s *Summary) pathMTUs() map[addrPair]uint32 {
	m := map[addrPair]uint32{}
	for _, a := range s.order {
		if a.loss.pmtu == 0 {
			continue
		}
		k := addrPair{a.s.Version, a.s.Src, a.s.Dst}
		if v, ok := m[k]; ok && v != a.loss.pmtu {
			m[k] = 0 // flows disagree: unknown
			continue
		}
		m[k] = a.loss.pmtu
	}
	return m
}

func setBits8(w uint8) []uint8 {
	out := []uint8{}
	for ; w != 0; w &= w - 1 {
		out = append(out, uint8(bits.TrailingZeros8(w)))
	}
	return out
}

// Reset empties s for reuse.
func (s *Summary) Reset() {
	clear(s.flows)
	s.spare = append(s.spare, s.order...)
	clear(s.order)
	s.order = s.order[:0]
	s.cache = [64]*flowAcc{}
}

// Merge adds the flows of o to s. o must summarise packets that came after
// every packet of s: a flow's first PSN stays s's, its last PSN becomes
// o's, and flows new in o follow s's in o's order. Summarising a capture in
// consecutive pieces and merging them in order gives what one Summary over
// the whole capture gives.
func (s *Summary) Merge(o *Summary) {
	for _, b := range o.order {
		a := s.flows[b.s.FlowKey]
		if a == nil {
			c := *b
			c.loss = b.loss.clone()
			s.flows[b.s.FlowKey] = &c
			s.order = append(s.order, &c)
			continue
		}
		a.s.Packets += b.s.Packets
		a.s.Bytes += b.s.Bytes
		a.s.LastPSN = b.s.LastPSN
		a.s.Untagged += b.s.Untagged
		a.s.CE += b.s.CE
		a.s.CNPs += b.s.CNPs
		a.s.ICRCFailures += b.s.ICRCFailures
		a.s.ICRCUnchecked += b.s.ICRCUnchecked
		for i, w := range b.vlans {
			a.vlans[i] |= w
		}
		a.pcps |= b.pcps
		a.dscps |= b.dscps
		a.ecns |= b.ecns
		a.loss.merge(&b.loss)
	}
}
