package agent

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/fleet"
)

// Metric names (docs/metrics.md describes each, its labels and meaning).
// The ones the fabric report reads back from Prometheus are fabric's.
const (
	metricBuildInfo         = "roce_probe_build_info"
	metricGIDInfo           = fabric.MetricGIDInfo
	metricGIDIndex          = fabric.MetricGIDIndex
	metricGIDIndexChanges   = "roce_probe_gid_index_changes_total"
	metricFlowVerdict       = "roce_probe_flow_verdict"
	metricFlowWarnings      = "roce_probe_flow_warnings"
	metricFlowSource        = fabric.MetricFlowSource
	metricFlowPeers         = "roce_probe_flow_peers"
	metricRDMAStatistic     = "roce_probe_rdma_statistic_total"
	metricPrioPackets       = "roce_probe_priority_packets_total"
	metricPrioBytes         = "roce_probe_priority_bytes_total"
	metricPrioPauseFrames   = "roce_probe_priority_pause_frames_total"
	metricPrioPauseSeconds  = "roce_probe_priority_pause_seconds_total"
	metricPrioDiscards      = "roce_probe_priority_discards_total"
	metricRoCEPriority      = "roce_probe_roce_priority"
	metricAuditOff          = "roce_probe_audit_off_priority_packets"
	metricAuditRDMA         = "roce_probe_audit_rdma_packets"
	metricProbesSent        = fabric.MetricProbesSent
	metricProbesAnswered    = "roce_probe_probes_answered_total"
	metricProbesLost        = fabric.MetricProbesLost
	metricToRProbesSent     = fabric.MetricToRProbesSent
	metricToRProbesAnswered = "roce_probe_tor_probes_answered_total"
	metricToRProbesLost     = "roce_probe_tor_probes_lost_total"
	metricToRMarkingEvents  = fabric.MetricToRMarkingEvents
	metricWorstPairLoss     = fabric.MetricWorstPairLoss
	metricWorstPairLost     = fabric.MetricWorstPairLost
	metricPlanTargets       = "roce_probe_plan_targets"
	metricPlanRate          = "roce_probe_plan_probes_per_second"
	metricPlanToRs          = "roce_probe_plan_tors"
	metricPlanWindow        = "roce_probe_plan_window_seconds"
	metricProbeScale        = fabric.MetricProbeScale
	metricPressure          = "roce_probe_pressure_periods_total"
	metricProbeRTT          = "roce_probe_probe_rtt_seconds"
	metricMarkingEvents     = fabric.MetricMarkingEvents
	metricProbeReceived     = "roce_probe_probe_received"
	metricProbeSentMarking  = "roce_probe_probe_sent_marking"
	metricReadErrors        = "roce_probe_read_errors_total"
	metricProbeErrors       = "roce_probe_probe_errors_total"
	metricLastRead          = "roce_probe_last_read_timestamp_seconds"
	metricPeers             = "roce_probe_peers"
	metricListenerFrames    = "roce_probe_listener_frames_total"
	metricListenerSenders   = "roce_probe_listener_senders"
	metricUnmatchedReplies  = "roce_probe_replies_unmatched_total"
	metricCaptureNetdevs    = "roce_probe_capture_netdevs"
	metricNetlinkChanges    = "roce_probe_netlink_changes_total"
	metricProbeScheduled    = "roce_probe_probe_streams"
	metricSnapshotErrorsNow = "roce_probe_snapshot_errors"
	metricTopologyInfo      = fabric.MetricTopologyInfo
	metricTracedSports      = fabric.MetricTracedSports
	metricTracedRemarks     = fabric.MetricTracedRemarks
)

// RTTBuckets are the upper bounds of roce_probe_probe_rtt_seconds: 10 µs
// to 1 s, two per decade.
var RTTBuckets = []float64{10e-6, 30e-6, 100e-6, 300e-6, 1e-3, 3e-3, 10e-3, 30e-3, 100e-3, 300e-3, 1}

