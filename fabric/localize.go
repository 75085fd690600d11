package fabric

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/internal/null"
)

// PairObservation is what the agents saw of one probed pair (Src's
// agent probing Dst) over a window: the probes sent, lost and answered
// with their DSCP remarked, and the UDP source ports that lost or were
// remarked, with the spine a trace of each found.
type PairObservation struct {
	Src, Dst       string // the NICs (agents' names or addresses)
	SrcToR, DstToR string // their ToRs; "" when not known
	Sent           uint64
	Lost           uint64
	Remarked       uint64
	Sports         []SportObservation
}

// SportObservation is one UDP source port of a pair that lost probes or
// saw them remarked. Spine is the spine a trace of the probe's path with
// that source port found between the two ToRs ("" when no trace ran or
// the ToRs are one).
type SportObservation struct {
	Sport          uint16
	Lost, Remarked uint64
	Spine          string
	// Remark is where the trace saw the port's DSCP or ECN change, in
	// words ("dscp 26→0 between 10.31.11.2 and 10.31.21.1"); "" when it
	// saw none or no trace ran.
	Remark string
	// RemarkBeforeTTL and RemarkAtTTL are the hops (TTLs) of that change:
	// the last that showed the value sent (0: the prober itself) and the
	// first that showed another. Hop 1 is the prober's ToR, then the
	// hops of Spine (one per " > "), then the peer's ToR, then the peer:
	// what Localize names the remarking hop by. RemarkAtTTL 0: not known.
	RemarkBeforeTTL, RemarkAtTTL int
}

// LocalizeInput is what Localize decides from: the pairs that lost
// probes or saw them remarked over one window (every other pair probed in
// it lost nothing), and the agents that marked their results as
// unreliable (their wake-ups ran late or their CPU was throttled:
// fleet.Governor).
type LocalizeInput struct {
	Pairs []PairObservation
	Noisy []string
	// ToRNICs is, when known, how many NICs each ToR has (the agents'
	// and their peers' ToRs: AgentObservations counts them over the
	// agents' pairs, ObservationsFromMetrics from
	// roce_probe_topology_info): a NIC of a ToR of 2 has one ToR-mate to
	// lose probes with, not the 2 the nic rule asks for otherwise. nil,
	// or a ToR missing: not known (2 asked for).
	ToRNICs map[string]int
}

// SuspectKind is what a suspect is.
type SuspectKind string

// Suspect kinds.
const (
	SuspectNIC       SuspectKind = "nic"        // a NIC, its host or the ToR port facing it (NIC)
	SuspectToR       SuspectKind = "tor"        // a ToR (ToR)
	SuspectLink      SuspectKind = "link"       // the link between a ToR and a spine (ToR, Spine; Spine "" when no trace said which)
	SuspectSpine     SuspectKind = "spine"      // a spine (Spine)
	SuspectRemark    SuspectKind = "remark"     // a hop that remarks DSCP, on the link between ToR and Spine
	SuspectHostNoise SuspectKind = "host_noise" // the host of NIC, not the network: its agent marked its results
)

// Suspect is one thing Localize blames, with the evidence.
type Suspect struct {
	Kind  SuspectKind `json:"kind"`
	NIC   string      `json:"nic"`
	ToR   string      `json:"tor"`
	Spine string      `json:"spine"`
	// Pairs is the number of pairs with loss or remarking it explains.
	Pairs int `json:"pair_count"`
	// Evidence says, in words, why.
	Evidence string `json:"evidence"`
}

// MarshalJSON writes the suspect (docs/json.md, "fabric_suspect"): nic,
// tor and spine null where the kind names none or it is not known.
func (s Suspect) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind     SuspectKind `json:"kind"`
		NIC      *string     `json:"nic"`
		ToR      *string     `json:"tor"`
		Spine    *string     `json:"spine"`
		Pairs    int         `json:"pair_count"`
		Evidence string      `json:"evidence"`
	}{s.Kind, null.String(s.NIC), null.String(s.ToR), null.String(s.Spine), s.Pairs, s.Evidence})
}

