package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
)

// HopStatus says how a hop answered.
type HopStatus string

// Hop statuses.
const (
	// HopTimeExceeded: a router answered with Time Exceeded; its quote
	// shows the probe as it arrived there.
	HopTimeExceeded HopStatus = "time-exceeded"
	// HopDestination: the destination answered, with a probe reply (a
	// `roce-probe listen` or agent there: every marking that arrived,
	// VLAN and PCP included) or a Port Unreachable (its quote).
	HopDestination HopStatus = "destination"
	// HopUnreachable: a router answered Destination Unreachable: the
	// probe went no further.
	HopUnreachable HopStatus = "unreachable"
	// HopSilent: nothing answered any try (ICMP off or rate-limited,
	// or the probe lost).
	HopSilent HopStatus = "silent"
)

// Hop is what one TTL of one path showed.
type Hop struct {
	TTL     int
	Status  HopStatus
	Address netip.Addr // who answered; invalid for a silent hop
	RTT     time.Duration
	Tries   int // probes sent for this TTL
	// Quote is the ICMP message's quote of the probe (nil for a silent
	// hop and for a destination that answered with a probe reply).
	Quote *Quote
	// Arrived are the markings the destination's listener saw arrive
	// (nil unless it answered with a probe reply).
	Arrived *probe.Markings
	// ReplyTTL is the TTL / hop limit the answer arrived here with (0:
	// not known): with the sender's initial value (usually 64 or 255)
	// it tells how many hops the answer came back over.
	ReplyTTL uint8
}

// DSCP returns the DSCP this hop saw arrive, and whether it is known.
func (h Hop) DSCP() (uint8, bool) {
	switch {
	case h.Arrived != nil:
		return h.Arrived.DSCP, true
	case h.Quote != nil && h.Quote.HasTOS:
		return h.Quote.DSCP, true
	}
	return 0, false
}

// ECN returns the ECN field this hop saw arrive, and whether it is known.
func (h Hop) ECN() (uint8, bool) {
	switch {
	case h.Arrived != nil:
		return h.Arrived.ECN, true
	case h.Quote != nil && h.Quote.HasTOS:
		return h.Quote.ECN, true
	}
	return 0, false
}

// QuotedTTL returns the TTL / hop limit the probe arrived at this hop
// with (1 at a router that answered Time Exceeded, unless it does not
// decrement first), and whether it is known.
func (h Hop) QuotedTTL() (uint8, bool) {
	switch {
	case h.Arrived != nil:
		return h.Arrived.TTL, true
	case h.Quote != nil && h.Quote.HasTTL:
		return h.Quote.TTL, true
	}
	return 0, false
}

// ReturnHops estimates how many routers the answer crossed on its way
// back: the distance from the usual initial TTLs (64, 128, 255) to
// ReplyTTL; false when ReplyTTL is not known. A router whose return path
// differs from the forward path shows a number other than TTL-1.
func (h Hop) ReturnHops() (int, bool) {
	if h.ReplyTTL == 0 {
		return 0, false
	}
	for _, initial := range []int{64, 128, 255} {
		if int(h.ReplyTTL) <= initial {
			return initial - int(h.ReplyTTL), true
		}
	}
	return 0, false
}

// Change is one marking that differs between two hops: it changed after
// Before (TTL 0: this host) and before At arrived, on the link between
// them or in either router. Silent hops between them hide where exactly.
type Change struct {
	Field      string // "dscp", "ecn", "vlan", "pcp", "tagged"
	From, To   int    // tagged: 1 tagged, 0 untagged
	Before, At int    // TTLs of the hops (0: this host)
	// BeforeAddress and AtAddress are the hops' addresses (Before 0: the
	// source address).
	BeforeAddress, AtAddress netip.Addr
}

// String says what changed where.
func (c Change) String() string {
	where := fmt.Sprintf("between hop %d (%s) and hop %d (%s)", c.Before, c.BeforeAddress, c.At, c.AtAddress)
	if c.Before == 0 {
		where = fmt.Sprintf("between this host (%s) and hop %d (%s)", c.BeforeAddress, c.At, c.AtAddress)
	}
	if c.At-c.Before > 1 {
		where += fmt.Sprintf(", %d silent hop(s) between", c.At-c.Before-1)
	}
	if c.congestion() {
		where += ": a congested queue's CE mark (RFC 3168), not a remark"
	}
	return fmt.Sprintf("%s %d→%d %s", c.Field, c.From, c.To, where)
}

// congestion says whether c is a change Remark does not count: an ECN
// congestion mark.
func (c Change) congestion() bool { return c.From != c.To && !c.Remark() }

