package counters

import (
	"fmt"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/qos"
)

// Severity of a finding.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"   // traffic is being lost or stalled
	SeverityWarning Severity = "warning" // a misconfiguration that costs or risks traffic
	SeverityInfo    Severity = "info"    // worth knowing; with one sample, what counters show since they were reset
)

// Finding is one thing the counters and settings tell an operator.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
}

// Finding codes (docs/counters.md, "Findings").
const (
	CodePauseWithoutRoCE     = "pause_without_roce"
	CodeRoCEWithoutPFCDrops  = "roce_without_pfc_discards"
	CodeLongPause            = "long_pause"
	CodePauseStorm           = "pause_storm"
	CodeLossOnLossless       = "loss_on_lossless"
	CodeLossWithoutPFC       = "loss_without_pfc"
	CodeECNWithoutCNP        = "ecn_without_cnp"
	CodeCNPUnprotected       = "cnp_priority_unprotected"
	CodeDCQCNOff             = "dcqcn_off"
	CodeTrafficClassOverride = "traffic_class_override"
	CodeCounterReset         = "counter_reset"
	CodeGlobalPause          = "global_pause"
	CodeGlobalPauseWithPFC   = "global_pause_with_pfc"
	CodeOutOfBuffer          = "out_of_buffer"
)

// Thresholds of the pause-duration findings: the share of the interval a
// priority spent paused.
const (
	LongPauseShare  = 0.10 // long_pause (warning) from 10 %
	PauseStormShare = 0.50 // pause_storm (error) from 50 %
)

// oneSampleNote ends the message of a finding made from one sample.
const oneSampleNote = " (one sample: counted since the counters were last reset; take two samples, live or with --interval, to see whether it is still rising)"

// rising returns how much a value rose: the delta with two samples, the
// value with one.
func (a *analysis) rising(value uint64, delta *uint64) uint64 {
	if a.in.Prev == nil {
		return value
	}
	if delta == nil {
		return 0
	}
	return *delta
}

func (a *analysis) risingPrio(v *PrioValue) uint64 {
	if v == nil {
		return 0
	}
	return a.rising(v.Value, v.delta)
}

func (a *analysis) add(sev Severity, code, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	a.r.Findings = append(a.r.Findings, Finding{Severity: sev, Code: code, Message: msg})
}

// addCounted adds a finding made from counter movement: with one sample it
// is information about the past, not an alarm.
func (a *analysis) addCounted(sev Severity, code, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.in.Prev == nil {
		sev, msg = SeverityInfo, msg+oneSampleNote
	}
	a.r.Findings = append(a.r.Findings, Finding{Severity: sev, Code: code, Message: msg})
}