// Sources of roce_probe_read_errors_total and
// roce_probe_last_read_timestamp_seconds.
const (
	sourceHost      = "host"       // the host snapshot as a whole (collect.Collect)
	sourceDNS       = "dns"        // peers.dns
	sourcePeersFile = "peers_file" // peers.file
	sourceNetlink   = "netlink"    // the link/address change subscription
	sourceCapture   = "capture"    // the AF_PACKET sockets of the listener and the prober
	sourceLLDP      = "lldp"       // the LLDP listeners of the RoCE netdevs
)

// Reasons of roce_probe_probe_errors_total.
const (
	reasonNoRoute     = "no_route"     // no flow's netdev routes to the peer, or the AH does not resolve
	reasonNoNeighbor  = "no_neighbor"  // the next hop's MAC address is not known (yet)
	reasonNoSource    = "no_source"    // the flow's source GID is not usable now
	reasonRateLimited = "rate_limited" // over probe.max_rate
	reasonSendFailed  = "send_failed"  // the raw socket refused the frame
	reasonNoCapture   = "no_capture"   // the netdev the probe leaves through has no open socket
	reasonBuildFailed = "build_failed" // the frame could not be built (bad markings)
	reasonFamily      = "family"       // no flow of the peer's address family
)

// meshMetrics are the probe metrics the mesh updates as probes go and
// come back: a ToR-mate's own series (peer, flow), the marking events of
// the peer ToRs, the RTT per (flow, scope), the errors. The probe counts
// are in the mesh's fleet.Aggregator, served by meshCollector.
type meshMetrics struct {
	rtt                *prometheus.HistogramVec
	events, torEvents  *prometheus.CounterVec
	received, sentMark *prometheus.GaugeVec
	probeErrors        *prometheus.CounterVec
}

func newMeshMetrics() *meshMetrics {
	return &meshMetrics{
		rtt: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricProbeRTT,
			Help: "Round-trip time of answered probes (capture timestamp of the reply minus the send time), seconds, by flow and scope (tor: ToR-mates; inter_tor: other ToRs; sampled: peers of unknown ToR).", Buckets: RTTBuckets}, []string{"flow", "scope"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricMarkingEvents,
			Help: "Answered probes to a ToR-mate whose markings arrived changed, by field (vlan, pcp, dscp, ecn, ttl) and event (remarked, stripped, added, ce_marked, decremented, raised)."},
			[]string{"peer", "flow", "field", "event"}),
		torEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricToRMarkingEvents,
			Help: "Answered probes to the peers of a ToR (not this host's) whose markings arrived changed, by scope, field and event."},
			[]string{"flow", "scope", "peer_tor", "field", "event"}),
		received: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricProbeReceived,
			Help: "The markings a ToR-mate's listener saw arrive on the last answered probe (vlan and pcp absent when it arrived untagged)."}, []string{"peer", "flow", "field"}),
		sentMark: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricProbeSentMarking,
			Help: "The markings probes to a ToR-mate are sent with: the flow's address handle as the driver puts it on the wire (vlan and pcp absent when untagged)."}, []string{"peer", "flow", "field"}),
		probeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricProbeErrors,
			Help: "Probes that could not be sent, by reason (no_route, no_neighbor, no_source, rate_limited, send_failed, no_capture, build_failed, family)."}, []string{"reason"}),
	}
}

func (m *meshMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.rtt, m.events, m.torEvents, m.received, m.sentMark, m.probeErrors}
}

// deleteMate removes a ToR-mate stream's own series, each by its labels.
func (m *meshMetrics) deleteMate(s *stream) {
	for i, f := range markingFields {
		if s.recv[i] != nil {
			m.received.DeleteLabelValues(s.peer.Name, s.flow, f)
			s.recv[i] = nil
		}
		if s.sentOK[i] {
			m.sentMark.DeleteLabelValues(s.peer.Name, s.flow, f)
			s.sentOK[i] = false
		}
	}
	for fe := range s.events {
		m.events.DeleteLabelValues(s.peer.Name, s.flow, fe[0], fe[1])
	}
	s.events = nil
}