// Remark reports whether c is a marking rewritten on the way — what a
// remarking or bleaching hop does, what the agent's automatic traces keep
// and fabric localises — rather than a congested queue's ECN mark. Every
// DSCP, VLAN, PCP and tagging change is one; an ECN change is one unless
// qos.CongestionMark explains it: ECT(0) or ECT(1) → CE (RFC 3168
// section 5: a congested router marks instead of dropping, what DCQCN
// relies on), and CE → ECT between two routers (Before > 0: each hop's
// probe is its own packet, and the later one met no congested queue). So
// ECT → Not-ECT (bleached), Not-ECT → ECT or CE, ECT(0) ↔ ECT(1) and a CE
// this host sent arriving as ECT are remarks. A remark behind a CE mark is
// missed: sent ECT(0), CE at one hop and ECT(1) at the next shows CE →
// ECT(1).
func (c Change) Remark() bool { return qos.Remark(c.Field, c.From, c.To, c.Before == 0) }

// MarshalJSON writes the change as docs/json.md's "trace_change": field,
// from_value, to_value, before_ttl, before_address, at_ttl, at_address
// (null when not known), ce_marked (a congested queue's ECN CE mark: not Remark)
// and message (String).
func (c Change) MarshalJSON() ([]byte, error) {
	addr := func(a netip.Addr) *string {
		if !a.IsValid() {
			return nil
		}
		s := a.String()
		return &s
	}
	return json.Marshal(struct {
		Field         string  `json:"field"`
		From          int     `json:"from_value"`
		To            int     `json:"to_value"`
		BeforeTTL     int     `json:"before_ttl"`
		BeforeAddress *string `json:"before_address"`
		AtTTL         int     `json:"at_ttl"`
		AtAddress     *string `json:"at_address"`
		CEMarked      bool    `json:"ce_marked"`
		Message       string  `json:"message"`
	}{c.Field, c.From, c.To, c.Before, addr(c.BeforeAddress), c.At, addr(c.AtAddress), c.congestion(), c.String()})
}

