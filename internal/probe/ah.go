package probe

import (
	"fmt"

	"github.com/roce-probe/roce-probe/ah"
)

// FromWire returns the markings an address handle puts on the wire, as
// ah.Resolve predicts them for the RDMA device's driver: PCP of the
// outermost tag, DSCP, ECN, TTL and UDP source port. Where the prediction
// is unknown (a nil field: an unknown driver, a random or QPN-derived UDP
// source port) the value of fallback is used and a note says so.
func FromWire(w ah.Wire, fallback Markings) (Markings, []string) {
	m := fallback
	var notes []string
	m.TTL = w.TTL
	if len(w.VLANs) > 0 {
		if p := w.VLANs[0].PCP; p != nil {
			m.PCP = *p
		} else {
			notes = append(notes, fmt.Sprintf("the driver's PCP is not known: probing with PCP %d (--sl)", fallback.PCP))
		}
	}
	if w.DSCP != nil && w.ECN != nil {
		m.DSCP, m.ECN = *w.DSCP, *w.ECN
	} else {
		notes = append(notes, fmt.Sprintf("the driver's DSCP/ECN is not known: probing with the traffic class byte as is (DSCP %d, ECN %d)", fallback.DSCP, fallback.ECN))
	}
	if w.UDPSport != nil {
		m.Sport = *w.UDPSport
	} else if w.UDPSportFrom != "" {
		notes = append(notes, fmt.Sprintf("the UDP source port is not fixed (%s): probing with %d", w.UDPSportFrom, fallback.Sport))
	}
	return m, notes
}
