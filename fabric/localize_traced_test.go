package fabric

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/trace"
)

// labIn is localisation's input from the lab fixture testdata/leafspine-lab
// (the agents' /snapshot and /pairs, recorded by TestLabAgentLeafSpine on
// Linux 7.3.4 rxe while spine1's port toward leaf2 remarked DSCP 26 to 0)
// with the pairs replaced by pairs when pairs is not nil (the hosts'
// addresses and ToRs are the same in every phase).
func labIn(t *testing.T, pairs map[string]string) LocalizeInput {
	t.Helper()
	var snaps []string
	var ap []AgentPairs
	for _, h := range []string{"h5", "h6", "h7", "h8"} {
		snaps = append(snaps, "testdata/leafspine-lab/"+h+".snapshot.json.gz")
		b, err := os.ReadFile("testdata/leafspine-lab/" + h + ".pairs.json")
		if err != nil {
			t.Fatal(err)
		}
		if pairs != nil {
			b = []byte(pairs[h])
		}
		p, err := DecodeAgentPairs(bytes.NewReader(b), 0)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		ap = append(ap, p)
	}
	hosts, err := ReadFiles(snaps, 1)
	if err != nil {
		t.Fatal(err)
	}
	return AgentObservations(hosts, ap)
}

// recorded reads the lab agents' /pairs of a phase from dir.
func recorded(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range []string{"h5", "h6", "h7", "h8"} {
		b, err := os.ReadFile(dir + "/" + h + ".pairs.json")
		if err != nil {
			t.Fatal(err)
		}
		out[h] = string(b)
	}
	return out
}