// Changes compares each hop's markings with the last hop before it that
// showed them, starting from sent at this host (src): DSCP and ECN at
// every hop whose quote shows them, and VLAN, PCP and tagging at a
// destination that answered with a probe reply (routers' quotes hold no
// Ethernet header). hops must be in TTL order.
func Changes(sent probe.Markings, src netip.Addr, hops []Hop) []Change {
	type last struct {
		v    int
		ttl  int
		addr netip.Addr
	}
	dscp := last{int(sent.DSCP), 0, src}
	ecn := last{int(sent.ECN), 0, src}
	var out []Change
	check := func(l *last, field string, v int, h Hop) {
		if v != l.v {
			out = append(out, Change{Field: field, From: l.v, To: v, Before: l.ttl, At: h.TTL, BeforeAddress: l.addr, AtAddress: h.Address})
		}
		*l = last{v, h.TTL, h.Address}
	}
	for _, h := range hops {
		if v, ok := h.DSCP(); ok {
			check(&dscp, "dscp", int(v), h)
		}
		if v, ok := h.ECN(); ok {
			check(&ecn, "ecn", int(v), h)
		}
		if a := h.Arrived; a != nil {
			at := func(field string, from, to int) {
				if from != to {
					out = append(out, Change{Field: field, From: from, To: to, Before: 0, At: h.TTL, BeforeAddress: src, AtAddress: h.Address})
				}
			}
			at("tagged", b2i(sent.Tagged), b2i(a.Tagged))
			if sent.Tagged && a.Tagged {
				at("vlan", int(sent.VLAN), int(a.VLAN))
				at("pcp", int(sent.PCP), int(a.PCP))
			}
		}
	}
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Reached reports whether the last hop is the destination.
func Reached(hops []Hop) bool {
	return len(hops) > 0 && hops[len(hops)-1].Status == HopDestination
}

// Transit returns the hops of a trace between the source's first router
// and the destination's last one: in a leaf-spine fabric, where hosts are
// attached to routed ToRs, the spine a path between two ToRs crosses (in
// a three-tier Clos, the aggregation and spine hops). When the trace
// reached the destination at TTL d, they are TTLs 2 .. d−2 (none for a
// destination one or two routers away: under the same ToR, or ToRs linked
// directly); when it did not, TTL 2 alone, the first hop past the
// source's ToR. Silent hops are included as they are. hops must be in
// TTL order from TTL 1.
func Transit(hops []Hop) []Hop {
	if Reached(hops) {
		d := len(hops)
		if d < 4 {
			return nil
		}
		return hops[1 : d-2]
	}
	if len(hops) < 2 {
		return nil
	}
	return hops[1:2]
}

// SamePath reports whether two traces took the same path: they end at
// the same TTL the same way, every TTL where both answered was answered
// by the same address (a silent hop matches any), and showed the same
// DSCP and ECN where both show them. The markings tell apart paths that
// differ only at a silent hop (a spine with ICMP off) when one of them
// changes a marking; a fabric that changes markings from packet to packet
// (CE under congestion) can split one path in two.
func SamePath(a, b []Hop) bool {
	if len(a) != len(b) || Reached(a) != Reached(b) {
		return false
	}
	for i := range a {
		if a[i].Address.IsValid() && b[i].Address.IsValid() && a[i].Address != b[i].Address {
			return false
		}
		d1, ok1 := a[i].DSCP()
		d2, ok2 := b[i].DSCP()
		e1, _ := a[i].ECN()
		e2, _ := b[i].ECN()
		if ok1 && ok2 && (d1 != d2 || e1 != e2) {
			return false
		}
	}
	return true
}

// Path is one distinct path: the hops of its first port's trace and
// every port that took it.
type Path struct {
	Sport  uint16   // the port whose trace Hops is
	Sports []uint16 // every port traced that took this path, in the order tried
	Hops   []Hop
}

// FlowLabels returns, for each of p.Sports, the smallest non-zero flow
// label whose UDP source port it is (FlowLabelFor).
func (p Path) FlowLabels() []uint32 {
	out := make([]uint32, 0, len(p.Sports))
	for _, s := range p.Sports {
		if l, ok := FlowLabelFor(s); ok {
			out = append(out, l)
		}
	}
	return out
}

// Group adds the trace of port sport to the paths: to the first path it
// is the same as (SamePath; silent hops of the path that the trace
// answered are filled in), or as a new path. It returns the paths and
// whether the trace found a new one.
func Group(paths []Path, sport uint16, hops []Hop) ([]Path, bool) {
	for i := range paths {
		if SamePath(paths[i].Hops, hops) {
			p := &paths[i]
			p.Sports = append(p.Sports, sport)
			for j := range p.Hops {
				if p.Hops[j].Status == HopSilent && hops[j].Status != HopSilent {
					p.Hops[j] = hops[j]
				}
			}
			return paths, false
		}
	}
	return append(paths, Path{Sport: sport, Sports: []uint16{sport}, Hops: slices.Clone(hops)}), true
}

// FlowLabelFor returns the smallest non-zero flow label that
// roce.FlowLabelToUDPSourcePort (the kernel's rdma_flow_label_to_udp_sport,
// rdma-core's ibv_flow_label_to_udp_sport) folds into port, and true;
// false for a port outside 0xC000..0xFFFF, which no flow label gives.
// Each such port has 64 labels: l, l ^ 1<<14 ^ 1, ...
func FlowLabelFor(port uint16) (uint32, bool) {
	if port < roce.MinUDPSourcePort {
		return 0, false
	}
	lo := uint32(port & 0x3fff)
	if lo != 0 {
		return lo, true // high bits 0: lo ^ 0 = lo
	}
	// lo 0: label 0 means "no flow label"; the next is hi 1, lo 1.
	return 1<<14 | 1, true
}

// Ports returns n UDP source ports to find paths with: first (the ports
// asked for, in order), then those of flow labels 1, 2, 3, ... that are
// not yet in the list, so that every port tried is one an application
// can ask for with a flow label.
func Ports(first []uint16, n int) []uint16 {
	out := make([]uint16, 0, n)
	seen := map[uint16]bool{}
	for _, p := range first {
		if len(out) == n {
			return out
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for l := uint32(1); len(out) < n && l <= 0xfffff; l++ {
		p := roce.FlowLabelToUDPSourcePort(l)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// Confidence is the probability with which PortsWithoutNewPath's rule
// stops only once every path is found, if ECMP spreads ports evenly.
const Confidence = 0.95

// PortsWithoutNewPath is how many ports in a row must find no new path,
// after found distinct paths, before a path search stops: a coupon
// collector's bound. Were there one more path, an even ECMP hash would
// send each new port to an unseen path with probability at least
// 1/(found+1), so m ports in a row all miss it with probability at most
// (found/(found+1))^m; the smallest m that makes this ≤ 1-Confidence (5%)
// is returned: 5 after 1 path, 8 after 2, 11 after 3, 14 after 4.
// Uneven hashing (weights, polarisation) needs more: give more ports.
// (fleet.SportCount answers the other question: how many ports reach
// every one of a known number of paths.)
func PortsWithoutNewPath(found int) int {
	if found < 1 {
		found = 1
	}
	return int(math.Ceil(math.Log(1-Confidence) / math.Log(float64(found)/float64(found+1))))
}
