package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// WireReport is the wire sample's part of the report.
type WireReport struct {
	// Sampled says whether a wire sample was taken; Reason why not.
	Sampled bool    `json:"sampled"`
	Reason  *string `json:"reason"`
	// Netdevs are the netdevs captured on.
	Netdevs []string `json:"capture_netdevs"`
	// Duration is the seconds from the first frame to the last; nil
	// without frames.
	Duration *float64 `json:"duration_s"`
	// Frames, Foreign, Undecodable and LeftOut are Wire's counts.
	Frames      int `json:"frames"`
	Foreign     int `json:"foreign_frames"`
	Undecodable int `json:"undecodable_frames"`
	LeftOut     int `json:"left_out_frames"`
	// QPs are the sample's QPs, one entry per QP and markings, with
	// packets.
	QPs []WireQP `json:"qps"`
}

// WireQP is one QP's frames in the wire sample, with one set of markings:
// the QP (from the census, by the frames' QP numbers), its owner, the
// markings, the priority they land on, and what the flows' configuration
// expects.
type WireQP struct {
	Netdev string `json:"netdev"` // captured on
	// Device, Port and QPN are the local QP; nil when the census has no
	// QP for the frames (QPN is still the DETH source QP of UD frames).
	Device    *string `json:"device"`
	Port      *int    `json:"port"`
	QPN       *uint32 `json:"qpn"`
	Transport string  `json:"transport"` // RC, UC, RD, UD, XRC
	DestQP    uint32  `json:"dest_qp"`
	SrcQP     *uint32 `json:"src_qp"`
	PID       *int    `json:"pid"`
	Comm      *string `json:"comm"`
	// Candidates is how many census QPs the frames could belong to (more
	// than one: the owner is not named); 0 when none.
	Candidates int             `json:"candidates"`
	Src        string          `json:"src"`
	Dst        string          `json:"dst"`
	VLAN       *uint16         `json:"vlan"`
	PCP        *uint8          `json:"pcp"`
	VLANChain  []vlan.ChainTag `json:"vlan_chain"`
	DSCP       uint8           `json:"dscp"`
	ECN        uint8           `json:"ecn"`
	UDPSport   uint16          `json:"udp_sport"`
	// Priority is the priority the real netdev's DCB classifies the
	// frames into (qos.DCB.Classify); nil when unknown, Why says how.
	Priority *uint8 `json:"priority"`
	Why      string `json:"classification"`
	PFC      *bool  `json:"pfc_enabled"`
	Packets  uint64 `json:"packets"`
	Bytes    uint64 `json:"bytes"`
	// Expected is what the flows' configuration gives the frames' source
	// GID entry; nil without expectations (or when none applies).
	Expected *WireExpected `json:"expected_markings"`
	// Verdict: VerdictOK, VerdictOffPriority, VerdictMarkings or
	// VerdictUnknown.
	Verdict string `json:"verdict"`
}

// WireExpected is what a flow's configuration gives a QP's frames
// (qos.Check of the flow from their source GID entry).
type WireExpected struct {
	Flow     string      `json:"flow"`
	DSCP     *uint8      `json:"dscp"`
	PCP      *uint8      `json:"pcp"`
	Priority *uint8      `json:"priority"`
	Verdict  qos.Verdict `json:"verdict"`
}

// Verdicts of a WireQP.
const (
	VerdictOK          = "ok"
	VerdictOffPriority = "off_priority"
	VerdictMarkings    = "markings_differ"
	VerdictUnknown     = "unknown"
)

type wireQPJSON struct {
	plainWireQP
	ECNName string `json:"ecn_name"`
}

type plainWireQP WireQP

// MarshalJSON writes the keys of docs/json.md's "audit_qp", with ecn_name
// the name of ecn.
func (q WireQP) MarshalJSON() ([]byte, error) {
	return json.Marshal(wireQPJSON{plainWireQP: plainWireQP(q), ECNName: qos.ECN(q.ECN).String()})
}

