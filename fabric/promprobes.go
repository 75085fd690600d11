package fabric

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"time"

	"github.com/roce-probe/roce-probe/internal/bound"
)

// The probe metrics the Prometheus source reads back for localisation
// (docs/metrics.md, "Probes"), declared here once: the agent writes them
// under these names.
const (
	MetricProbesSent       = "roce_probe_probes_sent_total"
	MetricProbesLost       = "roce_probe_probes_lost_total"
	MetricMarkingEvents    = "roce_probe_probe_marking_events_total"
	MetricToRProbesSent    = "roce_probe_tor_probes_sent_total"
	MetricToRMarkingEvents = "roce_probe_tor_marking_events_total"
	MetricWorstPairLoss    = "roce_probe_worst_pair_loss_ratio"
	MetricWorstPairLost    = "roce_probe_worst_pair_lost_probes"
	MetricFlowSource       = "roce_probe_flow_source_info"
	MetricTopologyInfo     = "roce_probe_topology_info"
	MetricProbeScale       = "roce_probe_probe_rate_scale"
	MetricTracedSports     = "roce_probe_traced_sports"
	MetricTracedRemarks    = "roce_probe_traced_remarks"
)

// DefaultWindow is the window the Prometheus source counts probes over
// (PrometheusOptions.Window): the alerts' 5 minutes.
const DefaultWindow = 5 * time.Minute

// ProbeMetrics are the samples ObservationsFromMetrics turns into one
// window of probe results, each the answer to its query of
// ProbeQueries.
type ProbeMetrics struct {
	// What ties an agent's series to its NICs, as they are now:
	// roce_probe_gid_info, roce_probe_flow_source_info,
	// roce_probe_topology_info, roce_probe_probe_rate_scale.
	GIDInfo, FlowSource, Topology, Scale []Sample
	// MateLost: the increase of roce_probe_probes_lost_total over the
	// window, the pairs that lost only; MateLossySent: of
	// roce_probe_probes_sent_total, those pairs only; MateSent: of
	// roce_probe_probes_sent_total, summed by host and flow; MateRemarked:
	// of roce_probe_probe_marking_events_total{field="dscp",
	// event="remarked"}, the pairs that saw some.
	MateLost, MateLossySent, MateSent, MateRemarked []Sample
	// ToRSent: the increase of roce_probe_tor_probes_sent_total over the
	// window; ToRRemarked: of roce_probe_tor_marking_events_total{field=
	// "dscp", event="remarked"}, the groups that saw some.
	ToRSent, ToRRemarked []Sample
	// WorstLoss and WorstLost: roce_probe_worst_pair_loss_ratio and
	// roce_probe_worst_pair_lost_probes of the pairs not under the
	// agent's ToR, as they are now.
	WorstLoss, WorstLost []Sample
	// TracedSports and TracedRemarks: roce_probe_traced_sports and
	// roce_probe_traced_remarks, the faulty UDP source ports the agents'
	// automatic traces followed, as they are now.
	TracedSports, TracedRemarks []Sample
}

// ProbeQueries are the PromQL queries of ProbeMetrics' fields, by field
// name, for hosts named by hostLabel and a window w.
func ProbeQueries(hostLabel string, w time.Duration) map[string]string {
	r := "[" + promDuration(w) + "]"
	const dscp = `{field="dscp",event="remarked"}`
	return map[string]string{
		"GIDInfo":       MetricGIDInfo,
		"FlowSource":    MetricFlowSource,
		"Topology":      MetricTopologyInfo,
		"Scale":         MetricProbeScale,
		"MateLost":      "increase(" + MetricProbesLost + r + ") > 0",
		"MateLossySent": "increase(" + MetricProbesSent + r + ") and (increase(" + MetricProbesLost + r + ") > 0)",
		"MateSent":      "sum by (" + hostLabel + ", flow) (increase(" + MetricProbesSent + r + "))",
		"MateRemarked":  "increase(" + MetricMarkingEvents + dscp + r + ") > 0",
		"ToRSent":       "increase(" + MetricToRProbesSent + r + ")",
		"ToRRemarked":   "increase(" + MetricToRMarkingEvents + dscp + r + ") > 0",
		"WorstLoss":     MetricWorstPairLoss + `{scope!="tor"}`,
		"WorstLost":     MetricWorstPairLost + `{scope!="tor"}`,
		"TracedSports":  MetricTracedSports,
		"TracedRemarks": MetricTracedRemarks,
	}
}