// meshCollector serves the probe counts of the mesh's aggregator (per
// ToR-mate, per peer ToR) and the worst pairs, as they are at the scrape:
// O(groups + streams), bounded by the plan, not by the fleet.
type meshCollector struct {
	m                             *mesh
	worst                         int
	sent, answered, lost          *prometheus.Desc
	torSent, torAnswered, torLost *prometheus.Desc
	worstLoss, worstLost          *prometheus.Desc
}

func newMeshCollector(m *mesh, worst int) *meshCollector {
	pf := []string{"peer", "address", "flow"}
	tf := []string{"flow", "scope", "peer_tor"}
	wf := []string{"flow", "scope", "peer", "address", "peer_tor"}
	return &meshCollector{m: m, worst: worst,
		sent:        prometheus.NewDesc(metricProbesSent, "Probes sent to the ToR-mate for the flow.", pf, nil),
		answered:    prometheus.NewDesc(metricProbesAnswered, "Probes to the ToR-mate whose reply came back within probe.timeout.", pf, nil),
		lost:        prometheus.NewDesc(metricProbesLost, "Probes to the ToR-mate without a reply within probe.timeout.", pf, nil),
		torSent:     prometheus.NewDesc(metricToRProbesSent, "Probes sent to the peers of a ToR (not this host's), by scope (inter_tor, sampled; peer_tor \"\" when not known).", tf, nil),
		torAnswered: prometheus.NewDesc(metricToRProbesAnswered, "Probes to the peers of a ToR whose reply came back within probe.timeout.", tf, nil),
		torLost:     prometheus.NewDesc(metricToRProbesLost, "Probes to the peers of a ToR without a reply within probe.timeout.", tf, nil),
		worstLoss: prometheus.NewDesc(metricWorstPairLoss,
			"The share of probes lost to one of the worst pairs (at most metrics.worst_pairs of them), over the current and the last round.", wf, nil),
		worstLost: prometheus.NewDesc(metricWorstPairLost,
			"The probes lost to one of the worst pairs over the current and the last round (with the loss ratio: its probes whose fate is known).", wf, nil),
	}
}

func (c *meshCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sent, c.answered, c.lost, c.torSent, c.torAnswered, c.torLost, c.worstLoss, c.worstLost} {
		ch <- d
	}
}

func (c *meshCollector) Collect(ch chan<- prometheus.Metric) {
	groups, names, worst := c.m.counts(c.worst)
	for _, g := range groups {
		if g.Kind == fleet.Mate {
			name, ok := names[streamKey{g.Peer, g.Flow}]
			if !ok {
				continue
			}
			addr := g.Peer.String()
			ch <- prometheus.MustNewConstMetric(c.sent, prometheus.CounterValue, float64(g.Sent), name, addr, g.Flow)
			ch <- prometheus.MustNewConstMetric(c.answered, prometheus.CounterValue, float64(g.Answered), name, addr, g.Flow)
			ch <- prometheus.MustNewConstMetric(c.lost, prometheus.CounterValue, float64(g.Lost), name, addr, g.Flow)
			continue
		}
		sc := g.Kind.String()
		ch <- prometheus.MustNewConstMetric(c.torSent, prometheus.CounterValue, float64(g.Sent), g.Flow, sc, g.ToR)
		ch <- prometheus.MustNewConstMetric(c.torAnswered, prometheus.CounterValue, float64(g.Answered), g.Flow, sc, g.ToR)
		ch <- prometheus.MustNewConstMetric(c.torLost, prometheus.CounterValue, float64(g.Lost), g.Flow, sc, g.ToR)
	}
	for _, w := range worst {
		lv := []string{w.Flow, w.Kind.String(), names[streamKey{w.Peer.Addr, w.Flow}], w.Peer.Addr.String(), w.Peer.ToR}
		ch <- prometheus.MustNewConstMetric(c.worstLoss, prometheus.GaugeValue, w.LossRatio(), lv...)
		ch <- prometheus.MustNewConstMetric(c.worstLost, prometheus.GaugeValue, float64(w.Lost), lv...)
	}
}

