package fabric

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
)

// AgentPairs is one agent's pair detail: the body of its GET /pairs
// (docs/json.md, "agent_pairs"), the fields localisation uses.
type AgentPairs struct {
	// Origin is the URL it was read from.
	Origin string `json:"-"`
	// Scale is the agent's probe rate scale: below 1 while it protects
	// its host (late wake-ups, CPU over budget): its results are marked.
	Scale float64 `json:"probe_scale"`
	// Addresses are the addresses the agent's probes leave from, and ToR
	// its own ToR (nil: not known; both absent from agents older than
	// them).
	Addresses []string `json:"addresses"`
	ToR       *string  `json:"tor"`
	// Pairs are the (peer, flow) pairs it probes.
	Pairs []AgentPair `json:"pairs"`
	// Missing says the agent has no pair detail (HTTP 404: an agent
	// older than /pairs).
	Missing bool `json:"-"`
}

// AgentPair is one probed (peer, flow) pair of an agent (docs/json.md,
// "agent_pair").
type AgentPair struct {
	Peer    string `json:"peer"`
	Address string `json:"address"`
	// ToR is the peer's ToR as its probe replies said; nil when not known.
	ToR      *string `json:"tor"`
	Flow     string  `json:"flow"`
	Scope    string  `json:"scope"`
	Probes   uint64  `json:"probes"`
	Answered uint64  `json:"answered"`
	Lost     uint64  `json:"lost"`
	// Sent and Received are the markings of the last probe and of the
	// last answered one as they arrived; nil when not known.
	Sent     *PairMarkings `json:"sent"`
	Received *PairMarkings `json:"received"`
	// SportFaults are the UDP source ports whose probes were lost or
	// arrived remarked, with the spine a trace of each found
	// (docs/json.md, "agent_sport_fault"); absent from older agents.
	SportFaults []AgentSportFault `json:"sport_faults"`
}

// AgentSportFault is one UDP source port of a pair that lost probes or
// saw them remarked, and what the agent's automatic trace of it found.
type AgentSportFault struct {
	Sport    uint16 `json:"udp_sport"`
	Lost     uint64 `json:"lost"`
	Remarked uint64 `json:"remarked"`
	// Spine is the hops between the two ToRs the trace went through (the
	// spine, named by the agent's trace.routers); nil when no trace ran
	// or it found none.
	Spine *string `json:"spine"`
	// Remark is where the trace saw the DSCP or ECN remarked; nil:
	// nowhere (or not traced). A CE mark in it (an older agent's) is no
	// remark: localisation leaves it out.
	Remark *PairChange `json:"remark"`
}

// PairChange is the part of a trace's change (docs/json.md,
// "trace_change") localisation reports.
type PairChange struct {
	Field         string  `json:"field"`
	From          int     `json:"from_value"`
	To            int     `json:"to_value"`
	BeforeAddress *string `json:"before_address"`
	AtAddress     *string `json:"at_address"`
	// BeforeTTL and AtTTL are the hops of the change: the last that
	// showed From (0: the prober) and the first that showed To.
	BeforeTTL int `json:"before_ttl"`
	AtTTL     int `json:"at_ttl"`
}

// remark reports whether the change is a remark (qos.Remark, as
// trace.Change.Remark: every change but an ECN one a congested queue's
// CE mark explains). Agents from before that rule reported the first DSCP
// or ECN change a trace saw, a CE mark included.
func (c PairChange) remark() bool { return qos.Remark(c.Field, c.From, c.To, c.BeforeTTL == 0) }

// text is the change in words, as SportObservation.Remark holds it:
// "dscp 26→0 between 10.31.11.2 and 10.31.21.1" ("?" for an address not
// known).
func (c PairChange) text() string {
	addr := func(a *string) string {
		if a == nil {
			return "?"
		}
		return *a
	}
	return fmt.Sprintf("%s %d→%d between %s and %s", c.Field, c.From, c.To, addr(c.BeforeAddress), addr(c.AtAddress))
}

// PairMarkings is the part of a pair's markings localisation compares.
type PairMarkings struct {
	DSCP uint8 `json:"dscp"`
}

