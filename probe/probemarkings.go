package probe

import (
	"fmt"

	"github.com/roce-probe/roce-probe/host"
)

// MarkingsFromAH turns the markings the resolved address handle puts on
// the wire (Wire) into a probe's markings: the outermost tag's PCP, DSCP,
// ECN, TTL and UDP source port. What the driver's profile does not know
// keeps the fallback's value (the sl, traffic class and port asked for),
// with a note saying so. Tagged and VLAN stay the fallback's: the probe's
// endpoint decides them. `roce-probe send --dev --gid-index` and the agent
// probe with these markings.
func MarkingsFromAH(r *host.AHResult, fallback Markings) (Markings, []string) {
	w := r.Wire
	m := fallback
	var notes []string
	m.TTL = w.TTL
	if len(w.VLANChain) > 0 {
		if p := w.VLANChain[0].PCP; p != nil {
			m.PCP = *p
		} else {
			notes = append(notes, fmt.Sprintf("the driver's PCP is not known: probing with PCP %d (sl & 7)", fallback.PCP))
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
