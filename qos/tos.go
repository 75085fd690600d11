package qos

import "fmt"

// ECN is the two-bit Explicit Congestion Notification field of the IP TOS /
// IPv6 traffic-class byte (RFC 3168): the low two bits of an AH's
// traffic_class.
type ECN uint8

// ECN codepoints (RFC 3168 §5).
const (
	NotECT ECN = 0 // 00: not ECN-capable; switches drop instead of marking
	ECT1   ECN = 1 // 01: ECN-capable transport (1)
	ECT0   ECN = 2 // 10: ECN-capable transport (0), what DCQCN senders use
	CE     ECN = 3 // 11: congestion experienced (set by switches, not senders)
)

// String returns the RFC 3168 name: "Not-ECT", "ECT(1)", "ECT(0)" or "CE".
func (e ECN) String() string {
	switch e {
	case NotECT:
		return "Not-ECT"
	case ECT1:
		return "ECT(1)"
	case ECT0:
		return "ECT(0)"
	case CE:
		return "CE"
	}
	return fmt.Sprintf("ECN(%d)", uint8(e))
}

// IsECT reports whether e marks the packet ECN-capable (ECT(0) or ECT(1)).
func (e ECN) IsECT() bool { return e == ECT0 || e == ECT1 }

// CongestionMark reports whether an ECN field seen as from and then as to
// is a congested queue's doing rather than a rewrite. RFC 3168 section 5
// has a router whose queue is congested set CE in a packet that is
// ECN-capable (ECT(0) or ECT(1)) instead of dropping it — the signal DCQCN
// reacts to, normal on a loaded RoCE fabric — so ECT → CE is a congestion
// mark. samePacket false says from and to were seen on two packets sent
// alike (two hops of a trace: each TTL's probe is its own packet): then CE
// → ECT(0) or ECT(1) is one too, the later packet having met no congested
// queue where the earlier one did. Every other change is a rewrite: ECN
// bleached (ECT or CE → Not-ECT), set on a packet sent Not-ECT (RFC 3168
// has a router drop a Not-ECT packet, never mark it), ECT(0) ↔ ECT(1), and
// on one packet CE → ECT (the mark cleared). No change (from == to) is
// neither: false.
func CongestionMark(from, to ECN, samePacket bool) bool {
	switch {
	case from.IsECT() && to == CE:
		return true
	case from == CE && to.IsECT():
		return !samePacket
	}
	return false
}

// Remark reports whether a marking field seen as from and then as to was
// rewritten on the way — what a remarking or bleaching hop does, what
// roce-probe's traces and localisation call a remark — rather than left
// alone (from == to) or marked by a congested queue: an ECN change that
// CongestionMark explains (samePacket as there). field is the marking's
// name as the JSON vocabulary has it ("ecn", "dscp", "pcp", "vlan", …):
// a change of any field but "ecn" is a remark. The one home of the rule:
// trace.Change.Remark and fabric's reading of the agents' traced changes
// call it.
func Remark(field string, from, to int, samePacket bool) bool {
	if from == to {
		return false
	}
	return field != "ecn" || !CongestionMark(ECN(from), ECN(to), samePacket)
}

// ECN marshals to JSON as its number (0..3), as every ecn key of
// roce-probe's JSON is; the name goes in a separate ecn_name key
// (docs/json.md).

// DSCP returns the Differentiated Services Code Point of a traffic-class /
// TOS byte: its upper six bits (RFC 2474).
func DSCP(trafficClass uint8) uint8 { return trafficClass >> 2 }

// ECNOf returns the ECN bits of a traffic-class / TOS byte: its lower two bits.
func ECNOf(trafficClass uint8) ECN { return ECN(trafficClass & 3) }

