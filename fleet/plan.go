package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"
)

// Peer is one host of the fleet as an agent knows it: its address and the
// ToR (leaf switch) its NIC is attached to, "" when not known.
type Peer struct {
	Addr netip.Addr
	ToR  string
}

// Kind says why a target is probed.
type Kind uint8

const (
	// Mate is a peer under the agent's own ToR: every one is probed, all
	// the time (the ToR mesh). When no ToR is known and the peers are no
	// more than Settings.SamplePeers, every peer is a Mate: the fleet is
	// one mesh.
	Mate Kind = iota
	// InterToR is a NIC of another ToR, in this round's sample of ToRs.
	InterToR
	// Sampled is a peer whose ToR (or the agent's own) is not known, in
	// this round's sample of such peers.
	Sampled
)

// String is the kind's name as the agent's metrics and JSON write it
// (the scope label): "tor", "inter_tor", "sampled".
func (k Kind) String() string {
	switch k {
	case Mate:
		return "tor"
	case InterToR:
		return "inter_tor"
	case Sampled:
		return "sampled"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Settings are the knobs of a plan. Rates are probes per second to one
// target (one flow: an agent probing each target with F flows sends F
// times as many, and gives SendCap and ReceiveShare divided by F).
type Settings struct {
	// MateRate is the rate to each ToR-mate.
	MateRate float64
	// SampleToRs is how many other ToRs the agent probes in a round (one
	// NIC of each).
	SampleToRs int
	// SamplePeers is how many peers of unknown ToR the agent probes in a
	// round (all peers when the agent's own ToR is unknown).
	SamplePeers int
	// SampleRate is the rate to each sampled target (InterToR, Sampled),
	// before the adjustment for small ToRs (Plan).
	SampleRate float64
	// Rotation is how long a round lasts: the sample moves on at every
	// multiple of it (wall-clock time, so agents move together).
	Rotation time.Duration
	// ECMPWidth is the number of equal-cost paths expected between two
	// ToRs, and Confidence the probability wanted that a target's UDP
	// source ports reach every one (SportCount); MaxSports bounds the
	// ports of one target.
	ECMPWidth  int
	Confidence float64
	MaxSports  int
	// SendCap bounds the probes per second the agent sends; ReceiveShare
	// the expected probes per second any host receives when every agent
	// plans alike. Plan scales every rate down by one factor to keep both.
	SendCap      float64
	ReceiveShare float64
}

// DefaultSettings are the agent's defaults: the ToR mesh at 1 probe/s per
// mate, 5 other ToRs and 64 peers of unknown ToR sampled at 1 probe/s,
// 30 s rounds, 16 ECMP paths covered with probability 0.99 (at most 128
// ports per target), at most 500 probes/s sent and received.
func DefaultSettings() Settings {
	return Settings{MateRate: 1, SampleToRs: 5, SamplePeers: 64, SampleRate: 1, Rotation: 30 * time.Second,
		ECMPWidth: 16, Confidence: 0.99, MaxSports: 128, SendCap: 500, ReceiveShare: 500}
}

// SettingsError is a setting out of range: its field (the Settings
// field's name), its value and what is allowed.
type SettingsError struct {
	Field string
	Value any
	Want  string
}

func (e *SettingsError) Error() string {
	return fmt.Sprintf("%s: %v is out of range: want %s", e.Field, e.Value, e.Want)
}

// Validate checks every setting; a problem is a *SettingsError.
func (s Settings) Validate() error {
	for _, f := range []struct {
		name     string
		v        float64
		min, max float64
	}{
		{"MateRate", s.MateRate, 0.001, 100},
		{"SampleRate", s.SampleRate, 0.001, 100},
		{"Confidence", s.Confidence, 0.5, 0.999999},
		{"SendCap", s.SendCap, 1, 1e6},
		{"ReceiveShare", s.ReceiveShare, 1, 1e6},
	} {
		if math.IsNaN(f.v) || f.v < f.min || f.v > f.max {
			return &SettingsError{f.name, f.v, fmt.Sprintf("%g..%g", f.min, f.max)}
		}
	}
	for _, f := range []struct {
		name     string
		v        int
		min, max int
	}{
		{"SampleToRs", s.SampleToRs, 0, 4096},
		{"SamplePeers", s.SamplePeers, 0, 65536},
		{"ECMPWidth", s.ECMPWidth, 1, 4096},
		{"MaxSports", s.MaxSports, 1, 16384},
	} {
		if f.v < f.min || f.v > f.max {
			return &SettingsError{f.name, f.v, fmt.Sprintf("%d..%d", f.min, f.max)}
		}
	}
	if s.Rotation < time.Second || s.Rotation > 24*time.Hour {
		return &SettingsError{"Rotation", s.Rotation, "1s..24h"}
	}
	return nil
}

// SportCount is the number of UDP source ports a target needs so that
// probes sent with each of them reach every one of width equal-cost paths
// with probability at least confidence, when a switch hashes each port to
// a path uniformly at random (the coupon collector's problem, by the union
// bound: P(a path is missed after n ports) ≤ width·(1−1/width)ⁿ ≤
// 1−confidence, so n = ⌈ln((1−confidence)/width) / ln(1−1/width)⌉). One
// path needs one port. 16 paths at 0.99: 115; at 0.9: 79.
func SportCount(width int, confidence float64) int {
	if width <= 1 {
		return 1
	}
	w := float64(width)
	return int(math.Ceil(math.Log((1-confidence)/w) / math.Log1p(-1/w)))
}

// Target is one peer to probe in a round, and how.
type Target struct {
	// Peer is the index of the peer in the list given to New.
	Peer int
	Kind Kind
	// Rate is the probes per second to send to it.
	Rate float64
	// Sports is the number of UDP source ports its probes cycle through
	// (Sport).
	Sports int
	key    uint64
}

// Sport is the UDP source port of the target's probe number i: the
// target's ports, i modulo Sports, distinct, in the RoCE v2 range
// 0xC000..0xFFFF, the same for every round and every agent built with the
// same seed (so a pair's probes keep cycling through the same paths).
func (t Target) Sport(i uint32) uint16 {
	const span = 0x10000 - minSport // 16384, a power of two: an odd step visits every port
	n := uint32(max(t.Sports, 1))
	step := uint32(t.key>>32) | 1
	return minSport + uint16((uint32(t.key)+(i%n)*step)%span)
}

// minSport is roce.MinUDPSourcePort (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN),
// kept here so that the planner links nothing but the standard library.
const minSport = 0xC000

// Plan is the targets of one round and what they cost.
type Plan struct {
	Round   int64
	Targets []Target
	// SendRate is the probes per second the agent sends in the round (the
	// sum of the targets' rates; at most SendCap in every round).
	SendRate float64
	// ReceiveRate is the expected probes per second received by the host
	// that receives most, when every agent of the fleet plans alike: the
	// bound ReceiveShare keeps.
	ReceiveRate float64
	// Scale is the factor every rate was multiplied by to keep SendCap
	// and ReceiveShare (1: none needed).
	Scale float64
	// ToRWindow is how long it takes the agents of this ToR, together,
	// to probe every other ToR (0: no other ToR is known); PeerWindow how
	// long this agent takes to probe every peer of unknown ToR (0: none).
	ToRWindow, PeerWindow time.Duration
}

// Planner plans the probes of one agent: the peers under its ToR as a
// mesh, the other ToRs and the peers of unknown ToR by a rotating sample.
// It is pure and deterministic: the same self, peers, settings and seed
// give the same plan for a round on every host. Build one with New when
// the peers change; Plan is then cheap (O(targets)).
type Planner struct {
	s       Settings
	self    Peer
	seed    uint64
	peers   []Peer
	mates   []int   // indexes of the peers under self's ToR, by address
	rank    int     // self's rank among its ToR's members (mates and self), by address
	tors    []group // the other ToRs, by name
	pool    []int   // peers of unknown ToR (all peers when self's ToR is unknown), by address
	torA    uint64  // the affine permutation of tors: p → (torA·p + torB) mod len(tors)
	torB    uint64
	poolA   uint64
	poolB   uint64
	rates   rates
	sports  int
	meanToR float64
}

type group struct {
	name    string
	members []int // by address
}

type rates struct {
	scale                   float64
	mate, sample            float64
	receive                 float64
	sampleToRs, samplePeers int
}

// ErrSelf is returned by New for a self without address.
var ErrSelf = errors.New("fleet: the agent's own address is not valid")

// New indexes the peers (any order; self's address among them is left
// out) for planning: O(n log n) in their number. peers is kept, not
// copied: do not change it while the Planner is in use. It is
// NewIndex(peers).Planner(self, s, seed): to plan for many agents of one
// fleet, index it once.
func New(self Peer, peers []Peer, s Settings, seed uint64) (*Planner, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !self.Addr.IsValid() {
		return nil, ErrSelf
	}
	return NewIndex(peers).Planner(self, s, seed)
}

// Index is a fleet's peers indexed for planning: grouped by ToR, each
// group, the peers of unknown ToR and all of them sorted by address.
// Index a peer list once (NewIndex, O(n log n)); the Planner of each
// agent of the fleet then costs O(T log m + m + u) (Index.Planner: T ToRs
// of up to m NICs, u peers of unknown ToR; all n peers for an agent whose
// own ToR is not known) instead of indexing the whole list again. It is
// read-only once built: safe for concurrent use.
type Index struct {
	peers   []Peer
	tors    []group // every ToR, by name
	unknown []int   // peers of unknown ToR, by address
	all     []int   // every peer, by address
}

// NewIndex indexes peers (any order; peers without a valid address are
// left out). peers is kept, not copied: do not change it while the Index
// or a Planner of it is in use.
func NewIndex(peers []Peer) *Index {
	x := &Index{peers: peers}
	groups := map[string][]int{}
	for i, q := range peers {
		if !q.Addr.IsValid() {
			continue
		}
		x.all = append(x.all, i)
		if q.ToR == "" {
			x.unknown = append(x.unknown, i)
		} else {
			groups[q.ToR] = append(groups[q.ToR], i)
		}
	}
	byAddr := func(a, b int) int { return cmp.Or(peers[a].Addr.Compare(peers[b].Addr), cmp.Compare(a, b)) }
	slices.SortFunc(x.all, byAddr)
	slices.SortFunc(x.unknown, byAddr)
	x.tors = make([]group, 0, len(groups))
	for name, m := range groups {
		slices.SortFunc(m, byAddr)
		x.tors = append(x.tors, group{name, m})
	}
	slices.SortFunc(x.tors, func(a, b group) int { return cmp.Compare(a.name, b.name) })
	return x
}

// Len is the number of peers indexed (with a valid address).
func (x *Index) Len() int { return len(x.all) }

// without returns the indexes of list (sorted by address) but those with
// address a: list itself when there are none.
func (x *Index) without(list []int, a netip.Addr) []int {
	lo, found := slices.BinarySearchFunc(list, a, func(i int, a netip.Addr) int { return x.peers[i].Addr.Compare(a) })
	if !found {
		return list
	}
	hi := lo
	for hi < len(list) && x.peers[list[hi]].Addr == a {
		hi++
	}
	return slices.Concat(list[:lo], list[hi:])
}

// Planner returns the planner of the agent self (its address left out of
// the peers): the same as New(self, peers, s, seed) for the peers x
// indexes.
func (x *Index) Planner(self Peer, s Settings, seed uint64) (*Planner, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !self.Addr.IsValid() {
		return nil, ErrSelf
	}
	peers := x.peers
	p := &Planner{s: s, self: self, seed: seed, peers: peers, sports: min(SportCount(s.ECMPWidth, s.Confidence), s.MaxSports)}
	known := 0
	if self.ToR == "" {
		p.pool = x.without(x.all, self.Addr)
		if len(p.pool) <= s.SamplePeers {
			// No topology, and a fleet no larger than a sample: every
			// peer is probed every round anyway, as one mesh.
			p.mates, p.pool = p.pool, nil
		}
	} else {
		p.pool = x.without(x.unknown, self.Addr)
		p.tors = make([]group, 0, len(x.tors))
		for _, g := range x.tors {
			m := x.without(g.members, self.Addr)
			switch {
			case g.name == self.ToR:
				p.mates = m
			case len(m) > 0:
				p.tors = append(p.tors, group{g.name, m})
				known += len(m)
			}
		}
	}
	p.rank, _ = slices.BinarySearchFunc(p.mates, self.Addr, func(i int, a netip.Addr) int { return peers[i].Addr.Compare(a) })
	// Every member of self's ToR walks the same permutation of the other
	// ToRs (seeded by the ToR's name); each agent its own permutation of
	// the pool (seeded by its address), so that the pool's receivers
	// share the load.
	p.torA, p.torB = affine(mix(seed, hashString(self.ToR)), len(p.tors))
	p.poolA, p.poolB = affine(mix(seed, hashAddr(self.Addr)), len(p.pool))
	if len(p.tors) > 0 {
		p.meanToR = float64(known+len(p.mates)+1) / float64(len(p.tors)+1)
	}
	p.rates = p.computeRates()
	return p, nil
}

// affine picks an affine permutation p → (a·p + b) mod n of 0..n-1 from
// h: a coprime to n.
func affine(h uint64, n int) (a, b uint64) {
	if n <= 1 {
		return 1, 0
	}
	un := uint64(n)
	a = 1 + mix(h, 1)%(un-1)
	for gcd(a, un) != 1 {
		a++
		if a >= un {
			a = 1
		}
	}
	return a, mix(h, 2) % un
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// computeRates works out the rates and the scale factor (docs/fabric.md,
// "Planning a large deployment", gives the formulas):
//
//	k = min(SampleToRs, T−1), s = min(SamplePeers, |pool|)
//	r_U = SampleRate·min(1, |U|/m̄)             (a small ToR U gets less)
//	send ≤ (m−1)·MateRate + k·max(r_U) + s·SampleRate
//	receive = max over ToRs U of (|U|−1)·MateRate + (N_known−|U|)·k·r_U/((T−1)·|U|)
//	          + s·SampleRate
//	scale = min(1, SendCap/send, ReceiveShare/receive)
//
// where m is the size of self's ToR, T the number of ToRs, m̄ the mean
// ToR size, N_known the peers of known ToR. Every rate is multiplied by
// scale.
func (p *Planner) computeRates() rates {
	s := p.s
	r := rates{mate: s.MateRate, sample: s.SampleRate, sampleToRs: min(s.SampleToRs, len(p.tors)), samplePeers: min(s.SamplePeers, len(p.pool))}
	t := float64(len(p.tors)) // other ToRs: T−1
	nKnown := p.meanToR * (t + 1)
	maxR := 0.0
	recv := float64(len(p.mates)) * s.MateRate // self's ToR
	for _, g := range p.tors {
		u := float64(len(g.members))
		ru := p.toRRate(len(g.members))
		maxR = max(maxR, ru)
		recv = max(recv, (u-1)*s.MateRate+(nKnown-u)*float64(r.sampleToRs)*ru/(t*u))
	}
	if len(p.tors) > 0 {
		// Self's ToR receives the other ToRs' samples too.
		m := float64(len(p.mates) + 1)
		recv = max(recv, (m-1)*s.MateRate+(nKnown-m)*float64(r.sampleToRs)*p.toRRate(len(p.mates)+1)/(t*m))
	}
	recv += float64(r.samplePeers) * s.SampleRate
	send := float64(len(p.mates))*s.MateRate + float64(r.sampleToRs)*maxR + float64(r.samplePeers)*s.SampleRate
	r.scale = 1
	if send > s.SendCap {
		r.scale = s.SendCap / send
	}
	if recv*r.scale > s.ReceiveShare {
		r.scale = s.ReceiveShare / recv
	}
	r.receive = recv * r.scale
	return r
}

// toRRate is the rate to a NIC of a ToR of n NICs, before scaling.
func (p *Planner) toRRate(n int) float64 {
	if p.meanToR == 0 {
		return p.s.SampleRate
	}
	return p.s.SampleRate * min(1, float64(n)/p.meanToR)
}

// Round is the round at time t: t's Unix time divided by the rotation.
func (p *Planner) Round(t time.Time) int64 { return t.UnixNano() / int64(p.s.Rotation) }

// Settings returns the planner's settings.
func (p *Planner) Settings() Settings { return p.s }

// Mates returns how many peers are under the agent's ToR, ToRs how many
// other ToRs it knows, Pool how many peers' ToR is not known (all of them
// when the agent's own is not).
func (p *Planner) Mates() int { return len(p.mates) }

// ToRs returns how many other ToRs the planner knows.
func (p *Planner) ToRs() int { return len(p.tors) }

// Pool returns how many peers are sampled as of unknown ToR.
func (p *Planner) Pool() int { return len(p.pool) }

// Plan returns the targets of a round, ToR-mates first (by address), then
// the sampled ToRs' NICs, then the sampled peers: O(targets).
func (p *Planner) Plan(round int64) Plan {
	r := p.rates
	out := Plan{Round: round, Scale: r.scale, ReceiveRate: r.receive,
		Targets: make([]Target, 0, len(p.mates)+r.sampleToRs+r.samplePeers)}
	for _, i := range p.mates {
		out.Targets = append(out.Targets, p.target(i, Mate, r.mate*r.scale))
	}
	if k := r.sampleToRs; k > 0 {
		t := uint64(len(p.tors))
		m := uint64(len(p.mates) + 1)
		base := (uint64(round)*m + uint64(p.rank)) * uint64(k)
		for j := range uint64(k) {
			pos := (base + j) % t
			g := p.tors[(p.torA*pos+p.torB)%t]
			nic := g.members[mix(mix(p.seed, hashAddr(p.self.Addr)), uint64(round), pos)%uint64(len(g.members))]
			out.Targets = append(out.Targets, p.target(nic, InterToR, p.toRRate(len(g.members))*r.scale))
		}
		out.ToRWindow = time.Duration((t+m*uint64(k)-1)/(m*uint64(k))) * p.s.Rotation
	}
	if s := r.samplePeers; s > 0 {
		n := uint64(len(p.pool))
		base := uint64(round) * uint64(s)
		for j := range uint64(s) {
			pos := (base + j) % n
			out.Targets = append(out.Targets, p.target(p.pool[(p.poolA*pos+p.poolB)%n], Sampled, r.sample*r.scale))
		}
		out.PeerWindow = time.Duration((n+uint64(s)-1)/uint64(s)) * p.s.Rotation
	}
	for _, t := range out.Targets {
		out.SendRate += t.Rate
	}
	return out
}

func (p *Planner) target(i int, k Kind, rate float64) Target {
	return Target{Peer: i, Kind: k, Rate: rate, Sports: p.sports, key: mix(p.seed, hashAddr(p.self.Addr), hashAddr(p.peers[i].Addr))}
}

// mix hashes its arguments into one value (splitmix64's finaliser over
// each in turn).
func mix(vs ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, v := range vs {
		h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

func hashAddr(a netip.Addr) uint64 {
	b := a.As16()
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(b[i])
		lo = lo<<8 | uint64(b[8+i])
	}
	return mix(hi, lo)
}

// hashString is FNV-1a.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