// tracedCollector serves what the automatic traces found for the faulty
// UDP source ports of the current window, as they are at the scrape
// (mesh.tracedFaults): at most maxTracedSeries label sets each.
type tracedCollector struct {
	m               *mesh
	sports, remarks *prometheus.Desc
}

func newTracedCollector(m *mesh) *tracedCollector {
	return &tracedCollector{m: m,
		sports: prometheus.NewDesc(metricTracedSports,
			"UDP source ports of the pair that lost probes (event lost) or saw them remarked (event remarked) in the current and the last round and whose automatic trace crossed the spine (at most 16 label sets, the most ports first).",
			[]string{"flow", "peer", "address", "peer_tor", "spine", "event"}, nil),
		remarks: prometheus.NewDesc(metricTracedRemarks,
			"Remarked UDP source ports of the pair whose automatic trace saw field change from from_value to to_value between the hops before_address (TTL before_ttl; 0: this host) and at_address (TTL at_ttl; \"\" when not known), through spine (at most 16 label sets, the most ports first).",
			[]string{"flow", "peer", "address", "peer_tor", "spine", "field", "from_value", "to_value", "before_address", "before_ttl", "at_address", "at_ttl"}, nil),
	}
}

func (c *tracedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.sports
	ch <- c.remarks
}

func (c *tracedCollector) Collect(ch chan<- prometheus.Metric) {
	sports, remarks := c.m.tracedFaults()
	for k, n := range sports {
		ch <- prometheus.MustNewConstMetric(c.sports, prometheus.GaugeValue, float64(n), k.flow, k.peer, k.address, k.peerToR, k.spine, k.event)
	}
	for k, n := range remarks {
		ch <- prometheus.MustNewConstMetric(c.remarks, prometheus.GaugeValue, float64(n), k.flow, k.peer, k.address, k.peerToR, k.spine,
			k.field, strconv.Itoa(k.from), strconv.Itoa(k.to), k.before, strconv.Itoa(k.beforeTTL), k.at, strconv.Itoa(k.atTTL))
	}
}

// constCollector serves metrics built elsewhere (at each read of the host)
// as they were last built: a scrape costs no kernel read.
type constCollector struct {
	descs   []*prometheus.Desc
	metrics atomic.Pointer[[]prometheus.Metric]
}

func (c *constCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *constCollector) Collect(ch chan<- prometheus.Metric) {
	if p := c.metrics.Load(); p != nil {
		for _, m := range *p {
			ch <- m
		}
	}
}

func (c *constCollector) set(ms []prometheus.Metric) { c.metrics.Store(&ms) }

// funcCollector builds its metrics at each scrape from live counters.
type funcCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c *funcCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *funcCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

// metricDescs are the descriptions of the metrics built from the host
// snapshot and of the agent's own state.
type metricDescs struct {
	// from the host snapshot
	gidInfo, gidIndex, gidIndexChanges                                       *prometheus.Desc
	flowVerdict, flowWarnings, flowSource                                    *prometheus.Desc
	rdmaStatistic, prioPackets, prioBytes, prioPauseFrames, prioPauseSeconds *prometheus.Desc
	prioDiscards, rocePriority, snapshotErrors, topologyInfo                 *prometheus.Desc
	auditOff, auditRDMA                                                      *prometheus.Desc
	// the agent's own state
	peers, flowPeers, streams, listener, listenerSenders, unmatched, capture *prometheus.Desc
	planTargets, planRate, planToRs, planWindow, probeScale                  *prometheus.Desc
}

