package vlan

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
)

// maxDepth bounds walks down a chain of stacked devices; the kernel limits
// nesting to 8 (MAX_NEST_DEV), so a longer chain means a broken snapshot.
const maxDepth = 16

// Snapshot is every link of one network namespace at one moment. Build it
// with Handle.Snapshot or decode it from JSON (fixtures); its methods never
// touch the kernel.
type Snapshot struct {
	// Netns names the namespace: the name given to Open, or "" for the
	// namespace of the reading process.
	Netns string `json:"netns"`
	Links []Link `json:"links"`
}

// DecodeSnapshot reads a Snapshot written as JSON (the form of
// encoding/json on Snapshot) and checks it: names and ifindexes unique and
// non-empty, VLAN links carrying a tag with an ID below 4096.
func DecodeSnapshot(r io.Reader) (*Snapshot, error) {
	var s Snapshot
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("vlan: decoding snapshot: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks the invariants every snapshot read from the kernel has.
func (s *Snapshot) Validate() error {
	names := map[string]bool{}
	idx := map[int]bool{}
	for i, l := range s.Links {
		if l.Name == "" {
			return fmt.Errorf("vlan: snapshot link %d: empty name", i)
		}
		if l.Index <= 0 {
			return fmt.Errorf("vlan: snapshot link %q: ifindex %d: want ≥ 1", l.Name, l.Index)
		}
		if names[l.Name] {
			return fmt.Errorf("vlan: snapshot link %q appears twice", l.Name)
		}
		if idx[l.Index] {
			return fmt.Errorf("vlan: snapshot link %q: ifindex %d used twice", l.Name, l.Index)
		}
		names[l.Name], idx[l.Index] = true, true
		if l.Kind == KindVLAN {
			if l.VLAN == nil {
				return fmt.Errorf("vlan: snapshot link %q: kind vlan without a tag", l.Name)
			}
			if l.VLAN.ID > 4095 {
				return fmt.Errorf("vlan: snapshot link %q: VLAN ID %d: want 0..4095", l.Name, l.VLAN.ID)
			}
		}
	}
	return nil
}

// ByName returns the link called name.
func (s *Snapshot) ByName(name string) (*Link, bool) {
	for i := range s.Links {
		if s.Links[i].Name == name {
			return &s.Links[i], true
		}
	}
	return nil, false
}

// ByIndex returns the link with ifindex idx.
func (s *Snapshot) ByIndex(idx int) (*Link, bool) {
	if idx <= 0 {
		return nil, false
	}
	for i := range s.Links {
		if s.Links[i].Index == idx {
			return &s.Links[i], true
		}
	}
	return nil, false
}

// Description is a link with everything RoCE derives from its stack of
// lower devices.
type Description struct {
	Link
	// Netns is the snapshot's namespace name ("" for the reader's own).
	Netns string `json:"netns"`
	// Chain lists the VLAN tags a frame sent through this link carries,
	// outermost first: for a QinQ stack, the 802.1ad tag then the 802.1Q
	// tag. Empty for an untagged link.
	Chain []Tag `json:"vlan_chain"`
	// VLANID is the VLAN ID the kernel's rdma_read_gid_l2_fields derives
	// for a GID on this netdev: the link's own VID if it is a VLAN device,
	// else the VID of its first-level lower device if that is a VLAN
	// device (a macvlan on a VLAN), else nil.
	VLANID *uint16 `json:"vlan"`
	// Lowers names the devices below this one, nearest first, down to
	// Real.
	Lowers []string `json:"lowers"`
	// Real is the device at the bottom of the VLAN/macvlan/ipvlan stack:
	// the netdev the frames leave through (a NIC port, veth or bond).
	Real string `json:"real_netdev"`
	// LowerInOtherNetns is true when the stack continues into another
	// namespace (the lower device is not in this snapshot); Chain and Real
	// then stop at the last device visible here.
	LowerInOtherNetns bool `json:"lower_in_other_netns"`
}

// Describe resolves the link called name: its tag chain, the VLAN ID the
// RDMA stack uses, and the real device below it.
func (s *Snapshot) Describe(name string) (Description, error) {
	l, ok := s.ByName(name)
	if !ok {
		ns := s.Netns
		if ns == "" {
			ns = "this network namespace"
		} else {
			ns = "network namespace " + ns
		}
		return Description{}, fmt.Errorf("vlan: netdev %q not found in %s", name, ns)
	}
	d := Description{Link: *l, Netns: s.Netns, Chain: []Tag{}, Lowers: []string{}}
	var inner []Tag // innermost first
	cur := l
	for depth := 0; ; depth++ {
		if depth > maxDepth {
			return Description{}, fmt.Errorf("vlan: netdev %q: lower-device chain longer than %d (loop in snapshot?)", name, maxDepth)
		}
		if cur.Kind == KindVLAN && cur.VLAN != nil {
			inner = append(inner, *cur.VLAN)
		}
		if !cur.Kind.Stacked() || cur.ParentIndex == 0 {
			break
		}
		if cur.ParentOtherNetns {
			d.LowerInOtherNetns = true
			break
		}
		next, ok := s.ByIndex(cur.ParentIndex)
		if !ok {
			return Description{}, fmt.Errorf("vlan: netdev %q: lower device ifindex %d of %q is not in the snapshot", name, cur.ParentIndex, cur.Name)
		}
		if depth == 0 && l.Kind != KindVLAN && next.Kind == KindVLAN && next.VLAN != nil {
			id := next.VLAN.ID
			d.VLANID = &id
		}
		d.Lowers = append(d.Lowers, next.Name)
		cur = next
	}
	if l.Kind == KindVLAN && l.VLAN != nil {
		id := l.VLAN.ID
		d.VLANID = &id
	}
	for i := len(inner) - 1; i >= 0; i-- {
		d.Chain = append(d.Chain, inner[i])
	}
	d.Real = cur.Name
	return d, nil
}

// lowers returns the direct lower devices of l: the IFLA_LINK device of a
// stacked kind, and every link enslaved to l (bond, team and bridge ports).
func (s *Snapshot) lowers(l *Link) []*Link {
	var out []*Link
	if l.Kind.Stacked() && l.ParentIndex != 0 && !l.ParentOtherNetns {
		if p, ok := s.ByIndex(l.ParentIndex); ok {
			out = append(out, p)
		}
	}
	for i := range s.Links {
		if s.Links[i].MasterIndex == l.Index && s.Links[i].Index != l.Index {
			out = append(out, &s.Links[i])
		}
	}
	return out
}

// IsUpper reports whether upper sits above lower, directly or through
// other devices: the kernel's netdev_has_upper_dev_all_rcu(lower, upper).
// A VLAN or macvlan is an upper device of its lower device; a bond, team
// or bridge is an upper device of its ports. A link is not its own upper.
func (s *Snapshot) IsUpper(upper, lower string) bool {
	u, ok := s.ByName(upper)
	if !ok || upper == lower {
		return false
	}
	seen := map[int]bool{u.Index: true}
	stack := []*Link{u}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, lo := range s.lowers(cur) {
			if lo.Name == lower {
				return true
			}
			if !seen[lo.Index] {
				seen[lo.Index] = true
				stack = append(stack, lo)
			}
		}
	}
	return false
}

// Master returns the link l is enslaved to, if any.
func (s *Snapshot) Master(l *Link) (*Link, bool) {
	if l.MasterIndex == 0 {
		return nil, false
	}
	return s.ByIndex(l.MasterIndex)
}

// Route is the answer of a route lookup: the egress netdev and the source
// address the kernel would use for a destination.
type Route struct {
	Dst     netip.Addr `json:"dst"`
	Netdev  string     `json:"netdev"`
	Ifindex int        `json:"ifindex"`
	Src     netip.Addr `json:"src"` // preferred source address; invalid when the route has none
	Gateway netip.Addr `json:"gateway"`
}

// ConnectedRoute answers a route lookup from the snapshot's addresses
// alone, the way the kernel's connected (scope link) routes would: the
// link holding an address whose prefix contains dst, the longest prefix
// winning, with that address as the source. It knows nothing of static
// routes, policy routing or gateways; use Handle.RouteGet for the real
// answer. IPv6 link-local destinations match no link (they need a zone).
func (s *Snapshot) ConnectedRoute(dst netip.Addr) (Route, error) {
	dst = dst.Unmap()
	best := -1
	var r Route
	for _, l := range s.Links {
		if l.OperState == "down" {
			continue
		}
		for _, p := range l.Addrs {
			if p.Addr().Is4() != dst.Is4() || !p.Masked().Contains(dst) {
				continue
			}
			if p.Addr().Is6() && p.Addr().IsLinkLocalUnicast() {
				continue
			}
			if p.Bits() > best {
				best = p.Bits()
				r = Route{Dst: dst, Netdev: l.Name, Ifindex: l.Index, Src: p.Addr()}
			}
		}
	}
	if best < 0 {
		return Route{}, fmt.Errorf("vlan: no connected route to %s in the snapshot", dst)
	}
	return r, nil
}
