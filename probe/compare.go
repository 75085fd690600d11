package probe

import (
	"fmt"

	"github.com/roce-probe/roce-probe/qos"
)

// FindingKind names one kind of difference between the markings sent and
// the markings that arrived.
type FindingKind string

// Finding kinds. docs/probe.md explains what each means for PFC and ECN.
const (
	FindingLoss          FindingKind = "loss"           // nothing came back
	FindingTagStripped   FindingKind = "tag-stripped"   // sent tagged, arrived untagged
	FindingTagAdded      FindingKind = "tag-added"      // sent untagged, arrived tagged
	FindingVLANChanged   FindingKind = "vlan-changed"   // VLAN ID translated
	FindingPCPRemarked   FindingKind = "pcp-remarked"   // PCP changed on the way
	FindingDSCPRemarked  FindingKind = "dscp-remarked"  // DSCP changed on the way
	FindingECNMarked     FindingKind = "ecn-ce"         // ECT arrived as CE: congestion on the path
	FindingECNChanged    FindingKind = "ecn-changed"    // ECN field changed otherwise (bleached, set)
	FindingRoutedHops    FindingKind = "routed-hops"    // TTL decremented: IP routers on the path
	FindingTTLRaised     FindingKind = "ttl-raised"     // TTL arrived higher than sent: rewritten
	FindingSportChanged  FindingKind = "sport-changed"  // UDP source port rewritten (NAT)
	FindingFamilyChanged FindingKind = "family-changed" // sent IPv4 arrived IPv6 or the reverse
)

// Finding is one difference between sent and received markings.
type Finding struct {
	Kind     FindingKind `json:"kind"`
	Sent     int         `json:"sent"`     // the value sent (for loss: 0)
	Received int         `json:"received"` // the value that arrived
	Message  string      `json:"message"`  // one line for people
}

// String returns the message.
func (f Finding) String() string { return f.Message }

// Compare returns the findings for one probe: what changed between the
// markings sent and those received. received nil means nothing came back.
// Equal markings give no findings.
func Compare(sent Markings, received *Markings) []Finding {
	if received == nil {
		return []Finding{{Kind: FindingLoss, Message: "no reply: the probe or its reply was lost, or no listener answered"}}
	}
	r := *received
	var fs []Finding
	add := func(k FindingKind, s, rv int, format string, args ...any) {
		fs = append(fs, Finding{Kind: k, Sent: s, Received: rv, Message: fmt.Sprintf(format, args...)})
	}
	if sent.IPv6 != r.IPv6 {
		add(FindingFamilyChanged, b2i(sent.IPv6), b2i(r.IPv6), "sent as %s, arrived as %s", family(sent.IPv6), family(r.IPv6))
	}
	switch {
	case sent.Tagged && !r.Tagged:
		add(FindingTagStripped, int(sent.VLAN), -1, "VLAN tag stripped: sent VLAN %d PCP %d, arrived untagged (no PCP for PFC to classify by)", sent.VLAN, sent.PCP)
	case !sent.Tagged && r.Tagged:
		add(FindingTagAdded, -1, int(r.VLAN), "VLAN tag added: sent untagged, arrived with VLAN %d PCP %d", r.VLAN, r.PCP)
	case sent.Tagged && r.Tagged:
		if sent.VLAN != r.VLAN {
			add(FindingVLANChanged, int(sent.VLAN), int(r.VLAN), "VLAN changed %d→%d", sent.VLAN, r.VLAN)
		}
		if sent.PCP != r.PCP {
			add(FindingPCPRemarked, int(sent.PCP), int(r.PCP), "PCP remarked %d→%d", sent.PCP, r.PCP)
		}
	}
	if sent.DSCP != r.DSCP {
		add(FindingDSCPRemarked, int(sent.DSCP), int(r.DSCP), "DSCP remarked %d→%d", sent.DSCP, r.DSCP)
	}
	if sent.ECN != r.ECN {
		if qos.CongestionMark(qos.ECN(sent.ECN), qos.ECN(r.ECN), true) {
			add(FindingECNMarked, int(sent.ECN), int(r.ECN), "ECN marked CE (sent %s): a queue on the path is congested and ECN marking works", qos.ECN(sent.ECN))
		} else {
			add(FindingECNChanged, int(sent.ECN), int(r.ECN), "ECN changed %s→%s", qos.ECN(sent.ECN), qos.ECN(r.ECN))
		}
	}
	switch {
	case r.TTL < sent.TTL:
		n := int(sent.TTL - r.TTL)
		add(FindingRoutedHops, int(sent.TTL), int(r.TTL), "TTL %d→%d: %d routed hop%s", sent.TTL, r.TTL, n, plural(n))
	case r.TTL > sent.TTL:
		add(FindingTTLRaised, int(sent.TTL), int(r.TTL), "TTL raised %d→%d: rewritten on the path", sent.TTL, r.TTL)
	}
	if sent.Sport != r.Sport {
		add(FindingSportChanged, int(sent.Sport), int(r.Sport), "UDP source port changed %d→%d", sent.Sport, r.Sport)
	}
	return fs
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func family(v6 bool) string {
	if v6 {
		return "IPv6"
	}
	return "IPv4"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