// Thresholds of Localize: the least evidence a suspect needs. Random loss
// (a probe in 100,000) touches one pair, two NICs, one remote ToR: it
// never reaches these.
const (
	// minNICPeers: a NIC is suspect when pairs with at least this many
	// distinct peers lost probes, ToR-mates among them, and at least
	// minNICLost probes between it and its ToR-mates were lost. Random
	// loss loses one probe of a pair in a window: a NIC with 63 mates
	// probed both ways at 1/s loses 3 of them at random, at one in
	// 100,000, about once in 10⁵ windows (10,000 NICs: every few
	// minutes), 6 probes about once in 10¹¹.
	minNICPeers = 3
	minNICLost  = 6
	// minToRLost: ToR-mesh loss is a ToR's when at least this many probes
	// between its NICs were lost (a ToR of 64 NICs loses about 1.2 a
	// 30 s window at random at one in 100,000; 10 or more about once in
	// 10⁷ windows).
	minToRLost = 10
	// minLinkVotes: a ToR–spine link is suspect when at least this many
	// lost (or remarked) source ports were traced through it, from at
	// least minRemoteToRs other ToRs.
	minLinkVotes  = 3
	minRemoteToRs = 2
	// minSpineToRs: links of this many ToRs to one spine make the spine
	// the suspect.
	minSpineToRs = 3
)