// Owner is the QP a wire entry belongs to, as the census says: what
// OwnerOf returns.
type Owner struct {
	Device string
	Port   int
	QPN    uint32
	PID    int // 0 when not known
	Comm   string
}

// OwnerOf finds the local QPs that could have sent frames: for UD (a DETH
// source QP) the QP with that number on device, otherwise the QPs on
// device whose destination QP is destQP; dst (the frames' destination
// address) narrows them where the census knows a QP's rdma_cm peer. Nil
// when the census has none.
type OwnerOf func(device string, transport roce.Transport, destQP uint32, srcQP *uint32, dst netip.Addr) []Owner

// source finds the GID entry frames from addr leave by: the first used
// RoCE v2 entry with that address, in port order.
func (a *auditor) source(addr netip.Addr) (gid.Port, gid.Entry, bool) {
	for _, p := range a.in.View.Ports {
		for _, e := range p.Entries {
			if !e.Empty && e.Type == gid.TypeRoCEv2 && e.IP.IsValid() && e.IP.Unmap() == addr {
				return p, e, true
			}
		}
	}
	return gid.Port{}, gid.Entry{}, false
}

// checkWire judges every entry of the wire sample.
func (a *auditor) checkWire(f *flows) {
	w := a.in.Wire
	r := &a.report.Wire
	r.Netdevs, r.QPs = []string{}, []WireQP{}
	if w == nil {
		why := a.in.WireReason
		if why == "" {
			why = "no wire sample was taken"
		}
		r.Reason = &why
		return
	}
	r.Sampled = true
	r.Netdevs = append(r.Netdevs, w.Netdevs...)
	r.Frames, r.Foreign, r.Undecodable, r.LeftOut = w.Frames, w.Foreign, w.Undecodable, w.LeftOut
	if w.Frames > 0 {
		d := math.Round(w.End.Sub(w.Start).Seconds()*1000) / 1000
		r.Duration = &d
	}
	for _, k := range w.order {
		e := w.entries[k]
		q := a.wireQP(f, k, e)
		r.QPs = append(r.QPs, q)
	}
	sort.SliceStable(r.QPs, func(i, j int) bool { return r.QPs[i].Packets > r.QPs[j].Packets })
}

// roceOf returns the RoCE priorities of netdev (counters.RoCEPriorities),
// nil without its DCB.
func (a *auditor) roceOf(netdev string) map[uint8][]string {
	in := a.in.View.CountersInput(nil, nil)
	for _, ni := range in.Netdevs {
		if ni.Netdev == netdev {
			return counters.RoCEPriorities(ni, in.Ports)
		}
	}
	return nil
}

