package counters

// Meaning is the normalized meaning of an RDMA counter: one word for what
// every driver counts under its own name. The same Meaning on two drivers
// counts the same event.
type Meaning string

// Meanings of RDMA counters (docs/counters.md, "Meanings").
const (
	RxPackets Meaning = "rx_packets" // RoCE packets received
	TxPackets Meaning = "tx_packets" // RoCE packets sent
	RxBytes   Meaning = "rx_bytes"   // RoCE bytes received
	TxBytes   Meaning = "tx_bytes"   // RoCE bytes sent

	// OutOfSequence: the responder received a request with a PSN beyond
	// the expected one (a packet before it was lost or reordered) and
	// answered with a NAK-sequence error.
	OutOfSequence Meaning = "out_of_sequence"
	// DuplicateRequest: the responder received a request again (the
	// requester retransmitted it).
	DuplicateRequest Meaning = "duplicate_request"
	// SeqErrNAKReceived: the requester received a NAK-sequence error and
	// goes back to retransmit.
	SeqErrNAKReceived Meaning = "seq_err_nak_received"
	// ImpliedNAK: the requester saw an ACK/response that implies an
	// earlier READ or atomic response was lost (mlx5
	// implied_nak_seq_err), and retransmits.
	ImpliedNAK Meaning = "implied_nak"
	// LocalACKTimeout: the requester's ACK timer expired (no ACK within
	// the QP's timeout) and it retransmits.
	LocalACKTimeout Meaning = "local_ack_timeout"
	// Retransmissions: the requester started a retransmission, for any
	// reason (rxe completer_retry_err, mlx5 roce_adp_retrans).
	Retransmissions Meaning = "retransmissions"
	// RetransmissionTimeout: mlx5's adaptive retransmission reached its
	// timeout (roce_adp_retrans_to).
	RetransmissionTimeout Meaning = "retransmission_timeout"
	// RetryExceeded: a QP exhausted its retry count
	// (IBV_WC_RETRY_EXC_ERR): the connection failed.
	RetryExceeded Meaning = "retry_exceeded"
	// RNRNAKReceived / RNRNAKSent: receiver-not-ready NAKs (no receive
	// WQE posted at the responder).
	RNRNAKReceived Meaning = "rnr_nak_received"
	RNRNAKSent     Meaning = "rnr_nak_sent"
	// RNRRetryExceeded: a QP exhausted its RNR retry count.
	RNRRetryExceeded Meaning = "rnr_retry_exceeded"
	// OutOfBuffer: packets dropped because no receive WQE was posted.
	OutOfBuffer Meaning = "out_of_buffer"
	// ECNMarked: RoCE packets received with ECN CE (congestion
	// experienced): the notification point's input.
	ECNMarked Meaning = "ecn_marked"
	// CNPSent: congestion notification packets sent by the notification
	// point in answer to CE-marked packets.
	CNPSent Meaning = "cnp_sent"
	// CNPReceived: CNPs received.
	CNPReceived Meaning = "cnp_received"
	// CNPHandled / CNPIgnored: CNPs the reaction point acted on (slowed
	// the QP down) or ignored.
	CNPHandled Meaning = "cnp_handled"
	CNPIgnored Meaning = "cnp_ignored"
	// ICRCError: RoCE packets received with a bad ICRC.
	ICRCError Meaning = "icrc_error"
	// RxDiscards: RoCE packets the RDMA function discarded on receive.
	RxDiscards Meaning = "rx_discards"
)

// lossSigns are the meanings that rise when RC traffic loses packets:
// the responder sees gaps and duplicates, the requester NAKs, timeouts
// and retransmissions.
var lossSigns = []Meaning{OutOfSequence, DuplicateRequest, SeqErrNAKReceived, ImpliedNAK, LocalACKTimeout,
	Retransmissions, RetransmissionTimeout, RetryExceeded}