// Localize names the suspects of one window's observations, sorted by
// kind and name; each explains a share of the pairs that lost or were
// remarked, and no pair is blamed twice:
//
//  1. Host noise: an agent that marked its results (late wake-ups, CPU
//     throttled) is named as such when pairs with at least 3 peers lost
//     probes, and every pair it is part of is set aside: its losses may
//     be its own.
//  2. A NIC (its host, or the ToR port facing it): its probes fail in
//     every direction — pairs with at least 3 peers lost, ToR-mates among
//     them (2, or its only one in a ToR of 2 NICs: in.ToRNICs; a link
//     fault never loses a probe between ToR-mates), at least 6 probes
//     with its ToR-mates (random loss loses one probe here and there) —
//     while its ToR-mates lose nothing among themselves (but with one
//     other faulty NIC, or at random: a tenth of them at most).
//  3. A ToR: loss between ToR-mates spread over its NICs with no NIC to
//     blame (ToR-mesh loss), at least 10 probes.
//  4. A spine, then ToR uplinks: the remaining inter-ToR loss, by the
//     spine the traces of the lost source ports went through, each port a
//     vote for the links of both its ToRs to that spine. A spine is named
//     when its lost ports are no one ToR's (without the ToR with the most,
//     the links of at least two more ToRs still qualify, each its ToR's
//     worst). Then links one at a time, the most voted first, the ports it
//     explains going with it (the far ends' links got those votes only
//     for being at the other end): named with ports from at least two
//     other ToRs, at least 3, and at least twice the votes of any other
//     spine of its ToR (a reply lost on another spine than its probe's
//     path spreads thin); without traces the link's spine is "" (one of
//     the ToR's uplinks). Links of three or more ToRs to one spine name
//     the spine instead. Loss between one pair of ToRs only (two ToRs,
//     neither with a link named) names the spine at least 3 of its lost
//     ports were traced through, twice as many as through any other
//     (pairSpines): that spine, or its links to those two ToRs.
//  5. A remarking hop: first the hops the traces saw the marking
//     remarked between (tracedRemarks: one port is enough; a congested
//     queue's CE mark is no remark), then the rest of the remarked ports
//     by the same rule as links; a link both name is named once, with
//     the pairs of both.
func Localize(in LocalizeInput) []Suspect {
	var out []Suspect
	noisy := map[string]bool{}
	for _, n := range in.Noisy {
		noisy[n] = true
	}
	// 1. Host noise: named when it would otherwise pass for a NIC fault
	// (lossy pairs with at least minNICPeers peers); its pairs are set
	// aside either way.
	noiseOf := map[string]map[string]bool{}
	var pairs []PairObservation
	for _, p := range in.Pairs {
		if p.Lost == 0 && p.Remarked == 0 {
			// Nothing to explain (no step below looks at such a pair):
			// the cost is the pairs that lost or were remarked, not
			// every pair probed (AgentObservations has them all).
			continue
		}
		if noisy[p.Src] || noisy[p.Dst] {
			if p.Lost > 0 {
				for _, e := range [][2]string{{p.Src, p.Dst}, {p.Dst, p.Src}} {
					if noisy[e[0]] {
						if noiseOf[e[0]] == nil {
							noiseOf[e[0]] = map[string]bool{}
						}
						noiseOf[e[0]][e[1]] = true
					}
				}
			}
			continue
		}
		pairs = append(pairs, p)
	}
	for n, peers := range noiseOf {
		if len(peers) >= minNICPeers {
			out = append(out, Suspect{Kind: SuspectHostNoise, NIC: n, Pairs: len(peers),
				Evidence: fmt.Sprintf("its agent marked its results (late wake-ups or CPU throttled): pairs with %d peers lost probes, not blamed on the network", len(peers))})
		}
	}
	// 2. NICs: distinct peers of lossy pairs, and of those the ToR-mates
	// with the probes lost with each. The NICs with the most peers are
	// judged first, and a NIC named takes its pairs with it: a mate of a
	// lossy NIC that also lost a probe or two at random is not a second
	// suspect.
	type nicLoss struct {
		peers map[string]bool
		mates map[string]uint64
		tor   string
	}
	nics := map[string]*nicLoss{}
	at := func(n, tor string) *nicLoss {
		l := nics[n]
		if l == nil {
			l = &nicLoss{peers: map[string]bool{}, mates: map[string]uint64{}, tor: tor}
			nics[n] = l
		}
		return l
	}
	for _, p := range pairs {
		if p.Lost == 0 {
			continue
		}
		mate := p.SrcToR != "" && p.SrcToR == p.DstToR
		a, b := at(p.Src, p.SrcToR), at(p.Dst, p.DstToR)
		a.peers[p.Dst], b.peers[p.Src] = true, true
		if mate {
			a.mates[p.Dst] += p.Lost
			b.mates[p.Src] += p.Lost
		}
	}
	order := sortedKeys(nics)
	slices.SortStableFunc(order, func(x, y string) int { return cmp.Compare(len(nics[y].peers), len(nics[x].peers)) })
	blamed := map[string]bool{} // NICs named
	for _, n := range order {
		l := nics[n]
		peers, mates, mateLost := 0, 0, uint64(0)
		for q := range l.peers {
			if !blamed[q] {
				peers++
			}
		}
		for q, lost := range l.mates {
			if !blamed[q] {
				mates++
				mateLost += lost
			}
		}
		// ToR-mates that lost with it: 2 (one may be a second fault of
		// its own), or every mate it has where its ToR has fewer.
		need := min(2, peers)
		if size, ok := in.ToRNICs[l.tor]; ok && l.tor != "" {
			need = min(need, size-1)
		}
		if peers < minNICPeers || need < 1 || mates < need || mateLost < minNICLost {
			continue
		}
		// Its mates' losses among themselves must be its: each mate that
		// lost with it lost with at most one other mate (a second faulty
		// NIC) — but for a tenth of them at most (at least one), which
		// random loss may have touched twice.
		spread := 0
		for m := range l.mates {
			if blamed[m] {
				continue
			}
			others := 0
			for mm := range nics[m].mates {
				if mm != n && !blamed[mm] {
					others++
				}
			}
			if others > 1 {
				spread++
			}
		}
		if spread <= max(1, mates/10) {
			blamed[n] = true
		}
	}
	for _, n := range sortedKeys(blamed) {
		l := nics[n]
		out = append(out, Suspect{Kind: SuspectNIC, NIC: n, ToR: l.tor, Pairs: len(l.peers),
			Evidence: fmt.Sprintf("its probes failed in every direction: with %d peers, %d of them ToR-mates, while its ToR-mates lost nothing among themselves", len(l.peers), len(l.mates))})
	}
	var rest []PairObservation
	for _, p := range pairs {
		if !blamed[p.Src] && !blamed[p.Dst] {
			rest = append(rest, p)
		}
	}
	// 3. ToRs: mesh loss spread over the NICs of one ToR.
	torNICs := map[string]map[string]bool{}
	torPairs := map[string]int{}
	torLost := map[string]uint64{}
	for _, p := range rest {
		if p.Lost > 0 && p.SrcToR != "" && p.SrcToR == p.DstToR {
			if torNICs[p.SrcToR] == nil {
				torNICs[p.SrcToR] = map[string]bool{}
			}
			torNICs[p.SrcToR][p.Src], torNICs[p.SrcToR][p.Dst] = true, true
			torPairs[p.SrcToR]++
			torLost[p.SrcToR] += p.Lost
		}
	}
	for _, t := range sortedKeys(torNICs) {
		if len(torNICs[t]) >= minNICPeers && torPairs[t] >= minNICPeers && torLost[t] >= minToRLost {
			out = append(out, Suspect{Kind: SuspectToR, ToR: t, Pairs: torPairs[t],
				Evidence: fmt.Sprintf("ToR-mesh loss: %d pairs of %d of its NICs lost probes between ToR-mates, no NIC to blame", torPairs[t], len(torNICs[t]))})
		}
	}
	// 4 and 5. Links, spines and remarking hops by traced source ports:
	// first the hops the traces saw remark, then the rest by vote.
	out = append(out, links(rest, false)...)
	direct, located := tracedRemarks(rest)
	var unlocated []PairObservation
	for i, p := range rest {
		if !located[i] {
			unlocated = append(unlocated, p)
		}
	}
	for _, s := range remarkHops(links(unlocated, true), unlocated) {
		if s.Spine == "" && slices.ContainsFunc(direct, func(d Suspect) bool { return d.ToR == s.ToR }) {
			continue // "one of its uplinks": the one a trace saw remark
		}
		// The link a trace saw remark, voted for by the ports of other
		// pairs whose traces did not show the hop: one suspect, with
		// both's pairs (they are not the same pairs: located ones are
		// not voted on).
		if i := slices.IndexFunc(direct, func(d Suspect) bool { return d.NIC == "" && d.ToR == s.ToR && d.Spine == s.Spine }); i >= 0 {
			direct[i].Pairs += s.Pairs
			direct[i].Evidence += "; also by vote: " + s.Evidence
			continue
		}
		out = append(out, s)
	}
	out = append(out, direct...)
	slices.SortFunc(out, func(a, b Suspect) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ToR, b.ToR), cmp.Compare(a.Spine, b.Spine), cmp.Compare(a.NIC, b.NIC))
	})
	return out
}