// TrafficClass builds the traffic-class / TOS byte from a DSCP (0..63) and
// an ECN codepoint (0..3). It is the inverse of DSCP and ECNOf.
func TrafficClass(dscp uint8, ecn ECN) (uint8, error) {
	if dscp > 63 {
		return 0, fmt.Errorf("qos: dscp %d is out of range: want 0..63", dscp)
	}
	if ecn > 3 {
		return 0, fmt.Errorf("qos: ecn %d is out of range: want 0..3", ecn)
	}
	return dscp<<2 | uint8(ecn), nil
}

// TOSTable selects the kernel's ip_tos2prio table.
type TOSTable int

// The two ip_tos2prio tables the kernel has shipped (net/ipv4/route.c).
const (
	// TOSTableCurrent is current mainline: {0,0,0,0, 2,2,2,2, 6,6,6,6, 4,4,4,4}.
	TOSTableCurrent TOSTable = iota
	// TOSTableOld is the older table whose entry 1 was ECN_OR_COST(FILLER),
	// i.e. priority 1 (TC_PRIO_FILLER) for TOS bits 0x02 (the old
	// "minimise cost" bit, today the low ECN bit).
	TOSTableOld
)

// String returns "current" or "old".
func (t TOSTable) String() string {
	switch t {
	case TOSTableCurrent:
		return "current"
	case TOSTableOld:
		return "old"
	}
	return fmt.Sprintf("TOSTable(%d)", int(t))
}

// Linux skb priorities (include/uapi/linux/pkt_sched.h, TC_PRIO_*).
const (
	TCPrioBestEffort      = 0
	TCPrioFiller          = 1
	TCPrioBulk            = 2
	TCPrioInteractiveBulk = 4
	TCPrioInteractive     = 6
	TCPrioControl         = 7
)

var ipTOS2Prio = [2][16]uint8{
	TOSTableCurrent: {0, 0, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4},
	TOSTableOld:     {0, 1, 0, 0, 2, 2, 2, 2, 6, 6, 6, 6, 4, 4, 4, 4},
}

// TOSToPriority is the kernel's rt_tos2priority (include/net/route.h) with
// the current ip_tos2prio table: ip_tos2prio[(tos & 0x1E) >> 1]. rdma_cm
// uses it to turn a ToS into an skb priority; it can only yield 0, 2, 4
// and 6, and it depends only on tos & 0x18 (the legacy RFC 1349 TOS bits,
// not the DSCP as a whole).
func TOSToPriority(tos uint8) uint8 { return TOSToPriorityWith(TOSTableCurrent, tos) }

// TOSToPriorityWith is rt_tos2priority with the given ip_tos2prio table.
// An unknown table is treated as the current one.
func TOSToPriorityWith(t TOSTable, tos uint8) uint8 {
	if t != TOSTableOld {
		t = TOSTableCurrent
	}
	return ipTOS2Prio[t][(tos&0x1E)>>1]
}

// EgressPCP returns the PCP a VLAN device writes into the tag of a frame
// with skb priority skbPrio, given the device's egress-qos-map (skb
// priority → PCP, as `ip -d link show` prints it and netlink reports it).
//
// The kernel's lookup (vlan_dev_get_egress_qos_mask, include/linux/if_vlan.h)
// is an exact match on the full 32-bit skb priority; no entry means PCP 0.
// PCP values above 7 cannot be stored (the kernel masks them with 0xE000
// after shifting by 13), so only the low three bits of a map value count.
func EgressPCP(egressMap map[uint32]uint32, skbPrio uint32) uint8 {
	pcp, ok := egressMap[skbPrio]
	if !ok {
		return 0
	}
	return uint8(pcp & 7)
}

// HasEgressEntry reports whether the egress map has a non-zero entry for
// skbPrio. The kernel reports only non-zero mappings over netlink, so an
// absent key and an explicit 0 mean the same thing on the wire: PCP 0.
func HasEgressEntry(egressMap map[uint32]uint32, skbPrio uint32) bool {
	v, ok := egressMap[skbPrio]
	return ok && v&7 != 0
}
