package probe

import (
	"fmt"
	"slices"
	"strings"
)

// SweepField is the marking a sweep walks through.
type SweepField string

// Sweepable fields.
const (
	SweepDSCP SweepField = "dscp" // every DSCP 0..63
	SweepPCP  SweepField = "pcp"  // every PCP 0..7 (needs a VLAN tag)
)

// ParseSweepField parses "dscp" or "pcp".
func ParseSweepField(s string) (SweepField, error) {
	switch SweepField(s) {
	case SweepDSCP, SweepPCP:
		return SweepField(s), nil
	}
	return "", fmt.Errorf("probe: sweep %q is not known: want dscp or pcp", s)
}

// Values returns every value of the field in order: 0..63 or 0..7.
func (f SweepField) Values() []uint8 {
	n := 64
	if f == SweepPCP {
		n = 8
	}
	v := make([]uint8, n)
	for i := range v {
		v[i] = uint8(i)
	}
	return v
}

// Apply returns m with the field set to v.
func (f SweepField) Apply(m Markings, v uint8) Markings {
	if f == SweepPCP {
		m.PCP = v
	} else {
		m.DSCP = v
	}
	return m
}

// get returns the field's value in m; ok is false for PCP of an untagged frame.
func (f SweepField) get(m Markings) (uint8, bool) {
	if f == SweepPCP {
		return m.PCP, m.Tagged
	}
	return m.DSCP, true
}

// SweepEntry is what became of one swept value.
type SweepEntry struct {
	Sent     uint8   `json:"sent"`
	Received []uint8 `json:"received"` // distinct values that arrived, sorted; empty if none
	Untagged int     `json:"untagged"` // replies that arrived without a tag (PCP sweep)
	Answered int     `json:"answered"` // probes answered
	Lost     int     `json:"lost"`     // probes not answered
}

// Status returns "unchanged", "remarked", "mixed" (several values arrived),
// "untagged" (PCP sweep, the tag was stripped) or "lost".
func (e SweepEntry) Status() string {
	switch {
	case e.Answered == 0:
		return "lost"
	case e.Untagged == e.Answered:
		return "untagged"
	case len(e.Received) > 1 || e.Untagged > 0:
		return "mixed"
	case e.Received[0] == e.Sent:
		return "unchanged"
	}
	return "remarked"
}

// Sweep collects the results of a sweep: for every value sent, the values
// that arrived. The result is the map the path applies.
type Sweep struct {
	Field   SweepField
	Entries []SweepEntry // one per value, in Values order
}

// NewSweep returns an empty sweep of f.
func NewSweep(f SweepField) *Sweep {
	s := &Sweep{Field: f}
	for _, v := range f.Values() {
		s.Entries = append(s.Entries, SweepEntry{Sent: v, Received: []uint8{}})
	}
	return s
}

// Add records one probe: the value sent and the markings that arrived
// (nil when nothing came back). Values outside the field's range are
// ignored.
func (s *Sweep) Add(sent uint8, received *Markings) {
	if int(sent) >= len(s.Entries) {
		return
	}
	e := &s.Entries[sent]
	if received == nil {
		e.Lost++
		return
	}
	e.Answered++
	v, ok := s.Field.get(*received)
	if !ok {
		e.Untagged++
		return
	}
	if !slices.Contains(e.Received, v) {
		e.Received = append(e.Received, v)
		slices.Sort(e.Received)
	}
}

// Counts returns how many values ended in each Status.
func (s *Sweep) Counts() map[string]int {
	c := map[string]int{}
	for _, e := range s.Entries {
		c[e.Status()]++
	}
	return c
}

// Lines renders the map for people: one line per value that did not arrive
// unchanged, then a summary line.
func (s *Sweep) Lines() []string {
	name := strings.ToUpper(string(s.Field))
	var out []string
	for _, e := range s.Entries {
		switch e.Status() {
		case "unchanged":
			continue
		case "lost":
			out = append(out, fmt.Sprintf("%s %2d → lost", name, e.Sent))
		case "untagged":
			out = append(out, fmt.Sprintf("%s %2d → untagged (tag stripped)", name, e.Sent))
		default:
			vals := make([]string, len(e.Received))
			for i, v := range e.Received {
				vals[i] = fmt.Sprint(v)
			}
			if e.Untagged > 0 {
				vals = append(vals, "untagged")
			}
			out = append(out, fmt.Sprintf("%s %2d → %s", name, e.Sent, strings.Join(vals, ", ")))
		}
	}
	c := s.Counts()
	out = append(out, fmt.Sprintf("%s map over %d values: %d unchanged, %d remarked, %d mixed, %d untagged, %d lost",
		name, len(s.Entries), c["unchanged"], c["remarked"], c["mixed"], c["untagged"], c["lost"]))
	return out
}