// PairsURL turns an agent address into the URL of its pair detail:
// "host:port" gets http://, and a URL's path (none, or one ending in
// /snapshot) becomes /pairs.
func PairsURL(agent string) (string, error) {
	s, err := SnapshotURL(agent)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(s) // SnapshotURL made it
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/snapshot"), "/") + "/pairs"
	return u.String(), nil
}

// ReadAgentPairs asks each agent for its pair detail (GET /pairs),
// o.Concurrency at a time, each within o.Timeout and o.MaxBytes (0:
// host.MaxSnapshotBytes), and returns it in the order of agents. An agent
// that cannot be reached, answers with another status or sends something
// that is not pair detail is an error naming it (*InputError).
func ReadAgentPairs(ctx context.Context, agents []string, o AgentOptions) ([]AgentPairs, error) {
	o, client := o.withDefaults()
	urls, err := agentURLs(agents, PairsURL)
	if err != nil {
		return nil, err
	}
	return readAll(len(urls), o.Concurrency, func(i int) (AgentPairs, error) {
		p := AgentPairs{Origin: urls[i]}
		err := agentGet(ctx, client, urls[i], o, func(body io.Reader) (err error) {
			p, err = DecodeAgentPairs(body, o.MaxBytes)
			p.Origin = urls[i]
			return err
		})
		if isNotFound(err) {
			return AgentPairs{Origin: urls[i], Missing: true}, nil
		}
		if err != nil {
			return p, fmt.Errorf("agent %s: %w", urls[i], err)
		}
		return p, nil
	})
}

// LocalizeAgents names the suspects of the agents' pair detail
// (AgentObservations, then Localize). hosts and pairs are in the same
// order, one per agent; a host whose agent has no pair detail gets a note
// saying so. It returns the observations (for the HTML report's matrix)
// and the suspects.
func LocalizeAgents(hosts []Host, pairs []AgentPairs) (LocalizeInput, []Suspect) {
	for i := range pairs {
		if pairs[i].Missing && i < len(hosts) {
			hosts[i].Notes = append(hosts[i].Notes, "no pair detail (its agent answers 404 on /pairs): its probes are not in the suspects")
		}
	}
	in := AgentObservations(hosts, pairs)
	return in, Localize(in)
}

// DecodeAgentPairs reads an agent's pair detail (GET /pairs) from r, at
// most max bytes (0: host.MaxSnapshotBytes). Anything else — not JSON, a
// key of the wrong type, no "pairs", more than max bytes — is an error
// saying so.
func DecodeAgentPairs(r io.Reader, max int64) (AgentPairs, error) {
	if max <= 0 {
		max = host.MaxSnapshotBytes
	}
	var p AgentPairs
	lr := &io.LimitedReader{R: r, N: max + 1}
	if err := json.NewDecoder(lr).Decode(&p); err != nil {
		if lr.N <= 0 {
			return AgentPairs{}, fmt.Errorf("pair detail larger than %d bytes", max)
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &te) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return AgentPairs{}, fmt.Errorf("not an agent's pair detail (GET /pairs, docs/json.md \"agent_pairs\"): %w", err)
		}
		return AgentPairs{}, err
	}
	if p.Pairs == nil {
		return AgentPairs{}, errors.New(`not an agent's pair detail (GET /pairs, docs/json.md "agent_pairs"): no "pairs"`)
	}
	return p, nil
}

