package audit

import (
	"fmt"
	"sort"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
)

// Expectation is what the host's RDMA traffic is configured to carry: the
// markings an application asks for (host.FlowParams: a verbs traffic
// class and sl, or an rdma_cm ToS), for the traffic of the GID entries it
// applies to. `roce-probe audit --tclass/--tos` gives one for every entry;
// a `--flow` (the agent's flow syntax) one for the entries its select
// names.
type Expectation struct {
	// Name is the flow's name ("" for --tclass/--tos).
	Name string
	// Netdev, Device and Port narrow the entries it applies to ("", 0:
	// any); GIDIndex to one entry of Device/Port (-1: any); Family to the
	// entries of one address family ("ipv4", "ipv6"; "": both).
	Netdev   string
	Device   string
	Port     int
	GIDIndex int
	Family   string
	Params   host.FlowParams
}

// applies says whether e governs the traffic of entry en.
func (e Expectation) applies(en gid.Entry) bool {
	if e.Family != "" && en.IP.IsValid() && (e.Family == "ipv4") != en.IP.Unmap().Is4() {
		return false
	}
	return (e.Netdev == "" || e.Netdev == en.Netdev) && (e.Device == "" || e.Device == en.Device) &&
		(e.Port == 0 || e.Port == en.Port) && (e.GIDIndex < 0 || e.GIDIndex == en.Index)
}

// What says in words where the expectation applies and what it asks for.
func (e Expectation) What() string {
	var s string
	p := e.Params
	switch {
	case p.RDMACM && p.TOS != nil:
		s = fmt.Sprintf("rdma_cm ToS %d", *p.TOS)
	case p.RDMACM:
		s = "rdma_cm without a ToS (the port's default_roce_tos)"
	default:
		s = fmt.Sprintf("traffic class %d, sl %d", p.TrafficClass, p.SL)
	}
	if e.Name != "" {
		s = "flow " + e.Name + ": " + s
	}
	return s
}

// entryKey names a GID entry.
type entryKey struct {
	dev       string
	port, idx int
}

// flows checks, for each GID entry some expectation applies to, the flow
// the host sends from it (host.View.Flow, qos.Check: what `roce-probe
// check` says of it). The first expectation that applies wins.
type flows struct {
	v      *host.View
	expect []Expectation
	memo   map[entryKey]*expected
}

// expected is one entry's checked flow.
type expected struct {
	exp *Expectation
	res qos.Result
}

func newFlows(v *host.View, expect []Expectation) *flows {
	return &flows{v: v, expect: expect, memo: map[entryKey]*expected{}}
}

// of returns the checked flow of entry (dev, port, idx), nil when no
// expectation applies or the entry cannot send.
func (f *flows) of(dev string, port, idx int) *expected {
	k := entryKey{dev, port, idx}
	if e, ok := f.memo[k]; ok {
		return e
	}
	f.memo[k] = nil
	src, err := f.v.Source(dev, port, idx)
	if err != nil || (src.Entry.Type != gid.TypeRoCEv2 && src.Entry.Type != gid.TypeRoCEv1) {
		return nil
	}
	for i := range f.expect {
		if !f.expect[i].applies(src.Entry) {
			continue
		}
		r, err := qos.Check(f.v.Flow(src, f.expect[i].Params))
		if err != nil {
			return nil
		}
		f.memo[k] = &expected{exp: &f.expect[i], res: r}
		return f.memo[k]
	}
	return nil
}

// priorities returns, per real netdev (and, for a bond, per slave), the
// priorities the expectations' flows land on, each with why: what the
// counters check compares RDMA traffic with when expectations are given.
func (f *flows) priorities() map[string]map[uint8][]string {
	out := map[string]map[uint8][]string{}
	add := func(nd string, p uint8, why string) {
		if nd == "" {
			return
		}
		if out[nd] == nil {
			out[nd] = map[uint8][]string{}
		}
		for _, w := range out[nd][p] {
			if w == why {
				return
			}
		}
		out[nd][p] = append(out[nd][p], why)
	}
	for _, p := range f.v.Ports {
		for _, en := range p.Entries {
			if en.Empty {
				continue
			}
			e := f.of(p.Device, p.Port, en.Index)
			if e == nil {
				continue
			}
			why := e.exp.What()
			if b := e.res.Bond; b != nil {
				for _, s := range b.Slaves {
					if s.Priority != nil {
						add(s.Netdev, *s.Priority, why)
					}
				}
				continue
			}
			if e.res.Priority != nil {
				add(e.res.RealNetdev, *e.res.Priority, why)
			}
		}
	}
	for _, m := range out {
		for p := range m {
			sort.Strings(m[p])
		}
	}
	return out
}
