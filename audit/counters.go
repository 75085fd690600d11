package audit

import (
	"fmt"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
)

// Bounds of the counters cross-check. The RDMA counters and the Ethernet
// per-priority counters are read one after the other (RDMA netlink or
// sysfs, then SIOCETHTOOL), so between two samples they may disagree by
// what was sent between the two reads: a shortfall within Slack of the
// RDMA packets sent, or below MinPackets, is not a finding.
const (
	Slack      = 0.02
	MinPackets = 64
)

// Netdev is the counters cross-check of one real netdev (or, for a RoCE
// LAG port whose netdev counts no RDMA traffic of its own, of the bond,
// over its slaves): the RDMA packets it sent over the interval against
// the packets its expected priorities sent.
type Netdev struct {
	Netns  string `json:"-"`
	Netdev string `json:"netdev"`
	// Expected are the priorities RDMA traffic should leave on, and
	// ExpectedFrom where they come from: ExpectedFromFlows (the flows of
	// --tclass/--tos/--flow) or ExpectedFromRoCE (the netdev's RoCE
	// priorities, counters.RoCEPriorities).
	Expected     qos.Bytes `json:"expected_priorities"`
	ExpectedFrom string    `json:"expected_from"`
	// RDMATx is the RDMA packets sent over the interval (since the
	// counters were reset, with one sample); nil when no counter says.
	RDMATx *uint64 `json:"rdma_tx_packets"`
	// RDMACounters names the counters RDMATx sums.
	RDMACounters []string `json:"rdma_counters"`
	// ExpectedTx is the packets the expected priorities sent; nil when the
	// driver counts no packets per priority.
	ExpectedTx *uint64 `json:"expected_tx_packets"`
	// Unaccounted is what RDMATx exceeds ExpectedTx by (0 when it does
	// not); nil when either is unknown.
	Unaccounted *uint64 `json:"unaccounted_packets"`
	// Carriers are the priorities outside Expected whose packets sent grew
	// by at least Unaccounted (less Slack): each could have carried the
	// RDMA traffic the expected priorities did not.
	Carriers qos.Bytes `json:"carriers"`
	// Reason says why the check could not be made; nil when it was.
	Reason *string `json:"reason"`
}

// Expected sources.
const (
	ExpectedFromFlows = "flows"
	ExpectedFromRoCE  = "roce_priorities"
)

// Priority is one priority of a real netdev as the audit sees it: whether
// RDMA traffic is expected on it, its packets sent over the interval, and
// the RDMA packets found on it although it is not expected.
type Priority struct {
	Netns    string `json:"-"`
	Netdev   string `json:"netdev"`
	Prio     uint8  `json:"prio"`
	Expected bool   `json:"expected"`
	PFC      *bool  `json:"pfc_enabled"`
	// TxPackets is the packets the priority sent over the interval; nil
	// when the driver does not count them.
	TxPackets *uint64 `json:"sent_packets"`
	// OffPackets is the RDMA packets the counters place on this priority
	// although it is not expected: the netdev's unaccounted packets when
	// this priority is their one carrier; nil otherwise.
	OffPackets *uint64 `json:"off_packets"`
	// WirePackets is the RDMA frames of the wire sample classified onto
	// this priority; nil without a wire sample or when the netdev's
	// classification is unknown (no DCB).
	WirePackets *uint64 `json:"wire_packets"`
}

// unit is one cross-check: the netdevs whose priorities carry the RDMA
// traffic counted by rdma.
type unit struct {
	name     string
	netns    string
	netdevs  []string
	counters []string
	cur, prv uint64
	hasPrev  bool
	ok       bool
}

// delta is cur − prev, or cur with one sample; ok false on a reset.
func delta(cur, prev uint64, hasPrev bool) (uint64, bool) {
	if !hasPrev {
		return cur, true
	}
	if cur < prev {
		return 0, false
	}
	return cur - prev, true
}

