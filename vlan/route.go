package vlan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"github.com/roce-probe/roce-probe/internal/errno"
	"github.com/roce-probe/roce-probe/internal/null"
)

// Routing table IDs (RT_TABLE_*).
const (
	TableDefault = 253
	TableMain    = 254
	TableLocal   = 255
)

// RouteType is an rtnetlink route type (RTN_*), by its iproute2 name.
type RouteType string

// Route types.
const (
	RouteUnicast     RouteType = "unicast"
	RouteLocal       RouteType = "local"
	RouteBroadcast   RouteType = "broadcast"
	RouteAnycast     RouteType = "anycast"
	RouteMulticast   RouteType = "multicast"
	RouteBlackhole   RouteType = "blackhole"
	RouteUnreachable RouteType = "unreachable"
	RouteProhibit    RouteType = "prohibit"
	RouteThrow       RouteType = "throw"
)

// Route is one route of a Namespace (RTM_NEWROUTE), plain data. Its JSON
// form (docs/json.md, "route") has every key always, null for what the
// route does not have; it decodes with the field tags (null leaves the
// zero value).
type Route struct {
	Table    int          `json:"table"`     // TableLocal, TableMain, ...
	Type     RouteType    `json:"type"`      // "unicast", "local", ...
	Dst      netip.Prefix `json:"dst"`       // destination prefix; 0.0.0.0/0 or ::/0 for a default route
	Gateway  netip.Addr   `json:"gateway"`   // next hop; invalid for on-link routes
	Dev      string       `json:"netdev"`    // output device name
	Ifindex  int          `json:"ifindex"`   // output device index
	PrefSrc  netip.Addr   `json:"prefsrc"`   // preferred source address
	Priority int          `json:"metric"`    // metric: lower wins among equal prefixes
	HopLimit int          `json:"hop_limit"` // RTAX_HOPLIMIT metric; 0 = not set
	MTU      int          `json:"mtu"`       // RTAX_MTU metric; 0 = not set
}

// routeJSON is Route's wire form.
type routeJSON struct {
	Table    int          `json:"table"`
	Type     RouteType    `json:"type"`
	Dst      netip.Prefix `json:"dst"`
	Gateway  *netip.Addr  `json:"gateway"`
	Dev      *string      `json:"netdev"`
	Ifindex  *int         `json:"ifindex"`
	PrefSrc  *netip.Addr  `json:"prefsrc"`
	Priority int          `json:"metric"`
	HopLimit *int         `json:"hop_limit"`
	MTU      *int         `json:"mtu"`
}

func addrPtr(a netip.Addr) *netip.Addr {
	if !a.IsValid() {
		return nil
	}
	return &a
}

// MarshalJSON writes {table, type, dst, gateway, netdev, ifindex,
// prefsrc, metric, hop_limit, mtu}: null for no gateway, device,
// preferred source, hop limit or MTU metric.
func (r Route) MarshalJSON() ([]byte, error) {
	return json.Marshal(routeJSON{Table: r.Table, Type: r.Type, Dst: r.Dst, Gateway: addrPtr(r.Gateway), Dev: null.String(r.Dev),
		Ifindex: null.Int(r.Ifindex), PrefSrc: addrPtr(r.PrefSrc), Priority: r.Priority, HopLimit: null.Int(r.HopLimit), MTU: null.Int(r.MTU)})
}

// String returns the route in `ip route` form.
func (r Route) String() string {
	var b strings.Builder
	if r.Type != "" && r.Type != RouteUnicast {
		b.WriteString(string(r.Type) + " ")
	}
	if r.Dst.Bits() == 0 {
		b.WriteString("default")
	} else {
		b.WriteString(r.Dst.String())
	}
	if r.Gateway.IsValid() {
		b.WriteString(" via " + r.Gateway.String())
	}
	if r.Dev != "" {
		b.WriteString(" dev " + r.Dev)
	}
	switch r.Table {
	case TableMain, 0:
	case TableLocal:
		b.WriteString(" table local")
	default:
		fmt.Fprintf(&b, " table %d", r.Table)
	}
	if r.Priority != 0 {
		fmt.Fprintf(&b, " metric %d", r.Priority)
	}
	if r.HopLimit != 0 {
		fmt.Fprintf(&b, " hoplimit %d", r.HopLimit)
	}
	if r.MTU != 0 {
		fmt.Fprintf(&b, " mtu %d", r.MTU)
	}
	return b.String()
}

// NUDState is a neighbour entry's state (NUD_* bits of ndm_state).
type NUDState uint16

