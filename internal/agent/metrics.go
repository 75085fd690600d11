package agent

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/roce-probe/roce-probe/fabric"
)

// Metric names (docs/metrics.md describes each, its labels and meaning).
// The two the fabric report reads back from Prometheus are fabric's.
const (
	metricBuildInfo         = "roce_probe_build_info"
	metricGIDInfo           = fabric.MetricGIDInfo
	metricGIDIndex          = fabric.MetricGIDIndex
	metricGIDIndexChanges   = "roce_probe_gid_index_changes_total"
	metricFlowVerdict       = "roce_probe_flow_verdict"
	metricFlowWarnings      = "roce_probe_flow_warnings"
	metricFlowSource        = "roce_probe_flow_source_info"
	metricFlowPeers         = "roce_probe_flow_peers"
	metricRDMACounter       = "roce_probe_rdma_counter_total"
	metricPrioPackets       = "roce_probe_priority_packets_total"
	metricPrioBytes         = "roce_probe_priority_bytes_total"
	metricPrioPauseFrames   = "roce_probe_priority_pause_frames_total"
	metricPrioPauseSeconds  = "roce_probe_priority_pause_seconds_total"
	metricPrioDiscards      = "roce_probe_priority_discards_total"
	metricRoCEPriority      = "roce_probe_roce_priority"
	metricAuditOff          = "roce_probe_audit_off_priority_packets"
	metricAuditRDMA         = "roce_probe_audit_rdma_packets"
	metricProbesSent        = "roce_probe_probes_sent_total"
	metricProbesAnswered    = "roce_probe_probes_answered_total"
	metricProbesLost        = "roce_probe_probes_lost_total"
	metricProbeRTT          = "roce_probe_probe_rtt_seconds"
	metricMarkingEvents     = "roce_probe_probe_marking_events_total"
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
	metricPeersLeftOut      = "roce_probe_peers_left_out"
	metricProbeScheduled    = "roce_probe_probe_streams"
	metricSnapshotErrorsNow = "roce_probe_snapshot_errors"
	metricTopologyInfo      = "roce_probe_topology_info"
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

// meshMetrics are the per (peer, flow) metrics, updated as probes go and
// come back; a stream's series are deleted when its peer or flow goes.
type meshMetrics struct {
	sent, answered, lost *prometheus.CounterVec
	rtt                  *prometheus.HistogramVec
	events               *prometheus.CounterVec
	received, sentMark   *prometheus.GaugeVec
	probeErrors          *prometheus.CounterVec
}

func newMeshMetrics() *meshMetrics {
	pf := []string{"peer", "flow"}
	return &meshMetrics{
		sent:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricProbesSent, Help: "Probes sent to the peer for the flow."}, pf),
		answered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricProbesAnswered, Help: "Probes whose reply came back within probe.timeout."}, pf),
		lost:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricProbesLost, Help: "Probes without a reply within probe.timeout."}, pf),
		rtt: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: metricProbeRTT,
			Help: "Round-trip time of answered probes (capture timestamp of the reply minus the send time), seconds.", Buckets: RTTBuckets}, pf),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricMarkingEvents,
			Help: "Answered probes whose markings arrived changed, by field (vlan, pcp, dscp, ecn, ttl) and event (remarked, stripped, added, ce_marked, decremented, raised)."},
			[]string{"peer", "flow", "field", "event"}),
		received: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricProbeReceived,
			Help: "The markings the peer's listener saw arrive on the last answered probe (vlan and pcp absent when it arrived untagged)."}, []string{"peer", "flow", "field"}),
		sentMark: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: metricProbeSentMarking,
			Help: "The markings probes to the peer are sent with: the flow's address handle as the driver puts it on the wire (vlan and pcp absent when untagged)."}, []string{"peer", "flow", "field"}),
		probeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: metricProbeErrors,
			Help: "Probes to the peer that could not be sent, by reason (no_route, no_neighbor, no_source, rate_limited, send_failed, no_capture, build_failed, family)."}, []string{"peer", "reason"}),
	}
}

func (m *meshMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.sent, m.answered, m.lost, m.rtt, m.events, m.received, m.sentMark, m.probeErrors}
}

// deletePeer removes every series of a peer.
func (m *meshMetrics) deletePeer(peer string) {
	l := prometheus.Labels{"peer": peer}
	for _, c := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.sent, m.answered, m.lost, m.rtt, m.events, m.received, m.sentMark, m.probeErrors} {
		c.DeletePartialMatch(l)
	}
}

// deleteStream removes the series of one (peer, flow).
func (m *meshMetrics) deleteStream(peer, flow string) {
	l := prometheus.Labels{"peer": peer, "flow": flow}
	for _, c := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.sent, m.answered, m.lost, m.rtt, m.events, m.received, m.sentMark} {
		c.DeletePartialMatch(l)
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
	gidInfo, gidIndex, gidIndexChanges                                     *prometheus.Desc
	flowVerdict, flowWarnings, flowSource                                  *prometheus.Desc
	rdmaCounter, prioPackets, prioBytes, prioPauseFrames, prioPauseSeconds *prometheus.Desc
	prioDiscards, rocePriority, snapshotErrors, topologyInfo               *prometheus.Desc
	auditOff, auditRDMA                                                    *prometheus.Desc
	// the agent's own state
	peers, peersLeftOut, flowPeers, streams, listener, listenerSenders, unmatched, capture *prometheus.Desc
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
		rdmaCounter: prometheus.NewDesc(metricRDMACounter,
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
		peers:        prometheus.NewDesc(metricPeers, "Peers probed (the union of peers.static, peers.dns and peers.file, without this host's addresses, at most peers.max).", nil, nil),
		peersLeftOut: prometheus.NewDesc(metricPeersLeftOut, "Peers left out because there are more than peers.max.", nil, nil),
		flowPeers:    prometheus.NewDesc(metricFlowPeers, "Peers the flow probes: those of its address family whose route leaves through the flow's netdev.", []string{"flow"}, nil),
		streams:      prometheus.NewDesc(metricProbeScheduled, "(peer, flow) pairs probed.", nil, nil),
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
