package agent

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/roce-probe/roce-probe/audit"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
)

// gidRow is one used GID table entry as roce_probe_gid_info shows it:
// fabric's GIDEntry (the one rule of networks and usable
// entries, which the fabric report applies to the same snapshot).
type gidRow = fabric.GIDEntry

// gidKey is what roce_probe_gid_index is per: the entries a workload
// chooses among for one network.
type gidKey struct {
	Device  string
	Port    int
	Type    gid.Type
	Family  string
	Network string
}

// familyOf is the family label of an address: fabric.Family of its GID.
func familyOf(a netip.Addr) string { return fabric.Family(gid.FromAddr(a)) }

// gidRows lists the used entries of every port of the view.
func gidRows(v *host.View) []gidRow { return fabric.GIDEntries(v) }

// usableIndex returns the index of every (device, port, type, family,
// network) of the view's rows: fabric.GIDIndexes, the fabric report's
// usable GID index, from the entries gidRows read.
func usableIndex(rows []gidRow) map[gidKey]int {
	out := map[gidKey]int{}
	for _, gi := range fabric.IndexesOf(rows) {
		out[gidKey{gi.Device, gi.Port, gi.Type, gi.Family, gi.Network}] = gi.Index
	}
	return out
}

// gidMove is an entry of a (type, family, network) that moved to another
// index since an earlier read.
type gidMove struct {
	Key      gidKey
	From, To int
}

// gidTracker remembers the last index seen for each gidKey (also while
// the entry is absent, so a table that re-registers after a port flap
// counts the move) and counts the moves per port.
type gidTracker struct {
	last  map[gidKey]int
	moves map[[2]string]uint64 // (device, port) → moves
}

func newGIDTracker() *gidTracker {
	return &gidTracker{last: map[gidKey]int{}, moves: map[[2]string]uint64{}}
}

// update records the indexes of one read and returns the moves.
func (t *gidTracker) update(idx map[gidKey]int) []gidMove {
	var out []gidMove
	for k, i := range idx {
		if prev, ok := t.last[k]; ok && prev != i {
			out = append(out, gidMove{Key: k, From: prev, To: i})
			t.moves[[2]string{k.Device, strconv.Itoa(k.Port)}]++
		}
		t.last[k] = i
	}
	sort.Slice(out, func(a, b int) bool { return fmt.Sprint(out[a].Key) < fmt.Sprint(out[b].Key) })
	return out
}

// flowSource is a flow resolved against one read of the host: the GID
// entry it sends from, the AH parameters, and its check.
type flowSource struct {
	cfg    FlowConfig
	src    *host.Source // nil when the select finds no usable entry
	err    error        // why src is nil
	index  int
	tclass uint8
	sl     uint8
	path   qos.Path
	check  *qos.Result // nil when src is nil or the check failed
}

// resolveFlow finds the flow's source entry (its select) in the view and
// checks the flow as `roce-probe check` does.
func resolveFlow(v *host.View, f FlowConfig, rows []gidRow) *flowSource {
	fs := &flowSource{cfg: f, index: -1}
	s := f.Select
	dev, port, index := s.Device, s.Port, -1
	if s.GIDIndex != nil {
		index = *s.GIDIndex
	} else {
		for _, r := range rows {
			if !r.Usable || r.Entry.Type != gid.TypeRoCEv2 || r.Family != s.Family ||
				(s.Netdev != "" && r.Entry.Netdev != s.Netdev) || (s.Device != "" && (r.Device != s.Device || r.Port != s.Port)) {
				continue
			}
			if index < 0 || r.Device < dev || (r.Device == dev && (r.Port < port || (r.Port == port && r.Entry.Index < index))) {
				dev, port, index = r.Device, r.Port, r.Entry.Index
			}
		}
		if index < 0 {
			fs.err = fmt.Errorf("no usable RoCE v2 %s GID%s", s.Family, selectWhere(s))
			return fs
		}
	}
	src, err := v.Source(dev, port, index)
	if err != nil {
		fs.err = err
		return fs
	}
	if err := probe.SourceEntry(src.Entry); err != nil {
		fs.err = fmt.Errorf("GID index %d of %s port %d %w", index, dev, port, err)
		return fs
	}
	if err := probe.SendableStack(src.Desc); err != nil {
		fs.err = fmt.Errorf("GID index %d of %s port %d: its netdev %s %w", index, dev, port, src.Entry.Netdev, err)
		return fs
	}
	fs.src, fs.index = src, index
	// The flow as the host sends it (View.Flow: rdma_cm's configfs default
	// ToS and the driver's traffic class override applied), checked as
	// `roce-probe check` checks it; its probes carry the sl and traffic
	// class the check ends with.
	fp := f.Params()
	fs.tclass, fs.sl = fp.TrafficClass, fp.SL
	if r, err := qos.Check(v.Flow(src, fp)); err == nil {
		fs.check = &r
		fs.tclass, fs.sl, fs.path = r.TrafficClass, r.SL, r.Path
	}
	return fs
}