func (a *auditor) wireQP(f *flows, k wireKey, e *wireEntry) WireQP {
	q := WireQP{Netdev: k.netdev, Transport: k.transport.String(), DestQP: k.destQP, Src: k.src.String(), Dst: k.dst.String(),
		VLANChain: k.chain(), DSCP: k.tos >> 2, ECN: k.tos & 3, UDPSport: k.sport, Packets: e.packets, Bytes: e.bytes, Verdict: VerdictUnknown}
	if k.hasSrcQP {
		s := k.srcQP
		q.SrcQP = &s
		q.QPN = &s
	}
	var tagPCP *uint8
	if k.ntags > 0 {
		id, pcp := k.tags[0].ID, k.tags[0].PCP
		q.VLAN, q.PCP, tagPCP = &id, &pcp, &pcp
	}
	port, entry, found := a.source(k.src)
	var exp *expected
	var dcb *qos.DCB
	real := k.netdev
	if found {
		dev := port.Device
		q.Device, q.Port = &dev, &port.Port
		exp = f.of(port.Device, port.Port, entry.Index)
		if src, err := a.in.View.Source(port.Device, port.Port, entry.Index); err == nil {
			dcb, real = src.DCB, src.Desc.Real
			if src.Bond != nil && len(src.Bond.Slaves) > 0 {
				// A bond has no DCB: its slaves classify; they are
				// configured alike for RoCE LAG (check flags slaves that
				// differ).
				dcb = src.Bond.Slaves[0].DCB
			}
		}
		if a.in.Owners != nil {
			var sq *uint32
			if k.hasSrcQP {
				sq = &k.srcQP
			}
			owners := a.in.Owners(port.Device, k.transport, k.destQP, sq, k.dst)
			q.Candidates = len(owners)
			if len(owners) == 1 {
				o := owners[0]
				q.QPN, q.Port = &o.QPN, &o.Port
				if o.PID != 0 {
					q.PID = &o.PID
				}
				q.Comm = null.String(o.Comm)
			}
		}
	}
	dscp := q.DSCP
	if p, why, ok := dcb.Classify(k.ntags > 0, tagPCP, &dscp); ok {
		q.Priority, q.Why = &p, why
		if dcb.PFC != nil {
			on := dcb.PFC.On(p)
			q.PFC = &on
		}
	} else {
		q.Why = why
		switch {
		case dcb == nil:
			q.Why = fmt.Sprintf("the DCB of %s was not read: its trust mode, and so the priority, is unknown", real)
		case !dcb.Supported && dcb.Reason != "":
			q.Why = dcb.Reason + ": no trust mode to classify by"
		case !dcb.Supported:
			q.Why = fmt.Sprintf("%s has no DCB: no trust mode to classify by", real)
		}
	}
	if exp != nil {
		r := exp.res
		q.Expected = &WireExpected{Flow: exp.exp.What(), DSCP: r.DSCP, PCP: r.PCP, Priority: r.Priority, Verdict: r.Verdict}
	}
	allowed := a.judge(&q, real)
	if q.Priority != nil {
		p := a.row(real, dcb, allowed)[*q.Priority]
		if p.WirePackets == nil {
			p.WirePackets = new(uint64)
		}
		*p.WirePackets += q.Packets
	}
	return q
}

// row returns the per-priority row of netdev, made (with expected and
// PFC from allowed and dcb) when the counters gave none.
func (a *auditor) row(netdev string, dcb *qos.DCB, allowed map[uint8]bool) *[8]*Priority {
	k := a.prioKey(netdev)
	if r := a.prios[k]; r != nil {
		return r
	}
	var row [8]*Priority
	for p := uint8(0); p < 8; p++ {
		pr := &Priority{Netns: a.in.View.NS.Netns, Netdev: netdev, Prio: p, Expected: allowed[p]}
		if dcb != nil && dcb.Supported && dcb.PFC != nil {
			on := dcb.PFC.On(p)
			pr.PFC = &on
		}
		row[p] = pr
	}
	if a.prios == nil {
		a.prios = map[string]*[8]*Priority{}
	}
	a.prios[k] = &row
	a.prioOrder = append(a.prioOrder, k)
	return &row
}

