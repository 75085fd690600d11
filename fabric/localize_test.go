package fabric

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// testFabric is a constructed leaf-spine: tors ToRs of perToR NICs, spines
// spines; every NIC probes every other with 8 UDP source ports, 4 probes
// each, and a probe between two ToRs takes the spine its (src, dst,
// sport) hashes to. fault decides each probe's fate.
type testFabric struct {
	tors, perToR, spines int
	// mixed hashes (src, dst, sport) as a switch does, so that a reply
	// (dst, src, sport) takes a spine independent of its probe's.
	mixed bool
}

func (f testFabric) nic(i int) string   { return fmt.Sprintf("nic%02d", i) }
func (f testFabric) tor(i int) string   { return fmt.Sprintf("leaf%d", i/f.perToR) }
func (f testFabric) spine(s int) string { return fmt.Sprintf("spine%d", s) }

func (f testFabric) path(src, dst, sport int) int {
	if src/f.perToR == dst/f.perToR {
		return -1
	}
	if f.mixed {
		h := uint32(2166136261) // FNV-1a over the three
		for _, v := range [3]int{src, dst, sport} {
			h = (h ^ uint32(v)) * 16777619
			h ^= h >> 15
		}
		return int(h % uint32(f.spines))
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
		// Random loss (one probe in 100,000) loses one probe of a pair
		// now and then: three in one ToR's mesh, or three around one NIC,
		// in one window are chance, not a fault.
		{"three random losses in leaf1's mesh", func(a, b, s, sp, k int) (bool, bool) {
			return k == 0 && s == 2 && (a == 4 && b == 5 || a == 6 && b == 7 || a == 7 && b == 4), false
		}, nil, ""},
		{"three random losses around nic05, two with ToR-mates", func(a, b, s, sp, k int) (bool, bool) {
			return k == 0 && s == 1 && (a == 5 && b == 4 || a == 6 && b == 5 || a == 5 && b == 14), false
		}, nil, ""},
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

// Two lossy uplinks of two ToRs, each dropping every probe and every
// reply that crosses it: a reply comes back on the spine its own hash
// picks, which the probe's trace does not show, so each ToR's lost ports
// spread over every spine besides the lossy one — and every other ToR's
// link to the lossy spine gets the votes of the ports it shares with the
// lossy ToR. The suspects are the two links, no spine, no far end.
func TestLocalizeTwoLinksWithReplies(t *testing.T) {
	f := testFabric{tors: 6, perToR: 4, spines: 4, mixed: true}
	bad := map[[2]int]bool{{0, 1}: true, {3, 2}: true} // (ToR, spine), both ways
	in := f.observe(func(a, b, s, sp, k int) (bool, bool) {
		if sp < 0 {
			return false, false
		}
		back := f.path(b, a, s)
		return bad[[2]int{a / 4, sp}] || bad[[2]int{b / 4, sp}] || bad[[2]int{a / 4, back}] || bad[[2]int{b / 4, back}], false
	})
	if got, want := names(Localize(in)), "link nic= tor=leaf0 spine=spine1; link nic= tor=leaf3 spine=spine2"; got != want {
		t.Errorf("suspects %q, want %q", got, want)
	}
}

// One lossy uplink, leaf0–spine1, and a probe or two lost at random
// through spine1 between other ToRs: every ToR's link to spine1 shares
// ports with leaf0 and so gets votes, and the random losses give some of
// them a second remote ToR. The ports leaf0's link explains are its: the
// suspect is that link, not the far ends and not the spine.
func TestLocalizeFarEnds(t *testing.T) {
	f := testFabric{tors: 6, perToR: 4, spines: 4, mixed: true}
	// One probe lost at random, on its first source port through spine1,
	// of each of three pairs: leaf4→leaf5, leaf2→leaf3, leaf1→leaf5.
	noise := map[[3]int]bool{}
	for _, p := range [][2]int{{16, 20}, {9, 13}, {5, 22}} {
		for s := 0; s < 8; s++ {
			if f.path(p[0], p[1], s) == 1 {
				noise[[3]int{p[0], p[1], s}] = true
				break
			}
		}
	}
	if len(noise) != 3 {
		t.Fatalf("the hash sends no port of a noise pair through spine1: %v", noise)
	}
	in := f.observe(func(a, b, s, sp, k int) (bool, bool) {
		return sp == 1 && (a/4 == 0 || b/4 == 0) || noise[[3]int{a, b, s}] && k == 0, false
	})
	if got, want := names(Localize(in)), "link nic= tor=leaf0 spine=spine1"; got != want {
		t.Errorf("suspects %q, want %q", got, want)
		for _, s := range Localize(in) {
			t.Logf("  %s: %s", s.Kind, s.Evidence)
		}
	}
}

// A lossy NIC port in a ToR of 16, and two probes lost at random between
// three of its mates (1→2, 2→3): mate 2 lost with two mates besides the
// NIC, which is chance, not ToR-mesh loss. The suspect is the NIC.
func TestLocalizeNICWithRandomLoss(t *testing.T) {
	f := testFabric{tors: 2, perToR: 16, spines: 2}
	in := f.observe(func(a, b, s, sp, k int) (bool, bool) {
		random := (a == 1 && b == 2 || a == 2 && b == 3) && s == 0 && k == 0
		return (a == 5 || b == 5) && (a+b+s+k)%3 == 0 || random, false
	})
	if got, want := names(Localize(in)), "nic nic=nic05 tor=leaf0 spine="; got != want {
		t.Errorf("suspects %q, want %q", got, want)
	}
}

// ToRs of 2 NICs (the lab's leaf-spine): a dead NIC has one ToR-mate to
// lose probes with, which is enough when Localize knows the ToR has no
// other (ToRNICs); without it the rule asks for 2. A lossy uplink still
// names no NIC (it never loses between ToR-mates) but its spine, the one
// the lost ports crossed.
func TestLocalizeToRsOfTwo(t *testing.T) {
	f := testFabric{tors: 2, perToR: 2, spines: 2}
	sizes := map[string]int{"leaf0": 2, "leaf1": 2}
	for _, tc := range []struct {
		name  string
		fate  probeFate
		sizes map[string]int
		want  string
	}{
		{"dead NIC, ToR sizes known", func(a, b, s, sp, k int) (bool, bool) { return a == 3 || b == 3, false }, sizes, "nic nic=nic03 tor=leaf1 spine="},
		{"dead NIC, ToR sizes not known", func(a, b, s, sp, k int) (bool, bool) { return a == 3 || b == 3, false }, nil, ""},
		{"dead NIC, its ToR said to have 3", func(a, b, s, sp, k int) (bool, bool) { return a == 3 || b == 3, false }, map[string]int{"leaf1": 3}, ""},
		// Every lost port crosses spine0, from one pair of ToRs: spine0
		// or its links to leaf0 and leaf1 (pairSpines).
		{"lossy uplink leaf1-spine0", func(a, b, s, sp, k int) (bool, bool) { return sp == 0 && (a/2 == 1 || b/2 == 1), false }, sizes, "spine nic= tor= spine=spine0"},
		{"a probe lost at random thrice around nic02", func(a, b, s, sp, k int) (bool, bool) {
			return k == 0 && s == 1 && (a == 2 && b == 3 || a == 2 && b == 0 || a == 1 && b == 2), false
		}, sizes, ""},
	} {
		in := f.observe(tc.fate)
		in.ToRNICs = tc.sizes
		if got := names(Localize(in)); got != tc.want {
			t.Errorf("%s: suspects %q, want %q", tc.name, got, tc.want)
		}
	}
}

// AgentObservations counts each ToR's NICs over every pair, healthy ones
// too: the lab's leaf-spine (testdata/leafspine-lab) has 2 under each
// leaf (docs/lab.md).
func TestAgentObservationsToRNICs(t *testing.T) {
	var snaps []string
	var pairs []AgentPairs
	for _, h := range []string{"h5", "h6", "h7", "h8"} {
		snaps = append(snaps, "testdata/leafspine-lab/"+h+".snapshot.json.gz")
		b, err := os.ReadFile("testdata/leafspine-lab/" + h + ".pairs.json")
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodeAgentPairs(bytes.NewReader(b), 0)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	hosts, err := ReadFiles(snaps, 1)
	if err != nil {
		t.Fatal(err)
	}
	in := AgentObservations(hosts, pairs)
	if want := map[string]int{"leaf1": 2, "leaf2": 2}; !reflect.DeepEqual(in.ToRNICs, want) {
		t.Errorf("ToRNICs %v, want %v", in.ToRNICs, want)
	}
}