// rdmaUnits builds the cross-check units of in: each real netdev whose
// ethtool set counts RDMA traffic (mlx5's vport counters), then the RDMA
// ports left, grouped by the real netdev (or bond) below them, with the
// TX packets of their hw_counters (counters.TxPackets: rxe sent_pkts,
// bnxt_re tx_pkts, mlx5 rdma_tx_packets, irdma TxUDP).
func rdmaUnits(in counters.Input) []*unit {
	var units []*unit
	covered := map[string]bool{}
	for _, ni := range in.Netdevs {
		cur := in.Cur.Netdev(ni.Netns, ni.Netdev)
		if cur == nil {
			continue
		}
		c, ok := counters.NetdevRDMATx(cur.Driver, cur.Stats)
		if !ok {
			continue
		}
		u := &unit{name: ni.Netdev, netns: ni.Netns, netdevs: []string{ni.Netdev}, counters: c.Counters, cur: c.Packets, ok: true}
		if in.Prev != nil {
			u.hasPrev = true
			if prev := in.Prev.Netdev(ni.Netns, ni.Netdev); prev != nil {
				p, ok := counters.NetdevRDMATx(prev.Driver, prev.Stats)
				u.prv, u.ok = p.Packets, ok
			} else {
				u.ok = false
			}
		}
		units = append(units, u)
		covered[ni.Netdev] = true
	}
	byReal := map[string]*unit{}
	for _, pi := range in.Ports {
		if pi.Real == "" || covered[pi.Real] {
			continue
		}
		carriers := []string{pi.Real}
		if len(pi.Slaves) > 0 {
			carriers = pi.Slaves
			skip := false
			for _, s := range carriers {
				skip = skip || covered[s]
			}
			if skip {
				continue
			}
		}
		p := in.Cur.Port(pi.Device, pi.Port)
		if p == nil {
			continue
		}
		var pp *counters.RDMAPort
		if in.Prev != nil {
			pp = in.Prev.Port(pi.Device, pi.Port)
		}
		for _, name := range sortedNames(p.HWCounters) {
			if counters.MeaningOf(pi.Driver, name) != counters.TxPackets {
				continue
			}
			u := byReal[pi.Real]
			if u == nil {
				u = &unit{name: pi.Real, netns: pi.Netns, netdevs: carriers, ok: true, hasPrev: in.Prev != nil}
				byReal[pi.Real] = u
				units = append(units, u)
			}
			u.counters = append(u.counters, fmt.Sprintf("%s port %d %s", pi.Device, pi.Port, name))
			u.cur += p.HWCounters[name]
			if in.Prev != nil {
				v, ok := uint64(0), false
				if pp != nil {
					v, ok = pp.HWCounters[name]
				}
				u.prv += v
				u.ok = u.ok && ok
			}
		}
	}
	return units
}