// Params are the markings the flow asks for: its tclass and sl (verbs),
// or, with tos or rdma_cm, an rdma_cm flow with that ToS (none: the
// port's configfs default_roce_tos).
func (f FlowConfig) Params() host.FlowParams {
	var fp host.FlowParams
	if f.TOS != nil || f.RDMACM {
		fp.RDMACM = true
		if f.TOS != nil {
			tos := uint8(*f.TOS)
			fp.TOS = &tos
		}
		return fp
	}
	if f.TClass != nil {
		fp.TrafficClass = uint8(*f.TClass)
	}
	if f.SL != nil {
		fp.SL = uint8(*f.SL)
	}
	return fp
}

// Expectation is the flow as `roce-probe audit` and the agent's audit
// expect the host's traffic: its markings (Params), for the GID entries
// its select names (netdev, device and port, gid_index, family).
func (f FlowConfig) Expectation() audit.Expectation {
	s := f.Select
	e := audit.Expectation{Name: f.Name, Netdev: s.Netdev, Device: s.Device, Port: s.Port, GIDIndex: -1, Family: s.Family, Params: f.Params()}
	if s.GIDIndex != nil {
		e.GIDIndex = *s.GIDIndex
	}
	return e
}

func selectWhere(s SelectConfig) string {
	var w []string
	if s.Netdev != "" {
		w = append(w, "on "+s.Netdev)
	}
	if s.Device != "" {
		w = append(w, fmt.Sprintf("of %s port %d", s.Device, s.Port))
	}
	if len(w) == 0 {
		return ""
	}
	return " " + strings.Join(w, " ")
}

// netdev is the flow's source netdev ("" when unresolved).
func (fs *flowSource) netdev() string {
	if fs.src == nil {
		return ""
	}
	return fs.src.Entry.Netdev
}

// hostMetrics builds the metrics of one read: GID entries and indexes,
// index moves, flows, counters.
func hostMetrics(rows []gidRow, idx map[gidKey]int, t *gidTracker, flows []*flowSource, rep *counters.Report, snapErrs []host.SourceError) []prometheus.Metric {
	md := descs()
	var ms []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ms = append(ms, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...))
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ms = append(ms, prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...))
	}
	for _, r := range rows {
		vl := ""
		if r.Entry.VLAN != nil {
			vl = strconv.Itoa(int(*r.Entry.VLAN))
		}
		gauge(md.gidInfo, 1, r.Device, strconv.Itoa(r.Port), strconv.Itoa(r.Entry.Index), r.Entry.GID.String(), r.Entry.Type.String(), r.Family, r.Entry.Netdev, vl, r.Network)
	}
	for k, i := range idx {
		gauge(md.gidIndex, float64(i), k.Device, strconv.Itoa(k.Port), k.Type.String(), k.Family, k.Network)
	}
	// Every port of the tables has the counter, 0 until an entry moves.
	ports := map[[2]string]bool{}
	for _, r := range rows {
		ports[[2]string{r.Device, strconv.Itoa(r.Port)}] = true
	}
	for p := range t.moves {
		ports[p] = true
	}
	for p := range ports {
		counter(md.gidIndexChanges, float64(t.moves[p]), p[0], p[1])
	}
	for _, f := range flows {
		verdict := qos.Unknown
		if f.check != nil {
			verdict = f.check.Verdict
			gauge(md.flowWarnings, float64(len(f.check.Warnings)), f.cfg.Name)
		}
		for _, v := range []qos.Verdict{qos.Lossless, qos.Lossy, qos.Unknown} {
			val := 0.0
			if v == verdict {
				val = 1
			}
			gauge(md.flowVerdict, val, f.cfg.Name, string(v))
		}
		if f.src != nil {
			gauge(md.flowSource, 1, f.cfg.Name, f.src.Port.Device, strconv.Itoa(f.src.Port.Port), strconv.Itoa(f.index), f.netdev())
		}
	}
	if rep != nil {
		ms = append(ms, counterMetrics(rep)...)
		for _, rp := range rep.RoCEPriorities {
			gauge(md.rocePriority, 1, rp.Netdev, strconv.Itoa(int(rp.Prio)))
		}
	}
	kinds := map[string]int{}
	for _, e := range snapErrs {
		kinds[errorKind(e.Source)]++
	}
	for k, n := range kinds {
		gauge(md.snapshotErrors, float64(n), k)
	}
	return ms
}

