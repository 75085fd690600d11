package gid

import (
	"encoding/json"
	"fmt"
)

// ChangeKind says how an actual entry differs from the prediction.
type ChangeKind string

// Change kinds.
const (
	// Stale: the table has an entry the netdevs no longer explain (an
	// address that is gone, a GID pinned by a QP or AH while pending
	// delete, or a GID made from an old MAC).
	Stale ChangeKind = "stale"
	// Missing: an address that should have a GID has none (yet: GID
	// updates run asynchronously after address events).
	Missing ChangeKind = "missing"
	// Moved: the entry exists but at another index than a fresh scan
	// would give it, because it was added by an event into a hole.
	Moved ChangeKind = "moved"
	// Unseen: the entry's netdev is not visible in the namespace that was
	// scanned, so it cannot be predicted from here.
	Unseen ChangeKind = "unseen"
)

// Change is one difference between a predicted and an actual table.
type Change struct {
	Kind           ChangeKind `json:"kind"`
	Entry          Entry      `json:"entry"`           // the actual entry (the predicted one for Missing)
	ActualIndex    int        `json:"actual_index"`    // -1 for Missing
	PredictedIndex int        `json:"predicted_index"` // -1 for Stale and Unseen
}

type changeJSON struct {
	Kind           ChangeKind `json:"kind"`
	ActualIndex    *int       `json:"index"`
	PredictedIndex *int       `json:"predicted_index"`
	Entry          Entry      `json:"entry"`
	Message        string     `json:"message"`
}

// MarshalJSON writes {kind, index, predicted_index, entry, message}: index
// is null for a missing entry, predicted_index null for a stale or unseen
// one; message is String's line.
func (c Change) MarshalJSON() ([]byte, error) {
	w := changeJSON{Kind: c.Kind, Entry: c.Entry, Message: c.String()}
	if c.ActualIndex >= 0 {
		w.ActualIndex = &c.ActualIndex
	}
	if c.PredictedIndex >= 0 {
		w.PredictedIndex = &c.PredictedIndex
	}
	return json.Marshal(w)
}

// String describes the change in one line.
func (c Change) String() string {
	e := c.Entry
	what := fmt.Sprintf("%s %s on %s", e.GID, e.Type, orDash(e.Netdev))
	switch c.Kind {
	case Stale:
		return fmt.Sprintf("stale: index %d %s is not explained by any netdev address", c.ActualIndex, what)
	case Missing:
		return fmt.Sprintf("missing: %s (predicted index %d) is not in the table", what, c.PredictedIndex)
	case Moved:
		return fmt.Sprintf("moved: %s is at index %d, a fresh scan puts it at %d", what, c.ActualIndex, c.PredictedIndex)
	case Unseen:
		return fmt.Sprintf("unseen: index %d %s: its netdev is not in this namespace", c.ActualIndex, what)
	}
	return string(c.Kind)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Diff compares a predicted table with the actual one, matching entries
// by (GID, type, netdev) as the kernel's cache does. Empty slots are
// ignored. The result lists changes in actual-index order, then missing
// entries in predicted-index order; it is empty when the tables agree
// entry for entry.
func Diff(predicted, actual []Entry) []Change {
	want := map[Key][]int{}
	for _, p := range predicted {
		if !p.Empty {
			want[p.Key()] = append(want[p.Key()], p.Index)
		}
	}
	var out []Change
	for _, a := range actual {
		if a.Empty {
			continue
		}
		idx := want[a.Key()]
		switch {
		case len(idx) > 0:
			want[a.Key()] = idx[1:]
			if idx[0] != a.Index {
				out = append(out, Change{Kind: Moved, Entry: a, ActualIndex: a.Index, PredictedIndex: idx[0]})
			}
		case a.Netns == NetnsOther:
			out = append(out, Change{Kind: Unseen, Entry: a, ActualIndex: a.Index, PredictedIndex: -1})
		default:
			out = append(out, Change{Kind: Stale, Entry: a, ActualIndex: a.Index, PredictedIndex: -1})
		}
	}
	for _, p := range predicted {
		if p.Empty {
			continue
		}
		idx := want[p.Key()]
		for k, i := range idx {
			if i == p.Index {
				want[p.Key()] = append(idx[:k:k], idx[k+1:]...)
				out = append(out, Change{Kind: Missing, Entry: p, ActualIndex: -1, PredictedIndex: p.Index})
				break
			}
		}
	}
	return out
}