// plus writes an amount: "+n" (a rise between two samples) or "n" (one
// sample: the value since the counters were reset).
func (a *analysis) plus(n uint64) string {
	if a.in.Prev == nil {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("+%d", n)
}

func (a *analysis) how() string {
	if a.in.Prev == nil {
		return ""
	}
	return fmt.Sprintf(" in %.3gs", a.dt)
}

func dcbKnown(d *qos.DCB) bool { return d != nil && d.Supported }

func (a *analysis) findings() {
	for _, ni := range a.in.Netdevs {
		a.netdevFindings(ni)
	}
	for _, pi := range a.in.Ports {
		a.portFindings(pi)
	}
	if len(a.resets) > 0 {
		sort.Strings(a.resets)
		a.add(SeverityInfo, CodeCounterReset, "%d counter(s) went backwards since the previous sample (reset, or a device that came back): no rate for %s", len(a.resets), strings.Join(a.resets, ", "))
	}
}

func (a *analysis) netdevFindings(ni NetdevInfo) {
	key := [2]string{ni.Netns, ni.Netdev}
	roce := a.roce[key]
	port := a.port[key]
	for _, pr := range a.prios[key] {
		p := pr.Prio
		rx := a.risingPrio(pr.Values[PrioRxPause]) + a.risingPrio(pr.PFCIndications)
		tx := a.risingPrio(pr.Values[PrioTxPause]) + a.risingPrio(pr.PFCRequests)
		if dcbKnown(ni.DCB) && !pr.RoCE && (rx > 0 || tx > 0) {
			what := "no RoCE priority is known"
			if len(roce) > 0 {
				what = "RoCE is on " + prioList(roce)
			}
			a.addCounted(SeverityWarning, CodePauseWithoutRoCE, "%s priority %d: %d pause frames received and %d sent%s on a priority that carries no RoCE (%s): PFC stalls traffic that did not ask for it", ni.Netdev, p, rx, tx, a.how(), what)
		}
		if pr.RoCE && pr.PFC != nil && !*pr.PFC {
			var parts []string
			var total uint64
			for _, c := range []PrioCounter{PrioRxDiscards, PrioRxBufDiscard, PrioRxCongDiscard} {
				if v := pr.Values[c]; v != nil {
					if n := a.risingPrio(v); n > 0 {
						parts = append(parts, v.Counter+" "+a.plus(n))
						total += n
					}
				}
			}
			hasPrioDiscards := pr.Values[PrioRxDiscards] != nil || pr.Values[PrioRxBufDiscard] != nil || pr.Values[PrioRxCongDiscard] != nil
			if !hasPrioDiscards {
				if v, ok := port[PortRxDiscards]; ok {
					if n := a.rising(v.Value, v.delta); n > 0 {
						parts = append(parts, fmt.Sprintf("port-level rx_discards %s (the driver counts no discards per priority)", a.plus(n)))
						total += n
					}
				}
			}
			if total > 0 {
				a.addCounted(SeverityError, CodeRoCEWithoutPFCDrops, "%s priority %d carries RoCE (%s) but has PFC off, and frames are dropped%s: %s", ni.Netdev, p, strings.Join(roce[p], "; "), a.how(), strings.Join(parts, ", "))
			}
		}
		if a.in.Prev != nil && a.dt > 0 {
			for _, d := range []struct {
				c    PrioCounter
				what string
			}{{PrioRxPauseDuration, "the peer paused this port"}, {PrioTxPauseDuration, "this port paused its peer"}} {
				v := pr.Values[d.c]
				if v == nil || v.delta == nil {
					continue
				}
				share := float64(*v.delta) / (a.dt * 1e6)
				switch {
				case share >= PauseStormShare:
					a.add(SeverityError, CodePauseStorm, "%s priority %d: %s for %.0f%% of the last %.3gs (%s +%d µs): a pause storm stalls the priority", ni.Netdev, p, d.what, share*100, a.dt, v.Counter, *v.delta)
				case share >= LongPauseShare:
					a.add(SeverityWarning, CodeLongPause, "%s priority %d: %s for %.0f%% of the last %.3gs (%s +%d µs)", ni.Netdev, p, d.what, share*100, a.dt, v.Counter, *v.delta)
				}
			}
		}
	}
	for _, c := range []PortCounter{PortStorm, PortStormWarning} {
		if v, ok := port[c]; ok {
			if n := a.rising(v.Value, v.delta); n > 0 {
				sev := SeverityError
				if c == PortStormWarning {
					sev = SeverityWarning
				}
				a.addCounted(sev, CodePauseStorm, "%s: %d pause storm event(s)%s (%s): the port kept sending pause frames until the NIC's storm prevention stepped in", ni.Netdev, n, a.how(), c)
			}
		}
	}
	a.globalPauseFindings(ni, port)
	if v, ok := port[PortRxOutOfBuffer]; ok {
		if n := a.rising(v.Value, v.delta); n > 0 {
			a.addCounted(SeverityWarning, CodeOutOfBuffer, "%s: %s %s%s: packets reached receive queues of the netdev that had no buffer posted, and the NIC dropped them: the kernel does not refill its receive rings fast enough (a busy CPU, small rings: see ethtool -g); this counts the Ethernet queues, not the RDMA QPs", ni.Netdev, v.counter, a.plus(n), a.how())
		}
	}
	if q := ni.DCQCN; q != nil && q.Status == qos.SettingRead {
		for _, p := range sortedPrios(roce) {
			np, rp := q.Enabled(p)
			var off []string
			if np != nil && !*np {
				off = append(off, "notification point (roce_np/enable/"+itoa(int(p))+" is 0: CE-marked packets get no CNP)")
			}
			if rp != nil && !*rp {
				off = append(off, "reaction point (roce_rp/enable/"+itoa(int(p))+" is 0: CNPs do not slow the sender)")
			}
			if len(off) > 0 {
				a.add(SeverityWarning, CodeDCQCNOff, "%s priority %d carries RoCE but DCQCN's %s", ni.Netdev, p, strings.Join(off, " and "))
			}
		}
	}
}

// globalPauseFindings reports 802.3x pause: the pause frames and time of
// each direction (long_pause and pause_storm from the duration's share of
// the interval, global_pause otherwise), and 802.3x pause on beside PFC
// (global_pause_with_pfc).
func (a *analysis) globalPauseFindings(ni NetdevInfo, port map[PortCounter]Value) {
	var parts []string
	for _, d := range []struct {
		frames, dur PortCounter
		what, means string
	}{
		{PortRxGlobalPause, PortRxGlobalPauseDuration, "the peer paused this port", "the link partner could not take this port's traffic"},
		{PortTxGlobalPause, PortTxGlobalPauseDuration, "this port paused its peer", "this host's NIC could not take the traffic it received (its receive buffer filled)"},
	} {
		fv, hasF := port[d.frames]
		dv, hasD := port[d.dur]
		if a.in.Prev != nil && a.dt > 0 && hasD && dv.delta != nil {
			share := float64(*dv.delta) / (a.dt * 1e6)
			switch {
			case share >= PauseStormShare:
				a.add(SeverityError, CodePauseStorm, "%s: 802.3x pause: %s for %.0f%% of the last %.3gs (%s +%d µs): every priority of the link stalls, RoCE included; %s", ni.Netdev, d.what, share*100, a.dt, dv.counter, *dv.delta, d.means)
				continue
			case share >= LongPauseShare:
				a.add(SeverityWarning, CodeLongPause, "%s: 802.3x pause: %s for %.0f%% of the last %.3gs (%s +%d µs): every priority of the link stalls, RoCE included; %s", ni.Netdev, d.what, share*100, a.dt, dv.counter, *dv.delta, d.means)
				continue
			}
		}
		var frames, dur uint64
		if hasF {
			frames = a.rising(fv.Value, fv.delta)
		}
		if hasD {
			dur = a.rising(dv.Value, dv.delta)
		}
		if frames == 0 && dur == 0 {
			continue
		}
		part := d.what
		if hasF {
			part += fmt.Sprintf(" with %s %s frames", fv.counter, a.plus(frames))
		}
		if hasD {
			part += fmt.Sprintf(" for %s µs (%s, %.1f s)", a.plus(dur), dv.counter, float64(dur)/1e6)
		}
		parts = append(parts, part+": "+d.means)
	}
	if len(parts) > 0 {
		a.addCounted(SeverityInfo, CodeGlobalPause, "%s: 802.3x (global) pause%s: %s; a global pause stops every priority of the link, RoCE included, while it lasts", ni.Netdev, a.how(), strings.Join(parts, "; "))
	}
	if !dcbKnown(ni.DCB) || ni.DCB.PFC == nil || len(ni.DCB.PFC.EnabledPriorities()) == 0 {
		return
	}
	var evidence string
	if on, known := ni.Pause.On(); known {
		if !on {
			return
		}
		evidence = fmt.Sprintf("802.3x pause is on for %s (%s)", ni.Pause.Directions(), ni.Pause.Source)
	} else if e := a.in.Cur.Netdev(ni.Netns, ni.Netdev); e != nil && e.Driver == "mlx5_core" {
		for _, c := range []PortCounter{PortRxGlobalPause, PortTxGlobalPause} {
			if v, ok := port[c]; ok {
				evidence = fmt.Sprintf("802.3x pause is on (mlx5 lists %s only while it is: en_stats.c mlx5e_query_global_pause_combined)", v.counter)
				break
			}
		}
	}
	if evidence == "" {
		return
	}
	a.add(SeverityWarning, CodeGlobalPauseWithPFC, "%s: %s and PFC is on for priorities %v: a global pause frame stops every priority, the lossless ones included, and a switch port runs one or the other; turn 802.3x pause off where PFC is used (ethtool -A %s rx off tx off)", ni.Netdev, evidence, ni.DCB.PFC.EnabledPriorities(), ni.Netdev)
}

func sortedPrios(m map[uint8][]string) []uint8 {
	var ps []uint8
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

func prioList(m map[uint8][]string) string {
	var s []string
	for _, p := range sortedPrios(m) {
		s = append(s, itoa(int(p)))
	}
	if len(s) == 1 {
		return "priority " + s[0]
	}
	return "priorities " + strings.Join(s, ", ")
}

func (a *analysis) netdevInfo(pi PortInfo) *NetdevInfo { return a.netdevNamed(pi.Netns, pi.Real) }

// netdevNamed is the analysis input of netdev in netns (nil when none).
func (a *analysis) netdevNamed(netns, netdev string) *NetdevInfo {
	for i := range a.in.Netdevs {
		if a.in.Netdevs[i].Netdev == netdev && a.in.Netdevs[i].Netns == netns {
			return &a.in.Netdevs[i]
		}
	}
	return nil
}

// lossFinding judges RC loss (the counters in loss) on the port pi by the
// PFC of every real netdev its frames leave through: the real netdev, or
// with RoCE LAG every slave of the bond (PortInfo.Slaves; a bond has no
// DCB of its own). Lossless only when PFC is on for all of them.
func (a *analysis) lossFinding(pi PortInfo, name string, loss []string) {
	carriers := []string{pi.Real}
	if len(pi.Slaves) > 0 {
		carriers = pi.Slaves
	}
	var on, off []string
	var prios []uint8
	for _, nd := range carriers {
		ni := a.netdevNamed(pi.Netns, nd)
		switch {
		case nd == "" || ni == nil || !dcbKnown(ni.DCB):
		case ni.DCB.PFC != nil && len(ni.DCB.PFC.EnabledPriorities()) > 0:
			on = append(on, nd)
			if prios == nil {
				prios = ni.DCB.PFC.EnabledPriorities()
			}
		default:
			off = append(off, nd)
		}
	}
	lost := strings.Join(loss, ", ")
	switch {
	case len(on) == len(carriers):
		a.addCounted(SeverityError, CodeLossOnLossless, "%s: RC traffic is losing packets%s (%s) although %s is meant to be lossless (PFC on priorities %v): look for drops on the path, a flow on a priority without PFC, or a peer without PFC", name, a.how(), lost, strings.Join(on, ", "), prios)
	case len(off) == len(carriers):
		a.addCounted(SeverityWarning, CodeLossWithoutPFC, "%s: RC traffic is losing packets%s (%s) and %s has PFC off on every priority: retransmissions are how a lossy class recovers, at a cost in throughput and latency", name, a.how(), lost, strings.Join(off, ", "))
	case len(on) > 0 && len(off) > 0:
		a.addCounted(SeverityWarning, CodeLossWithoutPFC, "%s: RC traffic is losing packets%s (%s); the bond's slaves differ: PFC on for %s, off on every priority for %s, so traffic through the latter is lossy", name, a.how(), lost, strings.Join(on, ", "), strings.Join(off, ", "))
	case pi.Boundary != "":
		a.addCounted(SeverityWarning, CodeLossWithoutPFC, "%s: RC traffic is losing packets%s (%s); whether its traffic is meant to be lossless is unknown: %s", name, a.how(), lost, pi.Boundary)
	default:
		a.addCounted(SeverityWarning, CodeLossWithoutPFC, "%s: RC traffic is losing packets%s (%s); whether %s is meant to be lossless is unknown (no DCB)", name, a.how(), lost, orWord(pi.Real, "its netdev"))
	}
}

func (a *analysis) portReport(pi PortInfo) *PortReport {
	for i := range a.r.Ports {
		if a.r.Ports[i].Device == pi.Device && a.r.Ports[i].Port == pi.Port {
			return &a.r.Ports[i]
		}
	}
	return nil
}

// byMeaning sums the rise of the port's counters with meaning m, and says
// which counters rose; present reports whether the driver has any.
func (a *analysis) byMeaning(pr *PortReport, m Meaning) (total uint64, parts []string, present bool) {
	if a.meanings == nil {
		a.meanings = map[*PortReport]map[Meaning][]string{}
	}
	idx, ok := a.meanings[pr]
	if !ok {
		idx = map[Meaning][]string{}
		for n, v := range pr.Counters {
			if v.Meaning != nil {
				idx[Meaning(*v.Meaning)] = append(idx[Meaning(*v.Meaning)], n)
			}
		}
		for _, ns := range idx {
			sort.Strings(ns)
		}
		a.meanings[pr] = idx
	}
	for _, n := range idx[m] {
		present = true
		v := pr.Counters[n]
		if d := a.rising(v.Value, v.delta); d > 0 {
			total += d
			parts = append(parts, n+" "+a.plus(d))
		}
	}
	return total, parts, present
}

func (a *analysis) portFindings(pi PortInfo) {
	name := fmt.Sprintf("%s port %d", pi.Device, pi.Port)
	if o := pi.TCOverride; o.Active() {
		what := ""
		if o.Global != nil {
			what = fmt.Sprintf("traffic class %d (DSCP %d) for every connected QP", *o.Global, qos.DSCP(*o.Global))
		}
		if len(o.Rules) > 0 {
			if what != "" {
				what += ", and "
			}
			what += fmt.Sprintf("%d address rule(s)", len(o.Rules))
		}
		a.add(SeverityWarning, CodeTrafficClassOverride, "%s: %s sets %s, whatever traffic class the application asks for", name, o.Source, what)
	}
	pr := a.portReport(pi)
	if pr == nil {
		return
	}
	ni := a.netdevInfo(pi)
	var loss []string
	for _, m := range lossSigns {
		if _, parts, _ := a.byMeaning(pr, m); len(parts) > 0 {
			loss = append(loss, parts...)
		}
	}
	if len(loss) > 0 {
		a.lossFinding(pi, name, loss)
	}
	if _, parts, _ := a.byMeaning(pr, OutOfBuffer); len(parts) > 0 {
		a.addCounted(SeverityWarning, CodeOutOfBuffer, "%s: %s%s: packets arrived for QPs with no receive WQE posted: the application does not refill its receive queues fast enough (on RC the responder answers with RNR NAKs and the sender waits and retries; on UD the packets are dropped)", name, strings.Join(parts, ", "), a.how())
	}
	ecn, ecnParts, _ := a.byMeaning(pr, ECNMarked)
	cnp, _, cnpPresent := a.byMeaning(pr, CNPSent)
	if ecn > 0 && cnpPresent && cnp == 0 {
		why := "DCQCN's notification point is off or not answering"
		if ni != nil && ni.DCQCN != nil && ni.DCQCN.Status == qos.SettingRead {
			var off, on []string
			for _, p := range sortedPrios(a.roce[[2]string{ni.Netns, ni.Netdev}]) {
				np, _ := ni.DCQCN.Enabled(p)
				switch {
				case np != nil && !*np:
					off = append(off, itoa(int(p)))
				case np != nil:
					on = append(on, itoa(int(p)))
				}
			}
			switch {
			case len(off) > 0:
				why = fmt.Sprintf("DCQCN's notification point is off on RoCE priority %s of %s", strings.Join(off, ", "), ni.Netdev)
			case len(on) > 0:
				why = fmt.Sprintf("DCQCN's notification point is on for RoCE priority %s of %s, so the marked packets arrive on another priority, or the NIC does not answer them", strings.Join(on, ", "), ni.Netdev)
			}
		}
		a.addCounted(SeverityWarning, CodeECNWithoutCNP, "%s: %d ECN-marked RoCE packets received%s (%s) but no CNP sent: %s, so senders never slow down", name, ecn, a.how(), strings.Join(ecnParts, ", "), why)
	}
	if cnp > 0 && ni != nil && dcbKnown(ni.DCB) {
		a.cnpFinding(name, cnp, ni)
	}
}

func orWord(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// cnpFinding checks that the priority CNPs are sent on is protected: PFC
// on it, or its traffic class strict or with an ETS share.
func (a *analysis) cnpFinding(name string, cnp uint64, ni *NetdevInfo) {
	q, d := ni.DCQCN, ni.DCB
	if q == nil || q.Status != qos.SettingRead {
		return
	}
	var prio uint8
	var from string
	switch {
	case q.CNPPrio != nil && d.Trust() != qos.TrustDSCP:
		prio, from = *q.CNPPrio, fmt.Sprintf("cnp_802p_prio %d", *q.CNPPrio)
	case q.CNPDSCP != nil && d.Trust() == qos.TrustDSCP:
		p, ok := d.DSCPPriority(*q.CNPDSCP)
		if !ok {
			a.addCounted(SeverityWarning, CodeCNPUnprotected, "%s: %d CNPs sent%s with DSCP %d (cnp_dscp), which the APP table of %s does not map: they land on the port's default priority", name, cnp, a.how(), *q.CNPDSCP, ni.Netdev)
			return
		}
		prio, from = p, fmt.Sprintf("cnp_dscp %d → priority %d", *q.CNPDSCP, p)
	case q.CNPPrio != nil:
		prio, from = *q.CNPPrio, fmt.Sprintf("cnp_802p_prio %d", *q.CNPPrio)
	default:
		return
	}
	prio &= 7
	if d.PFC != nil && d.PFC.On(prio) {
		return
	}
	if d.ETS == nil {
		return
	}
	tc := d.ETS.PrioTC[prio] & 7
	tsa, bw := d.ETS.TCTSA[tc], d.ETS.TCTxBW[tc]
	if tsa == qos.TSAStrict || bw > 0 {
		return
	}
	a.addCounted(SeverityWarning, CodeCNPUnprotected, "%s: %d CNPs sent%s on priority %d (%s), which has no PFC and whose traffic class %d has no ETS share (%s, %d%%): under load the CNPs wait or drop and DCQCN reacts late", name, cnp, a.how(), prio, from, tc, qos.TSAName(tsa), bw)
}