// errorKind is the first word of a snapshot error's source ("dcb eth0" →
// "dcb"), so the label has few values.
func errorKind(source string) string {
	k, _, _ := strings.Cut(source, " ")
	return k
}

// counterMetrics are the RDMA and per-priority counters of one sample:
// only the counters the driver has (absent, never 0).
func counterMetrics(rep *counters.Report) []prometheus.Metric {
	md := descs()
	var ms []prometheus.Metric
	add := func(d *prometheus.Desc, v float64, l ...string) {
		ms = append(ms, prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...))
	}
	for _, p := range rep.Ports {
		port := strconv.Itoa(p.Port)
		for name, v := range p.Counters {
			meaning := ""
			if v.Meaning != nil {
				meaning = *v.Meaning
			}
			add(md.rdmaStatistic, float64(v.Value), p.Device, port, name, meaning)
		}
	}
	type pc struct {
		d     *prometheus.Desc
		c     counters.PrioCounter
		label string
		scale float64
	}
	table := []pc{
		{md.prioPackets, counters.PrioRxPackets, "rx", 1}, {md.prioPackets, counters.PrioTxPackets, "tx", 1},
		{md.prioBytes, counters.PrioRxBytes, "rx", 1}, {md.prioBytes, counters.PrioTxBytes, "tx", 1},
		{md.prioPauseFrames, counters.PrioRxPause, "rx", 1}, {md.prioPauseFrames, counters.PrioTxPause, "tx", 1},
		{md.prioPauseSeconds, counters.PrioRxPauseDuration, "rx", 1e-6}, {md.prioPauseSeconds, counters.PrioTxPauseDuration, "tx", 1e-6},
		{md.prioDiscards, counters.PrioRxDiscards, "discard", 1}, {md.prioDiscards, counters.PrioRxBufDiscard, "buffer", 1},
		{md.prioDiscards, counters.PrioRxCongDiscard, "congestion", 1},
	}
	for _, pr := range rep.Priorities {
		prio := strconv.Itoa(int(pr.Prio))
		for _, x := range table {
			if v := pr.Values[x.c]; v != nil {
				add(x.d, float64(v.Value)*x.scale, pr.Netdev, prio, x.label)
			}
		}
		// DCB's PFC frame counters where the driver counts no pause frames.
		if pr.Values[counters.PrioRxPause] == nil && pr.PFCIndications != nil {
			add(md.prioPauseFrames, float64(pr.PFCIndications.Value), pr.Netdev, prio, "rx")
		}
		if pr.Values[counters.PrioTxPause] == nil && pr.PFCRequests != nil {
			add(md.prioPauseFrames, float64(pr.PFCRequests.Value), pr.Netdev, prio, "tx")
		}
	}
	return ms
}

// auditPrios are the values of the prio label of the audit's metric: the
// eight priorities and "unknown".
var auditPrios = [9]string{"0", "1", "2", "3", "4", "5", "6", "7", "unknown"}

// auditMetrics are the audit's per-priority results (nil: no audit yet,
// the first read has no interval): for each real netdev the audit could
// check, the RDMA packets it sent and, for every priority and "unknown",
// those it found off the expected priorities (0 where none) — nine series
// per netdev whatever the traffic.
func auditMetrics(r *audit.Report) []prometheus.Metric {
	if r == nil {
		return nil
	}
	md := descs()
	var ms []prometheus.Metric
	for _, nd := range r.Netdevs {
		if nd.Reason != nil || nd.RDMATx == nil {
			continue
		}
		var off [9]uint64
		for _, f := range r.Findings {
			if f.Code != audit.CodeRDMAOffPriority || f.Netdev == nil || *f.Netdev != nd.Netdev || nd.Unaccounted == nil {
				continue
			}
			i := 8
			if f.Priority != nil && *f.Priority < 8 {
				i = int(*f.Priority)
			}
			off[i] = *nd.Unaccounted
		}
		ms = append(ms, prometheus.MustNewConstMetric(md.auditRDMA, prometheus.GaugeValue, float64(*nd.RDMATx), nd.Netdev))
		for i, p := range auditPrios {
			ms = append(ms, prometheus.MustNewConstMetric(md.auditOff, prometheus.GaugeValue, float64(off[i]), nd.Netdev, p))
		}
	}
	return ms
}
