package gid

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/roce-probe/roce-probe/vlan"
)

// Preferences narrow Select's choice. The zero value asks for nothing
// beyond reaching the destination.
type Preferences struct {
	// Version is 1 or 2 to accept only RoCE v1 or v2 entries; 0 accepts
	// both and prefers v2.
	Version int
	// Family is 4 or 6 to accept only IPv4-mapped or IPv6 GIDs; 0 takes
	// the destination's family.
	Family int
	// Netdev accepts only entries on this netdev ("" for any).
	Netdev string
	// VLAN accepts only entries whose frames carry this VLAN ID; a
	// pointer to NoVLAN accepts only untagged entries; nil for any.
	VLAN *uint16
	// Subnet accepts only entries whose address is in it (invalid for any).
	Subnet netip.Prefix
	// Exclude rejects the listed indices with the given reason, e.g. the
	// stale entries Diff finds (a GID whose address is no longer
	// configured: the peer's replies would go nowhere).
	Exclude map[int]string
}

// NoVLAN as Preferences.VLAN asks for untagged entries (the kernel's
// 0xffff "no VLAN").
const NoVLAN uint16 = 0xffff

// Verdict is Select's judgement of one entry.
type Verdict string

// Verdicts.
const (
	Selected Verdict = "selected" // the chosen entry
	Usable   Verdict = "usable"   // would work too, but ranks lower
	Rejected Verdict = "rejected" // cannot be used for this destination
)