// descs returns the metric descriptions, made on first use: made at
// package initialisation they cost every roce-probe command, not only the
// agent, ~0.2 ms (prometheus.NewDesc checks and hashes every name and
// label).
var descs = sync.OnceValue(func() *metricDescs {
	return &metricDescs{
		gidInfo: prometheus.NewDesc(metricGIDInfo,
			"A GID table entry (1): its netdev, the outermost VLAN tag of its frames (vlan \"\" when untagged) and the network of the netdev address it is (\"link-local\" for link-local GIDs).",
			[]string{"device", "port", "index", "gid", "type", "family", "netdev", "vlan", "network"}, nil),
		gidIndex: prometheus.NewDesc(metricGIDIndex,
			"The GID index a workload should use for the network: the lowest index of a usable entry (not link-local, netdev up and in this namespace, not stale); what NCCL_IB_GID_INDEX must be on this host.",
			[]string{"device", "port", "type", "family", "network"}, nil),
		gidIndexChanges: prometheus.NewDesc(metricGIDIndexChanges,
			"Times the usable entry of a (type, family, network) of the port moved to another GID index.",
			[]string{"device", "port"}, nil),
		flowVerdict: prometheus.NewDesc(metricFlowVerdict,
			"The flow's lossless verdict (roce-probe check): 1 for the current verdict, 0 for the others.",
			[]string{"flow", "verdict"}, nil),
		flowWarnings: prometheus.NewDesc(metricFlowWarnings,
			"Warnings of the flow's check (absent while its source GID cannot be resolved).", []string{"flow"}, nil),
		flowSource: prometheus.NewDesc(metricFlowSource,
			"The GID entry the flow sends from (1), as its select resolved at the last read.",
			[]string{"flow", "device", "port", "index", "netdev"}, nil),
		rdmaStatistic: prometheus.NewDesc(metricRDMAStatistic,
			"An RDMA port counter, by the driver's name (counter) and roce-probe's normalized meaning (\"\" when none; docs/counters.md).",
			[]string{"device", "port", "counter", "meaning"}, nil),
		prioPackets: prometheus.NewDesc(metricPrioPackets, "Frames of the priority, per direction (rx, tx), as the driver counts them.",
			[]string{"netdev", "prio", "direction"}, nil),
		prioBytes: prometheus.NewDesc(metricPrioBytes, "Bytes of the priority, per direction (rx, tx).",
			[]string{"netdev", "prio", "direction"}, nil),
		prioPauseFrames: prometheus.NewDesc(metricPrioPauseFrames,
			"PFC pause frames of the priority: rx received (the peer paused us), tx sent (we paused the peer); the driver's counter, else DCB's PFC indications/requests.",
			[]string{"netdev", "prio", "direction"}, nil),
		prioPauseSeconds: prometheus.NewDesc(metricPrioPauseSeconds,
			"Time the priority was paused: rx by the peer, tx the peer by us, seconds.", []string{"netdev", "prio", "direction"}, nil),
		prioDiscards: prometheus.NewDesc(metricPrioDiscards,
			"Received frames of the priority dropped, by reason (discard: no receive buffer, port level; buffer: no buffer; congestion: WRED).",
			[]string{"netdev", "prio", "reason"}, nil),
		rocePriority: prometheus.NewDesc(metricRoCEPriority,
			"A priority of the real netdev that carries RoCE by the host's configuration (1): PFC on, DSCP 26 or rdma_cm's default ToS or a traffic class override mapped to it under DSCP trust, an APP entry for RoCE, DCQCN enabled; with none of these, the priority RoCE uses by default (priority 0 under PCP trust) (counters RoCEPriorities; docs/counters.md).",
			[]string{"netdev", "prio"}, nil),
		auditOff: prometheus.NewDesc(metricAuditOff,
			"RDMA packets sent between the last two reads of the host that left the real netdev on a priority other than the expected ones (the flows', else the RoCE priorities), by the priority that carried them (prio \"unknown\" when the counters do not tell); 0 when the audit found none (roce-probe audit's counters cross-check; docs/audit.md).",
			[]string{"netdev", "prio"}, nil),
		auditRDMA: prometheus.NewDesc(metricAuditRDMA,
			"RDMA packets the real netdev sent between the last two reads of the host (mlx5 vport RDMA counters, the TX packets of rxe's and bnxt_re's hw_counters), as the audit counted them.",
			[]string{"netdev"}, nil),
		peers:       prometheus.NewDesc(metricPeers, "Peers known: the union of peers.static, peers.dns and peers.file, without this host's addresses (the plan probes some of them each round).", nil, nil),
		flowPeers:   prometheus.NewDesc(metricFlowPeers, "Peers the flow probes this round: the plan's targets of its address family whose route leaves through the flow's netdev.", []string{"flow"}, nil),
		streams:     prometheus.NewDesc(metricProbeScheduled, "(peer, flow) pairs probed.", nil, nil),
		planTargets: prometheus.NewDesc(metricPlanTargets, "The probe plan's targets this round, by scope (tor: ToR-mates; inter_tor: NICs of sampled other ToRs; sampled: peers of unknown ToR).", []string{"scope"}, nil),
		planRate: prometheus.NewDesc(metricPlanRate,
			"The probe plan's probes per second in all flows: send (what this agent sends, before the rate scale) and receive (what the busiest host expects to receive when every agent plans alike).", []string{"direction"}, nil),
		planToRs:   prometheus.NewDesc(metricPlanToRs, "Other ToRs the plan knows (0: no topology).", nil, nil),
		planWindow: prometheus.NewDesc(metricPlanWindow, "How long the plan takes to probe every other ToR (scope inter_tor, with the agents of this ToR) or every peer of unknown ToR (scope sampled), seconds.", []string{"scope"}, nil),
		probeScale: prometheus.NewDesc(metricProbeScale, "The factor the planned probe rate is multiplied by: 1, or 0.5, 0.25, 0.1 while the agent protects its host (its CPU over probe.cpu_budget, or its wake-ups late).", nil, nil),
		listener: prometheus.NewDesc(metricListenerFrames,
			"Frames the probe listener captured, by what became of them (answered, rate_limited, not_roce, bad_icrc, foreign, malformed, not_for_us, bad_source).", []string{"result"}, nil),
		listenerSenders: prometheus.NewDesc(metricListenerSenders, "Senders in the listener's rate-limit table (bounded by its size).", nil, nil),
		unmatched:       prometheus.NewDesc(metricUnmatchedReplies, "Probe replies captured that match no probe in flight (late, duplicated or forged).", nil, nil),
		capture:         prometheus.NewDesc(metricCaptureNetdevs, "Netdevs with an open capture socket (the listener's and the prober's).", nil, nil),
		snapshotErrors:  prometheus.NewDesc(metricSnapshotErrorsNow, "Sources the last host read could not read (the snapshot's errors), by kind.", []string{"source"}, nil),
		topologyInfo: prometheus.NewDesc(metricTopologyInfo,
			"A RoCE netdev's place in the fabric (1): the switch (ToR) and switch port it is plugged into and where that was learned (source: config, lldp, lldpd); switch, switch_port and source \"\" when not known (the snapshot's topology says why).",
			[]string{"netdev", "switch", "switch_port", "source"}, nil),
	}
})

// newBuildInfo is roce_probe_build_info.
func newBuildInfo(version string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: metricBuildInfo, Help: "The roce-probe build (1).",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()}})
	g.Set(1)
	return g
}

// standardCollectors are client_golang's Go runtime and process metrics
// (go_goroutines, go_memstats_*, process_open_fds,
// process_resident_memory_bytes, process_cpu_seconds_total, ...).
func standardCollectors() []prometheus.Collector {
	return []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
}