// tracedRemarks names the hops the agents' traces saw remark: each
// remarked port whose trace saw the DSCP or ECN change between two
// adjacent hops it can name (hopName) is direct evidence for the link
// between them (one port is enough: no vote of ToRs). located marks the
// pairs (by index) with such a port: their other remarked ports, traced
// or not, go with it. O(remarked ports).
func tracedRemarks(pairs []PairObservation) (sus []Suspect, located map[int]bool) {
	type hop struct{ nic, tor, spine, before, at string }
	type tally struct {
		ports   int
		pairs   map[int]bool
		probers []string
		remark  map[string]int
	}
	byHop := map[hop]*tally{}
	located = map[int]bool{}
	for i, p := range pairs {
		if p.Remarked == 0 {
			continue
		}
		for _, sp := range p.Sports {
			if sp.Remarked == 0 || sp.Remark == "" || sp.RemarkAtTTL != sp.RemarkBeforeTTL+1 {
				continue
			}
			before, at := hopName(p, sp, sp.RemarkBeforeTTL), hopName(p, sp, sp.RemarkAtTTL)
			if before == "" || at == "" {
				continue
			}
			var h hop
			switch b, t := sp.RemarkBeforeTTL, transitHops(sp.Spine); {
			case b == 0: // the prober and its ToR
				h = hop{nic: p.Src, tor: p.SrcToR}
			case b == 1: // its ToR and the first spine
				h = hop{tor: p.SrcToR, spine: at}
			case b == len(t)+1: // the last spine and the peer's ToR
				h = hop{tor: p.DstToR, spine: before}
			case b == len(t)+2: // the peer's ToR and the peer
				h = hop{nic: p.Dst, tor: p.DstToR}
			default: // two spines of a deeper Clos
				h = hop{spine: before + " > " + at}
			}
			h.before, h.at = before, at
			t := byHop[h]
			if t == nil {
				t = &tally{pairs: map[int]bool{}, remark: map[string]int{}}
				byHop[h] = t
			}
			t.ports++
			t.pairs[i] = true
			t.remark[sp.Remark]++
			if pr := p.Src + " under " + orUnknown(p.SrcToR); !slices.Contains(t.probers, pr) {
				t.probers = append(t.probers, pr)
			}
			located[i] = true
		}
	}
	hops := slices.Collect(maps.Keys(byHop))
	slices.SortFunc(hops, func(x, y hop) int {
		return cmp.Or(cmp.Compare(x.tor, y.tor), cmp.Compare(x.spine, y.spine), cmp.Compare(x.nic, y.nic), cmp.Compare(x.before, y.before))
	})
	for _, h := range hops {
		t := byHop[h]
		best := ""
		for _, r := range sortedKeys(t.remark) {
			if t.remark[r] > t.remark[best] {
				best = r
			}
		}
		sus = append(sus, Suspect{Kind: SuspectRemark, NIC: h.nic, ToR: h.tor, Spine: h.spine, Pairs: len(t.pairs),
			Evidence: fmt.Sprintf("the traces saw %s (%d of %d source ports, probed from %s): the marking changed after %s and before %s, in one of them or on the link between",
				best, t.remark[best], t.ports, NameList(t.probers, 4), h.before, h.at)})
	}
	return sus, located
}