// Known is one counter name a driver gives, its meaning and where the
// name comes from.
type Known struct {
	Name    string
	Meaning Meaning
	// Kernels says which kernels have the name when not every one does
	// ("" means every kernel this package knows of the driver).
	Kernels string
}

// Source files of the RDMA counter names (cited in docs/counters.md and
// testdata/README.md).
const (
	srcMLX5  = "drivers/infiniband/hw/mlx5/counters.c (basic_q_cnts, out_of_seq_q_cnts, retrans_q_cnts, extended_err_cnts, roce_accl_cnts, cong_cnts, ext_ppcnt_cnts, *_op_cnts; Linux 6.1.192 and mainline)"
	srcRXE   = "drivers/infiniband/sw/rxe/rxe_hw_counters.c (rxe_counter_descs; Linux 6.1.192; sent_bytes/rcvd_bytes from 'RDMA/rxe: add sent/rcvd bytes counters', present in Linux 7.3 as the lab measured)"
	srcBNXT  = "drivers/infiniband/hw/bnxt_re/hw_counters.c (bnxt_re_stat_descs; Linux 6.1.192)"
	srcIRDMA = "drivers/infiniband/hw/irdma/verbs.c (irdma_hw_stat_descs; Linux 6.1.192)"
)

// rdmaTables lists, per RDMA driver (qos.Driver names), the counter names
// with a meaning. Names the driver has but that are not listed here
// (mlx5 req_cqe_error, bnxt_re active_qps, ...) are shown with no
// meaning.
var rdmaTables = map[string][]Known{
	// mlx5: hw_counters and `rdma statistic` (optional counters
	// cc_rx_ce_pkts, cc_rx_cnp_pkts, cc_tx_cnp_pkts, rdma_tx/rx_* only
	// over netlink once enabled). In switchdev mode every q counter is
	// also given with a vport_ prefix (INIT_VPORT_Q_COUNTER, mainline).
	"mlx5": {
		{Name: "out_of_sequence", Meaning: OutOfSequence},
		{Name: "duplicate_request", Meaning: DuplicateRequest},
		{Name: "packet_seq_err", Meaning: SeqErrNAKReceived},
		{Name: "implied_nak_seq_err", Meaning: ImpliedNAK},
		{Name: "local_ack_timeout_err", Meaning: LocalACKTimeout},
		{Name: "rnr_nak_retry_err", Meaning: RNRNAKReceived},
		{Name: "req_transport_retries_exceeded", Meaning: RetryExceeded, Kernels: "mainline (not in 6.1)"},
		{Name: "req_rnr_retries_exceeded", Meaning: RNRRetryExceeded, Kernels: "mainline (not in 6.1)"},
		{Name: "out_of_buffer", Meaning: OutOfBuffer},
		{Name: "roce_adp_retrans", Meaning: Retransmissions},
		{Name: "roce_adp_retrans_to", Meaning: RetransmissionTimeout},
		{Name: "np_ecn_marked_roce_packets", Meaning: ECNMarked},
		{Name: "np_cnp_sent", Meaning: CNPSent},
		{Name: "rp_cnp_handled", Meaning: CNPHandled},
		{Name: "rp_cnp_ignored", Meaning: CNPIgnored},
		{Name: "rx_icrc_encapsulated", Meaning: ICRCError},
		{Name: "cc_rx_ce_pkts", Meaning: ECNMarked},
		{Name: "cc_rx_cnp_pkts", Meaning: CNPReceived},
		{Name: "cc_tx_cnp_pkts", Meaning: CNPSent},
		{Name: "rdma_tx_packets", Meaning: TxPackets, Kernels: "mainline (not in 6.1)"},
		{Name: "rdma_tx_bytes", Meaning: TxBytes, Kernels: "mainline (not in 6.1)"},
		{Name: "rdma_rx_packets", Meaning: RxPackets, Kernels: "mainline (not in 6.1)"},
		{Name: "rdma_rx_bytes", Meaning: RxBytes, Kernels: "mainline (not in 6.1)"},
	},
	// rxe: rxe_resp.c check_psn counts out_of_seq_request and
	// duplicate_request; rxe_comp.c counts rcvd_seq_err (NAK PSN sequence
	// error), rcvd_rnr_err, completer_retry_err (a retry started after an
	// ACK timeout or a NAK), retry_exceeded_err; rxe_net.c sent_pkts,
	// rxe_recv.c rcvd_pkts (Linux 6.1.192). Kernels before the rename
	// called out_of_seq_request out_of_sequence and ack_deferred
	// ack_deffered.
	"rxe": {
		{Name: "sent_pkts", Meaning: TxPackets},
		{Name: "rcvd_pkts", Meaning: RxPackets},
		{Name: "sent_bytes", Meaning: TxBytes, Kernels: "7.x (not in 6.1)"},
		{Name: "rcvd_bytes", Meaning: RxBytes, Kernels: "7.x (not in 6.1)"},
		{Name: "out_of_seq_request", Meaning: OutOfSequence},
		{Name: "out_of_sequence", Meaning: OutOfSequence, Kernels: "before the rename to out_of_seq_request (4.x)"},
		{Name: "duplicate_request", Meaning: DuplicateRequest},
		{Name: "rcvd_seq_err", Meaning: SeqErrNAKReceived},
		{Name: "completer_retry_err", Meaning: Retransmissions},
		{Name: "retry_exceeded_err", Meaning: RetryExceeded},
		{Name: "rcvd_rnr_err", Meaning: RNRNAKReceived},
		{Name: "send_rnr_err", Meaning: RNRNAKSent},
		{Name: "retry_rnr_exceeded_err", Meaning: RNRRetryExceeded},
	},
	// bnxt_re: bnxt_re_stat_descs; the error counters come from the
	// firmware's query_roce_stats (bnxt_re_copy_err_stats).
	"bnxt_re": {
		{Name: "rx_pkts", Meaning: RxPackets},
		{Name: "tx_pkts", Meaning: TxPackets},
		{Name: "rx_bytes", Meaning: RxBytes},
		{Name: "tx_bytes", Meaning: TxBytes},
		{Name: "oos_drop_count", Meaning: OutOfSequence},
		{Name: "dup_req", Meaning: DuplicateRequest},
		{Name: "seq_err_naks_rcvd", Meaning: SeqErrNAKReceived},
		{Name: "to_retransmits", Meaning: LocalACKTimeout},
		{Name: "max_retry_exceeded", Meaning: RetryExceeded},
		{Name: "rnr_naks_rcvd", Meaning: RNRNAKReceived},
		{Name: "rx_out_of_buffer", Meaning: OutOfBuffer},
		{Name: "rx_roce_discards", Meaning: RxDiscards},
	},
	// irdma: irdma_hw_stat_descs. RxUDP/TxUDP count UDP packets of the
	// RDMA function (RoCE v2); tcpRetransSegs is iWARP's and has no
	// RoCE meaning.
	"irdma": {
		{Name: "RxUDP", Meaning: RxPackets},
		{Name: "TxUDP", Meaning: TxPackets},
		{Name: "RxECNMrkd", Meaning: ECNMarked},
		{Name: "cnpSent", Meaning: CNPSent},
		{Name: "cnpHandled", Meaning: CNPHandled},
		{Name: "cnpIgnored", Meaning: CNPIgnored},
	},
}