func sortedNames(m map[string]uint64) []string {
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// prioTx returns the per-priority TX packets growth of netdev (nil where
// the driver does not count them or a counter was reset).
func prioTx(in counters.Input, netns, netdev string) (out [8]*uint64, driver string) {
	cur := in.Cur.Netdev(netns, netdev)
	if cur == nil {
		return out, ""
	}
	n := counters.Normalize(cur.Driver, cur.Stats)
	var pn counters.Normalized
	prev := in.Prev.Netdev(netns, netdev)
	if prev != nil {
		pn = counters.Normalize(prev.Driver, prev.Stats)
	}
	for p := 0; p < 8; p++ {
		v, ok := n.Prio[p][counters.PrioTxPackets]
		if !ok {
			continue
		}
		var pv uint64
		has := in.Prev != nil
		if has {
			x, ok := pn.Prio[p][counters.PrioTxPackets]
			if !ok {
				continue
			}
			pv = x.Value
		}
		if d, ok := delta(v.Value, pv, has); ok {
			out[p] = &d
		}
	}
	return out, cur.Driver
}

// checkCounters runs the cross-check of every unit of in against the
// expected priorities (by real netdev: expect when the flows give some for
// it, else the netdev's RoCE priorities), and fills the per-priority
// table.
func (a *auditor) checkCounters(in counters.Input, expect map[string]map[uint8][]string) {
	infos := map[string]counters.NetdevInfo{}
	for _, ni := range in.Netdevs {
		infos[ni.Netns+"\x00"+ni.Netdev] = ni
	}
	// Expected priorities of each netdev.
	exp := func(netns, nd string) (map[uint8][]string, string) {
		if len(a.in.Expect) > 0 {
			return expect[nd], ExpectedFromFlows
		}
		ni, ok := infos[netns+"\x00"+nd]
		if !ok {
			return nil, ExpectedFromRoCE
		}
		return counters.RoCEPriorities(ni, in.Ports), ExpectedFromRoCE
	}
	prios := map[string]*[8]*Priority{}
	tables := map[string][8]*uint64{}
	for _, ni := range in.Netdevs {
		tx, _ := prioTx(in, ni.Netns, ni.Netdev)
		tables[ni.Netns+"\x00"+ni.Netdev] = tx
		e, _ := exp(ni.Netns, ni.Netdev)
		has := len(e) > 0
		for _, v := range tx {
			has = has || v != nil
		}
		if !has {
			continue
		}
		var row [8]*Priority
		for p := uint8(0); p < 8; p++ {
			pr := &Priority{Netns: ni.Netns, Netdev: ni.Netdev, Prio: p, TxPackets: tx[p]}
			_, pr.Expected = e[p]
			if d := ni.DCB; d != nil && d.Supported && d.PFC != nil {
				on := d.PFC.On(p)
				pr.PFC = &on
			}
			row[p] = pr
		}
		prios[ni.Netns+"\x00"+ni.Netdev] = &row
		a.prioOrder = append(a.prioOrder, ni.Netns+"\x00"+ni.Netdev)
	}
	a.prios = prios
	for _, u := range rdmaUnits(in) {
		nd := Netdev{Netns: u.netns, Netdev: u.name, RDMACounters: u.counters, Expected: qos.Bytes{}, Carriers: qos.Bytes{}}
		var expected map[uint8][]string
		for _, d := range u.netdevs {
			e, from := exp(u.netns, d)
			nd.ExpectedFrom = from
			for p, w := range e {
				if expected == nil {
					expected = map[uint8][]string{}
				}
				expected[p] = append(expected[p], w...)
			}
		}
		for p := range expected {
			nd.Expected = append(nd.Expected, p)
		}
		sort.Slice(nd.Expected, func(i, j int) bool { return nd.Expected[i] < nd.Expected[j] })
		a.report.Netdevs = append(a.report.Netdevs, nd)
		ndp := &a.report.Netdevs[len(a.report.Netdevs)-1]
		fail := func(format string, args ...any) { s := fmt.Sprintf(format, args...); ndp.Reason = &s }
		rdma, ok := delta(u.cur, u.prv, u.hasPrev)
		if !u.ok || !ok {
			fail("the RDMA counters (%s) went backwards or are missing from a sample: reset, or a device that came back", strings.Join(u.counters, ", "))
			continue
		}
		ndp.RDMATx = &rdma
		// Per-priority growth over the unit's netdevs.
		var sum [8]*uint64
		counted := true
		for _, d := range u.netdevs {
			tx := tables[u.netns+"\x00"+d]
			any := false
			for p := range tx {
				if tx[p] == nil {
					continue
				}
				any = true
				if sum[p] == nil {
					sum[p] = new(uint64)
				}
				*sum[p] += *tx[p]
			}
			counted = counted && any
		}
		if !counted {
			fail("%s counts no packets per priority (or its ethtool statistics were not read): which priority RDMA traffic leaves on cannot be told from counters", strings.Join(u.netdevs, ", "))
			continue
		}
		if len(expected) == 0 {
			why := "no RoCE priority is known (no DCB read, or none configured)"
			if nd.ExpectedFrom == ExpectedFromFlows {
				why = "the flows' priority is unknown here (qos.Check gives none: see roce-probe check)"
			}
			fail("%s: %s", u.name, why)
			continue
		}
		var exTx uint64
		for p := range expected {
			if sum[p] == nil {
				fail("%s does not count the packets of expected priority %d", strings.Join(u.netdevs, ", "), p)
				break
			}
			exTx += *sum[p]
		}
		if ndp.Reason != nil {
			continue
		}
		ndp.ExpectedTx = &exTx
		var un uint64
		if rdma > exTx {
			un = rdma - exTx
		}
		ndp.Unaccounted = &un
		if un == 0 || un < MinPackets || float64(un) <= Slack*float64(rdma) {
			continue
		}
		var grew []string
		for p := uint8(0); p < 8; p++ {
			if _, ok := expected[p]; ok || sum[p] == nil || *sum[p] == 0 {
				continue
			}
			grew = append(grew, fmt.Sprintf("priority %d %s", p, a.plus(*sum[p])))
			if float64(*sum[p]) >= float64(un)*(1-Slack) {
				ndp.Carriers = append(ndp.Carriers, p)
			}
		}
		if len(ndp.Carriers) == 1 {
			for _, d := range u.netdevs {
				if row := prios[u.netns+"\x00"+d]; row != nil && len(u.netdevs) == 1 {
					off := un
					row[ndp.Carriers[0]].OffPackets = &off
				}
			}
		}
		a.counterFinding(ndp, expected, grew)
	}
}

// plus writes an amount: "+n" over an interval, "n" with one sample.
func (a *auditor) plus(n uint64) string {
	if a.in.Prev == nil {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("+%d", n)
}

func (a *auditor) counterFinding(nd *Netdev, expected map[uint8][]string, grew []string) {
	var ex []string
	for _, p := range nd.Expected {
		ex = append(ex, fmt.Sprintf("%d (%s)", p, strings.Join(expected[p], "; ")))
	}
	what := "its RoCE priorities"
	if nd.ExpectedFrom == ExpectedFromFlows {
		what = "the flows' priorities"
	}
	msg := fmt.Sprintf("%s: RDMA sent %s packets%s (%s) but %s %s sent %s: %d RDMA packets left on another priority",
		nd.Netdev, a.plus(*nd.RDMATx), a.how(), strings.Join(nd.RDMACounters, " + "), what, strings.Join(ex, ", "), a.plus(*nd.ExpectedTx), *nd.Unaccounted)
	var prio *uint8
	switch len(nd.Carriers) {
	case 0:
		if len(grew) > 0 {
			msg += fmt.Sprintf(" — no single other priority grew by as much (%s)", strings.Join(grew, ", "))
		} else {
			msg += " — and no other priority's counters grew: the traffic left uncounted (another netdev, or a priority the driver does not count)"
		}
	case 1:
		p := nd.Carriers[0]
		prio = &p
		msg += fmt.Sprintf(" — priority %d grew by %s packets, which can carry them", p, a.plus(a.prioGrowth(nd, p)))
		if pfc := a.pfcOf(nd, p); pfc != nil && !*pfc {
			msg += fmt.Sprintf("; priority %d has PFC off: that RoCE traffic is not lossless", p)
		}
	default:
		var ps []string
		for _, p := range nd.Carriers {
			ps = append(ps, fmt.Sprint(p))
		}
		msg += fmt.Sprintf(" — priorities %s each grew by at least as much (%s): the counters do not tell which carried them", strings.Join(ps, ", "), strings.Join(grew, ", "))
	}
	f := Finding{Severity: SeverityError, Code: CodeRDMAOffPriority, Message: msg, Netdev: null.String(nd.Netdev), Priority: prio}
	if a.in.Prev == nil {
		f.Severity = SeverityInfo
		f.Message += oneSampleNote
	}
	a.report.Findings = append(a.report.Findings, f)
}

// prioGrowth is priority p's packets sent on nd's netdev (its table).
func (a *auditor) prioGrowth(nd *Netdev, p uint8) uint64 {
	if row := a.prios[nd.Netns+"\x00"+nd.Netdev]; row != nil && row[p].TxPackets != nil {
		return *row[p].TxPackets
	}
	return 0
}

func (a *auditor) pfcOf(nd *Netdev, p uint8) *bool {
	if row := a.prios[nd.Netns+"\x00"+nd.Netdev]; row != nil {
		return row[p].PFC
	}
	return nil
}

func (a *auditor) how() string {
	if a.in.Prev == nil || a.in.Cur == nil {
		return ""
	}
	return fmt.Sprintf(" in %.3gs", a.in.Cur.Time.Sub(a.in.Prev.Time).Seconds())
}

// oneSampleNote ends the message of a finding made from one sample.
const oneSampleNote = " (one sample: counted since the counters were last reset, on the RoCE priorities together with every other traffic; take two samples, live or with two snapshots, to see whether it is still happening)"
