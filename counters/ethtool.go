package counters

import (
	"strconv"
	"strings"
)

// PrioCounter is the normalized name of a per-priority Ethernet counter:
// the same name for mlx5's rx_prio3_pause, bnxt_en's
// rx_pfc_ena_frames_pri3 and ice's rx_priority_3_xoff.nic.
type PrioCounter string

// Per-priority counters (docs/counters.md, "Per priority").
const (
	PrioRxPackets         PrioCounter = "rx_packets"           // frames received with priority p
	PrioTxPackets         PrioCounter = "tx_packets"           // frames sent with priority p
	PrioRxBytes           PrioCounter = "rx_bytes"             // bytes received with priority p
	PrioTxBytes           PrioCounter = "tx_bytes"             // bytes sent with priority p
	PrioRxPause           PrioCounter = "rx_pause"             // PFC pause (XOFF) frames received for p: the peer paused us
	PrioTxPause           PrioCounter = "tx_pause"             // PFC pause (XOFF) frames sent for p: we paused the peer
	PrioRxPauseDuration   PrioCounter = "rx_pause_duration_us" // time p was paused by the peer, µs
	PrioTxPauseDuration   PrioCounter = "tx_pause_duration_us" // time we paused the peer on p, µs
	PrioRxPauseTransition PrioCounter = "rx_pause_transition"  // XOFF→XON transitions received on p
	PrioTxPauseTransition PrioCounter = "tx_pause_transition"  // XOFF→XON transitions sent on p
	PrioRxXON             PrioCounter = "rx_xon"               // PFC XON frames received for p (ice)
	PrioTxXON             PrioCounter = "tx_xon"               // PFC XON frames sent for p (ice)
	PrioRxDiscards        PrioCounter = "rx_discards"          // frames of p dropped on receive (mlx5: no buffer, port level)
	PrioRxBufDiscard      PrioCounter = "rx_buf_discard"       // frames of p dropped for lack of receive buffer (mlx5)
	PrioRxCongDiscard     PrioCounter = "rx_cong_discard"      // frames of p dropped by congestion (WRED) (mlx5)
	PrioRxECNMarked       PrioCounter = "rx_ecn_marked"        // frames of p ECN-marked by the NIC's congestion control (mlx5)
)

// PrioCounters lists the per-priority counters in the order the table and
// JSON show them.
var PrioCounters = []PrioCounter{PrioRxPackets, PrioTxPackets, PrioRxBytes, PrioTxBytes, PrioRxPause, PrioTxPause,
	PrioRxPauseDuration, PrioTxPauseDuration, PrioRxPauseTransition, PrioTxPauseTransition, PrioRxXON, PrioTxXON,
	PrioRxDiscards, PrioRxBufDiscard, PrioRxCongDiscard, PrioRxECNMarked}

// PortCounter is the normalized name of a port-level Ethernet counter.
type PortCounter string

// Port-level counters.
const (
	PortRxPauseFrames     PortCounter = "rx_pause_frames"            // MAC control pause frames received (mlx5 rx_pause_ctrl_phy: 802.3x and PFC)
	PortTxPauseFrames     PortCounter = "tx_pause_frames"            // MAC control pause frames sent (mlx5 tx_pause_ctrl_phy)
	PortRxPFCFrames       PortCounter = "rx_pfc_frames"              // PFC frames received, every priority (bnxt_en)
	PortTxPFCFrames       PortCounter = "tx_pfc_frames"              // PFC frames sent, every priority (bnxt_en)
	PortRxDiscards        PortCounter = "rx_discards"                // frames dropped on receive by the port
	PortTxDiscards        PortCounter = "tx_discards"                // frames dropped on transmit by the port
	PortStormWarning      PortCounter = "pause_storm_warning_events" // the port stalled past the minor watermark (mlx5)
	PortStorm             PortCounter = "pause_storm_events"         // pause storm: the port stalled past the critical watermark and stopped pausing (mlx5), continuous RoCE pause (bnxt_en)
	PortStormResume       PortCounter = "pause_storm_resume_events"  // recovered from a pause storm (bnxt_en)
	PortRxBufferAlmostFul PortCounter = "rx_buffer_almost_full"      // the receive buffer passed its threshold
	PortRxOutOfBuffer     PortCounter = "rx_out_of_buffer"           // packets dropped: no receive WQE (mlx5 netdev queues)

	// 802.3x ("global") pause: link-level flow control that stops every
	// priority of the port at once.
	PortRxGlobalPause           PortCounter = "rx_global_pause"             // 802.3x pause (XOFF) frames received: the peer paused this port
	PortTxGlobalPause           PortCounter = "tx_global_pause"             // 802.3x pause (XOFF) frames sent: this port paused its peer
	PortRxGlobalPauseDuration   PortCounter = "rx_global_pause_duration_us" // time the peer kept this port paused, µs (mlx5)
	PortTxGlobalPauseDuration   PortCounter = "tx_global_pause_duration_us" // time this port kept its peer paused, µs (mlx5)
	PortRxGlobalPauseTransition PortCounter = "rx_global_pause_transition"  // XOFF→XON transitions received (mlx5)
	PortRxGlobalXON             PortCounter = "rx_global_xon"               // 802.3x XON frames received (ice)
	PortTxGlobalXON             PortCounter = "tx_global_xon"               // 802.3x XON frames sent (ice)
)