// pmaCounted lists, per RDMA driver (qos.Driver names), the IB PMA
// counters (sysfs counters/) the driver counts, for drivers whose PMA
// answers carry fields they never fill. ib core shows every counter of
// the PortCounters or PortCountersExtended group once the driver's
// process_mad answers ClassPortInfo (drivers/infiniband/core/sysfs.c
// get_counter_table, show_pma_counter), so a field the driver leaves
// zeroed reads as a constant 0: a counter the driver does not have, which
// is left out rather than shown as 0. rxe (Linux 7.3.4,
// drivers/infiniband/sw/rxe/rxe_mad.c; 6.1 has no process_mad and no
// counters/) fills port_xmit_data and port_rcv_data (sent_bytes and
// rcvd_bytes >> 2: units of 4 octets) and port_xmit_packets and
// port_rcv_packets (sent_pkts, rcvd_pkts) in rxe_get_pma_counters_ext,
// and only link_downed in rxe_get_pma_counters: hw_counters' link_downed
// capped at 255, under the same name, which hw_counters already gives
// uncapped. The other 17 files (symbol_error, port_xmit_wait,
// unicast_xmit_packets, ...) stay 0 whatever the traffic.
var pmaCounted = map[string]map[string]bool{
	"rxe": {"port_xmit_data": true, "port_rcv_data": true, "port_xmit_packets": true, "port_rcv_packets": true},
}

