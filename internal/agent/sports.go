package agent

import (
	"cmp"
	"slices"
)

// maxSportFaults bounds the UDP source ports a pair keeps with their
// losses and remarks, in each of its two rounds (the current and the
// last: the window of /pairs): a pair's memory for them does not grow
// with its ports, its loss or the fleet.
const maxSportFaults = 8

// sportFault is one UDP source port of a pair whose probes were lost or
// arrived remarked.
type sportFault struct {
	sport          uint16
	lost, remarked uint64
}

// sportFaults are a pair's faulty UDP source ports over its current and
// last round, at most maxSportFaults in each: the first that failed in
// the round (with 1 probe a second cycling through about a hundred
// ports, a port is probed once or twice in a round, so the first are as
// bad as any).
type sportFaults struct{ cur, last []sportFault }

// add counts lost and remarked probes of port sport in the current round.
func (f *sportFaults) add(sport uint16, lost, remarked uint64) {
	for i := range f.cur {
		if f.cur[i].sport == sport {
			f.cur[i].lost += lost
			f.cur[i].remarked += remarked
			return
		}
	}
	if len(f.cur) < maxSportFaults {
		f.cur = append(f.cur, sportFault{sport, lost, remarked})
	}
}

// roll starts a round: the current one becomes the last.
func (f *sportFaults) roll() {
	f.last, f.cur = f.cur, f.last[:0]
}

// total is the two rounds' ports together, the most lost and remarked
// first (then by port), at most maxSportFaults.
func (f *sportFaults) total() []sportFault {
	if len(f.cur)+len(f.last) == 0 {
		return nil
	}
	out := slices.Clone(f.last)
	for _, c := range f.cur {
		if i := slices.IndexFunc(out, func(o sportFault) bool { return o.sport == c.sport }); i >= 0 {
			out[i].lost += c.lost
			out[i].remarked += c.remarked
		} else {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b sportFault) int {
		return cmp.Or(cmp.Compare(b.lost+b.remarked, a.lost+a.remarked), cmp.Compare(a.sport, b.sport))
	})
	return out[:min(len(out), maxSportFaults)]
}
