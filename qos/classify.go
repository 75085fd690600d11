package qos

import "fmt"

// Classify returns the priority a port with DCB d puts a received RoCE
// frame on, from the frame's markings: under DSCP trust the APP table's
// dscp-prio entry for dscp; under PCP trust the outermost tag's PCP
// (through a pcp-prio APP entry when there is one), or for an untagged
// frame the port's default priority (an APP entry {EtherType, 0}, else 0,
// 802.1Q's default). why says which rule gave it. ok is false when the
// trust mode is unknown (no DCB, DCB not read), under DSCP trust when
// dscp is nil (RoCE v1) or has no APP entry (the NIC's firmware default
// applies, which no interface reads), and under PCP trust when the frame
// is tagged with an unknown PCP (pcp nil).
//
// It is the one classification rule: Check classifies a flow's predicted
// markings with it, and package audit the markings of frames seen on the
// wire.
func (d *DCB) Classify(tagged bool, pcp, dscp *uint8) (prio uint8, why string, ok bool) {
	switch d.Trust() {
	case TrustDSCP:
		if dscp == nil {
			return 0, "DSCP trust but the DSCP on the wire is unknown or absent (RoCE v1)", false
		}
		if p, ok := d.DSCPPriority(*dscp); ok {
			return p, fmt.Sprintf("APP dscp-prio %d:%d", *dscp, p), true
		}
		return 0, fmt.Sprintf("DSCP %d is not in the APP table", *dscp), false
	case TrustPCP:
		switch {
		case !tagged:
			if p, ok := d.DefaultPriority(); ok {
				return p, fmt.Sprintf("untagged frame under PCP trust: the APP default-prio entry gives %d", p), true
			}
			return 0, "untagged frame under PCP trust: the port's default priority (802.1Q default 0; no APP default-prio entry)", true
		case pcp == nil:
			return 0, "PCP trust, and the driver's PCP is unknown", false
		}
		if p, ok := d.PCPPriority(*pcp); ok {
			return p, fmt.Sprintf("APP pcp-prio %d:%d", *pcp, p), true
		}
		return *pcp & 7, "PCP trust: priority = the outermost tag's PCP", true
	}
	return 0, "no DCB information: the trust mode is unknown", false
}