// PMACounted reports whether driver (a qos.Driver name) counts the IB PMA
// counter name, a file of sysfs counters/: false for one it answers with a
// constant 0 (and for rxe's capped copy of link_downed), true for every
// name of a driver that fills what it answers.
func PMACounted(driver, name string) bool {
	t, ok := pmaCounted[driver]
	return !ok || t[name]
}

var rdmaIndex = func() map[string]map[string]Meaning {
	m := map[string]map[string]Meaning{}
	for d, ks := range rdmaTables {
		m[d] = map[string]Meaning{}
		for _, k := range ks {
			m[d][k.Name] = k.Meaning
		}
	}
	return m
}()

// RDMA lists the counter names with a meaning that driver (a qos.Driver
// name: mlx5, rxe, bnxt_re, irdma) gives; nil for a driver this package
// has no table for.
func RDMA(driver string) []Known { return append([]Known(nil), rdmaTables[driver]...) }

// MeaningOf returns the meaning of the RDMA counter name on driver, ""
// when it has none (or the driver is unknown). mlx5's switchdev vport_
// names mean what the names without the prefix mean.
func MeaningOf(driver, name string) Meaning {
	t := rdmaIndex[driver]
	if t == nil {
		return ""
	}
	if m, ok := t[name]; ok {
		return m
	}
	if driver == "mlx5" && len(name) > 6 && name[:6] == "vport_" {
		return t[name[6:]]
	}
	return ""
}

// Words for the meanings: what a counter with the meaning counts, said so
// that an operator who does not know the driver's name understands it.
// Sources, besides the driver files that define each name (srcMLX5,
// srcRXE, srcBNXT, srcIRDMA; the increments in rxe_resp.c check_psn,
// rxe_comp.c, rxe_net.c, rxe_recv.c): the InfiniBand Architecture
// Specification vol. 1 rel. 1.4, 9.7.5 (the responder's PSN checks:
// duplicate and out-of-sequence requests, NAK codes), 9.7.6 (the
// requester's ACK timer, retry and RNR retry counts) and annex A17 (RoCE
// v2 congestion management: ECN CE marks, CNPs, notification and reaction
// points); NVIDIA's "Understanding mlx5 Linux Counters and Status
// Parameters" (the mlx5 names: out_of_buffer, implied_nak_seq_err,
// roce_adp_retrans, np_/rp_ counters).
var meaningText = map[Meaning]string{
	RxPackets:             "RoCE packets received",
	TxPackets:             "RoCE packets sent",
	RxBytes:               "RoCE bytes received",
	TxBytes:               "RoCE bytes sent",
	OutOfSequence:         "requests received with a PSN beyond the expected one (a packet before it was lost), answered with a sequence-error NAK",
	DuplicateRequest:      "requests received a second time: the sender retransmitted them",
	SeqErrNAKReceived:     "sequence-error NAKs received: the peer missed a packet and this side sends again from it",
	ImpliedNAK:            "responses implying an earlier READ or atomic response was lost: this side sends again",
	LocalACKTimeout:       "ACK timer expiries: no ACK came within the QP's timeout and this side retransmits",
	Retransmissions:       "retransmissions started, after a timeout or a NAK",
	RetransmissionTimeout: "adaptive retransmissions that reached their timeout",
	RetryExceeded:         "QPs that ran out of retries (IBV_WC_RETRY_EXC_ERR): the connection failed",
	RNRNAKReceived:        "receiver-not-ready NAKs received: the peer had no receive posted",
	RNRNAKSent:            "receiver-not-ready NAKs sent: no receive was posted here",
	RNRRetryExceeded:      "QPs that ran out of RNR retries: the connection failed",
	OutOfBuffer:           "packets dropped because no receive was posted",
	ECNMarked:             "RoCE packets received marked congestion experienced (ECN CE)",
	CNPSent:               "congestion notification packets sent, answering ECN-marked packets",
	CNPReceived:           "congestion notification packets received",
	CNPHandled:            "congestion notifications acted on: a QP's rate was lowered",
	CNPIgnored:            "congestion notifications ignored",
	ICRCError:             "RoCE packets received with a bad ICRC (corrupted on the way)",
	RxDiscards:            "RoCE packets the RDMA function dropped on receive",
}

