package audit

import (
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/null"
)

// Input is what Audit works on.
type Input struct {
	// View is the host (its GID tables, netdevs, DCB and settings).
	View *host.View
	// Prev and Cur are two counter samples (Prev nil: one sample, whose
	// counts run since the counters were reset).
	Prev, Cur *counters.Sample
	// Expect are the markings the host's RDMA traffic is configured to
	// carry (--tclass/--tos/--flow); none: the host's RoCE priorities.
	Expect []Expectation
	// Wire is a sample of the RoCE frames leaving the host; nil when none
	// was taken (WireReason says why).
	Wire *Wire
	// WireReason says why there is no wire sample (no CAP_NET_RAW, a
	// driver whose RDMA traffic bypasses the kernel, ...).
	WireReason string
	// Owners finds the QP (and process) behind a wire entry: OwnersOf of
	// the host's QP census; nil: QPs are not named.
	Owners OwnerOf
}

// Report is the audit (`roce-probe audit -o json`: docs/json.md,
// "audit_report").
type Report struct {
	Time time.Time `json:"time"`
	// Interval is the seconds between the two counter samples; nil with
	// one.
	Interval   *float64   `json:"interval_s"`
	Netdevs    []Netdev   `json:"netdevs"`
	Priorities []Priority `json:"priorities"`
	Wire       WireReport `json:"wire"`
	Findings   []Finding  `json:"findings"`
}

// Severity of a finding.
type Severity string

// Severities: an error is RDMA traffic off its priority; a warning
// markings that differ from the configuration on a priority that may
// still be right; info, with one sample, what the counters show since
// they were reset.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Finding codes (docs/audit.md, "Findings").
const (
	// CodeRDMAOffPriority: the RDMA counters grew by more than the
	// expected priorities' packets sent can account for.
	CodeRDMAOffPriority = "rdma_off_priority"
	// CodeQPOffPriority: a QP's frames on the wire land on a priority that
	// is not expected (or not lossless).
	CodeQPOffPriority = "qp_off_priority"
	// CodeQPMarkings: a QP's frames carry other markings (DSCP, PCP) than
	// the flows' configuration gives, on a priority that is unknown here.
	CodeQPMarkings = "qp_markings_differ"
)

// Finding is one thing the audit found. Netdev, Priority and the QP's
// fields say what it is about (null when not known or not about one).
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Message  string   `json:"message"`
	Netdev   *string  `json:"netdev"`
	Priority *uint8   `json:"priority"`
	// QP identifies the QP of a wire finding; nil for a counters finding.
	QP *QPRef `json:"qp"`
}

// QPRef names a QP of a wire finding: its device, number and owner (the
// census's, null when the census has no QP for the frames).
type QPRef struct {
	Device *string `json:"device"`
	QPN    *uint32 `json:"qpn"`
	PID    *int    `json:"pid"`
	Comm   *string `json:"comm"`
}

// HasFindings reports whether a finding is an error or a warning
// (`roce-probe audit` exits 1).
func (r *Report) HasFindings() bool {
	for _, f := range r.Findings {
		if f.Severity != SeverityInfo {
			return true
		}
	}
	return false
}

// auditor is one Audit.
type auditor struct {
	in        Input
	report    *Report
	prios     map[string]*[8]*Priority
	prioOrder []string
}

// Audit compares the host's RDMA traffic with its RoCE priorities and the
// markings it is configured to carry: the counters cross-check of every
// real netdev (RDMA packets sent against the expected priorities' packets
// sent), and, with a wire sample, the markings of each QP's frames
// against the flows' configuration.
func Audit(in Input) Report {
	r := Report{Netdevs: []Netdev{}, Priorities: []Priority{}, Findings: []Finding{}}
	if in.Cur != nil {
		r.Time = in.Cur.Time
		if in.Prev != nil {
			iv := math.Round(in.Cur.Time.Sub(in.Prev.Time).Seconds()*1000) / 1000
			r.Interval = &iv
		}
	}
	a := &auditor{in: in, report: &r}
	f := newFlows(in.View, in.Expect)
	var expect map[string]map[uint8][]string
	if len(in.Expect) > 0 {
		expect = f.priorities()
	}
	if in.Cur != nil {
		a.checkCounters(in.View.CountersInput(in.Prev, in.Cur), expect)
	}
	a.checkWire(f)
	for _, k := range a.prioOrder {
		for _, p := range a.prios[k] {
			r.Priorities = append(r.Priorities, *p)
		}
	}
	sort.SliceStable(r.Findings, func(i, j int) bool { return sevRank(r.Findings[i].Severity) < sevRank(r.Findings[j].Severity) })
	return r
}

func sevRank(s Severity) int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

type netdevJSON struct {
	Netns *string `json:"netns"`
	plainNetdev
}

type plainNetdev Netdev

// MarshalJSON writes the keys of docs/json.md's "audit_netdev", netns
// null for the collector's own namespace.
func (n Netdev) MarshalJSON() ([]byte, error) {
	return json.Marshal(netdevJSON{Netns: null.String(n.Netns), plainNetdev: plainNetdev(n)})
}

type priorityJSON struct {
	Netns *string `json:"netns"`
	plainPriority
}

type plainPriority Priority

// MarshalJSON writes the keys of docs/json.md's "audit_priority".
func (p Priority) MarshalJSON() ([]byte, error) {
	return json.Marshal(priorityJSON{Netns: null.String(p.Netns), plainPriority: plainPriority(p)})
}