// AgentObservations turns the agents' pair detail into localisation's
// input. hosts[i] is the snapshot of the agent pairs[i] came from (as
// ReadAgents returns them, same order). A NIC is named by its address;
// an agent's side of a pair is its port on the peer's network, else its
// only port of the peer's address family (an agent with several and none
// on the peer's network is left out: which NIC sent is not known). A
// NIC's ToR is its snapshot's topology, else what its peers' probe
// replies said. The flows of a (source, destination) pair are added
// together; Remarked counts pairs whose last answered probe arrived with
// another DSCP than it was sent with (the detail keeps only the last),
// or, from agents that report their faulty UDP source ports, the probes
// those ports saw remarked. Each faulty port is a SportObservation with
// the spine the agent's trace of it found ("" when none ran): what
// Localize names spines, links and remarking hops by. An agent whose
// probe rate scale is below 1 has its NICs marked noisy. An agent's own
// ToR and addresses on /pairs name its NICs' ToR when its snapshot does
// not. ToRNICs counts each ToR's NICs among all the pairs (a NIC probed
// over two families counts twice, which only keeps the nic rule's
// default).
func AgentObservations(hosts []Host, pairs []AgentPairs) LocalizeInput {
	// Every NIC gets a number as it is first seen: pairs are added up
	// by two numbers, sorted by the ranks of the NICs' addresses as
	// text, and each address is written as text once — linear in the
	// pairs but for the sort (docs/performance.md, "Suspects from the
	// agents' pair detail").
	var nics nicIndex
	nics.ids = map[netip.Addr]int32{}
	for _, h := range hosts {
		for _, a := range h.Attachments {
			if a.Addr.IsValid() && a.Switch != "" {
				nics.tors[nics.id(a.Addr)] = a.Switch
			}
		}
	}
	var text [64]byte
	for _, ap := range pairs {
		if ap.ToR == nil || *ap.ToR == "" {
			continue
		}
		for _, t := range ap.Addresses {
			if a, err := netip.ParseAddr(t); err == nil {
				if i := nics.id(a.Unmap()); nics.tors[i] == "" {
					nics.tors[i] = *ap.ToR
				}
			}
		}
	}
	for _, ap := range pairs {
		for _, p := range ap.Pairs {
			if p.ToR == nil || *p.ToR == "" {
				continue
			}
			// The address as written, if that is how it is written
			// back (a NIC is named by netip.Addr.String).
			a, err := netip.ParseAddr(p.Address)
			if err != nil || string(a.AppendTo(text[:0])) != p.Address {
				continue
			}
			if i := nics.id(a); nics.tors[i] == "" {
				nics.tors[i] = *p.ToR
			}
		}
	}
	type obs struct {
		src, dst             int32
		sent, lost, remarked uint64
		sports               []SportObservation
	}
	n := 0
	for _, ap := range pairs {
		n += len(ap.Pairs)
	}
	all := make([]obs, 0, n)
	noisy := map[int32]bool{}
	var ports []hostPort
	for i, ap := range pairs {
		if i >= len(hosts) {
			break
		}
		ports = hostPorts(hosts[i], ports[:0])
		for _, p := range ap.Pairs {
			dst, err := netip.ParseAddr(p.Address)
			if err != nil {
				continue
			}
			dst = dst.Unmap()
			src := sourceOf(ports, dst)
			if !src.IsValid() {
				continue
			}
			s, d := nics.id(src), nics.id(dst)
			if ap.Scale < 1 {
				noisy[s] = true
			}
			o := obs{src: s, dst: d, sent: p.Probes, lost: p.Lost}
			for _, f := range p.SportFaults {
				so := SportObservation{Sport: f.Sport, Lost: f.Lost, Remarked: f.Remarked}
				if f.Spine != nil {
					so.Spine = *f.Spine
				}
				if f.Remark != nil && f.Remark.remark() {
					so.Remark = f.Remark.text()
					so.RemarkBeforeTTL, so.RemarkAtTTL = f.Remark.BeforeTTL, f.Remark.AtTTL
				}
				o.sports = append(o.sports, so)
				o.remarked += f.Remarked
			}
			if o.remarked == 0 && p.Sent != nil && p.Received != nil && p.Sent.DSCP != p.Received.DSCP {
				o.remarked++
			}
			all = append(all, o)
		}
	}
	names := make([]string, len(nics.addrs))
	byText := make([]int32, len(nics.addrs))
	for i, a := range nics.addrs {
		names[i], byText[i] = a.String(), int32(i)
	}
	slices.SortFunc(byText, func(x, y int32) int { return strings.Compare(names[x], names[y]) })
	rank := make([]int32, len(nics.addrs))
	for r, i := range byText {
		rank[i] = int32(r)
	}
	// By source (a counting sort on its rank), then each source's pairs
	// by destination: O(pairs + sources + Σ k log k), k the pairs of a
	// source (a plan's targets: about 70); then the flows of a pair (and
	// the pairs two agents report for one NIC) added together.
	start := make([]int, len(nics.addrs)+1)
	for _, o := range all {
		start[rank[o.src]+1]++
	}
	for r := range nics.addrs {
		start[r+1] += start[r]
	}
	sorted := make([]obs, len(all))
	next := slices.Clone(start[:len(nics.addrs)])
	for _, o := range all {
		r := rank[o.src]
		sorted[next[r]] = o
		next[r]++
	}
	for r := range nics.addrs {
		slices.SortFunc(sorted[start[r]:start[r+1]], func(x, y obs) int { return cmp.Compare(rank[x.dst], rank[y.dst]) })
	}
	merged := sorted[:0]
	for _, o := range sorted {
		if m := len(merged) - 1; m >= 0 && merged[m].src == o.src && merged[m].dst == o.dst {
			merged[m].sent += o.sent
			merged[m].lost += o.lost
			merged[m].remarked += o.remarked
			merged[m].sports = append(merged[m].sports, o.sports...)
			continue
		}
		merged = append(merged, o)
	}
	var in LocalizeInput
	if len(merged) > 0 {
		in.Pairs = make([]PairObservation, len(merged))
	}
	for j, o := range merged {
		in.Pairs[j] = PairObservation{Src: names[o.src], Dst: names[o.dst], SrcToR: nics.tors[o.src], DstToR: nics.tors[o.dst],
			Sent: o.sent, Lost: o.lost, Remarked: o.remarked, Sports: o.sports}
	}
	for n := range noisy {
		in.Noisy = append(in.Noisy, names[n])
	}
	sort.Strings(in.Noisy)
	// Each ToR's NICs, over every pair, healthy ones too: every agent
	// probes its ToR-mates as a mesh, so the NICs of a ToR whose hosts
	// run agents are all there.
	seen := make([]bool, len(nics.addrs))
	for _, o := range merged {
		seen[o.src], seen[o.dst] = true, true
	}
	for i, ok := range seen {
		if t := nics.tors[i]; ok && t != "" {
			if in.ToRNICs == nil {
				in.ToRNICs = map[string]int{}
			}
			in.ToRNICs[t]++
		}
	}
	return in
}