// judge sets q's verdict and adds its finding: the priority against the
// expected one (the flows', else the RoCE priorities), and the markings
// against the flows'.
func (a *auditor) judge(q *WireQP, real string) (allowed map[uint8]bool) {
	var differ []string
	var want []string
	if x := q.Expected; x != nil {
		if x.DSCP != nil && *x.DSCP != q.DSCP {
			differ = append(differ, fmt.Sprintf("DSCP %d", q.DSCP))
			want = append(want, fmt.Sprintf("DSCP %d", *x.DSCP))
		}
		switch {
		case x.PCP != nil && q.PCP != nil && *x.PCP != *q.PCP:
			differ = append(differ, fmt.Sprintf("PCP %d", *q.PCP))
			want = append(want, fmt.Sprintf("PCP %d", *x.PCP))
		case x.PCP != nil && q.PCP == nil:
			differ = append(differ, "untagged")
			want = append(want, fmt.Sprintf("a tag with PCP %d", *x.PCP))
		}
	}
	// The priorities the frames should land on.
	allowed = map[uint8]bool{}
	from := ""
	if x := q.Expected; x != nil && x.Priority != nil {
		allowed[*x.Priority], from = true, "the flows' configuration puts them on priority "+fmt.Sprint(*x.Priority)
	} else if roce := a.roceOf(real); len(roce) > 0 {
		var ps []string
		for _, p := range sortedPrios(roce) {
			allowed[p] = true
			ps = append(ps, fmt.Sprint(p))
		}
		from = fmt.Sprintf("the RoCE priorities of %s are %s", real, strings.Join(ps, ", "))
	}
	off := q.Priority != nil && len(allowed) > 0 && !allowed[*q.Priority]
	lossy := q.PFC != nil && !*q.PFC
	switch {
	case off:
		q.Verdict = VerdictOffPriority
	case len(differ) > 0:
		q.Verdict = VerdictMarkings
	case q.Priority != nil && len(allowed) > 0:
		q.Verdict = VerdictOK
	case q.Expected != nil && q.Expected.DSCP != nil:
		// Same markings as the flows' configuration: the priority is
		// whatever the configuration's is.
		q.Verdict = VerdictOK
	default:
		return allowed
	}
	if q.Verdict == VerdictOK {
		return allowed
	}
	// pid 4242 (train.py) QP 0x1a on mlx5_0 port 1: DSCP 0, priority 0 —
	// not lossless; the flows' configuration expects DSCP 26.
	var b strings.Builder
	switch {
	case q.PID != nil && q.Comm != nil:
		fmt.Fprintf(&b, "pid %d (%s) ", *q.PID, *q.Comm)
	case q.PID != nil:
		fmt.Fprintf(&b, "pid %d ", *q.PID)
	case q.Comm != nil:
		fmt.Fprintf(&b, "%s (kernel) ", *q.Comm)
	case q.Candidates > 1:
		fmt.Fprintf(&b, "one of %d QPs (the census cannot tell which) ", q.Candidates)
	default:
		b.WriteString("a QP the census does not show (a kernel QP, one gone since, or no census) ")
	}
	if q.QPN != nil {
		fmt.Fprintf(&b, "QP 0x%x", *q.QPN)
	} else {
		fmt.Fprintf(&b, "%s QP sending to QP 0x%x", q.Transport, q.DestQP)
	}
	if q.Device != nil {
		fmt.Fprintf(&b, " on %s", *q.Device)
		if q.Port != nil {
			fmt.Fprintf(&b, " port %d", *q.Port)
		}
	}
	fmt.Fprintf(&b, " (%s → %s, %d frames on %s): DSCP %d", q.Src, q.Dst, q.Packets, q.Netdev, q.DSCP)
	if q.PCP != nil {
		fmt.Fprintf(&b, ", PCP %d", *q.PCP)
	} else {
		b.WriteString(", untagged")
	}
	if q.Priority != nil {
		fmt.Fprintf(&b, ", priority %d", *q.Priority)
		if lossy {
			b.WriteString(" — not lossless (PFC off)")
		}
	} else {
		fmt.Fprintf(&b, ", priority unknown (%s)", q.Why)
	}
	if len(differ) > 0 {
		fmt.Fprintf(&b, "; the flows' configuration (%s) expects %s", q.Expected.Flow, strings.Join(want, ", "))
	}
	if off {
		fmt.Fprintf(&b, "; %s", from)
	}
	f := Finding{Severity: SeverityWarning, Code: CodeQPMarkings, Message: b.String(), Netdev: null.String(real), Priority: q.Priority,
		QP: &QPRef{Device: q.Device, QPN: q.QPN, PID: q.PID, Comm: q.Comm}}
	if off {
		f.Severity, f.Code = SeverityError, CodeQPOffPriority
	}
	a.report.Findings = append(a.report.Findings, f)
	return allowed
}

// prioKey is the key of a netdev's row in the per-priority table.
func (a *auditor) prioKey(netdev string) string { return a.in.View.NS.Netns + "\x00" + netdev }

func sortedPrios(m map[uint8][]string) []uint8 {
	var ps []uint8
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}