// transitHops are the hops between the two ToRs a trace went through
// (SportObservation.Spine); nil when not known.
func transitHops(spine string) []string {
	if spine == "" {
		return nil
	}
	return strings.Split(spine, " > ")
}

// hopName names hop ttl of the trace of sp between p's NICs: the prober
// (0), its ToR (1), the hops of sp.Spine, the peer's ToR, the peer; ""
// when not known (no spine traced beyond hop 1, a silent hop "*", a ToR
// not known).
func hopName(p PairObservation, sp SportObservation, ttl int) string {
	t := transitHops(sp.Spine)
	switch {
	case ttl == 0:
		return p.Src
	case ttl == 1:
		return p.SrcToR
	case len(t) == 0:
		return ""
	case ttl <= len(t)+1:
		if n := t[ttl-2]; n != "*" {
			return n
		}
		return ""
	case ttl == len(t)+2:
		return p.DstToR
	case ttl == len(t)+3:
		return p.Dst
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown ToR"
	}
	return s
}

// remarkHops adds to each remark suspect the hop its ports' traces saw
// the marking change at: the most frequent Remark of the remarked ports
// traced through its spine between its ToR and another (ties: the
// lowest in string order). O(suspects × remarked ports).
func remarkHops(sus []Suspect, pairs []PairObservation) []Suspect {
	for i, s := range sus {
		if s.Spine == "" {
			continue
		}
		seen := map[string]int{}
		best := ""
		for _, p := range pairs {
			if p.Remarked == 0 || p.SrcToR == p.DstToR || (p.SrcToR != s.ToR && p.DstToR != s.ToR) {
				continue
			}
			for _, sp := range p.Sports {
				if sp.Remarked == 0 || sp.Spine != s.Spine || sp.Remark == "" {
					continue
				}
				seen[sp.Remark]++
				if n := seen[sp.Remark]; n > seen[best] || n == seen[best] && sp.Remark < best {
					best = sp.Remark
				}
			}
		}
		if best != "" {
			sus[i].Evidence += fmt.Sprintf("; the traces saw %s (%d of its ports)", best, seen[best])
		}
	}
	return sus
}