// observationsOf is localisation's input of pairs keyed by (source,
// destination) and the noisy NICs, both sorted.
func observationsOf[K comparable](obs map[K]*PairObservation, noisy map[string]bool) LocalizeInput {
	var in LocalizeInput
	for _, o := range obs {
		in.Pairs = append(in.Pairs, *o)
	}
	sort.Slice(in.Pairs, func(i, j int) bool {
		if in.Pairs[i].Src != in.Pairs[j].Src {
			return in.Pairs[i].Src < in.Pairs[j].Src
		}
		return in.Pairs[i].Dst < in.Pairs[j].Dst
	})
	for n := range noisy {
		in.Noisy = append(in.Noisy, n)
	}
	sort.Strings(in.Noisy)
	return in
}

// nicIndex numbers the NICs of AgentObservations: ids[addrs[i]] = i, and
// tors[i] is its ToR ("" when not known).
type nicIndex struct {
	ids   map[netip.Addr]int32
	addrs []netip.Addr
	tors  []string
}

func (x *nicIndex) id(a netip.Addr) int32 {
	i, ok := x.ids[a]
	if !ok {
		i = int32(len(x.addrs))
		x.ids[a] = i
		x.addrs = append(x.addrs, a)
		x.tors = append(x.tors, "")
	}
	return i
}

// hostPort is a port of a host with its network parsed (ok: it parsed).
type hostPort struct {
	addr netip.Addr
	net  netip.Prefix
	ok   bool
}

// hostPorts appends h's ports with an address to buf.
func hostPorts(h Host, buf []hostPort) []hostPort {
	for _, a := range h.Attachments {
		if a.Addr.IsValid() {
			p, err := netip.ParsePrefix(a.Network)
			buf = append(buf, hostPort{a.Addr, p, err == nil})
		}
	}
	return buf
}

// sourceOf returns the address of the port of a host (its hostPorts)
// that probes dst: the one on dst's network, else the only one of dst's
// family; invalid when neither.
func sourceOf(ports []hostPort, dst netip.Addr) netip.Addr {
	var only netip.Addr
	n := 0
	for _, a := range ports {
		if a.addr.Is4() != dst.Is4() {
			continue
		}
		if a.ok && a.net.Contains(dst) {
			return a.addr
		}
		if a.addr != only {
			only = a.addr
			n++
		}
	}
	if n == 1 {
		return only
	}
	return netip.Addr{}
}