// Text says in words what a counter with meaning m counts; "" for a
// Meaning this package does not define.
func (m Meaning) Text() string { return meaningText[m] }

// portText: the port-level Ethernet counters in words. Sources: mlx5
// Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst
// (rx/tx_pause_ctrl_phy, rx/tx_discards_phy, tx_pause_storm_*_events,
// rx_buffer_passed_thres_phy, rx_out_of_buffer), bnxt_en bnxt_ethtool.c
// and ice's Documentation/networking/device_drivers/ethernet/intel/ice.rst
// (srcMLX5Eth, srcBNXTEth, srcICEEth), IEEE 802.1Q clause 36 (PFC) and
// 802.3 annex 31B (pause frames).
var portText = map[PortCounter]string{
	PortRxPauseFrames:     "pause frames received: the peer asked this port to stop sending",
	PortTxPauseFrames:     "pause frames sent: this port asked the peer to stop sending",
	PortRxPFCFrames:       "PFC frames received, all priorities",
	PortTxPFCFrames:       "PFC frames sent, all priorities",
	PortRxDiscards:        "frames the port dropped on receive",
	PortTxDiscards:        "frames the port dropped on transmit",
	PortStormWarning:      "times the port kept pausing its peer past the pause storm warning threshold (receive side stalled)",
	PortStorm:             "pause storms: the port paused its peer too long (receive side stalled) and stopped sending pauses",
	PortStormResume:       "recoveries from a pause storm",
	PortRxBufferAlmostFul: "times the receive buffer filled past its threshold (close to pausing or dropping)",
	PortRxOutOfBuffer:     "packets dropped because the netdev's receive queue had no buffer",
	// 802.3x pause (802.3 annex 31B): one pause stops every priority.
	PortRxGlobalPause:           "802.3x (link-level) pause frames received: the peer stopped the whole port, every priority",
	PortTxGlobalPause:           "802.3x (link-level) pause frames sent: this port stopped its peer on every priority",
	PortRxGlobalPauseDuration:   "microseconds the peer kept the whole port paused with 802.3x pause",
	PortTxGlobalPauseDuration:   "microseconds this port kept its peer paused with 802.3x pause",
	PortRxGlobalPauseTransition: "times the peer's 802.3x pause ended (XOFF to XON)",
	PortRxGlobalXON:             "802.3x XON frames received: the peer let the port send again",
	PortTxGlobalXON:             "802.3x XON frames sent: this port let its peer send again",
}

// Text says in words what the port-level counter c counts; "" for a
// PortCounter this package does not define.
func (c PortCounter) Text() string { return portText[c] }
