package counters

import (
	"encoding/json"

	"github.com/roce-probe/roce-probe/internal/null"
)

type prioJSON struct {
	Netns             *string    `json:"netns"`
	Netdev            string     `json:"netdev"`
	Prio              uint8      `json:"prio"`
	PFC               *bool      `json:"pfc_enabled"`
	RoCE              bool       `json:"roce"`
	RxPackets         *PrioValue `json:"rx_packets"`
	TxPackets         *PrioValue `json:"tx_packets"`
	RxBytes           *PrioValue `json:"rx_bytes"`
	TxBytes           *PrioValue `json:"tx_bytes"`
	RxPause           *PrioValue `json:"rx_pause"`
	TxPause           *PrioValue `json:"tx_pause"`
	RxPauseDuration   *PrioValue `json:"rx_pause_duration_us"`
	TxPauseDuration   *PrioValue `json:"tx_pause_duration_us"`
	RxPauseTransition *PrioValue `json:"rx_pause_transition"`
	TxPauseTransition *PrioValue `json:"tx_pause_transition"`
	RxXON             *PrioValue `json:"rx_xon"`
	TxXON             *PrioValue `json:"tx_xon"`
	RxDiscards        *PrioValue `json:"rx_discards"`
	RxBufDiscard      *PrioValue `json:"rx_buf_discard"`
	RxCongDiscard     *PrioValue `json:"rx_cong_discard"`
	RxECNMarked       *PrioValue `json:"rx_ecn_marked"`
	PFCRequests       *PrioValue `json:"pfc_requests"`
	PFCIndications    *PrioValue `json:"pfc_indications"`
}

// MarshalJSON writes one object per priority with a key for every
// per-priority counter (null when the driver has none), pfc_requests and
// pfc_indications from DCB, and pfc_enabled and roce.
func (p PrioReport) MarshalJSON() ([]byte, error) {
	v := p.Values
	return json.Marshal(prioJSON{
		Netns: null.String(p.Netns), Netdev: p.Netdev, Prio: p.Prio, PFC: p.PFC, RoCE: p.RoCE,
		RxPackets: v[PrioRxPackets], TxPackets: v[PrioTxPackets], RxBytes: v[PrioRxBytes], TxBytes: v[PrioTxBytes],
		RxPause: v[PrioRxPause], TxPause: v[PrioTxPause], RxPauseDuration: v[PrioRxPauseDuration], TxPauseDuration: v[PrioTxPauseDuration],
		RxPauseTransition: v[PrioRxPauseTransition], TxPauseTransition: v[PrioTxPauseTransition], RxXON: v[PrioRxXON], TxXON: v[PrioTxXON],
		RxDiscards: v[PrioRxDiscards], RxBufDiscard: v[PrioRxBufDiscard], RxCongDiscard: v[PrioRxCongDiscard], RxECNMarked: v[PrioRxECNMarked],
		PFCRequests: p.PFCRequests, PFCIndications: p.PFCIndications,
	})
}