// labPairs writes an agent's /pairs (docs/json.md, "agent_pairs") of the
// lab leaf-spine: its ToR and address, and one v4 pair per peer as
// "peer probes lost" with its faulty ports "sport lost spine" ("-": not
// traced). The lab's addresses: hN is 10.30.N.2, h5 and h6 under leaf1,
// h7 and h8 under leaf2 (docs/lab.md).
func labPairs(self string, pairs ...string) string {
	leaf := map[string]string{"h5": "leaf1", "h6": "leaf1", "h7": "leaf2", "h8": "leaf2"}
	addr := func(h string) string { return "10.30." + strings.TrimPrefix(h, "h") + ".2" }
	var b strings.Builder
	b.WriteString(`{"probe_scale":1,"addresses":["` + addr(self) + `"],"tor":"` + leaf[self] + `","pairs":[`)
	for i, p := range pairs {
		f := strings.Fields(p)
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"peer":"` + f[0] + `","address":"` + addr(f[0]) + `","tor":"` + leaf[f[0]] + `","flow":"v4","probes":` + f[1] + `,"lost":` + f[2] + `,"sport_faults":[`)
		for j := 3; j+2 < len(f); j += 3 {
			if j > 3 {
				b.WriteString(",")
			}
			spine := "null"
			if f[j+2] != "-" {
				spine = `"` + f[j+2] + `"`
			}
			b.WriteString(`{"udp_sport":` + f[j] + `,"lost":` + f[j+1] + `,"remarked":0,"traced":` + map[bool]string{true: "true", false: "false"}[spine != "null"] + `,"spine":` + spine + `,"remark":null}`)
		}
		b.WriteString("]}")
	}
	b.WriteString("]}")
	return b.String()
}

// The lab's leaf-spine (2 ToRs of 2 NICs, 2 spines): what localisation
// names from the agents' pair detail of each fault TestLabAgentLeafSpine
// injects, worked out from the fault: spine1's port toward leaf2 loses
// the probes from leaf1 to leaf2 that hash to spine1 and the replies to
// leaf2's probes that do; from one pair of ToRs that is spine1, or its
// links to leaf1/leaf2. The remarking port is seen by the traces right
// after spine1, before leaf2: the hop on leaf2–spine1.
func TestLocalizeLabLeafSpine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pairs map[string]string
		want  string
		ev    []string
	}{
		// testdata/leafspine-lab as recorded: a leaf1 → leaf2 pair's
		// remarked ports traced, each "dscp 26→0 between hop 2
		// (10.31.11.2, spine1 by trace.routers) and hop 3 (10.31.21.1,
		// leaf2)".
		{"remark stage (recorded)", nil, "remark nic= tor=leaf2 spine=spine1",
			[]string{"dscp 26→0 between 10.31.11.2 and 10.31.21.1 (", "under leaf1): the marking changed after spine1 and before leaf2"}},
		// testdata/leafspine-lab-loss as recorded: the agents' /pairs
		// just before fabric --agents named spine1. h5 → h8 lost 10 of
		// 19 probes on 8 ports, 2 of them traced through spine1; h6 → h7
		// 5 on 5 ports and h8 → h5 1, none traced; h7 → h5 5 (replies
		// lost), 1 traced through spine1: 3 through spine1, 0 through
		// spine2.
		{"loss stage (recorded)", recorded(t, "testdata/leafspine-lab-loss"), "spine nic= tor= spine=spine1",
			[]string{"spine1, or its links to leaf1/leaf2", "lost on 3 source ports the agents' traces followed through spine1 (probed from 10.30.5.2 under leaf1, 10.30.7.2 under leaf2), on at most 0 through any other spine"}},
		// The loss stage as the run of 2026-11-27 15:34 UTC (the fixture's) logged it 41.5 s in: h5
		// and h6 each lost to h8, h8 to h6 (a reply through spine1), and
		// two of h6's lost ports to h8 traced through spine1 (the untraced
		// ports' numbers are made up). Two ports are not yet the 3 a spine
		// needs.
		{"loss stage, 2 traced ports (logged)", map[string]string{
			"h5": labPairs("h5", "h6 12 0", "h8 10 1 52011 1 -"),
			"h6": labPairs("h6", "h5 12 0", "h8 10 2 56299 1 spine1 61004 1 spine1"),
			"h7": labPairs("h7", "h8 12 0", "h5 10 0"),
			"h8": labPairs("h8", "h7 12 0", "h6 10 1 50111 1 -"),
		}, "", nil},
		// A moment later: h5's lost port to h8 traced through spine1 too,
		// and h8's lost reply (its probe went through spine2, the reply
		// came back through spine1's port toward leaf2).
		{"loss stage, 3 traced ports through spine1, 1 through spine2", map[string]string{
			"h5": labPairs("h5", "h6 12 0", "h8 10 1 52011 1 spine1"),
			"h6": labPairs("h6", "h5 12 0", "h8 10 2 56299 1 spine1 61004 1 spine1"),
			"h7": labPairs("h7", "h8 12 0", "h5 10 0"),
			"h8": labPairs("h8", "h7 12 0", "h6 10 1 50111 1 spine2"),
		}, "spine nic= tor= spine=spine1",
			[]string{"spine1, or its links to leaf1/leaf2", "lost on 3 source ports the agents' traces followed through spine1 (probed from 10.30.5.2 under leaf1, 10.30.6.2 under leaf1), on at most 1 through any other spine", "seen between this one pair of ToRs only"}},
		// h7's NIC dead, early (the run's pairs 67.4 s in): it lost with
		// h5 and h8, both ways; its ports to h5 traced through spine1
		// (the worst case). It lost with its ToR-mate, so its ports are
		// no spine's; with 2 peers it is no NIC suspect yet (3 needed).
		{"dead NIC h7, early", map[string]string{
			"h5": labPairs("h5", "h6 19 0", "h7 19 1 50001 1 spine1"),
			"h6": labPairs("h6", "h5 20 0", "h8 9 0"),
			"h7": labPairs("h7", "h8 21 2 50002 1 - 50003 1 -", "h5 10 1 50004 1 spine1"),
			"h8": labPairs("h8", "h7 19 1 50005 1 -", "h6 9 0"),
		}, "", nil},
		// Later: h6 lost to it too, and 7 probes lost between it and
		// h8 (the nic rule's 6).
		{"dead NIC h7, with 3 peers", map[string]string{
			"h5": labPairs("h5", "h6 19 0", "h7 19 2 50001 1 spine1 50006 1 spine1"),
			"h6": labPairs("h6", "h5 20 0", "h7 9 1 50007 1 spine1"),
			"h7": labPairs("h7", "h8 21 4 50002 2 - 50003 2 -", "h5 10 1 50004 1 spine1"),
			"h8": labPairs("h8", "h7 19 3 50005 3 -", "h6 9 0"),
		}, "nic nic=10.30.7.2 tor=leaf2 spine=", nil},
		{"healthy", map[string]string{
			"h5": labPairs("h5", "h6 19 0", "h7 19 0"),
			"h6": labPairs("h6", "h5 20 0", "h8 9 0"),
			"h7": labPairs("h7", "h8 21 0", "h5 10 0"),
			"h8": labPairs("h8", "h7 19 0", "h6 9 0"),
		}, "", nil},
	} {
		got := Localize(labIn(t, tc.pairs))
		if names(got) != tc.want {
			t.Errorf("%s: suspects %q, want %q", tc.name, names(got), tc.want)
		}
		for _, s := range got {
			for _, w := range tc.ev {
				if !strings.Contains(s.Evidence, w) {
					t.Errorf("%s: evidence %q lacks %q", tc.name, s.Evidence, w)
				}
			}
		}
	}
}

// Synthetic fabrics with replies (a reply takes the spine its own hash
// picks, which the probe's trace does not show): the spine of one pair of
// ToRs is named whatever the number of ToRs, and nothing else.
func TestLocalizePairSpine(t *testing.T) {
	two := testFabric{tors: 2, perToR: 2, spines: 2, mixed: true}
	six := testFabric{tors: 6, perToR: 4, spines: 4, mixed: true}
	// crosses: a probe (a→b on port s) or its reply crosses spine sp's
	// port toward ToR to, or (both ways) the link of ToR tor to sp.
	toward := func(f testFabric, sp, to int) probeFate {
		return func(a, b, s, p, k int) (bool, bool) {
			if p < 0 {
				return false, false
			}
			return p == sp && b/f.perToR == to || f.path(b, a, s) == sp && a/f.perToR == to, false
		}
	}
	link := func(f testFabric, sp, tor int) probeFate {
		return func(a, b, s, p, k int) (bool, bool) {
			if p < 0 {
				return false, false
			}
			at := a/f.perToR == tor || b/f.perToR == tor
			return at && (p == sp || f.path(b, a, s) == sp), false
		}
	}
	for _, tc := range []struct {
		name string
		f    testFabric
		fate probeFate
		want string
	}{
		{"2 ToRs: spine1's port toward leaf1", two, toward(two, 1, 1), "spine nic= tor= spine=spine1"},
		{"2 ToRs: leaf0's link to spine0, both ways", two, link(two, 0, 0), "spine nic= tor= spine=spine0"},
		// A NIC dead without ToR sizes (the nic rule asks for 2 mates):
		// its ports cross both spines, and it lost with its mate.
		{"2 ToRs: dead NIC", two, func(a, b, s, p, k int) (bool, bool) { return a == 2 || b == 2, false }, ""},
		{"2 ToRs: two probes lost at random through spine1", two, func(a, b, s, p, k int) (bool, bool) {
			return p == 1 && k == 0 && (a == 0 && b == 2 || a == 3 && b == 1) && s < 8 && s == firstPort(two, a, b, 1), false
		}, ""},
		{"6 ToRs: healthy", six, func(int, int, int, int, int) (bool, bool) { return false, false }, ""},
		// Many ToRs: the existing rules decide, and nothing is added.
		{"6 ToRs: leaf0's link to spine1, both ways", six, link(six, 1, 0), "link nic= tor=leaf0 spine=spine1"},
		{"6 ToRs: spine2 dead", six, func(a, b, s, p, k int) (bool, bool) { return p == 2 || p >= 0 && six.path(b, a, s) == 2, false }, "spine nic= tor= spine=spine2"},
		// Only leaf1 and leaf4 lose through spine3 (say its ports toward
		// both lose the probes between them only, or the window sampled
		// no other ToR): the two ToRs' rule.
		{"6 ToRs: one pair of ToRs", six, func(a, b, s, p, k int) (bool, bool) {
			ta, tb := a/4, b/4
			return (ta == 1 && tb == 4 || ta == 4 && tb == 1) && p == 3, false
		}, "spine nic= tor= spine=spine3"},
	} {
		got := Localize(tc.f.observe(tc.fate))
		if names(got) != tc.want {
			t.Errorf("%s: suspects %q, want %q", tc.name, names(got), tc.want)
			for _, s := range got {
				t.Logf("  %s: %s", s.Kind, s.Evidence)
			}
		}
	}
}

// firstPort is the first of the 8 source ports of a→b through spine sp
// in f (8: none).
func firstPort(f testFabric, a, b, sp int) int {
	for s := 0; s < 8; s++ {
		if f.path(a, b, s) == sp {
			return s
		}
	}
	return 8
}

// A remarking hop the traces saw, on a fabric of 4 ToRs: named by the
// two hops around the change, from one traced port, with no vote of
// ToRs; where the traces saw it (after spine0, before leaf3; after the
// prober, before its ToR) is what is named, once.
func TestLocalizeTracedRemark(t *testing.T) {
	f := testFabric{tors: 4, perToR: 4, spines: 2}
	for _, tc := range []struct {
		name        string
		fate        probeFate
		before, at  int // the TTLs the traces saw the change between
		onlyOnePort bool
		want        string
	}{
		// spine0's port toward leaf3: the probes to leaf3 through spine0.
		{"spine0 toward leaf3", func(a, b, s, sp, k int) (bool, bool) { return false, sp == 0 && b/4 == 3 }, 2, 3, false, "remark nic= tor=leaf3 spine=spine0"},
		{"spine0 toward leaf3, one port traced", func(a, b, s, sp, k int) (bool, bool) { return false, sp == 0 && b/4 == 3 }, 2, 3, true, "remark nic= tor=leaf3 spine=spine0"},
		// leaf1's port to spine1: hop 1 (leaf1) to hop 2 (spine1).
		{"leaf1 toward spine1", func(a, b, s, sp, k int) (bool, bool) { return false, sp == 1 && a/4 == 1 }, 1, 2, false, "remark nic= tor=leaf1 spine=spine1"},
		// nic05 bleaches what it sends: between it (hop 0) and leaf1.
		{"nic05 sends remarked", func(a, b, s, sp, k int) (bool, bool) { return false, a == 5 }, 0, 1, false, "remark nic=nic05 tor=leaf1 spine="},
	} {
		in := f.observe(tc.fate)
		traced := 0
		for i := range in.Pairs {
			for j := range in.Pairs[i].Sports {
				sp := &in.Pairs[i].Sports[j]
				if tc.onlyOnePort && traced > 0 {
					sp.Spine = ""
					continue
				}
				traced++
				sp.Remark, sp.RemarkBeforeTTL, sp.RemarkAtTTL = "dscp 26→0 between a and b", tc.before, tc.at
			}
		}
		got := Localize(in)
		if names(got) != tc.want {
			t.Errorf("%s: suspects %q, want %q", tc.name, names(got), tc.want)
			for _, s := range got {
				t.Logf("  %s: %s", s.Kind, s.Evidence)
			}
		}
	}
}

// The lab's remark stage (testdata/leafspine-lab: h6's ports to h7 through
// spine1 remarked, their traces seeing DSCP 26→0 after spine1, before
// leaf2) as an agent from before trace.Change.Remark would report it when
// two of the four traced ports also met a congested queue before spine1:
// their first change is ECN ECT(0)→CE between leaf1 and spine1. A CE mark
// is a congested queue's (RFC 3168), no remark: only leaf2–spine1, the hop
// the other two traces saw the DSCP change at, is named.
func TestLocalizeCEMarkIsNoRemarkingHop(t *testing.T) {
	pairs := recorded(t, "testdata/leafspine-lab")
	const dscp = `"remark":{"field":"dscp","from_value":26,"to_value":0,"before_ttl":2,"before_address":"10.31.11.2","at_ttl":3,"at_address":"10.31.21.1","message":"dscp 26→0 between hop 2 (10.31.11.2) and hop 3 (10.31.21.1)"}`
	const ce = `"remark":{"field":"ecn","from_value":2,"to_value":3,"before_ttl":1,"before_address":"10.30.6.1","at_ttl":2,"at_address":"10.31.11.2","message":"ecn 2→3 between hop 1 (10.30.6.1) and hop 2 (10.31.11.2)"}`
	if strings.Count(pairs["h6"], dscp) != 4 {
		t.Fatalf("h6's pairs: want 4 traced remarks %s", dscp)
	}
	pairs["h6"] = strings.Replace(pairs["h6"], dscp, ce, 2)
	got := Localize(labIn(t, pairs))
	if want := "remark nic= tor=leaf2 spine=spine1"; names(got) != want {
		t.Fatalf("suspects %q, want %q", names(got), want)
	}
	if want := "the traces saw dscp 26→0 between 10.31.11.2 and 10.31.21.1 (2 of 2 source ports"; !strings.Contains(got[0].Evidence, want) {
		t.Errorf("evidence %q, want %q…", got[0].Evidence, want)
	}
	// Every traced port's change a CE mark: no hop is named.
	pairs["h6"] = strings.ReplaceAll(pairs["h6"], dscp, ce)
	if got := Localize(labIn(t, pairs)); slices.ContainsFunc(got, func(s Suspect) bool { return s.Kind == SuspectRemark && s.ToR == "leaf1" }) {
		t.Errorf("suspects %q: a CE mark named as a remarking hop", names(got))
	}
}

// PairChange.remark, fabric's reading of an agent's change, is
// trace.Change.Remark's rule: they agree on every change a trace shows.
func TestPairChangeRemarkIsTraceRule(t *testing.T) {
	for _, field := range []string{"dscp", "ecn", "pcp", "vlan", "tagged"} {
		for from := range 4 {
			for to := range 4 {
				for before := range 3 {
					c := PairChange{Field: field, From: from, To: to, BeforeTTL: before, AtTTL: before + 1}
					tc := trace.Change{Field: field, From: from, To: to, Before: before, At: before + 1}
					if c.remark() != tc.Remark() {
						t.Errorf("%+v: fabric says remark %v, trace.Change.Remark %v", c, c.remark(), tc.Remark())
					}
				}
			}
		}
	}
}