// Reason explains the verdict on one entry.
type Reason struct {
	Index   int     `json:"index"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// Selection is Select's answer for one port.
type Selection struct {
	Entry    Entry             // the selected entry; valid only when Found
	Found    bool              // false when every entry was rejected
	Dst      GID               // the destination
	Route    *vlan.RouteResult // the route lookup used, nil if none was made or it failed
	RouteErr error             // why the route lookup failed, if it did
	Reasons  []Reason          // one per non-empty entry, index order
}

// ErrNoEntry is wrapped by Select's error when no entry can reach the
// destination.
var ErrNoEntry = errors.New("no usable GID entry")

// Select picks the source GID index of a port (entries: its table, as
// read and mapped) for destination dst and explains the verdict on every
// other non-empty entry.
//
// For an IP destination (an IPv4-mapped or non-link-local IPv6 GID) and a
// namespace ns (nil: no route lookup), the route to dst decides the
// netdev, as in rdma_cm:
// entries on other netdevs are rejected, and the entry whose address is
// the route's source address ranks first. Then RoCE v2 ranks before v1
// (unless prefs.Version says otherwise) and lower indices before higher
// ones. Link-local GIDs are rejected for destinations that are not
// link-local, and the other way round. Without a namespace nothing ties the
// destination to a netdev: any entry of the right family and scope is
// usable, and Preferences (Netdev, VLAN, Subnet) must narrow the choice.
// The error wraps ErrNoEntry when nothing is usable; the Selection still
// carries the reasons.
func Select(entries []Entry, dst GID, prefs Preferences, ns *vlan.Namespace) (Selection, error) {
	sel := Selection{Dst: dst}
	if err := prefs.validate(); err != nil {
		return sel, err
	}
	if dst.IsZero() {
		return sel, fmt.Errorf("gid: destination %s is the zero GID: want an IP address or a GID", dst)
	}
	dstFam := family(dst)
	wantFam := prefs.Family
	if wantFam == 0 {
		wantFam = dstFam
	}
	dstLL := dst.Kind().LinkLocal()
	if ns != nil && !dstLL && !dst.IsMulticast() {
		r, err := ns.RouteGet(dst.Addr())
		if err != nil {
			sel.RouteErr = err
		} else {
			sel.Route = &r
		}
	}
	var cands []cand
	for _, e := range entries {
		if e.Empty {
			continue
		}
		if why := rejectReason(e, dst, dstFam, wantFam, dstLL, prefs, sel.Route); why != "" {
			sel.Reasons = append(sel.Reasons, Reason{e.Index, Rejected, why})
			continue
		}
		c := cand{e: e}
		c.why = describe(e)
		if sel.Route != nil && sel.Route.Src.IsValid() && e.IP == sel.Route.Src {
			c.rank[0] = 0
			c.why += fmt.Sprintf("; the route's source address %s on %s (what rdma_cm uses)", e.IP, e.Netdev)
		} else {
			c.rank[0] = 1
		}
		if prefs.Version == 0 && e.Type != TypeRoCEv2 {
			c.rank[1] = 1
		}
		c.rank[2] = e.Index
		cands = append(cands, c)
		sel.Reasons = append(sel.Reasons, Reason{Index: e.Index, Verdict: Usable})
	}
	if len(cands) == 0 {
		sort.Slice(sel.Reasons, func(i, j int) bool { return sel.Reasons[i].Index < sel.Reasons[j].Index })
		return sel, fmt.Errorf("gid: %w for destination %s", ErrNoEntry, dst)
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i].rank, cands[j].rank
		for k := range a {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return false
	})
	best := cands[0]
	sel.Entry, sel.Found = best.e, true
	for i := range sel.Reasons {
		r := &sel.Reasons[i]
		if r.Verdict != Usable {
			continue
		}
		for _, c := range cands {
			if c.e.Index != r.Index {
				continue
			}
			if c.e.Index == best.e.Index {
				r.Verdict, r.Reason = Selected, c.why
			} else {
				r.Reason = c.why + "; ranks below index " + fmt.Sprint(best.e.Index) + " (" + whyBetter(best.rank, c.rank) + ")"
			}
		}
	}
	return sel, nil
}

// cand is an entry that passed every check, with its ranking key
// (route source address, RoCE v2, index) and description.
type cand struct {
	e    Entry
	rank [3]int
	why  string
}

// whyBetter says why ranking key a beats b.
func whyBetter(a, b [3]int) string {
	switch {
	case a[0] != b[0]:
		return "that one holds the route's source address"
	case a[1] != b[1]:
		return "RoCE v2 is preferred"
	}
	return "lower index"
}

func describe(e Entry) string {
	s := fmt.Sprintf("%s %s on %s", e.Type, e.IP, orDash(e.Netdev))
	if e.VLAN != nil {
		s += fmt.Sprintf(" (VLAN %d)", *e.VLAN)
	} else if e.VLANChain != nil {
		s += " (untagged)"
	}
	return s
}

func (p Preferences) validate() error {
	if p.Version != 0 && p.Version != 1 && p.Version != 2 {
		return fmt.Errorf("gid: RoCE version %d is not valid: want 1, 2 or 0 for either", p.Version)
	}
	if p.Family != 0 && p.Family != 4 && p.Family != 6 {
		return fmt.Errorf("gid: address family %d is not valid: want 4, 6 or 0 for the destination's", p.Family)
	}
	if p.VLAN != nil && *p.VLAN > 4095 && *p.VLAN != NoVLAN {
		return fmt.Errorf("gid: VLAN %d is not valid: want 0..4095", *p.VLAN)
	}
	return nil
}

func famName(f int) string {
	if f == 4 {
		return "IPv4"
	}
	return "IPv6"
}

// Unusable returns why a workload cannot use entry e as its source GID to
// reach other hosts, or "" when it can. It is the one rule of a usable
// entry: Select applies it to every entry (with the destination's own
// checks in between), and the fabric's GID index of a network is the
// lowest entry it accepts. An entry is refused when it is in exclude
// (with that reason: the stale entries of a port, which host.View.Stale
// lists), an empty slot, not a RoCE entry (an InfiniBand GID), on a
// netdev of another network namespace, a multicast GID, link-local (the
// default GIDs, fe80::/10 and 169.254/16 reach one link only), or on a
// netdev whose operstate is known and not up (vlan.OperNotUp: the kernel
// keeps its GIDs, but frames go nowhere).
func Unusable(e Entry, exclude map[int]string) string {
	if why := entryReason(e, exclude); why != "" {
		return why
	}
	if why := linkLocalReason(e, GID{}, false); why != "" {
		return why
	}
	return operReason(e)
}

// entryReason returns why e cannot be a source GID whatever the
// destination and the preferences, or "": Unusable's first checks.
func entryReason(e Entry, exclude map[int]string) string {
	if why, ok := exclude[e.Index]; ok {
		return why
	}
	switch {
	case e.Empty:
		return "empty slot"
	case e.Type != TypeRoCEv1 && e.Type != TypeRoCEv2:
		if e.Type == TypeIB {
			return "InfiniBand GID: not usable on Ethernet"
		}
		return fmt.Sprintf("GID type %q: not a RoCE type", e.Type)
	case e.Netns == NetnsOther:
		return "its netdev is not in this network namespace (another container's or the host's address): MLNX_OFED refuses it with ENODEV, and upstream sends with an address whose replies go to the other namespace"
	case e.GID.IsMulticast():
		return "multicast GID: cannot be a source address"
	}
	return ""
}

// linkLocalReason returns why e cannot reach dst for its scope, or "": a
// link-local entry reaches only its link, and a link-local destination
// needs a link-local source. dst is only named in the message; dstLL
// false with a zero dst means "other hosts".
func linkLocalReason(e Entry, dst GID, dstLL bool) string {
	to := "other hosts"
	if !dst.IsZero() {
		to = dst.Addr().String()
	}
	ll := e.Default || e.Kind.LinkLocal() || e.GID.Kind().LinkLocal()
	switch {
	case !dstLL && ll:
		if e.Default {
			return fmt.Sprintf("default GID (link-local %s): reaches only the local link, not %s", e.IP, to)
		}
		return fmt.Sprintf("link-local address %s: reaches only the local link, not %s", e.IP, to)
	case dstLL && !ll:
		return fmt.Sprintf("destination %s is link-local; this %s address is not", to, e.Kind)
	}
	return ""
}

// operReason returns why e's netdev passes no traffic, or "".
func operReason(e Entry) string {
	if vlan.OperNotUp(e.State) {
		return fmt.Sprintf("netdev %s %s (the kernel keeps its GIDs, but frames go nowhere)", e.Netdev, vlan.OperText(e.State))
	}
	return ""
}

// rejectReason returns why e cannot serve dst, or "": Unusable's rule with
// the checks of the destination and the preferences between its parts.
func rejectReason(e Entry, dst GID, dstFam, wantFam int, dstLL bool, p Preferences, r *vlan.RouteResult) string {
	if why := entryReason(e, p.Exclude); why != "" {
		return why
	}
	switch {
	case p.Version == 1 && e.Type != TypeRoCEv1:
		return fmt.Sprintf("%s, RoCE v1 asked for", e.Type)
	case p.Version == 2 && e.Type != TypeRoCEv2:
		return fmt.Sprintf("%s, RoCE v2 asked for", e.Type)
	case family(e.GID) != wantFam:
		if p.Family != 0 {
			return fmt.Sprintf("%s GID, %s asked for", famName(family(e.GID)), famName(wantFam))
		}
		return fmt.Sprintf("%s GID, destination %s is %s", famName(family(e.GID)), dst.Addr(), famName(dstFam))
	case p.Netdev != "" && e.Netdev != p.Netdev:
		return fmt.Sprintf("on netdev %s, netdev %s asked for", orDash(e.Netdev), p.Netdev)
	case p.VLAN != nil && !vlanMatches(e.VLAN, *p.VLAN):
		return fmt.Sprintf("%s, %s asked for", vlanText(e.VLAN), vlanText(p.VLAN))
	case p.Subnet.IsValid() && !p.Subnet.Contains(e.IP):
		return fmt.Sprintf("address %s is outside %s", e.IP, p.Subnet)
	}
	if why := linkLocalReason(e, dst, dstLL); why != "" {
		return why
	}
	if r != nil && r.Dev != "" && e.Netdev != r.Dev {
		return fmt.Sprintf("on %s, but the route to %s leaves through %s", e.Netdev, dst.Addr(), r.Dev)
	}
	return operReason(e)
}

func vlanMatches(have *uint16, want uint16) bool {
	if want == NoVLAN {
		return have == nil
	}
	return have != nil && *have == want
}

func vlanText(v *uint16) string {
	if v == nil || *v == NoVLAN {
		return "untagged"
	}
	return fmt.Sprintf("VLAN %d", *v)
}

// RDMACM returns the entry the kernel's rdma_cm uses as source GID for an
// IP destination reached through route r on a port supporting types
// (drivers/infiniband/core/cma.c, cma_validate_port, cma_resolve_iboe_route
// and cma_add_one; Linux 6.1): the first entry, in index order, whose GID
// is the route's source address (rdma_ip2gid), whose netdev is the route's
// egress netdev, and whose type is RoCE v2 when the port supports it
// (rdma_cm's default GID type), RoCE v1 otherwise.
func RDMACM(entries []Entry, types []Type, r vlan.RouteResult) (Entry, error) {
	if !r.Src.IsValid() {
		return Entry{}, fmt.Errorf("gid: rdma_cm: the route to %s has no source address", r.NextHop)
	}
	want := TypeRoCEv1
	for _, t := range types {
		if t == TypeRoCEv2 {
			want = TypeRoCEv2
		}
	}
	g := FromAddr(r.Src)
	for _, e := range entries {
		if !e.Empty && e.GID == g && e.Type == want && e.Netdev == r.Dev {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("gid: rdma_cm: no %s entry for source %s on %s (the route's netdev): rdma_resolve_addr/route fails", want, r.Src, r.Dev)
}
