package fabric

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/host"
)

// AgentPairs is one agent's pair detail: the body of its GET /pairs
// (docs/json.md, "agent_pairs"), the fields localisation uses.
type AgentPairs struct {
	// Origin is the URL it was read from.
	Origin string `json:"-"`
	// Scale is the agent's probe rate scale: below 1 while it protects
	// its host (late wake-ups, CPU over budget): its results are marked.
	Scale float64 `json:"probe_scale"`
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
// another DSCP than it was sent with (the detail keeps only the last).
// An agent whose probe rate scale is below 1 has its NICs marked noisy.
// ToRNICs counts each ToR's NICs among all the pairs (a NIC probed over
// two families counts twice, which only keeps the nic rule's default).
// Source ports are not in the pair detail: link suspects come without a
// spine (docs/fabric.md, "Localisation").
func AgentObservations(hosts []Host, pairs []AgentPairs) LocalizeInput {
	tor := map[string]string{} // NIC address → ToR
	for _, h := range hosts {
		for _, a := range h.Attachments {
			if a.Addr.IsValid() && a.Switch != "" {
				tor[a.Addr.String()] = a.Switch
			}
		}
	}
	for _, ap := range pairs {
		for _, p := range ap.Pairs {
			if _, ok := tor[p.Address]; !ok && p.ToR != nil && *p.ToR != "" {
				tor[p.Address] = *p.ToR
			}
		}
	}
	type key struct{ src, dst string }
	obs := map[key]*PairObservation{}
	noisy := map[string]bool{}
	for i, ap := range pairs {
		if i >= len(hosts) {
			break
		}
		for _, p := range ap.Pairs {
			dst, err := netip.ParseAddr(p.Address)
			if err != nil {
				continue
			}
			dst = dst.Unmap()
			src := sourceOf(hosts[i], dst)
			if !src.IsValid() {
				continue
			}
			k := key{src.String(), dst.String()}
			if ap.Scale < 1 {
				noisy[k.src] = true
			}
			o := obs[k]
			if o == nil {
				o = &PairObservation{Src: k.src, Dst: k.dst, SrcToR: tor[k.src], DstToR: tor[k.dst]}
				obs[k] = o
			}
			o.Sent += p.Probes
			o.Lost += p.Lost
			if p.Sent != nil && p.Received != nil && p.Sent.DSCP != p.Received.DSCP {
				o.Remarked++
			}
		}
	}
	in := observationsOf(obs, noisy)
	// Each ToR's NICs, from every pair, healthy ones too: every agent
	// probes its ToR-mates as a mesh, so the NICs of a ToR whose hosts
	// run agents are all there.
	nicsOf := map[string]map[string]bool{}
	add := func(tor, nic string) {
		if tor != "" {
			if nicsOf[tor] == nil {
				nicsOf[tor] = map[string]bool{}
			}
			nicsOf[tor][nic] = true
		}
	}
	for _, o := range in.Pairs {
		add(o.SrcToR, o.Src)
		add(o.DstToR, o.Dst)
	}
	if len(nicsOf) > 0 {
		in.ToRNICs = make(map[string]int, len(nicsOf))
		for t, n := range nicsOf {
			in.ToRNICs[t] = len(n)
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

// sourceOf returns the address of h's port that probes dst: the one on
// dst's network, else the only one of dst's family; invalid when neither.
func sourceOf(h Host, dst netip.Addr) netip.Addr {
	var only netip.Addr
	n := 0
	for _, a := range h.Attachments {
		if !a.Addr.IsValid() || a.Addr.Is4() != dst.Is4() {
			continue
		}
		if p, err := netip.ParsePrefix(a.Network); err == nil && p.Contains(dst) {
			return a.Addr
		}
		if a.Addr != only {
			only = a.Addr
			n++
		}
	}
	if n == 1 {
		return only
	}
	return netip.Addr{}
}