// Sources of the per-priority and port-level names.
const (
	srcMLX5Eth  = "drivers/net/ethernet/mellanox/mlx5/core/en_stats.c (pport_per_prio_traffic_stats_desc, pport_per_prio_pfc_stats_desc, pport_per_tc_prio_stats_desc, pport_per_tc_congest_prio_stats_desc, pport_pfc_stall_stats_desc, Linux 6.1.192); Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst (mainline)"
	srcBNXTEth  = "drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c (bnxt_port_stats_arr, bnxt_port_stats_ext_arr, bnxt_tx_port_stats_ext_arr, bnxt_*_pri_arr, Linux 6.1.192)"
	srcIONICEth = "drivers/net/ethernet/pensando/ionic/ionic_stats.c (ionic_port_stats_desc), ionic_if.h (struct ionic_port_stats), Linux 6.1.192"
	srcICEEth   = "drivers/net/ethernet/intel/ice/ice_ethtool.c (ice_gstrings_pf_stats, ice_get_strings: tx/rx_priority_%u_xon/xoff.nic, Linux 6.1.192)"
	templateDig = "%d"
)

// prioTemplates maps an ethtool name template (%d is the priority) to its
// per-priority counter, per driver (the ethtool driver name).
var prioTemplates = map[string]map[string]PrioCounter{
	"mlx5_core": {
		"rx_prio%d_bytes":            PrioRxBytes,
		"rx_prio%d_packets":          PrioRxPackets,
		"rx_prio%d_discards":         PrioRxDiscards,
		"tx_prio%d_bytes":            PrioTxBytes,
		"tx_prio%d_packets":          PrioTxPackets,
		"rx_prio%d_pause":            PrioRxPause,
		"rx_prio%d_pause_duration":   PrioRxPauseDuration,
		"tx_prio%d_pause":            PrioTxPause,
		"tx_prio%d_pause_duration":   PrioTxPauseDuration,
		"rx_prio%d_pause_transition": PrioRxPauseTransition,
		"rx_prio%d_buf_discard":      PrioRxBufDiscard,
		"rx_prio%d_cong_discard":     PrioRxCongDiscard,
		"rx_prio%d_marked":           PrioRxECNMarked,
	},
	"bnxt_en": {
		"rx_bytes_pri%d":           PrioRxBytes,
		"rx_packets_pri%d":         PrioRxPackets,
		"tx_bytes_pri%d":           PrioTxBytes,
		"tx_packets_pri%d":         PrioTxPackets,
		"rx_pfc_ena_frames_pri%d":  PrioRxPause,
		"tx_pfc_ena_frames_pri%d":  PrioTxPause,
		"pfc_pri%d_rx_duration_us": PrioRxPauseDuration,
		"pfc_pri%d_tx_duration_us": PrioTxPauseDuration,
		"pfc_pri%d_rx_transitions": PrioRxPauseTransition,
		"pfc_pri%d_tx_transitions": PrioTxPauseTransition,
	},
	// ionic (AMD Pensando): struct ionic_port_stats, named by
	// ionic_port_stats_desc (ionic_stats.c, Linux 6.1.192); the pause
	// times count 1 µs units (_1us_count).
	"ionic": {
		"frames_rx_pri_%d":         PrioRxPackets,
		"frames_tx_pri_%d":         PrioTxPackets,
		"rx_pripause_%d_1us_count": PrioRxPauseDuration,
		"tx_pripause_%d_1us_count": PrioTxPauseDuration,
	},
	"ice": {
		"rx_priority_%d_xoff.nic": PrioRxPause,
		"tx_priority_%d_xoff.nic": PrioTxPause,
		"rx_priority_%d_xon.nic":  PrioRxXON,
		"tx_priority_%d_xon.nic":  PrioTxXON,
	},
}