// Neighbour states.
const (
	NUDIncomplete NUDState = 0x01
	NUDReachable  NUDState = 0x02
	NUDStale      NUDState = 0x04
	NUDDelay      NUDState = 0x08
	NUDProbe      NUDState = 0x10
	NUDFailed     NUDState = 0x20
	NUDNoARP      NUDState = 0x40
	NUDPermanent  NUDState = 0x80
	// NUDValid is the kernel's NUD_VALID: states whose MAC address is used
	// (dst_fetch_ha copies the MAC only in these).
	NUDValid = NUDPermanent | NUDNoARP | NUDReachable | NUDProbe | NUDStale | NUDDelay
)

var nudNames = []struct {
	s    NUDState
	name string
}{
	{NUDIncomplete, "INCOMPLETE"}, {NUDReachable, "REACHABLE"}, {NUDStale, "STALE"}, {NUDDelay, "DELAY"},
	{NUDProbe, "PROBE"}, {NUDFailed, "FAILED"}, {NUDNoARP, "NOARP"}, {NUDPermanent, "PERMANENT"},
}

// String returns the iproute2 names ("REACHABLE", "STALE|...") or "NONE".
func (s NUDState) String() string {
	if s == 0 {
		return "NONE"
	}
	var parts []string
	for _, n := range nudNames {
		if s&n.s != 0 {
			parts = append(parts, n.name)
		}
	}
	if rest := s &^ (NUDValid | NUDIncomplete | NUDFailed); rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", uint16(rest)))
	}
	return strings.Join(parts, "|")
}

// Valid reports whether the entry's MAC address is usable (NUD_VALID).
func (s NUDState) Valid() bool { return s&NUDValid != 0 }