// links names the ToR uplinks (or spines) that lost the inter-ToR
// probes of pairs, or that remarked them. Each lost (remarked) source
// port traced through a spine is a vote for the links of both its ToRs
// to that spine; the link with the most votes is taken first and the
// ports it explains go with it (the other ToRs' links to that spine got
// those votes only for being at the other end), then the next, until no
// link has minLinkVotes left. A link is named when its ports came from at
// least minRemoteToRs other ToRs and it has at least twice the votes of
// any other spine of its ToR; a second link of one ToR needs at least
// half the votes of the first (the replies lost on a lossy link come back
// through the spines their probes' traces do not show, spread thin over
// the ToR's other links).
func links(pairs []PairObservation, remark bool) []Suspect {
	type link struct{ tor, spine string }
	// A lost (remarked) port: its pair's ToRs (a probing b), its traced
	// spine and its pair's NICs.
	type port struct{ a, b, spine, src, dst string }
	var ports []port
	pairsOf := map[link]int{}
	for _, p := range pairs {
		n := p.Lost
		if remark {
			n = p.Remarked
		}
		if n == 0 || p.SrcToR == "" || p.DstToR == "" || p.SrcToR == p.DstToR {
			continue
		}
		traced := false
		for _, sp := range p.Sports {
			c := sp.Lost
			if remark {
				c = sp.Remarked
			}
			if c == 0 || sp.Spine == "" {
				continue
			}
			traced = true
			ports = append(ports, port{p.SrcToR, p.DstToR, sp.Spine, p.Src, p.Dst})
		}
		if !traced {
			ports = append(ports, port{p.SrcToR, p.DstToR, "", p.Src, p.Dst})
		}
		pairsOf[link{p.SrcToR, ""}]++
		pairsOf[link{p.DstToR, ""}]++
	}
	tally := func(ports []port) (map[link]int, map[link]map[string]bool) {
		votes := map[link]int{}
		remote := map[link]map[string]bool{}
		vote := func(l, other, spine string) {
			k := link{l, spine}
			votes[k]++
			if remote[k] == nil {
				remote[k] = map[string]bool{}
			}
			remote[k][other] = true
		}
		for _, pt := range ports {
			vote(pt.a, pt.b, pt.spine)
			vote(pt.b, pt.a, pt.spine)
		}
		return votes, remote
	}
	// A link qualifies with minLinkVotes ports from minRemoteToRs other
	// ToRs.
	enough := func(votes, remotes int) bool { return votes >= minLinkVotes && remotes >= minRemoteToRs }
	qualifies := func(l link, votes map[link]int, remote map[link]map[string]bool) bool {
		return enough(votes[l], len(remote[l]))
	}
	// A spine first: its ports are no one ToR's — without the ports of
	// the ToR with the most, still minSpineToRs−1 ToRs' links to it
	// qualify, each its ToR's worst (one lossy link leaves only noise
	// behind).
	var spines []Suspect
	if !remark {
		bySpine := map[string][]port{}
		for _, pt := range ports {
			if pt.spine != "" {
				bySpine[pt.spine] = append(bySpine[pt.spine], pt)
			}
		}
		// Each ToR's spine with the most lost ports: a dead spine is every
		// ToR's worst, where the replies lost on one ToR's lossy link
		// spread over all of them.
		all, _ := tally(ports)
		worst := map[string]int{}
		for k, v := range all {
			worst[k.tor] = max(worst[k.tor], v)
		}
		dead := map[string]bool{}
		for _, sp := range sortedKeys(bySpine) {
			at := bySpine[sp]
			votes, _ := tally(at)
			var top link
			for k, v := range votes {
				if v > votes[top] || (v == votes[top] && k.tor < top.tor) {
					top = k
				}
			}
			var without []port
			for _, pt := range at {
				if pt.a != top.tor && pt.b != top.tor {
					without = append(without, pt)
				}
			}
			votes2, remote2 := tally(without)
			tors := 1
			for k := range votes2 {
				if qualifies(k, votes2, remote2) && all[k] == worst[k.tor] {
					tors++
				}
			}
			if tors >= minSpineToRs {
				dead[sp] = true
				spines = append(spines, Suspect{Kind: SuspectSpine, Spine: sp, Pairs: len(at),
					Evidence: fmt.Sprintf("lost probes of %d ToRs' links were traced through it (%d source ports), not one ToR's", tors, len(at))})
			}
		}
		rest := ports[:0]
		for _, pt := range ports {
			if !dead[pt.spine] {
				rest = append(rest, pt)
			}
		}
		ports = rest
	}
	// Links one at a time, the most voted first. Each round's votes are
	// kept up to date as ports go, not tallied again: O(ports · log),
	// where tallying every round was O(links · ports) — minutes for a
	// spine that remarks everything in a large fleet.
	var found []link
	votesOf := map[link]int{}
	remoteOf := map[link]int{}
	orig, _ := tally(ports)
	// The other spines of each ToR by all their votes, most first.
	byToR := map[string][]link{}
	for k := range orig {
		byToR[k.tor] = append(byToR[k.tor], k)
	}
	for _, ls := range byToR {
		slices.SortFunc(ls, func(x, y link) int { return cmp.Or(cmp.Compare(orig[y], orig[x]), cmp.Compare(x.spine, y.spine)) })
	}
	votes := maps.Clone(orig)
	remote := map[link]map[string]int{} // per link, its ports per other ToR
	portsOf := map[link][]int{}
	for i, pt := range ports {
		for _, e := range [2][2]string{{pt.a, pt.b}, {pt.b, pt.a}} {
			k := link{e[0], pt.spine}
			if remote[k] == nil {
				remote[k] = map[string]int{}
			}
			remote[k][e[1]]++
			portsOf[k] = append(portsOf[k], i)
		}
	}
	gone := make([]bool, len(ports))
	h := &linkHeap{}
	for k, v := range votes {
		h.items = append(h.items, linkVotes{k.tor, k.spine, v})
	}
	heap.Init(h)
	for h.Len() > 0 {
		top := heap.Pop(h).(linkVotes)
		b := link{top.tor, top.spine}
		if top.votes != votes[b] {
			continue // stale: it lost votes since
		}
		if votes[b] < minLinkVotes {
			break
		}
		second, first := 0, 0
		for _, k := range byToR[b.tor] {
			if k != b && votesOf[k] == 0 {
				second = orig[k]
				break
			}
		}
		for _, l := range found {
			if l.tor == b.tor {
				first = max(first, votesOf[l])
			}
		}
		if enough(votes[b], len(remote[b])) && votes[b] >= 2*second && 2*votes[b] >= first {
			found = append(found, b)
			votesOf[b], remoteOf[b] = votes[b], len(remote[b])
		}
		// Its ports go, and with them their votes for the far ends.
		for _, i := range portsOf[b] {
			if gone[i] {
				continue
			}
			gone[i] = true
			pt := ports[i]
			for _, e := range [2][2]string{{pt.a, pt.b}, {pt.b, pt.a}} {
				k := link{e[0], pt.spine}
				votes[k]--
				if remote[k][e[1]]--; remote[k][e[1]] == 0 {
					delete(remote[k], e[1])
				}
				if k != b && votes[k] > 0 {
					heap.Push(h, linkVotes{k.tor, k.spine, votes[k]})
				}
			}
		}
	}
	slices.SortFunc(found, func(x, y link) int { return cmp.Or(cmp.Compare(x.tor, y.tor), cmp.Compare(x.spine, y.spine)) })
	bySpine := map[string][]link{}
	for _, l := range found {
		if l.spine != "" {
			bySpine[l.spine] = append(bySpine[l.spine], l)
		}
	}
	out := spines
	what := "lost"
	kind := SuspectLink
	if remark {
		what, kind = "were remarked", SuspectRemark
	}
	for _, l := range found {
		if !remark && l.spine != "" && len(bySpine[l.spine]) >= minSpineToRs {
			continue // the spine's, below
		}
		ev := fmt.Sprintf("probes between its ToR and %d other ToRs %s on %d source ports traced through %s; its ToR-mates lost nothing among themselves", remoteOf[l], what, votesOf[l], l.spine)
		if l.spine == "" {
			ev = fmt.Sprintf("probes between its ToR and %d other ToRs %s (no trace: one of its uplinks)", remoteOf[l], what)
		}
		out = append(out, Suspect{Kind: kind, ToR: l.tor, Spine: l.spine, Pairs: pairsOf[link{l.tor, ""}], Evidence: ev})
	}
	if !remark && len(spines) == 0 {
		// The ports no link or spine explains, the ToRs of a named link
		// aside (its replies, lost on it, were traced through the spines
		// their probes took) — and all of them after a spine (every ToR
		// has such replies).
		explained := make([]bool, len(ports))
		named := map[string]bool{}
		for _, l := range found {
			named[l.tor] = true
			for _, i := range portsOf[l] {
				explained[i] = true
			}
		}
		var left []tracedPort
		for i, pt := range ports {
			if !explained[i] && pt.spine != "" && !named[pt.a] && !named[pt.b] {
				left = append(left, tracedPort{pt.a, pt.b, pt.spine, pt.src, pt.dst})
			}
		}
		out = append(out, pairSpines(left, pairs)...)
	}
	if !remark {
		for _, s := range sortedKeys(bySpine) {
			if ls := bySpine[s]; len(ls) >= minSpineToRs {
				n := 0
				for _, l := range ls {
					n += votesOf[l]
				}
				out = append(out, Suspect{Kind: SuspectSpine, Spine: s, Pairs: n,
					Evidence: fmt.Sprintf("the lost probes of %d ToRs' links were traced through it (%d source ports)", len(ls), n)})
			}
		}
	}
	return out
}

