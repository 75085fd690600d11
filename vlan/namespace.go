package vlan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// maxDepth bounds walks down a chain of stacked devices; the kernel limits
// nesting to 8 (MAX_NEST_DEV), so a longer chain means a broken namespace.
const maxDepth = 16

// Namespace is one network namespace at one moment: its links with their
// addresses, its routes and neighbours, and the sysctls that decide TTLs.
// It is plain data, read from the kernel by roce-probe's collector (the
// host snapshot) or decoded from JSON; its methods never touch the kernel.
type Namespace struct {
	// Netns names the namespace: a name from `ip netns list`, or "" for
	// the namespace the collector ran in (null in JSON).
	Netns     string     `json:"-"`
	Links     []Link     `json:"links"`
	Routes    []Route    `json:"routes"`
	Neighbors []Neighbor `json:"neighbors"`
	Sysctls   Sysctls    `json:"sysctls"`

	idx *netIndex // built by Freeze
}

// namespaceJSON is Namespace's wire form: netns is null for the
// collector's own namespace.
type namespaceJSON struct {
	Netns     *string    `json:"netns"`
	Links     []Link     `json:"links"`
	Routes    []Route    `json:"routes"`
	Neighbors []Neighbor `json:"neighbors"`
	Sysctls   Sysctls    `json:"sysctls"`
}

