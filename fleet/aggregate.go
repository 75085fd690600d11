package fleet

import (
	"cmp"
	"net/netip"
	"slices"
)

// Counts are probe outcomes: sent, answered within the timeout, lost.
type Counts struct {
	Sent, Answered, Lost uint64
}

func (c *Counts) add(d Counts) {
	c.Sent += d.Sent
	c.Answered += d.Answered
	c.Lost += d.Lost
}

// Group is what an agent exports a series of probe counts for: a
// ToR-mate (Kind Mate, Peer set), or a peer ToR with its scope (Kind
// InterToR or Sampled, ToR the peers' ToR, "" when not known), per flow.
type Group struct {
	Flow string
	Kind Kind
	Peer netip.Addr // Mate only
	ToR  string     // InterToR and Sampled only
}

// GroupCounts is a group and its counts since it was made.
type GroupCounts struct {
	Group
	Counts
}

// Aggregator adds up probe outcomes into a bounded set of groups: one per
// ToR-mate and flow, one per peer ToR, scope and flow for the rest, at
// most MaxToRs of those per flow (the least recently updated goes, and
// its counts with it). The number of groups is at most
// flows × (mates + MaxToRs), whatever the fleet's size. Not safe for
// concurrent use.
type Aggregator struct {
	maxToRs int
	groups  map[Group]*entry
	tors    map[string]*lru // per flow: its ToR groups, least recently updated first
}

type entry struct {
	Counts
	g          Group
	prev, next *entry // in its flow's lru (ToR groups only)
}

// lru is a flow's ToR groups in the order they were last updated: the
// least recently updated first, so that evicting it is O(1).
type lru struct {
	head, tail *entry
	n          int
}

func (l *lru) push(e *entry) {
	e.prev, e.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = e
	} else {
		l.head = e
	}
	l.tail = e
	l.n++
}

func (l *lru) remove(e *entry) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		l.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		l.tail = e.prev
	}
	e.prev, e.next = nil, nil
	l.n--
}

// NewAggregator returns an Aggregator holding at most maxToRs ToR groups
// per flow (at least 1).
func NewAggregator(maxToRs int) *Aggregator {
	return &Aggregator{maxToRs: max(maxToRs, 1), groups: map[Group]*entry{}, tors: map[string]*lru{}}
}

// GroupOf is the group of a probe to p of kind k for flow.
func GroupOf(flow string, p Peer, k Kind) Group {
	if k == Mate {
		return Group{Flow: flow, Kind: Mate, Peer: p.Addr}
	}
	return Group{Flow: flow, Kind: k, ToR: p.ToR}
}

// Add adds c to the group of a probe to p of kind k for flow. It returns
// the group evicted to make room, if one was (its series should go).
// O(1), an eviction included.
func (a *Aggregator) Add(flow string, p Peer, k Kind, c Counts) (evicted Group, ok bool) {
	g := GroupOf(flow, p, k)
	e := a.groups[g]
	if e == nil {
		e = &entry{g: g}
		a.groups[g] = e
		if k != Mate {
			l := a.tors[flow]
			if l == nil {
				l = &lru{}
				a.tors[flow] = l
			}
			if l.n >= a.maxToRs {
				old := l.head
				l.remove(old)
				delete(a.groups, old.g)
				evicted, ok = old.g, true
			}
			l.push(e)
		}
	} else if k != Mate {
		l := a.tors[flow]
		l.remove(e)
		l.push(e)
	}
	e.add(c)
	return evicted, ok
}

// Forget removes a group (a mate that left the ToR, a flow that went).
func (a *Aggregator) Forget(g Group) {
	e, ok := a.groups[g]
	if !ok {
		return
	}
	delete(a.groups, g)
	if g.Kind != Mate {
		a.tors[g.Flow].remove(e)
	}
}

// Len is the number of groups held.
func (a *Aggregator) Len() int { return len(a.groups) }

// Groups returns every group with its counts, sorted by flow, kind, peer
// and ToR.
func (a *Aggregator) Groups() []GroupCounts {
	out := make([]GroupCounts, 0, len(a.groups))
	for g, e := range a.groups {
		out = append(out, GroupCounts{g, e.Counts})
	}
	slices.SortFunc(out, func(x, y GroupCounts) int {
		return cmp.Or(cmp.Compare(x.Flow, y.Flow), cmp.Compare(x.Kind, y.Kind), x.Peer.Compare(y.Peer), cmp.Compare(x.ToR, y.ToR))
	})
	return out
}

// PairStat is one probed pair's outcome over a recent window.
type PairStat struct {
	Flow string
	Peer Peer
	Kind Kind
	Counts
}

// LossRatio is Lost / (Answered + Lost): the share of the probes whose
// fate is known that were lost (0 when none is known).
func (s PairStat) LossRatio() float64 {
	if d := s.Answered + s.Lost; d > 0 {
		return float64(s.Lost) / float64(d)
	}
	return 0
}

// Worst returns the k pairs of pairs with the highest loss ratio among
// those that lost a probe, worst first (ties: more probes lost, then
// flow and address). pairs is not changed. O(n log k).
func Worst(pairs []PairStat, k int) []PairStat {
	if k <= 0 {
		return nil
	}
	worse := func(x, y PairStat) int { // < 0: x is worse
		return cmp.Or(cmp.Compare(y.LossRatio(), x.LossRatio()), cmp.Compare(y.Lost, x.Lost),
			cmp.Compare(x.Flow, y.Flow), x.Peer.Addr.Compare(y.Peer.Addr))
	}
	out := make([]PairStat, 0, k)
	for _, p := range pairs {
		if p.Lost == 0 {
			continue
		}
		if len(out) == k {
			if worse(p, out[k-1]) >= 0 {
				continue
			}
			out = out[:k-1]
		}
		i, _ := slices.BinarySearchFunc(out, p, worse)
		out = slices.Insert(out, i, p)
	}
	return out
}

// Window holds a pair's counts over the last two periods (the current
// and the one before), so that a ratio over it is never over less than
// one whole period nor over more than two: Add in the current period,
// Roll at each period's end, Total for the window.
type Window struct {
	cur, prev Counts
}

// Add adds c to the current period.
func (w *Window) Add(c Counts) { w.cur.add(c) }

// Roll ends the current period.
func (w *Window) Roll() { w.prev, w.cur = w.cur, Counts{} }

// Total is the counts of the window.
func (w *Window) Total() Counts {
	t := w.prev
	t.add(w.cur)
	return t
}