// tracedPort is a lost source port traced through spine, of a pair of
// NICs src (under ToR a) probing dst (under b).
type tracedPort struct{ a, b, spine, src, dst string }

// pairSpines names the spine a pair of ToRs lost its probes through when
// no link or spine explains them (links: only one pair of ToRs sees the
// loss, as on a fabric of two ToRs): at least minLinkVotes of the lost
// ports between the two ToRs (both ways) were traced through one spine,
// at least twice as many as through any other (a lossy link or spine
// port also loses replies, which come back on a spine the probe's trace
// does not show). Ports of a NIC that lost probes with a ToR-mate are
// left out: a path between ToR-mates crosses no spine, so that NIC's
// losses may be its own (a dead NIC before the nic rule names it). From
// one pair of ToRs the spine and its links to those two ToRs cannot be
// told apart; the evidence says so. O(ports + pairs).
func pairSpines(ports []tracedPort, pairs []PairObservation) []Suspect {
	mateLossy := map[string]bool{}
	for _, p := range pairs {
		if p.Lost > 0 && p.SrcToR != "" && p.SrcToR == p.DstToR {
			mateLossy[p.Src], mateLossy[p.Dst] = true, true
		}
	}
	type torPair struct{ a, b string } // a < b
	type tally struct {
		ports   map[string]int      // per spine
		probers map[string][]string // per spine: the probing NICs, in order seen
		pairs   map[string]map[[2]string]bool
	}
	byPair := map[torPair]*tally{}
	for _, pt := range ports {
		if mateLossy[pt.src] || mateLossy[pt.dst] {
			continue
		}
		k := torPair{min(pt.a, pt.b), max(pt.a, pt.b)}
		t := byPair[k]
		if t == nil {
			t = &tally{ports: map[string]int{}, probers: map[string][]string{}, pairs: map[string]map[[2]string]bool{}}
			byPair[k] = t
		}
		t.ports[pt.spine]++
		if p := pt.src + " under " + pt.a; !slices.Contains(t.probers[pt.spine], p) {
			t.probers[pt.spine] = append(t.probers[pt.spine], p)
		}
		if t.pairs[pt.spine] == nil {
			t.pairs[pt.spine] = map[[2]string]bool{}
		}
		t.pairs[pt.spine][[2]string{pt.src, pt.dst}] = true
	}
	keys := slices.Collect(maps.Keys(byPair))
	slices.SortFunc(keys, func(x, y torPair) int { return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b)) })
	type seen struct {
		tors  []string
		ev    []string
		pairs int
	}
	bySpine := map[string]*seen{}
	for _, k := range keys {
		t := byPair[k]
		top, second := "", 0
		for _, sp := range sortedKeys(t.ports) {
			if t.ports[sp] > t.ports[top] {
				top = sp
			}
		}
		for sp, n := range t.ports {
			if sp != top {
				second = max(second, n)
			}
		}
		n := t.ports[top]
		if n < minLinkVotes || n < 2*second {
			continue
		}
		s := bySpine[top]
		if s == nil {
			s = &seen{}
			bySpine[top] = s
		}
		s.tors = append(s.tors, k.a, k.b)
		s.pairs += len(t.pairs[top])
		s.ev = append(s.ev, fmt.Sprintf("probes between %s and %s were lost on %d source ports the agents' traces followed through %s (probed from %s), on at most %d through any other spine",
			k.a, k.b, n, top, NameList(t.probers[top], 4), second))
	}
	var out []Suspect
	for _, sp := range sortedKeys(bySpine) {
		s := bySpine[sp]
		slices.Sort(s.tors)
		tors := slices.Compact(s.tors)
		what := "this one pair of ToRs"
		if len(s.ev) > 1 {
			what = "these pairs of ToRs"
		}
		out = append(out, Suspect{Kind: SuspectSpine, Spine: sp, Pairs: s.pairs,
			Evidence: fmt.Sprintf("%s, or its links to %s: %s; seen between %s only, where %s and its links to them cannot be told apart (loss from more ToRs would tell)",
				sp, strings.Join(tors, "/"), strings.Join(s.ev, "; "), what, sp)})
	}
	return out
}

// linkVotes is a link and its votes when it was pushed on a linkHeap.
type linkVotes struct {
	tor, spine string
	votes      int
}

// linkHeap orders links by votes, most first, then by ToR and spine.
type linkHeap struct{ items []linkVotes }

func (h *linkHeap) Len() int { return len(h.items) }
func (h *linkHeap) Less(i, j int) bool {
	x, y := h.items[i], h.items[j]
	return cmp.Or(cmp.Compare(y.votes, x.votes), cmp.Compare(x.tor, y.tor), cmp.Compare(x.spine, y.spine)) < 0
}
func (h *linkHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *linkHeap) Push(x any)    { h.items = append(h.items, x.(linkVotes)) }
func (h *linkHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