// MarshalJSON writes the keys netns (null for the collector's own
// namespace), links, routes, neighbors and sysctls.
func (n Namespace) MarshalJSON() ([]byte, error) {
	w := namespaceJSON{Links: n.Links, Routes: n.Routes, Neighbors: n.Neighbors, Sysctls: n.Sysctls}
	if n.Netns != "" {
		w.Netns = &n.Netns
	}
	if w.Links == nil {
		w.Links = []Link{}
	}
	if w.Routes == nil {
		w.Routes = []Route{}
	}
	if w.Neighbors == nil {
		w.Neighbors = []Neighbor{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes; unknown keys are
// errors. It does not validate: call Validate (Decode does both).
func (n *Namespace) UnmarshalJSON(b []byte) error {
	var w namespaceJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	*n = Namespace{Links: w.Links, Routes: w.Routes, Neighbors: w.Neighbors, Sysctls: w.Sysctls}
	if w.Netns != nil {
		n.Netns = *w.Netns
	}
	return nil
}

// Decode reads a Namespace written as JSON and validates it.
func Decode(r io.Reader) (*Namespace, error) {
	var n Namespace
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return nil, fmt.Errorf("vlan: decoding namespace: %w", err)
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	n.Freeze()
	return &n, nil
}

// Freeze builds the namespace's lookup tables (routes sorted for
// longest-prefix match, neighbours and local addresses by key) once, so
// that lookups cost no sorting. Call it when the namespace is complete and
// will not change; Decode and roce-probe's collector do. Lookups on a
// namespace that was not frozen build the tables each time.
func (s *Namespace) Freeze() { s.idx = nil; s.idx = s.index() }

// Validate checks the invariants every namespace read from the kernel has:
// link names and ifindexes unique and non-empty, VLAN links carrying a tag
// with an ID below 4096, routes with a valid destination prefix.
func (s *Namespace) Validate() error {
	names := map[string]bool{}
	idx := map[int]bool{}
	for i, l := range s.Links {
		if l.Name == "" {
			return fmt.Errorf("vlan: link %d: empty name", i)
		}
		if l.Index <= 0 {
			return fmt.Errorf("vlan: link %q: ifindex %d: want ≥ 1", l.Name, l.Index)
		}
		if names[l.Name] {
			return fmt.Errorf("vlan: link %q appears twice", l.Name)
		}
		if idx[l.Index] {
			return fmt.Errorf("vlan: link %q: ifindex %d used twice", l.Name, l.Index)
		}
		names[l.Name], idx[l.Index] = true, true
		if l.Kind == KindVLAN {
			if l.Tag == nil {
				return fmt.Errorf("vlan: link %q: kind vlan without a tag", l.Name)
			}
			if l.Tag.ID > 4095 {
				return fmt.Errorf("vlan: link %q: VLAN ID %d: want 0..4095", l.Name, l.Tag.ID)
			}
		}
	}
	for i, r := range s.Routes {
		if !r.Dst.IsValid() {
			return fmt.Errorf("vlan: routes[%d] (netdev %q, table %d): no destination prefix: want e.g. 10.0.0.0/24 or 0.0.0.0/0", i, r.Dev, r.Table)
		}
	}
	for i, nb := range s.Neighbors {
		if !nb.IP.IsValid() {
			return fmt.Errorf("vlan: neighbors[%d] (netdev %q): no IP address", i, nb.Dev)
		}
	}
	return nil
}

// ByName returns the link called name.
func (s *Namespace) ByName(name string) (*Link, bool) {
	for i := range s.Links {
		if s.Links[i].Name == name {
			return &s.Links[i], true
		}
	}
	return nil, false
}

// ByIndex returns the link with ifindex idx.
func (s *Namespace) ByIndex(idx int) (*Link, bool) {
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
// lower devices. Namespace.Describe is the one walk down a stack: every
// other package takes what it needs from a Description.
type Description struct {
	Link
	// Netns is the namespace's name ("" for the collector's own).
	Netns string
	// Chain lists the VLAN tags a frame sent through this link carries,
	// outermost first (for a QinQ stack, the 802.1ad tag then the 802.1Q
	// tag), each with the VLAN device that adds it and that device's QoS
	// maps. Empty (not nil) for an untagged link.
	Chain []ChainTag
	// L2VLANID is the VLAN ID the kernel's rdma_read_gid_l2_fields
	// (drivers/infiniband/core/cache.c) derives for a GID on this netdev
	// and hardware RoCE drivers write into the tag they insert: the link's
	// own VID if it is a VLAN device, else the VID of its first-level lower
	// device if that is a VLAN device (a macvlan on a VLAN), else nil. For
	// a QinQ stack it is the inner tag's ID; Chain says what the wire
	// carries.
	L2VLANID *uint16
	// Lowers names the devices below this one, nearest first, down to
	// Real.
	Lowers []string
	// Real is the device at the bottom of the VLAN/macvlan/ipvlan stack:
	// the netdev the frames leave through (a NIC port, veth or bond).
	Real string
	// LowerInOtherNetns is true when the stack continues into another
	// namespace (the lower device is not in this namespace); Chain and
	// Real then stop at the last device visible here.
	LowerInOtherNetns bool
	// Bond is, when Real is a bond, the bond and the slaves RoCE traffic
	// through it leaves by; nil otherwise.
	Bond *Bond
}

// Bond is a bond at the bottom of a stack: its mode and which of its
// slaves carry the traffic sent through it. A bond has no DCB of its own
// (drivers/net/bonding registers no dcbnl_ops): each slave, a NIC port,
// classifies, queues and pauses by its own DCB. So does a RoCE LAG device
// (mlx5_bond_0): mlx5 registers its dcbnl_ops on each PF netdev
// (mlx5e_dcbnl_build_netdev, drivers/net/ethernet/mellanox/mlx5/core/
// en_dcbnl.c) and its LAG code (mlx5/core/lag/) only maps the two PFs'
// ports to one RDMA device; trust, PFC and buffers stay per port.
type Bond struct {
	Name string
	// Mode is the bond's mode (Link.BondMode); "" when the snapshot did
	// not record it.
	Mode string
	// Slaves are the slaves that carry the bond's traffic, in ifindex
	// order: in active-backup the active slave only (the bond sends on
	// curr_active_slave: drivers/net/bonding/bond_main.c,
	// bond_xmit_activebackup); in every other mode (802.3ad, balance-xor
	// hash flows over them) every slave. A bond whose mode was not
	// recorded counts as active-backup when it names an active slave (the
	// kernel reports one for active-backup, balance-tlb and balance-alb),
	// else as hashing over every slave.
	Slaves []string
	// Backup lists the other slaves: active-backup's standby ones, which
	// carry the traffic after a failover.
	Backup []string
}

// Members lists every slave of the bond: those that carry its traffic
// (Slaves), then the standby ones (Backup). Each is a NIC port with its
// own DCB state and counters, which a RoCE LAG's traffic may cross.
func (b *Bond) Members() []string {
	return append(append([]string{}, b.Slaves...), b.Backup...)
}

// BondOf returns the bond name is a slave of: for an RDMA port whose
// netdev the kernel or an older snapshot names as one slave of a RoCE LAG
// bond, the netdev its traffic actually goes through.
func (s *Namespace) BondOf(name string) (*Link, bool) {
	l, ok := s.ByName(name)
	if !ok {
		return nil, false
	}
	m, ok := s.Master(l)
	if !ok || m.Kind != KindBond {
		return nil, false
	}
	return m, true
}

// PortNetdev is the netdev the traffic of an RDMA port whose netdev is
// recorded as name goes through: the bond when name is a bond's slave (a
// RoCE LAG device, whose port sysfs and some kernels name by one slave),
// else name itself. Every reader of a port's netdev goes through it.
func (s *Namespace) PortNetdev(name string) string {
	if s == nil {
		return name
	}
	if b, ok := s.BondOf(name); ok {
		return b.Name
	}
	return name
}

// bondOf describes bond b: its mode and carrying and standby slaves.
func (s *Namespace) bondOf(b *Link) *Bond {
	out := &Bond{Name: b.Name, Mode: b.BondMode, Slaves: []string{}, Backup: []string{}}
	var slaves []*Link
	for i := range s.Links {
		if s.Links[i].MasterIndex == b.Index && s.Links[i].Index != b.Index {
			slaves = append(slaves, &s.Links[i])
		}
	}
	sort.Slice(slaves, func(i, j int) bool { return slaves[i].Index < slaves[j].Index })
	onlyActive := b.BondMode == "active-backup" || (b.BondMode == "" && b.ActiveSlave != 0)
	for _, l := range slaves {
		if onlyActive && l.Index != b.ActiveSlave {
			out.Backup = append(out.Backup, l.Name)
		} else {
			out.Slaves = append(out.Slaves, l.Name)
		}
	}
	return out
}

// RealTags reports whether Real, the bottom of the stack visible in this
// namespace, is itself a VLAN device whose lower device is in another
// namespace (a container's VLAN interface): the kernel adds its tag,
// Chain[0], to every frame written on it, with the PCP of its
// egress-qos-map, and strips it from every frame it receives.
func (d Description) RealTags() bool {
	return d.LowerInOtherNetns && len(d.Chain) > 0 && d.Chain[0].Netdev == d.Real
}

// Boundary says, for a netdev whose stack continues into another network
// namespace (LowerInOtherNetns: a pod's macvlan, ipvlan, VLAN device or VF
// representor whose lower device is in the host's namespace), what cannot
// be known from this one and why; "" when the whole stack is visible. The
// VLAN tags added below the boundary, the PCP they carry and the DCB of the
// real device are then unknown — never "untagged".
func (d Description) Boundary() string {
	if !d.LowerInOtherNetns {
		return ""
	}
	where := "this network namespace"
	if d.Netns != "" {
		where = "network namespace " + d.Netns
	}
	return fmt.Sprintf("the lower device of %s is in another network namespace (IFLA_LINK_NETNSID), not in %s: the VLAN tags added below it, their PCP, the real netdev and its DCB cannot be seen from here", d.Name, where)
}

// Outermost returns the outermost tag, the one the first switch
// classifies on, or false for an untagged link.
func (d Description) Outermost() (ChainTag, bool) {
	if len(d.Chain) == 0 {
		return ChainTag{}, false
	}
	return d.Chain[0], true
}

// ErrNoLink is returned (wrapped) when a namespace has no link of the
// name asked for.
var ErrNoLink = errors.New("no such netdev")

// Describe resolves the link called name: its tag chain, the VLAN ID the
// RDMA stack uses, and the real device below it.
func (s *Namespace) Describe(name string) (Description, error) {
	l, ok := s.ByName(name)
	if !ok {
		return Description{}, fmt.Errorf("vlan: %w %q in %s", ErrNoLink, name, s.What())
	}
	d := Description{Link: *l, Netns: s.Netns, Chain: []ChainTag{}, Lowers: []string{}}
	var inner []ChainTag // innermost first
	cur := l
	for depth := 0; ; depth++ {
		if depth > maxDepth {
			return Description{}, fmt.Errorf("vlan: netdev %q: lower-device chain longer than %d (loop in the namespace?)", name, maxDepth)
		}
		if cur.Kind == KindVLAN && cur.Tag != nil {
			inner = append(inner, ChainTag{Tag: *cur.Tag, Netdev: cur.Name, EgressQoS: cur.EgressQoS, IngressQoS: cur.IngressQoS})
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
			return Description{}, fmt.Errorf("vlan: netdev %q: lower device ifindex %d of %q is not in %s", name, cur.ParentIndex, cur.Name, s.What())
		}
		if depth == 0 && l.Kind != KindVLAN && next.Kind == KindVLAN && next.Tag != nil {
			id := next.Tag.ID
			d.L2VLANID = &id
		}
		d.Lowers = append(d.Lowers, next.Name)
		cur = next
	}
	if l.Kind == KindVLAN && l.Tag != nil {
		id := l.Tag.ID
		d.L2VLANID = &id
	}
	for i := len(inner) - 1; i >= 0; i-- {
		d.Chain = append(d.Chain, inner[i])
	}
	d.Real = cur.Name
	if cur.Kind == KindBond {
		d.Bond = s.bondOf(cur)
	}
	return d, nil
}

// What names the namespace for messages: "this network namespace" or
// "network namespace NAME".
func (s *Namespace) What() string {
	if s.Netns == "" {
		return "this network namespace"
	}
	return "network namespace " + s.Netns
}

// lowers returns the direct lower devices of l: the IFLA_LINK device of a
// stacked kind, and every link enslaved to l (bond, team and bridge ports).
func (s *Namespace) lowers(l *Link) []*Link {
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
func (s *Namespace) IsUpper(upper, lower string) bool {
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
func (s *Namespace) Master(l *Link) (*Link, bool) {
	if l.MasterIndex == 0 {
		return nil, false
	}
	return s.ByIndex(l.MasterIndex)
}