// MarshalText implements encoding.TextMarshaler with String's form.
func (s NUDState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText parses String's form.
func (s *NUDState) UnmarshalText(b []byte) error {
	var v NUDState
	if string(b) == "NONE" || len(b) == 0 {
		*s = 0
		return nil
	}
	for _, p := range strings.Split(string(b), "|") {
		found := false
		for _, n := range nudNames {
			if strings.EqualFold(p, n.name) {
				v |= n.s
				found = true
			}
		}
		if !found {
			return fmt.Errorf("vlan: unknown neighbour state %q: want REACHABLE, STALE, DELAY, PROBE, INCOMPLETE, FAILED, NOARP, PERMANENT or NONE", p)
		}
	}
	*s = v
	return nil
}

// Neighbor is one entry of the neighbour table (ARP / NDP cache). Its
// JSON form is {ip, netdev, ifindex, mac, state}, null for an unknown
// ifindex and for no MAC (docs/json.md, "neighbor"); it decodes with the
// field tags.
type Neighbor struct {
	IP      netip.Addr `json:"ip"`
	Dev     string     `json:"netdev"`
	Ifindex int        `json:"ifindex"`
	MAC     MAC        `json:"mac"`
	State   NUDState   `json:"state"`
}

type neighborJSON struct {
	IP      netip.Addr `json:"ip"`
	Dev     string     `json:"netdev"`
	Ifindex *int       `json:"ifindex"`
	MAC     MAC        `json:"mac"`
	State   NUDState   `json:"state"`
}

// MarshalJSON writes {ip, netdev, ifindex, mac, state}.
func (nb Neighbor) MarshalJSON() ([]byte, error) {
	return json.Marshal(neighborJSON{IP: nb.IP, Dev: nb.Dev, Ifindex: null.Int(nb.Ifindex), MAC: nb.MAC, State: nb.State})
}

// Sysctls are the namespace's sysctls that decide what the kernel writes
// into TTL and hop-limit fields. Unknown values are absent (null).
type Sysctls struct {
	// IPv4DefaultTTL is net.ipv4.ip_default_ttl; nil = not read (the
	// kernel default is 64).
	IPv4DefaultTTL *int `json:"ipv4_default_ttl"`
	// IPv6HopLimit is net.ipv6.conf.<netdev>.hop_limit by netdev name
	// ("default" and "all" included); a missing netdev = not read.
	IPv6HopLimit map[string]int `json:"ipv6_hop_limit"`
}

type neighKey struct {
	ifindex int
	ip      netip.Addr
}

type neighDevKey struct {
	dev string
	ip  netip.Addr
}

// netIndex is built once per namespace (Freeze): routes by family sorted for
// longest-prefix match, neighbours and links by key.
type netIndex struct {
	routes4, routes6 []Route                  // sorted: table order, then prefix length descending, then metric
	neigh            map[neighKey]Neighbor    // entries with an ifindex
	neighDev         map[neighDevKey]Neighbor // entries by device name
	localOwner       map[netip.Addr]*Link
}

var tableOrder = map[int]int{TableLocal: 0, TableMain: 1, TableDefault: 2}

func (n *Namespace) index() *netIndex {
	if n.idx != nil {
		return n.idx
	}
	x := &netIndex{neigh: make(map[neighKey]Neighbor, len(n.Neighbors)), neighDev: make(map[neighDevKey]Neighbor, len(n.Neighbors)), localOwner: map[netip.Addr]*Link{}}
	for i := range n.Links {
		l := &n.Links[i]
		for _, a := range l.Addrs {
			x.localOwner[a.Addr().Unmap()] = l
		}
	}
	for _, r := range n.Routes {
		if _, ok := tableOrder[r.Table]; !ok {
			continue // policy-routing tables are not modelled
		}
		if r.Dst.Addr().Is4() {
			x.routes4 = append(x.routes4, r)
		} else {
			x.routes6 = append(x.routes6, r)
		}
	}
	sortRoutes := func(rs []Route) {
		slices.SortStableFunc(rs, func(a, b Route) int {
			if c := cmp.Compare(tableOrder[a.Table], tableOrder[b.Table]); c != 0 {
				return c
			}
			if c := cmp.Compare(b.Dst.Bits(), a.Dst.Bits()); c != 0 {
				return c
			}
			return cmp.Compare(a.Priority, b.Priority)
		})
	}
	sortRoutes(x.routes4)
	sortRoutes(x.routes6)
	for _, nb := range n.Neighbors {
		ip := nb.IP.Unmap()
		x.neighDev[neighDevKey{ip: ip, dev: nb.Dev}] = nb
		if nb.Ifindex != 0 {
			x.neigh[neighKey{ip: ip, ifindex: nb.Ifindex}] = nb
		}
	}
	return x
}

// LocalOwner returns the link that has the address a, if a is an address
// of this namespace.
func (n *Namespace) LocalOwner(a netip.Addr) (*Link, bool) {
	l, ok := n.index().localOwner[a.Unmap()]
	return l, ok
}

// Neighbor returns the neighbour entry for ip on the device dev (or ifindex).
func (n *Namespace) Neighbor(ip netip.Addr, dev string, ifindex int) (Neighbor, bool) {
	x := n.index()
	ip = ip.Unmap()
	if ifindex != 0 {
		if nb, ok := x.neigh[neighKey{ip: ip, ifindex: ifindex}]; ok {
			return nb, true
		}
	}
	nb, ok := x.neighDev[neighDevKey{ip: ip, dev: dev}]
	return nb, ok
}

// RouteResult is the kernel's route decision for an address handle: the
// route ip_route_output_key / ip6_route_output picked with the sgid's
// netdev as output interface, the next hop whose MAC the frame is sent
// to, and the hop limit the kernel writes into grh.hop_limit. Its JSON
// form is docs/json.md's "route_result".
type RouteResult struct {
	Route *Route // nil when no route matched and IPv4 assumed the destination on-link
	// OnLink is true when IPv4 found no route through the sgid's netdev and
	// the kernel assumed the destination is on that link ("Apparently,
	// routing tables are wrong", ip_route_output_key_hash_rcu).
	OnLink  bool
	Local   bool       // the destination is an address of this host
	NextHop netip.Addr // the gateway, or the destination itself
	Dev     string
	Ifindex int
	// Src is the source address the kernel would use: the route's
	// preferred source, else an address of Dev (see RouteGet); invalid
	// (null) when Dev has none of the destination's family.
	Src netip.Addr
	// HopLimit is what the kernel writes into grh.hop_limit
	// (ip4_dst_hoplimit / ip6_dst_hoplimit), and HopLimitFrom says where
	// it came from; HopLimitFrom is "" (both null in JSON) when the lookup
	// does not decide one (RouteGet).
	HopLimit     int
	HopLimitFrom string
	MTU          int // the route's MTU metric, 0 if unset
}

type routeResultJSON struct {
	Route        *Route      `json:"route"`
	OnLink       bool        `json:"assumed_on_link"`
	Local        bool        `json:"local"`
	NextHop      *netip.Addr `json:"next_hop"`
	Dev          *string     `json:"netdev"`
	Ifindex      *int        `json:"ifindex"`
	Src          *netip.Addr `json:"src"`
	HopLimit     *int        `json:"hop_limit"`
	HopLimitFrom *string     `json:"hop_limit_from"`
	MTU          *int        `json:"mtu"`
}

// MarshalJSON writes {route, assumed_on_link, local, next_hop, netdev,
// ifindex, src, hop_limit, hop_limit_from, mtu}, null for what is not
// known or not set.
func (r RouteResult) MarshalJSON() ([]byte, error) {
	w := routeResultJSON{Route: r.Route, OnLink: r.OnLink, Local: r.Local, NextHop: addrPtr(r.NextHop), Dev: null.String(r.Dev),
		Ifindex: null.Int(r.Ifindex), Src: addrPtr(r.Src), HopLimitFrom: null.String(r.HopLimitFrom), MTU: null.Int(r.MTU)}
	if r.HopLimitFrom != "" {
		w.HopLimit = &r.HopLimit
	}
	return json.Marshal(w)
}

// RouteError is a route lookup that fails, with the errno ibv_create_ah
// returns for it.
type RouteError struct {
	Dst   netip.Addr
	Dev   string
	Errno syscall.Errno
	Route *Route // the route that rejected the destination, if any
	Msg   string
}

// Error names the destination, the netdev, why and the errno.
func (e *RouteError) Error() string {
	from := ""
	if e.Dev != "" {
		from = " from " + e.Dev
	}
	s := fmt.Sprintf("vlan: no usable route to %s%s: %s", e.Dst, from, e.Msg)
	if e.Route != nil {
		s += " (route: " + e.Route.String() + ")"
	}
	return s + " (ibv_create_ah fails with " + errno.Name(e.Errno) + ")"
}

// Unwrap returns the errno.
func (e *RouteError) Unwrap() error { return e.Errno }

func (n *Namespace) defaultTTL() (int, string) {
	if v := n.Sysctls.IPv4DefaultTTL; v != nil && *v > 0 {
		return *v, "net.ipv4.ip_default_ttl"
	}
	return 64, "net.ipv4.ip_default_ttl (not read; kernel default 64)"
}

func (n *Namespace) ipv6HopLimit(dev string) (int, string) {
	if v, ok := n.Sysctls.IPv6HopLimit[dev]; ok && v > 0 {
		return v, "net.ipv6.conf." + dev + ".hop_limit"
	}
	return 64, "net.ipv6.conf." + dev + ".hop_limit (not read; kernel default 64)"
}

// RouteTo looks up the route to dst as rdma_resolve_ip does for an AH
// whose sgid entry's netdev is dev (flowi oif = dev): tables local, main
// and default in that order (policy rules are not modelled), longest
// prefix whose next hop leaves through dev, lowest metric. IPv4 without a
// match assumes the destination is on dev's link; IPv6 fails with
// ENETUNREACH.
func (n *Namespace) RouteTo(dst netip.Addr, dev string, ifindex int) (RouteResult, error) {
	x := n.index()
	dst = dst.Unmap()
	if ifindex == 0 {
		if l, ok := n.ByName(dev); ok {
			ifindex = l.Index
		}
	}
	routes := x.routes6
	if dst.Is4() {
		routes = x.routes4
	}
	matchDev := func(r *Route) bool {
		if r.Dev == "" && r.Ifindex == 0 {
			return true
		}
		if ifindex != 0 && r.Ifindex != 0 {
			return r.Ifindex == ifindex
		}
		return r.Dev == dev
	}
	var found *Route
	for i := range routes {
		r := &routes[i]
		if !r.Dst.Contains(dst) {
			continue
		}
		switch r.Type {
		case RouteBlackhole, RouteUnreachable, RouteProhibit, RouteThrow:
			// Error routes match whatever the output device.
		default:
			// Every other route, local ones included, must leave through
			// the output device (fib_lookup_good_nhc: flowi4_oif must
			// equal the next hop's device).
			if !matchDev(r) {
				continue
			}
		}
		if r.Type == RouteThrow {
			// Lookup continues in the next table.
			t := r.Table
			for i+1 < len(routes) && routes[i+1].Table == t {
				i++
			}
			continue
		}
		found = r
		break
	}
	if found == nil {
		if dst.Is4() {
			ttl, from := n.defaultTTL()
			return RouteResult{OnLink: true, NextHop: dst, Dev: dev, Ifindex: ifindex, HopLimit: ttl, HopLimitFrom: from}, nil
		}
		return RouteResult{}, &RouteError{Dst: dst, Dev: dev, Errno: syscall.ENETUNREACH, Msg: "no IPv6 route through " + dev + " (ip6_route_output with the sgid's netdev as oif)"}
	}
	switch found.Type {
	case RouteBlackhole:
		return RouteResult{}, &RouteError{Dst: dst, Dev: dev, Errno: syscall.EINVAL, Route: found, Msg: "blackhole route"}
	case RouteUnreachable:
		e := syscall.EHOSTUNREACH
		if dst.Is6() {
			e = syscall.ENETUNREACH
		}
		return RouteResult{}, &RouteError{Dst: dst, Dev: dev, Errno: e, Route: found, Msg: "unreachable route"}
	case RouteProhibit:
		return RouteResult{}, &RouteError{Dst: dst, Dev: dev, Errno: syscall.EACCES, Route: found, Msg: "prohibit route"}
	}
	res := RouteResult{Route: found, NextHop: dst, Dev: dev, Ifindex: ifindex, MTU: found.MTU}
	if found.Type == RouteLocal {
		res.Local = true
		if found.Dev != "" {
			res.Dev, res.Ifindex = found.Dev, found.Ifindex
		}
	} else {
		if found.Dev != "" {
			res.Dev, res.Ifindex = found.Dev, found.Ifindex
		}
		if found.Gateway.IsValid() {
			res.NextHop = found.Gateway.Unmap()
		}
	}
	res.Src = n.sourceAddr(found, res.Dev, res.NextHop, dst)
	switch {
	case found.HopLimit > 0:
		res.HopLimit, res.HopLimitFrom = found.HopLimit, "the route's hoplimit metric"
	case dst.Is4():
		res.HopLimit, res.HopLimitFrom = n.defaultTTL()
	case res.Local:
		res.HopLimit, res.HopLimitFrom = n.ipv6HopLimit("lo")
	default:
		res.HopLimit, res.HopLimitFrom = n.ipv6HopLimit(res.Dev)
	}
	return res, nil
}

// RouteGet looks up the route to dst as `ip route get DST` does (no output
// interface given): tables local, main and default in that order (policy
// rules are not modelled), the longest prefix, the lowest metric. The
// source address is the route's preferred source (prefsrc) when it has
// one, else the kernel's choice among the output device's addresses
// (inet_select_addr for IPv4, ipv6_dev_get_saddr for IPv6) approximated
// by: an address whose prefix contains the next hop, else the device's
// first address of the family that is not link-local. IPv4 and IPv6
// without any matching route fail with ENETUNREACH.
func (n *Namespace) RouteGet(dst netip.Addr) (RouteResult, error) {
	x := n.index()
	dst = dst.Unmap()
	routes := x.routes6
	if dst.Is4() {
		routes = x.routes4
	}
	for i := 0; i < len(routes); i++ {
		r := &routes[i]
		if !r.Dst.Contains(dst) {
			continue
		}
		switch r.Type {
		case RouteThrow:
			for i+1 < len(routes) && routes[i+1].Table == r.Table {
				i++
			}
			continue
		case RouteBlackhole:
			return RouteResult{}, &RouteError{Dst: dst, Errno: syscall.EINVAL, Route: r, Msg: "blackhole route"}
		case RouteUnreachable:
			return RouteResult{}, &RouteError{Dst: dst, Errno: syscall.EHOSTUNREACH, Route: r, Msg: "unreachable route"}
		case RouteProhibit:
			return RouteResult{}, &RouteError{Dst: dst, Errno: syscall.EACCES, Route: r, Msg: "prohibit route"}
		}
		res := RouteResult{Route: r, NextHop: dst, Dev: r.Dev, Ifindex: r.Ifindex, MTU: r.MTU, Local: r.Type == RouteLocal}
		if r.Gateway.IsValid() && !res.Local {
			res.NextHop = r.Gateway.Unmap()
		}
		if res.Dev == "" && res.Ifindex != 0 {
			if l, ok := n.ByIndex(res.Ifindex); ok {
				res.Dev = l.Name
			}
		}
		res.Src = n.sourceAddr(r, res.Dev, res.NextHop, dst)
		return res, nil
	}
	return RouteResult{}, &RouteError{Dst: dst, Errno: syscall.ENETUNREACH, Msg: "no route matches"}
}

// sourceAddr is the source address for a route through dev to nextHop:
// see RouteGet.
func (n *Namespace) sourceAddr(r *Route, dev string, nextHop, dst netip.Addr) netip.Addr {
	if r.PrefSrc.IsValid() {
		return r.PrefSrc.Unmap()
	}
	if r.Type == RouteLocal {
		return dst
	}
	l, ok := n.ByName(dev)
	if !ok {
		return netip.Addr{}
	}
	var first netip.Addr
	for _, p := range l.Addrs {
		a := p.Addr().Unmap()
		if a.Is4() != nextHop.Is4() || (a.Is6() && a.IsLinkLocalUnicast() && !nextHop.IsLinkLocalUnicast()) {
			continue
		}
		if p.Masked().Contains(nextHop) {
			return a
		}
		if !first.IsValid() {
			first = a
		}
	}
	return first
}