// promDuration writes d as a PromQL duration in whole seconds (at least
// 1s).
func promDuration(d time.Duration) string {
	return strconv.FormatInt(max(int64(d/time.Second), 1), 10) + "s"
}

// ReadPrometheusProbes reads one window (o.Window, 0: DefaultWindow) of
// the agents' probe results back from Prometheus at base (ProbeQueries)
// and turns them into localisation's input (ObservationsFromMetrics);
// hosts are those ReadPrometheus returned, which get a note when their
// probes cannot be tied to their NICs. ok is false when Prometheus holds
// no probe series at all (agents that probe nothing, or older than the
// address label): then there is nothing to localise from.
func ReadPrometheusProbes(ctx context.Context, base string, hosts []Host, o PrometheusOptions) (in LocalizeInput, ok bool, err error) {
	if o.HostLabel == "" {
		o.HostLabel = "instance"
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	q := ProbeQueries(o.HostLabel, o.Window)
	var m ProbeMetrics
	for _, f := range []struct {
		name string
		to   *[]Sample
	}{{"GIDInfo", &m.GIDInfo}, {"FlowSource", &m.FlowSource}, {"Topology", &m.Topology}, {"Scale", &m.Scale},
		{"MateLost", &m.MateLost}, {"MateLossySent", &m.MateLossySent}, {"MateSent", &m.MateSent}, {"MateRemarked", &m.MateRemarked},
		{"ToRSent", &m.ToRSent}, {"ToRRemarked", &m.ToRRemarked}, {"WorstLoss", &m.WorstLoss}, {"WorstLost", &m.WorstLost},
		{"TracedSports", &m.TracedSports}, {"TracedRemarks", &m.TracedRemarks}} {
		s, err := Query(ctx, base, q[f.name], o)
		if err != nil && f.name == "ToRSent" && errors.Is(err, bound.ErrTooLarge) {
			// Only the matrix's healthy inter-ToR cells need it: go on
			// without (docs/fabric.md).
			continue
		}
		if err != nil {
			return LocalizeInput{}, false, err
		}
		*f.to = s
	}
	in, notes := ObservationsFromMetrics(m, o.HostLabel)
	for i := range hosts {
		hosts[i].Notes = append(hosts[i].Notes, notes[hosts[i].Name]...)
	}
	ok = len(m.MateSent) > 0 || len(m.ToRSent) > 0 || len(m.MateLost) > 0 || len(m.WorstLost) > 0
	return in, ok, nil
}

// ObservationsFromMetrics turns one window of the agents' probe series
// into localisation's input, as AgentObservations does their pair
// detail, naming NICs alike (by address) so that both give Localize the
// same pairs where the series have them:
//
//   - an agent's side of a pair is its flow's NIC: the address of the GID
//     entry the flow sends from (roce_probe_flow_source_info joined with
//     roce_probe_gid_info on device, port and index), its ToR the switch
//     roce_probe_topology_info names for the flow's netdev, else the one
//     switch all its netdevs name;
//   - a ToR-mate pair is the agent's NIC and the series' address, both
//     under the agent's ToR, with the probes it sent and lost (pairs that
//     lost only) and the probes that arrived with DSCP remarked over the
//     window;
//   - a pair with a NIC of another ToR is one of the agent's worst pairs
//     (roce_probe_worst_pair_lost_probes and _loss_ratio, scope not tor:
//     the pairs that lost over its current and last round), its ToR the
//     series' peer_tor;
//   - a pair's faulty UDP source ports that the agent's automatic traces
//     followed (roce_probe_traced_sports, roce_probe_traced_remarks, as
//     they are now) are its SportObservations with their spine and the
//     remark the trace saw, as /pairs' sport_faults give them (tracedPorts);
//   - the probes sent to ToR-mates (per agent and flow) and to the NICs
//     of each other ToR (per peer ToR), and the probes of those that
//     arrived remarked (less the traced pairs' remarked ports), are pairs of the agent's NIC with "(mates of
//     NIC)" and "(NICs of TOR)": they count for the matrix and for
//     remarking between ToRs, never as loss (which the worst pairs name);
//   - an agent whose roce_probe_probe_rate_scale is below 1 has its NICs
//     marked noisy;
//   - each ToR's NICs (LocalizeInput.ToRNICs, for the nic rule) are the
//     agents' RoCE netdevs roce_probe_topology_info puts under it, or the
//     NICs the pairs name under it when more (torNICs).
//
// Series of a host whose flows cannot be tied to a NIC (no flow source,
// its GID entry not in roce_probe_gid_info) or without the address label
// (agents older than it) are left out, with a note for the host (by
// hostLabel) saying so.
func ObservationsFromMetrics(m ProbeMetrics, hostLabel string) (LocalizeInput, map[string][]string) {
	notes := map[string][]string{}
	note := func(h, s string) {
		for _, n := range notes[h] {
			if n == s {
				return
			}
		}
		notes[h] = append(notes[h], s)
	}
	// The GID entries' addresses.
	type entryKey struct{ host, dev, port, index string }
	addrOf := map[entryKey]string{}
	for _, s := range m.GIDInfo {
		l := s.Labels
		a, err := netip.ParseAddr(l["gid"])
		if err != nil || l[hostLabel] == "" {
			continue
		}
		addrOf[entryKey{l[hostLabel], l["device"], l["port"], l["index"]}] = a.Unmap().String()
	}
	// The switch of each netdev, and the one switch of a host.
	type hostNetdev struct{ host, netdev string }
	switchOf := map[hostNetdev]string{}
	oneSwitch := map[string]string{} // "\x00": several
	for _, s := range m.Topology {
		h, sw := s.Labels[hostLabel], s.Labels["switch"]
		if h == "" || sw == "" {
			continue
		}
		switchOf[hostNetdev{h, s.Labels["netdev"]}] = sw
		switch oneSwitch[h] {
		case "", sw:
			oneSwitch[h] = sw
		default:
			oneSwitch[h] = "\x00"
		}
	}
	// Each agent's flows' NICs.
	type flowKey struct{ host, flow string }
	nics := map[flowKey]nicOf{}
	for _, s := range m.FlowSource {
		l := s.Labels
		h := l[hostLabel]
		if h == "" {
			continue
		}
		a := addrOf[entryKey{h, l["device"], l["port"], l["index"]}]
		if a == "" {
			note(h, fmt.Sprintf("flow %s: its source GID entry (%s/%s index %s) is not in %s: its probes are not in the suspects", l["flow"], l["device"], l["port"], l["index"], MetricGIDInfo))
			continue
		}
		tor, ok := switchOf[hostNetdev{h, l["netdev"]}]
		if !ok && oneSwitch[h] != "\x00" {
			tor = oneSwitch[h]
		}
		nics[flowKey{h, l["flow"]}] = nicOf{a, tor}
	}
	noisyHost := map[string]bool{}
	for _, s := range m.Scale {
		if s.Value < 1 && s.Labels[hostLabel] != "" {
			noisyHost[s.Labels[hostLabel]] = true
		}
	}
	// The prober's NIC of a series; ok false (and a note) when not known.
	prober := func(s Sample) (nicOf, bool) {
		h := s.Labels[hostLabel]
		n, ok := nics[flowKey{h, s.Labels["flow"]}]
		if !ok && h != "" {
			note(h, fmt.Sprintf("flow %s: no %s tying it to a NIC: its probes are not in the suspects", s.Labels["flow"], MetricFlowSource))
		}
		return n, ok
	}
	count := func(v float64) uint64 {
		if math.IsNaN(v) || v <= 0 {
			return 0
		}
		return uint64(math.Round(min(v, 1<<53)))
	}
	// A NIC's ToR: its agent's, else what the worst pairs say.
	torOf := map[string]string{}
	for _, n := range nics {
		if n.tor != "" {
			torOf[n.addr] = n.tor
		}
	}
	for _, s := range m.WorstLost {
		if a, t := s.Labels["address"], s.Labels["peer_tor"]; a != "" && t != "" && torOf[a] == "" {
			torOf[a] = t
		}
	}
	type key struct{ src, dst string }
	obs := map[key]*PairObservation{}
	pair := func(src, dst, srcToR, dstToR string) *PairObservation {
		k := key{src, dst}
		o := obs[k]
		if o == nil {
			o = &PairObservation{Src: src, Dst: dst, SrcToR: srcToR, DstToR: dstToR}
			obs[k] = o
		}
		return o
	}
	peerAddr := func(s Sample) (string, bool) {
		a, err := netip.ParseAddr(s.Labels["address"])
		if err != nil {
			if h := s.Labels[hostLabel]; h != "" {
				note(h, "probe series without an address label (an agent older than it): its ToR-mates and worst pairs are not in the suspects")
			}
			return "", false
		}
		return a.Unmap().String(), true
	}
	mateToR := func(n nicOf, dst string) string {
		if t := torOf[dst]; t != "" {
			return t
		}
		return n.tor
	}
	// ToR-mates: loss, and remarking (its series name the peer, which the
	// lost series tie to an address).
	type peerKey struct{ host, flow, peer string }
	mateAddr := map[peerKey]string{}
	for _, s := range m.MateLost {
		n, ok := prober(s)
		if !ok {
			continue
		}
		dst, ok := peerAddr(s)
		if !ok {
			continue
		}
		mateAddr[peerKey{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer"]}] = dst
		pair(n.addr, dst, n.tor, mateToR(n, dst)).Lost += count(s.Value)
	}
	for _, s := range m.MateRemarked {
		n, ok := prober(s)
		if !ok {
			continue
		}
		dst := mateAddr[peerKey{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer"]}]
		if dst == "" {
			if a, err := netip.ParseAddr(s.Labels["peer"]); err == nil {
				dst = a.Unmap().String() // a peer named by its address
			} else {
				dst = "(mates of " + n.addr + ")"
			}
		}
		pair(n.addr, dst, n.tor, mateToR(n, dst)).Remarked += count(s.Value)
	}
	lossySent := map[flowKey]uint64{} // the lossy pairs' probes, per agent and flow
	for _, s := range m.MateLossySent {
		n, ok := prober(s)
		dst := mateAddr[peerKey{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer"]}]
		if !ok || dst == "" {
			continue
		}
		sent := count(s.Value)
		pair(n.addr, dst, n.tor, mateToR(n, dst)).Sent += sent
		lossySent[flowKey{s.Labels[hostLabel], s.Labels["flow"]}] += sent
	}
	for _, s := range m.MateSent {
		if n, ok := prober(s); ok {
			k := flowKey{s.Labels[hostLabel], s.Labels["flow"]}
			sent := count(s.Value)
			pair(n.addr, "(mates of "+n.addr+")", n.tor, n.tor).Sent += sent - min(sent, lossySent[k])
		}
	}
	// Other ToRs: the worst pairs' loss, the groups' probes and remarking.
	type worstKey struct{ host, flow, addr string }
	ratio := map[worstKey]float64{}
	for _, s := range m.WorstLoss {
		ratio[worstKey{s.Labels[hostLabel], s.Labels["flow"], s.Labels["address"]}] = s.Value
	}
	namedSent := map[[3]string]uint64{} // (host, flow, peer ToR): probes of the worst pairs
	for _, s := range m.WorstLost {
		n, ok := prober(s)
		if !ok {
			continue
		}
		dst, ok := peerAddr(s)
		if !ok || count(s.Value) == 0 {
			continue
		}
		o := pair(n.addr, dst, n.tor, s.Labels["peer_tor"])
		o.Lost += count(s.Value)
		if r := ratio[worstKey{s.Labels[hostLabel], s.Labels["flow"], s.Labels["address"]}]; r > 0 {
			sent := count(s.Value / r) // answered + lost
			o.Sent += sent
			namedSent[[3]string{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer_tor"]}] += sent
		}
	}
	namedRemarked := tracedPorts(m, hostLabel, prober, peerAddr, pair, count, note)
	group := func(n nicOf, t string) *PairObservation {
		name := "(NICs of " + t + ")"
		if t == "" {
			name = "(NICs of unknown ToRs)"
		}
		return pair(n.addr, name, n.tor, t)
	}
	for _, s := range m.ToRRemarked {
		if n, ok := prober(s); ok {
			k := [3]string{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer_tor"]}
			v := count(s.Value)
			named := min(v, namedRemarked[k])
			namedRemarked[k] -= named // the traced pairs' remarked ports: theirs
			group(n, s.Labels["peer_tor"]).Remarked += v - named
		}
	}
	for _, s := range m.ToRSent {
		if n, ok := prober(s); ok {
			k := [3]string{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer_tor"]}
			sent := count(s.Value)
			named := min(sent, namedSent[k])
			namedSent[k] -= named // counted once over the group's scopes
			group(n, s.Labels["peer_tor"]).Sent += sent - named
		}
	}
	noisy := map[string]bool{}
	for k, n := range nics {
		if noisyHost[k.host] {
			noisy[n.addr] = true
		}
	}
	in := observationsOf(obs, noisy)
	in.ToRNICs = torNICs(m.Topology, hostLabel, in.Pairs)
	return in, notes
}

// torNICs counts each ToR's NICs for the nic rule (LocalizeInput.ToRNICs)
// from the agents' series: the RoCE netdevs roce_probe_topology_info puts
// under it (one per agent's NIC), or, when more, the NICs the pairs name
// under it (the agents' own, every one of which probes, and the peers of
// their lossy mate and worst pairs). A NIC without an agent that lost
// nothing is in neither: such a ToR counts fewer NICs than it has.
// O(series + pairs).
func torNICs(topo []Sample, hostLabel string, pairs []PairObservation) map[string]int {
	netdevs := map[string]map[[2]string]bool{}
	for _, s := range topo {
		h, sw := s.Labels[hostLabel], s.Labels["switch"]
		if h == "" || sw == "" {
			continue
		}
		if netdevs[sw] == nil {
			netdevs[sw] = map[[2]string]bool{}
		}
		netdevs[sw][[2]string{h, s.Labels["netdev"]}] = true
	}
	named := map[string]map[string]bool{}
	add := func(tor, nic string) {
		if _, err := netip.ParseAddr(nic); err != nil || tor == "" {
			return // "(mates of …)", "(NICs of …)"
		}
		if named[tor] == nil {
			named[tor] = map[string]bool{}
		}
		named[tor][nic] = true
	}
	for _, o := range pairs {
		add(o.SrcToR, o.Src)
		add(o.DstToR, o.Dst)
	}
	var out map[string]int
	for _, m := range []map[string]int{lenOf(netdevs), lenOf(named)} {
		for t, n := range m {
			if out == nil {
				out = map[string]int{}
			}
			out[t] = max(out[t], n)
		}
	}
	return out
}

func lenOf[V comparable](m map[string]map[V]bool) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// nicOf is an agent's flow's NIC: its address and ToR ("" when not
// known).
type nicOf struct{ addr, tor string }

// maxPairSports is the most faulty UDP source ports an agent keeps a pair
// (docs/json.md, sport_faults).
const maxPairSports = 8

// tracedPorts adds to the pairs their faulty UDP source ports that the
// agents' automatic traces followed, as /pairs' sport_faults give them to
// AgentObservations: roce_probe_traced_remarks' ports with the change
// their trace saw (field, values, hops), roce_probe_traced_sports' lost
// ports and the remarked ones no change describes, with their spine. A
// port's number is not in the series (0), and each counts one probe: a
// pair's lost (remarked) probes are at least its lost (remarked) ports.
// It returns the remarked ports it gave the pairs, by (host, flow, peer
// ToR), which their ToR's group then does not count again.
func tracedPorts(m ProbeMetrics, hostLabel string, prober func(Sample) (nicOf, bool), peerAddr func(Sample) (string, bool),
	pair func(src, dst, srcToR, dstToR string) *PairObservation, count func(float64) uint64, note func(host, text string)) map[[3]string]uint64 {
	type portKey struct{ host, flow, addr, spine string }
	described := map[portKey]uint64{} // remarked ports with their change
	named := map[[3]string]uint64{}
	tied := func(s Sample, metric string) (*PairObservation, uint64, bool) {
		n, ok := prober(s)
		if !ok {
			return nil, 0, false
		}
		dst, ok := peerAddr(s)
		ports := count(s.Value)
		if !ok || ports == 0 {
			return nil, 0, false
		}
		o := pair(n.addr, dst, n.tor, s.Labels["peer_tor"])
		// An agent keeps at most maxPairSports faulty ports a pair
		// (/pairs' sport_faults): a series' value is outside input, and a
		// larger one must not make this loop allocate without bound.
		if left := uint64(maxPairSports - min(len(o.Sports), maxPairSports)); ports > left {
			note(s.Labels[hostLabel], fmt.Sprintf("%s for %s: %v ports, more than an agent keeps a pair (%d): only %d counted", metric, dst, s.Value, maxPairSports, left))
			ports = left
		}
		return o, ports, ports > 0
	}
	sportSums := map[*PairObservation]*[2]uint64{} // the ports' lost and remarked, as o.Sports grows
	sums := func(o *PairObservation) *[2]uint64 {
		if sportSums[o] == nil {
			sportSums[o] = &[2]uint64{}
		}
		return sportSums[o]
	}
	remarked := func(o *PairObservation, s Sample, ports uint64, so SportObservation) {
		for range ports {
			o.Sports = append(o.Sports, so)
		}
		sums(o)[1] += ports * so.Remarked
		if n := sums(o)[1]; n > o.Remarked {
			named[[3]string{s.Labels[hostLabel], s.Labels["flow"], s.Labels["peer_tor"]}] += n - o.Remarked
			o.Remarked = n
		}
	}
	for _, s := range m.TracedRemarks {
		o, ports, ok := tied(s, MetricTracedRemarks)
		if !ok {
			continue
		}
		l := s.Labels
		from, _ := strconv.Atoi(l["from_value"])
		to, _ := strconv.Atoi(l["to_value"])
		bt, _ := strconv.Atoi(l["before_ttl"])
		at, _ := strconv.Atoi(l["at_ttl"])
		c := PairChange{Field: l["field"], From: from, To: to, BeforeTTL: bt, AtTTL: at}
		if a := l["before_address"]; a != "" {
			c.BeforeAddress = &a
		}
		if a := l["at_address"]; a != "" {
			c.AtAddress = &a
		}
		so := SportObservation{Remarked: 1, Spine: l["spine"]}
		if c.remark() { // an older agent's CE mark is none: a remarked port whose change was not seen
			so.Remark, so.RemarkBeforeTTL, so.RemarkAtTTL = c.text(), bt, at
		}
		remarked(o, s, ports, so)
		described[portKey{l[hostLabel], l["flow"], l["address"], l["spine"]}] += ports
	}
	for _, s := range m.TracedSports {
		o, ports, ok := tied(s, MetricTracedSports)
		if !ok {
			continue
		}
		l := s.Labels
		switch l["event"] {
		case "lost":
			for range ports {
				o.Sports = append(o.Sports, SportObservation{Lost: 1, Spine: l["spine"]})
			}
			sums(o)[0] += ports
			o.Lost = max(o.Lost, sums(o)[0])
		case "remarked":
			k := portKey{l[hostLabel], l["flow"], l["address"], l["spine"]}
			d := min(ports, described[k])
			described[k] -= d
			remarked(o, s, ports-d, SportObservation{Remarked: 1, Spine: l["spine"]})
		}
	}
	return named
}