// portNames maps port-level ethtool names to their counter, per driver.
var portNames = map[string]map[string]PortCounter{
	// mlx5 lists the rx/tx_global_* counters only while 802.3x pause is
	// on for rx or tx (mlx5e_grp_per_prio_pfc_fill_strings,
	// mlx5e_query_global_pause_combined), with the values of the port's
	// priority-0 PPCNT group; the durations are in µs (counters.rst).
	"mlx5_core": {
		"rx_global_pause":               PortRxGlobalPause,
		"tx_global_pause":               PortTxGlobalPause,
		"rx_global_pause_duration":      PortRxGlobalPauseDuration,
		"tx_global_pause_duration":      PortTxGlobalPauseDuration,
		"rx_global_pause_transition":    PortRxGlobalPauseTransition,
		"rx_pause_ctrl_phy":             PortRxPauseFrames,
		"tx_pause_ctrl_phy":             PortTxPauseFrames,
		"rx_discards_phy":               PortRxDiscards,
		"tx_discards_phy":               PortTxDiscards,
		"tx_pause_storm_warning_events": PortStormWarning,
		"tx_pause_storm_error_events":   PortStorm,
		"rx_buffer_passed_thres_phy":    PortRxBufferAlmostFul,
		"rx_out_of_buffer":              PortRxOutOfBuffer,
	},
	// bnxt_en's rx/tx_pause_frames are what it reports as the 802.3x
	// MAC control PAUSE frames (bnxt_get_pause_stats); it has no pause
	// duration for 802.3x.
	"bnxt_en": {
		"rx_pause_frames":              PortRxGlobalPause,
		"tx_pause_frames":              PortTxGlobalPause,
		"rx_pfc_frames":                PortRxPFCFrames,
		"tx_pfc_frames":                PortTxPFCFrames,
		"rx_stat_discard":              PortRxDiscards,
		"tx_stat_discard":              PortTxDiscards,
		"continuous_roce_pause_events": PortStorm,
		"resume_roce_pause_events":     PortStormResume,
		"rx_buffer_passed_threshold":   PortRxBufferAlmostFul,
	},
	// ionic counts link-level pause frames apart from PFC frames (the
	// port runs one or the other: ionic_if.h enum ionic_port_pause_type,
	// LINK or PFC).
	"ionic": {
		"frames_rx_pause":    PortRxGlobalPause,
		"frames_tx_pause":    PortTxGlobalPause,
		"frames_rx_pripause": PortRxPFCFrames,
		"frames_tx_pripause": PortTxPFCFrames,
		"rx_pause_1us_count": PortRxGlobalPauseDuration,
	},
	// ice's link_xon/xoff_rx/tx.nic are the port's link (802.3x) flow
	// control frames (ice_gstrings_pf_stats: stats.link_xoff_rx, ...);
	// ice reports link flow control off while PFC is on
	// (ice_get_pauseparam).
	"ice": {
		"link_xoff_rx.nic": PortRxGlobalPause,
		"link_xoff_tx.nic": PortTxGlobalPause,
		"link_xon_rx.nic":  PortRxGlobalXON,
		"link_xon_tx.nic":  PortTxGlobalXON,
		"rx_dropped.nic":   PortRxDiscards,
	},
}

type prioName struct {
	prio    uint8
	counter PrioCounter
}

// prioIndex maps every expanded name (rx_prio3_pause) to its priority and
// counter, per driver.
var prioIndex = func() map[string]map[string]prioName {
	m := map[string]map[string]prioName{}
	for drv, ts := range prioTemplates {
		m[drv] = map[string]prioName{}
		for t, c := range ts {
			for p := 0; p < 8; p++ {
				m[drv][strings.Replace(t, templateDig, strconv.Itoa(p), 1)] = prioName{uint8(p), c}
			}
		}
	}
	return m
}()

// Named is a counter's value and the name the driver gives it.
type Named struct {
	Counter string
	Value   uint64
}

// Normalized is one netdev's ethtool set arranged by meaning.
type Normalized struct {
	// Prio holds, per priority 0..7, the per-priority counters the driver
	// has (absent ones are not in the map).
	Prio [8]map[PrioCounter]Named
	// Port holds the port-level counters the driver has.
	Port map[PortCounter]Named
}

// HasPrio reports whether any per-priority counter was found.
func (n *Normalized) HasPrio() bool {
	for _, m := range n.Prio {
		if len(m) > 0 {
			return true
		}
	}
	return false
}

// sameTables maps an ethtool driver name to the driver whose tables its
// names follow. Broadcom's bng_en ("ThorUltra",
// drivers/net/ethernet/broadcom/bnge, DRV_NAME "bng_en") is the successor
// of bnxt_en on the same firmware interface (HWRM); the port statistics
// its hosts show carry bnxt_en's names. Mainline's bnge_ethtool.c
// (torvalds/linux 169f6e8dd149) has no get_strings/get_ethtool_stats yet,
// only get_drvinfo and link settings, so a mainline bng_en netdev has no
// set to normalize.
var sameTables = map[string]string{"bng_en": "bnxt_en"}

// Normalize arranges an ethtool set by meaning, with the tables of the
// netdev's driver (mlx5_core, bnxt_en and bng_en, ice, ionic); another driver's
// set has no per-priority or port-level counters this package knows.
func Normalize(driver string, stats map[string]uint64) Normalized {
	var n Normalized
	if d, ok := sameTables[driver]; ok {
		driver = d
	}
	pi, pn := prioIndex[driver], portNames[driver]
	for name, v := range stats {
		if e, ok := pi[name]; ok {
			if n.Prio[e.prio] == nil {
				n.Prio[e.prio] = map[PrioCounter]Named{}
			}
			n.Prio[e.prio][e.counter] = Named{Counter: name, Value: v}
			continue
		}
		if c, ok := pn[name]; ok {
			if n.Port == nil {
				n.Port = map[PortCounter]Named{}
			}
			n.Port[c] = Named{Counter: name, Value: v}
		}
	}
	return n
}
