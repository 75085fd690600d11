package fabric

import (
	"fmt"
	"strings"
	"testing"
)

// testFabric is a constructed leaf-spine: tors ToRs of perToR NICs, spines
// spines; every NIC probes every other with 8 UDP source ports, 4 probes
// each, and a probe between two ToRs takes the spine its (src, dst,
// sport) hashes to. fault decides each probe's fate.
type testFabric struct {
	tors, perToR, spines int
}

func (f testFabric) nic(i int) string   { return fmt.Sprintf("nic%02d", i) }
func (f testFabric) tor(i int) string   { return fmt.Sprintf("leaf%d", i/f.perToR) }
func (f testFabric) spine(s int) string { return fmt.Sprintf("spine%d", s) }

func (f testFabric) path(src, dst, sport int) int {
	if src/f.perToR == dst/f.perToR {
		return -1
	}
	return (src*7 + dst*13 + sport*31) % f.spines
}

// probeFate is what a fault does to probe k of (src, dst, sport) whose
// path takes spine sp (-1 under one ToR).
type probeFate func(src, dst, sport, sp, k int) (lost, remarked bool)

// observe runs the probes and returns what the agents would report: the
// pairs with loss or remarking, each lost or remarked port traced.
func (f testFabric) observe(fate probeFate) LocalizeInput {
	var in LocalizeInput
	n := f.tors * f.perToR
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			if a == b {
				continue
			}
			p := PairObservation{Src: f.nic(a), Dst: f.nic(b), SrcToR: f.tor(a), DstToR: f.tor(b)}
			for sport := 0; sport < 8; sport++ {
				sp := f.path(a, b, sport)
				var so SportObservation
				for k := 0; k < 4; k++ {
					p.Sent++
					lost, rem := fate(a, b, sport, sp, k)
					if lost {
						so.Lost++
					} else if rem {
						so.Remarked++
					}
				}
				if so.Lost+so.Remarked > 0 {
					so.Sport = uint16(49152 + sport)
					if sp >= 0 {
						so.Spine = f.spine(sp)
					}
					p.Lost += so.Lost
					p.Remarked += so.Remarked
					p.Sports = append(p.Sports, so)
				}
			}
			if p.Lost+p.Remarked > 0 {
				in.Pairs = append(in.Pairs, p)
			}
		}
	}
	return in
}

func names(ss []Suspect) string {
	var b []string
	for _, s := range ss {
		b = append(b, fmt.Sprintf("%s nic=%s tor=%s spine=%s", s.Kind, s.NIC, s.ToR, s.Spine))
	}
	return strings.Join(b, "; ")
}

// 4 ToRs × 4 NICs, 2 spines: each injected fault is the one suspect.
func TestLocalizeConstructedFabric(t *testing.T) {
	f := testFabric{tors: 4, perToR: 4, spines: 2}
	involves := func(a, b, n int) bool { return a == n || b == n }
	torOf := func(i int) int { return i / f.perToR }
	for _, tc := range []struct {
		name  string
		fate  probeFate
		noisy []string
		want  string
	}{
		{"nothing", func(int, int, int, int, int) (bool, bool) { return false, false }, nil, ""},
		{"one random loss", func(a, b, s, sp, k int) (bool, bool) { return a == 3 && b == 12 && s == 5 && k == 0, false }, nil, ""},
		{"dead NIC", func(a, b, s, sp, k int) (bool, bool) { return involves(a, b, 6), false }, nil, "nic nic=nic06 tor=leaf1 spine="},
		{"lossy NIC port (every 3rd probe)", func(a, b, s, sp, k int) (bool, bool) { return involves(a, b, 9) && (a+b+s+k)%3 == 0, false }, nil,
			"nic nic=nic09 tor=leaf2 spine="},
		{"lossy uplink leaf2-spine1", func(a, b, s, sp, k int) (bool, bool) {
			return sp == 1 && (torOf(a) == 2 || torOf(b) == 2), false
		}, nil, "link nic= tor=leaf2 spine=spine1"},
		{"lossy uplink leaf0-spine0, half its probes", func(a, b, s, sp, k int) (bool, bool) {
			return sp == 0 && (torOf(a) == 0 || torOf(b) == 0) && k%2 == 0, false
		}, nil, "link nic= tor=leaf0 spine=spine0"},
		{"dead spine1", func(a, b, s, sp, k int) (bool, bool) { return sp == 1, false }, nil, "spine nic= tor= spine=spine1"},
		{"remarking hop leaf3-spine0", func(a, b, s, sp, k int) (bool, bool) {
			return false, sp == 0 && (torOf(a) == 3 || torOf(b) == 3)
		}, nil, "remark nic= tor=leaf3 spine=spine0"},
		{"ToR mesh loss in leaf1", func(a, b, s, sp, k int) (bool, bool) {
			return torOf(a) == 1 && torOf(b) == 1 && (a+b+s+k)%2 == 0, false
		}, nil, "tor nic= tor=leaf1 spine="},
		{"noisy host", func(a, b, s, sp, k int) (bool, bool) { return involves(a, b, 13) && (s+k)%4 == 0, false }, []string{"nic13"},
			"host_noise nic=nic13 tor= spine="},
		{"noisy host and a lossy uplink elsewhere", func(a, b, s, sp, k int) (bool, bool) {
			return (involves(a, b, 1) && k == 0) || (sp == 1 && (torOf(a) == 3 || torOf(b) == 3)), false
		}, []string{"nic01"}, "host_noise nic=nic01 tor= spine=; link nic= tor=leaf3 spine=spine1"},
	} {
		in := f.observe(tc.fate)
		in.Noisy = tc.noisy
		got := Localize(in)
		if names(got) != tc.want {
			t.Errorf("%s: suspects %q, want %q", tc.name, names(got), tc.want)
			for _, s := range got {
				t.Logf("  %s: %s", s.Kind, s.Evidence)
			}
		}
		for _, s := range got {
			if s.Evidence == "" || s.Pairs == 0 {
				t.Errorf("%s: %+v without evidence", tc.name, s)
			}
		}
	}
}

// Without traces the uplink is named without its spine.
func TestLocalizeUntraced(t *testing.T) {
	f := testFabric{tors: 4, perToR: 4, spines: 2}
	in := f.observe(func(a, b, s, sp, k int) (bool, bool) { return sp == 1 && (a/4 == 2 || b/4 == 2), false })
	for i := range in.Pairs {
		for j := range in.Pairs[i].Sports {
			in.Pairs[i].Sports[j].Spine = ""
		}
	}
	if got := names(Localize(in)); got != "link nic= tor=leaf2 spine=" {
		t.Errorf("suspects %q", got)
	}
}
