package ah

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// ResolveOptions describes the sender beyond the AH: its driver (whose
// profile in qos/ decides PCP, DSCP/ECN and the UDP source port), how the
// AH reaches the driver, its DCB settings and the sending QP.
type ResolveOptions struct {
	// Driver is the RDMA device's driver (qos.IdentifyDriver). Unknown
	// drivers give unknown PCP and UDP source port.
	Driver qos.Driver
	// Path is how the address vector reaches the driver; "" means
	// qos.PathUserAH (ibv_create_ah from user space).
	Path qos.Path
	// DCB is the DCB configuration of the real netdev, or nil.
	DCB *qos.DCB
	// SrcQPN is the sending QP's number, which decides rxe's UDP source
	// port; 0 means not known.
	SrcQPN uint32
	// PortMTU is the port's active MTU in bytes (256..4096); 0 derives it
	// from the source netdev's MTU as the kernel does (iboe_get_mtu).
	PortMTU int
	// NextHopMAC is the MAC of a unicast destination's next hop, for when
	// the neighbour table has no usable entry for it (a peer that has not
	// talked to this host yet, a snapshot taken before it did): Resolve
	// then uses it (Wire.DMACFrom "given", with a warning) instead of
	// returning a *NeighborError. A usable entry in the table wins (with a
	// warning when it differs). Nil: not known.
	NextHopMAC vlan.MAC
}

// Wire is the frame an AH puts on the wire, field by field. Pointers are
// nil when the value cannot be known from here (say why in Warnings).
type Wire struct {
	RoCEVersion int      `json:"roce_version"` // 1 or 2
	Netdev      string   `json:"netdev"`       // the sgid entry's netdev, which sends the frame
	SMAC        vlan.MAC `json:"smac"`
	DMAC        vlan.MAC `json:"dmac"` // nil when the neighbour is not resolved
	// DMACFrom says where the destination MAC comes from: "neighbour",
	// "multicast", "link-local-gid", "local", "broadcast", or "given"
	// (ResolveOptions.NextHopMAC, for an unresolved neighbour).
	DMACFrom string `json:"dmac_from"`
	// VLAN and PCP are those of the outermost tag, the one the first
	// switch classifies on; nil when untagged (PCP also when the driver's
	// choice is unknown).
	VLAN *uint16 `json:"vlan"`
	PCP  *uint8  `json:"pcp"`
	// VLANChain lists every tag, outermost first, each with its PCP and
	// the VLAN device that adds it.
	VLANChain []vlan.ChainTag `json:"vlan_chain"`
	// NetnsBoundary is, when the sgid's netdev sits on a device in
	// another network namespace (a pod's macvlan), why VLAN, PCP and
	// VLANChain are unknown (nil); "" otherwise.
	NetnsBoundary string     `json:"netns_boundary"`
	IPVersion     int        `json:"ip_version"` // 4 or 6; 0 for RoCE v1 (a GRH, no IP header)
	Src           netip.Addr `json:"src"`        // source IP (RoCE v1: the SGID as IPv6)
	Dst           netip.Addr `json:"dst"`        // destination IP (RoCE v1: the DGID as IPv6)
	// TOS is the IPv4 TOS / IPv6 traffic class / GRH TClass byte; DSCP
	// and ECN are its parts. nil when the driver's choice is unknown.
	TOS  *uint8 `json:"tos"`
	DSCP *uint8 `json:"dscp"`
	ECN  *uint8 `json:"ecn"`
	TTL  uint8  `json:"ttl"` // IPv4 TTL / IPv6 hop limit / GRH HopLmt
	// FlowLabel is the IPv6 / GRH flow label; nil for IPv4.
	FlowLabel *uint32 `json:"flow_label"`
	// UDPSport is the RoCE v2 UDP source port; nil when it is random or
	// depends on something not given (rxe: the QPN). UDPSportFrom says how
	// it is chosen.
	UDPSport     *uint16 `json:"udp_sport"`
	UDPSportFrom string  `json:"udp_sport_from"`
	// MTU is the path MTU in bytes: the largest UD payload (256..4096).
	MTU int `json:"mtu"`
}

// wireJSON is Wire's JSON form (docs/json.md, "wire").
type wireJSON struct {
	RoCEVersion  int             `json:"roce_version"`
	Netdev       *string         `json:"netdev"`
	SMAC         vlan.MAC        `json:"smac"`
	DMAC         vlan.MAC        `json:"dmac"`
	DMACFrom     *string         `json:"dmac_from"`
	VLAN         *uint16         `json:"vlan"`
	PCP          *uint8          `json:"pcp"`
	VLANChain    []vlan.ChainTag `json:"vlan_chain"`
	Boundary     *string         `json:"netns_boundary"`
	IPVersion    *int            `json:"ip_version"`
	Src          netip.Addr      `json:"src"`
	Dst          netip.Addr      `json:"dst"`
	TOS          *uint8          `json:"tos"`
	DSCP         *uint8          `json:"dscp"`
	ECN          *uint8          `json:"ecn"`
	ECNName      *string         `json:"ecn_name"`
	TTL          uint8           `json:"ttl"`
	FlowLabel    *uint32         `json:"flow_label"`
	UDPSport     *uint16         `json:"udp_sport"`
	UDPSportFrom *string         `json:"udp_sport_from"`
	MTU          int             `json:"mtu"`
}

// MarshalJSON writes every key of docs/json.md's "wire": null for what is
// not known or does not exist (a MAC not resolved, ip_version of RoCE v1,
// the flow label of IPv4, udp_sport_from of RoCE v1), and ecn_name, the
// RFC 3168 name of ecn.
func (w Wire) MarshalJSON() ([]byte, error) {
	j := wireJSON{RoCEVersion: w.RoCEVersion, Netdev: null.String(w.Netdev), SMAC: w.SMAC, DMAC: w.DMAC, DMACFrom: null.String(w.DMACFrom),
		VLAN: w.VLAN, PCP: w.PCP, VLANChain: w.VLANChain, Boundary: null.String(w.NetnsBoundary), Src: w.Src, Dst: w.Dst, TOS: w.TOS, DSCP: w.DSCP, ECN: w.ECN,
		TTL: w.TTL, FlowLabel: w.FlowLabel, UDPSport: w.UDPSport, UDPSportFrom: null.String(w.UDPSportFrom), MTU: w.MTU}
	if w.IPVersion != 0 {
		j.IPVersion = &w.IPVersion
	}
	if w.ECN != nil {
		n := qos.ECN(*w.ECN).String()
		j.ECNName = &n
	}
	if j.VLANChain == nil && w.NetnsBoundary == "" {
		j.VLANChain = []vlan.ChainTag{}
	}
	return json.Marshal(j)
}

// Warning is a field the kernel or the driver changes, ignores or cannot
// be predicted for, with what was asked, what goes on the wire and why.
type Warning struct {
	Field     string `json:"field"`
	Requested string `json:"requested"` // "" (null in JSON) when the field was not asked for
	OnWire    string `json:"on_wire"`   // "" or "unknown" (null in JSON) when not known
	Reason    string `json:"reason"`
}

// MarshalJSON writes {field, requested, on_wire, reason}, null for an
// empty requested and for an on_wire that is empty or "unknown".
func (w Warning) MarshalJSON() ([]byte, error) {
	onWire := w.OnWire
	if onWire == "unknown" {
		onWire = ""
	}
	return json.Marshal(struct {
		Field     string  `json:"field"`
		Requested *string `json:"requested"`
		OnWire    *string `json:"on_wire"`
		Reason    string  `json:"reason"`
	}{w.Field, null.String(w.Requested), null.String(onWire), w.Reason})
}

// String returns "field: requested X, on the wire Y: reason".
func (w Warning) String() string {
	s := w.Field
	if w.Requested != "" || w.OnWire != "" {
		s += fmt.Sprintf(": requested %s, on the wire %s", orDash(w.Requested), orDash(w.OnWire))
	}
	return s + ": " + w.Reason
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Resolution is an AH resolved to the wire.
type Resolution struct {
	Attr     Attr              `json:"attr"`
	Source   *gid.Entry        `json:"sgid_entry"` // the sgid entry (points into the Table given)
	Driver   qos.Driver        `json:"driver"`
	Path     qos.Path          `json:"path"`
	Wire     Wire              `json:"wire"`
	Route    *vlan.RouteResult `json:"route"`
	Neighbor *vlan.Neighbor    `json:"neighbor"`
	Warnings []Warning         `json:"field_warnings"`
	// Steps explain the driver's PCP and DSCP/ECN choice (from qos/).
	Steps []qos.Step `json:"steps"`

	// vals backs Wire's optional scalars (one allocation for all).
	vals struct {
		tos, dscp, ecn uint8
		vlan, sport    uint16
		fl             uint32
	}
}

// NeighborError is the ETIMEDOUT case: the next hop's MAC address is not
// in the neighbour table, so ibv_create_ah has the kernel send ARP / NDP
// requests and fails with ETIMEDOUT if no answer comes within 1000 ms
// (rdma_addr_find_l2_eth_by_grh). Resolve returns it together with the
// rest of the Resolution.
type NeighborError struct {
	Dst      netip.Addr
	Route    vlan.RouteResult
	Neighbor *vlan.Neighbor // the entry seen, nil if none
}

// Error names the next hop, its neighbour state, the route and what
// ibv_create_ah will do.
func (e *NeighborError) Error() string {
	state := "none"
	if e.Neighbor != nil {
		state = e.Neighbor.State.String()
	}
	proto := "ARP"
	if e.Route.NextHop.Is6() {
		proto = "neighbour discovery"
	}
	route := "no route through " + e.Route.Dev + ": the kernel assumes the destination is on its link"
	if e.Route.Route != nil {
		route = "route " + e.Route.Route.String()
	}
	return fmt.Sprintf("ah: the MAC of next hop %s on %s is not resolved (neighbour entry: %s; %s): ibv_create_ah will send %s requests on %s and fail with ETIMEDOUT after 1000 ms unless %s answers",
		e.Route.NextHop, e.Route.Dev, state, route, proto, e.Route.Dev, e.Route.NextHop)
}

// Unwrap returns syscall.ETIMEDOUT, the errno ibv_create_ah fails with if
// the next hop does not answer.
func (e *NeighborError) Unwrap() error { return syscall.ETIMEDOUT }

// Resolver resolves many AHs against one GID table and one network
// snapshot without touching the kernel. It caches per-entry work; it is
// not safe for concurrent use.
type Resolver struct {
	table  Table
	net    *vlan.Namespace
	opts   ResolveOptions
	links  map[string]qos.Link
	preds  map[predKey]qos.Wire
	hopWhy map[string]string
	slWhy  string
}

func itoa(v uint8) string { return strconv.Itoa(int(v)) }

func hex32(v uint32) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

type predKey struct {
	netdev string
	gtype  gid.Type
	sl, tc uint8
}

// NewResolver returns a Resolver for the port whose GID table is table,
// in the network namespace net (nil: only multicast and RoCE v1
// link-local destinations resolve).
func NewResolver(table Table, net *vlan.Namespace, opts ResolveOptions) *Resolver {
	if opts.Path == "" {
		opts.Path = qos.PathUserAH
	}
	return &Resolver{table: table, net: net, opts: opts, links: map[string]qos.Link{}, preds: map[predKey]qos.Wire{},
		hopWhy: map[string]string{}, slWhy: "the " + opts.Driver.String() + " driver does not use the sl on this path"}
}

// Resolve is NewResolver(table, net, opts).Resolve(a).
func Resolve(a Attr, table Table, net *vlan.Namespace, opts ResolveOptions) (*Resolution, error) {
	return NewResolver(table, net, opts).Resolve(a)
}

// qosLink is the qos view of the entry's netdev: its VLAN tags outermost
// first, each with the VLAN device adding it and that device's egress map.
// The namespace's description is the one walk down the stack; without a
// namespace, the tags the entry knows. With a namespace that does not have
// the entry's netdev (or an entry whose netdev the kernel hides) the tags,
// MAC and routes are unknown: the error wraps vlan.ErrNoLink.
func (r *Resolver) qosLink(e gid.Entry) (qos.Link, error) {
	if l, ok := r.links[e.Netdev]; ok {
		return l, nil
	}
	l := qos.Link{Netdev: e.Netdev, Tags: e.VLANChain, Real: e.RealNetdev, RealNumTC: -1}
	if r.net != nil {
		if e.Netdev == "" {
			return qos.Link{}, fmt.Errorf("ah: GID index %d: the kernel shows no netdev for it (a netdev of another network namespace): its VLAN tags, MAC and routes cannot be known from %s: %w", e.Index, r.net.What(), vlan.ErrNoLink)
		}
		d, err := r.net.Describe(e.Netdev)
		if err != nil {
			return qos.Link{}, fmt.Errorf("ah: GID index %d: its VLAN tags, MAC and routes cannot be known: %w", e.Index, err)
		}
		l = qos.LinkOf(d)
	}
	r.links[e.Netdev] = l
	return l, nil
}

// ipMulticastMAC is ip_eth_mc_map / ipv6_eth_mc_map, which
// ib_resolve_eth_dmac uses for multicast destinations.
func ipMulticastMAC(g gid.GID) vlan.MAC {
	if g.IsIPv4Mapped() {
		return vlan.MAC{0x01, 0x00, 0x5e, g[13] & 0x7f, g[14], g[15]}
	}
	return vlan.MAC{0x33, 0x33, g[12], g[13], g[14], g[15]}
}

// linkLocalMAC is rdma_get_ll_mac: the MAC inside a link-local GID's
// modified EUI-64 interface ID.
func linkLocalMAC(g gid.GID) vlan.MAC {
	m := vlan.MAC{g[8], g[9], g[10], g[13], g[14], g[15]}
	m[0] ^= 2
	return m
}

// Resolve validates a and predicts the frame it puts on the wire. It
// returns a *ValidationError for an invalid a, an error wrapping
// vlan.ErrNoLink when the namespace does not have the sgid entry's netdev,
// a *vlan.RouteError when no route to the destination can be used, and —
// together with a Resolution whose DMAC is nil — a *NeighborError when the
// next hop's MAC is not in the neighbour table.
func (r *Resolver) Resolve(a Attr) (*Resolution, error) {
	if err := a.Validate(r.table); err != nil {
		return nil, err
	}
	if r.table.Size() == 0 {
		return nil, errors.New("ah: Resolve needs the port's GID table")
	}
	ep := r.table.entry(int(a.GRH.SGIDIndex))
	e := *ep
	link, err := r.qosLink(e)
	if err != nil {
		return nil, err
	}
	g := a.GRH
	res := &Resolution{Attr: a, Source: ep, Driver: r.opts.Driver, Path: r.opts.Path, Warnings: make([]Warning, 0, 3)}
	w := &res.Wire
	warn := func(field, req, wire, why string, args ...any) {
		if len(args) > 0 {
			why = fmt.Sprintf(why, args...)
		}
		res.Warnings = append(res.Warnings, Warning{Field: field, Requested: req, OnWire: wire, Reason: why})
	}
	w.Netdev = e.Netdev
	w.SMAC = e.MAC
	mtu := e.MTU
	if (len(w.SMAC) == 0 || mtu == 0) && r.net != nil {
		if l, ok := r.net.ByName(e.Netdev); ok {
			if len(w.SMAC) == 0 {
				w.SMAC = l.MAC
			}
			if mtu == 0 {
				mtu = l.MTU
			}
		}
	}
	switch e.Type {
	case gid.TypeRoCEv1:
		w.RoCEVersion = 1
		w.Src, w.Dst = netip.AddrFrom16(e.GID), netip.AddrFrom16(g.DGID)
	default:
		w.RoCEVersion = 2
		w.Src, w.Dst = e.GID.Addr(), g.DGID.Addr()
		w.IPVersion = 6
		if e.GID.IsIPv4Mapped() {
			w.IPVersion = 4
		}
	}

	// Destination MAC and hop limit (ib_resolve_eth_dmac).
	hop := g.HopLimit
	var nerr error
	switch {
	case g.DGID.IsMulticast():
		w.DMAC, w.DMACFrom = ipMulticastMAC(g.DGID), "multicast"
	case g.DGID.IsLinkLocal() && e.Type == gid.TypeRoCEv1:
		w.DMAC, w.DMACFrom = linkLocalMAC(g.DGID), "link-local-gid"
	default:
		if r.net == nil {
			return nil, errors.New("ah: resolving a unicast destination needs the network namespace's routes and neighbours")
		}
		rr, err := r.net.RouteTo(g.DGID.Addr(), e.Netdev, e.Ifindex)
		if err != nil {
			return nil, err
		}
		res.Route = &rr
		hop = uint8(rr.HopLimit)
		if hop != g.HopLimit {
			why, ok := r.hopWhy[rr.HopLimitFrom]
			if !ok {
				why = "the kernel replaces the requested hop limit with the route's (" + rr.HopLimitFrom + ") when it resolves the destination MAC (ib_resolve_unicast_gid_dmac)"
				r.hopWhy[rr.HopLimitFrom] = why
			}
			warn("grh.hop_limit", itoa(g.HopLimit), itoa(hop), why)
		}
		switch {
		case rr.Local:
			w.DMACFrom = "local"
			if l, ok := r.net.LocalOwner(rr.NextHop); ok {
				w.DMAC = l.MAC
			} else {
				w.DMAC = w.SMAC
			}
		case rr.Route != nil && rr.Route.Type == vlan.RouteBroadcast:
			w.DMAC, w.DMACFrom = vlan.MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "broadcast"
		default:
			w.DMACFrom = "neighbour"
			nb, ok := r.net.Neighbor(rr.NextHop, rr.Dev, rr.Ifindex)
			if ok {
				nbc := nb
				res.Neighbor = &nbc
			}
			given := r.opts.NextHopMAC
			switch {
			case ok && nb.State.Valid() && len(nb.MAC) == 6:
				w.DMAC = nb.MAC
				if len(given) == 6 && given.String() != nb.MAC.String() {
					warn("dmac", given.String(), nb.MAC.String(), "the neighbour table has next hop %s on %s (%s): its MAC is used, not the one given", rr.NextHop, rr.Dev, nb.State)
				}
			case len(given) == 6:
				w.DMAC, w.DMACFrom = given, "given"
				state := "no entry"
				if ok {
					state = "entry " + nb.State.String()
				}
				warn("dmac", "", given.String(), "next hop %s on %s is not resolved (%s): the MAC given is used; ibv_create_ah itself would resolve it and fail with ETIMEDOUT unless %s answers", rr.NextHop, rr.Dev, state, rr.NextHop)
			default:
				nerr = &NeighborError{Dst: g.DGID.Addr(), Route: rr, Neighbor: res.Neighbor}
			}
		}
		if rr.OnLink {
			warn("grh.dgid", g.DGID.String(), "", "no route to it leaves through %s, the sgid's netdev: the kernel assumes it is on %s's link and sends ARP there (a wrong sgid_index is the usual cause)", e.Netdev, e.Netdev)
		}
		if rr.Route != nil && rr.Route.Gateway.IsValid() && g.DGID.IsLinkLocal() {
			warn("grh.dgid", g.DGID.String(), "", "a link-local destination behind a gateway")
		}
	}
	w.TTL = hop
	if hop == 0 {
		warn("grh.hop_limit", "0", "0", "kept as requested (no route lookup for this destination); a TTL of 0 is dropped by the receiver's IP stack")
	}
	if rr := res.Route; rr != nil && rr.Route != nil && rr.Route.Gateway.IsValid() && hop <= 1 {
		warn("grh.hop_limit", fmt.Sprint(g.HopLimit), fmt.Sprint(hop), "the destination is behind the gateway %s: a hop limit of 1 expires at the first router", rr.Route.Gateway)
	}
	if e.GID.IsLinkLocal() && !g.DGID.IsLinkLocal() && !g.DGID.IsMulticast() && w.RoCEVersion == 2 {
		warn("grh.sgid_index", fmt.Sprint(g.SGIDIndex), "", "the source GID %s is link-local but the destination is not: replies cannot be routed back to a link-local address", e.GID)
	}

	// Driver profile: VLAN tag PCPs, DSCP and ECN.
	pk := predKey{e.Netdev, e.Type, a.SL, g.TrafficClass}
	p, ok := r.preds[pk]
	if !ok {
		p = qos.Predict(r.opts.Driver, qos.WireInput{Path: r.opts.Path, SL: a.SL, TrafficClass: g.TrafficClass, GIDType: e.Type, Link: link, DCB: r.opts.DCB})
		r.preds[pk] = p
	}
	res.Steps = p.Steps
	w.VLANChain = make([]vlan.ChainTag, 0, len(link.Tags))
	if link.Boundary != "" {
		// A pod's netdev: what is added below the namespace boundary is
		// unknown, not absent.
		w.VLANChain, w.NetnsBoundary = nil, link.Boundary
		warn("vlan", "", "unknown", "%s", link.Boundary)
	} else if p.TagsKnown {
		w.VLANChain = append(w.VLANChain, p.Tags...)
	} else {
		for _, t := range link.Tags {
			t.PCP = nil
			w.VLANChain = append(w.VLANChain, t)
		}
		warn("vlan", "", "unknown", "the %s driver's VLAN tagging for this netdev is not known", r.opts.Driver)
	}
	if len(w.VLANChain) > 0 {
		res.vals.vlan = w.VLANChain[0].ID
		w.VLAN, w.PCP = &res.vals.vlan, w.VLANChain[0].PCP
	}
	if p.SLIgnored && a.SL != 0 {
		warn("sl", itoa(a.SL), "ignored", r.slWhy)
	}
	if w.PCP != nil && !p.SLIgnored && *w.PCP != a.SL {
		warn("sl", fmt.Sprint(a.SL), fmt.Sprintf("PCP %d", *w.PCP), "the %s driver maps sl to the PCP this way (see steps)", r.opts.Driver)
	}
	if len(w.VLANChain) == 0 && link.Boundary == "" && !p.SLIgnored && a.SL != 0 {
		warn("sl", fmt.Sprint(a.SL), "no tag", "the sgid's netdev %s is untagged: the sl can reach the wire only in a VLAN tag, so switches classifying on PCP see none", e.Netdev)
	}
	if p.DSCP != nil && p.ECN != nil {
		tos := *p.DSCP<<2 | uint8(*p.ECN)
		res.vals.tos, res.vals.dscp, res.vals.ecn = tos, *p.DSCP, uint8(*p.ECN)
		w.TOS, w.DSCP, w.ECN = &res.vals.tos, &res.vals.dscp, &res.vals.ecn
		if tos != g.TrafficClass {
			warn("grh.traffic_class", fmt.Sprintf("%d (0x%02x)", g.TrafficClass, g.TrafficClass), fmt.Sprintf("%d (0x%02x)", tos, tos), "the %s driver changes the traffic class on this path (see steps)", r.opts.Driver)
		}
	} else if w.RoCEVersion == 1 {
		res.vals.tos = g.TrafficClass
		w.TOS = &res.vals.tos
	} else {
		if p.DSCP != nil {
			res.vals.dscp = *p.DSCP
			w.DSCP = &res.vals.dscp
		}
		warn("grh.traffic_class", fmt.Sprint(g.TrafficClass), "unknown", "the %s driver's DSCP/ECN for this path is not fully known (see steps)", r.opts.Driver)
	}
	for _, u := range p.Unknowns {
		warn("driver", "", "", "%s", u)
	}

	// Flow label and UDP source port.
	fl := g.FlowLabel
	switch {
	case w.IPVersion == 4:
		if fl != 0 {
			w.FlowLabel = nil
		}
	case w.IPVersion == 6 && r.opts.Driver == qos.DriverRXE:
		res.vals.fl = 0
		w.FlowLabel = &res.vals.fl
		if fl != 0 {
			warn("grh.flow_label", hex32(fl), "0", "rxe sends IPv6 with flow label 0 (prepare_ipv6_hdr: ip6_flow_hdr(ip6h, tclass, 0))")
		}
	default:
		res.vals.fl = fl
		w.FlowLabel = &res.vals.fl
	}
	if w.RoCEVersion == 2 {
		r.udpSport(res, fl, warn)
	}

	// Path MTU.
	pm := r.opts.PortMTU
	if pm == 0 {
		pm = gid.RoCEMTU(mtu)
	}
	if res.Route != nil && res.Route.MTU > 0 {
		if rm := gid.RoCEMTU(res.Route.MTU); rm < pm {
			pm = rm
		}
	}
	w.MTU = pm
	if a.DLID != 0 {
		warn("dlid", fmt.Sprint(a.DLID), "ignored", "RoCE has no LIDs")
	}
	if a.StaticRate != 0 && r.opts.Driver == qos.DriverRXE {
		warn("static_rate", fmt.Sprint(a.StaticRate), "ignored", "rxe does not rate-limit")
	}
	if w.RoCEVersion == 1 {
		warn("roce_version", "", "1", "RoCE v1 (EtherType 0x8915) is not routable: the destination must be on the same L2 network")
	}
	return res, nerr
}

// udpSport fills the UDP source port rule of the driver: rxe
// (drivers/infiniband/sw/rxe/rxe_qp.c, rxe_qp_init_req, and rxe_verbs.c,
// rxe_modify_qp), mlx5 kernel AH (drivers/infiniband/hw/mlx5/ah.c,
// mlx5_ah_get_udp_sport), Linux 6.1; mlx5 and hns user AHs
// (providers/mlx5/verbs.c, mlx5_ah_set_udp_sport;
// providers/hns/hns_roce_u_verbs.c, get_ah_udp_sport), rdma-core v64.0.
func (r *Resolver) udpSport(res *Resolution, fl uint32, warn func(field, req, wire, why string, args ...any)) {
	w := &res.Wire
	fold := func(why string) {
		res.vals.sport = roce.FlowLabelToUDPSourcePort(fl)
		w.UDPSport = &res.vals.sport
		w.UDPSportFrom = why
	}
	switch r.opts.Driver {
	case qos.DriverRXE:
		w.UDPSportFrom = "rxe: 0xC000 + hash_32(source QPN, 14), fixed when the QP is created; UD ignores the AH's flow label"
		if r.opts.SrcQPN != 0 {
			res.vals.sport = roce.RXESourcePort(r.opts.SrcQPN)
			w.UDPSport = &res.vals.sport
			w.UDPSportFrom = fmt.Sprintf("rxe: 0xC000 + hash_32(QPN %#x, 14), fixed when the QP is created; UD ignores the AH's flow label", r.opts.SrcQPN)
		}
		if fl != 0 {
			warn("grh.flow_label", hex32(fl), "", "rxe ignores the AH's flow label for the UDP source port of UD QPs (it never gets IB_QP_AV)")
		}
		if r.opts.SrcQPN == 0 {
			warn("udp_sport", "", "unknown", "rxe derives it from the sending QP's number, which was not given")
		}
	case qos.DriverMLX5:
		if fl != 0 {
			fold("rdma_flow_label_to_udp_sport(flow label): the 20-bit label folded into 14 bits | 0xC000")
			return
		}
		if r.opts.Path == qos.PathKernelAH {
			w.UDPSportFrom = "mlx5 kernel AH without flow label: the firmware's r_roce_min_src_udp_port (unconfirmed value)"
		} else {
			w.UDPSportFrom = "mlx5 user AH without flow label: random() in 0xC000..0xFFFF per AH (mlx5_ah_set_udp_sport)"
		}
		warn("udp_sport", "", "unknown", "set a non-zero flow label to choose the UDP source port (ECMP entropy)")
	case qos.DriverHNS:
		if fl != 0 {
			fold("rdma_flow_label_to_udp_sport(flow label) (hns get_ah_udp_sport)")
			return
		}
		w.UDPSportFrom = "hns user AH without flow label: random in 0xC000..0xFFFF per AH"
		warn("udp_sport", "", "unknown", "set a non-zero flow label to choose the UDP source port")
	default:
		w.UDPSportFrom = fmt.Sprintf("the %s driver's UDP source port rule is not known", r.opts.Driver)
		warn("udp_sport", "", "unknown", "%s", w.UDPSportFrom)
	}
}

// Datagram is what a UD SEND adds to the AH: the QPs, the Q_Key, the PSN
// and the payload.
type Datagram struct {
	SrcQPN  uint32 // the sending QP (DETH SrcQP)
	DestQPN uint32 // wr.ud.remote_qpn (BTH DestQP)
	QKey    uint32 // wr.ud.remote_qkey (DETH Q_Key; rxe sends it as is)
	PSN     uint32 // the sending QP's next PSN (its sq_psn for the first send)
	Payload []byte
	// PKey is the BTH P_Key; 0 means 0xFFFF, the default partition rxe uses.
	PKey uint16
	// IPID is the IPv4 identification: the kernel picks it per destination
	// (__ip_select_ident) and it cannot be predicted; copy it from a
	// capture to compare frames byte for byte.
	IPID uint16
	// UDPSport overrides the predicted UDP source port; required when the
	// Resolution could not predict it (Wire.UDPSport nil).
	UDPSport uint16
}

// Frame serializes the UD SEND_ONLY packet (BTH opcode 0x64 + DETH) that a
// send with this AH and d produces, with lengths, the IPv4 checksum and
// the ICRC filled in, as rxe builds it: P_Key 0xFFFF, no SE, UDP checksum
// 0, IPv4 DF set.
func (res *Resolution) Frame(d Datagram) ([]byte, error) {
	w := res.Wire
	if len(w.DMAC) != 6 {
		return nil, errors.New("ah: the destination MAC is not known (neighbour unresolved): cannot build the frame")
	}
	if len(w.SMAC) != 6 {
		return nil, errors.New("ah: the source MAC is not known: cannot build the frame")
	}
	if d.SrcQPN > 0xFFFFFF || d.DestQPN > 0xFFFFFF || d.PSN > 0xFFFFFF {
		return nil, fmt.Errorf("ah: QPNs and PSN are 24 bits: src %#x, dest %#x, psn %#x: want 0..0xffffff", d.SrcQPN, d.DestQPN, d.PSN)
	}
	if w.MTU > 0 && len(d.Payload) > w.MTU {
		return nil, fmt.Errorf("ah: payload of %d bytes exceeds the path MTU %d: a UD send that large is dropped", len(d.Payload), w.MTU)
	}
	if w.TOS == nil {
		return nil, errors.New("ah: the traffic class on the wire is not known for this driver: cannot build the frame")
	}
	pkey := d.PKey
	if pkey == 0 {
		pkey = 0xFFFF
	}
	spec := roce.FrameSpec{SrcMAC: net.HardwareAddr(w.SMAC), DstMAC: net.HardwareAddr(w.DMAC), Version: w.RoCEVersion,
		Src: w.Src, Dst: w.Dst, TOS: *w.TOS, TTL: w.TTL, IPID: d.IPID,
		BTH:     roce.BTH{Opcode: roce.OpcodeUDSendOnly, PKey: pkey, DestQP: d.DestQPN, PSN: d.PSN},
		Headers: []gopacket.SerializableLayer{&roce.DETH{QKey: d.QKey, SrcQP: d.SrcQPN}},
		Payload: d.Payload,
	}
	for _, t := range w.VLANChain {
		if t.PCP == nil {
			return nil, fmt.Errorf("ah: the PCP of VLAN %d is not known for this driver: cannot build the frame", t.ID)
		}
		tpid := uint16(t.TPID)
		if tpid == 0 {
			tpid = uint16(vlan.TPID8021Q)
		}
		spec.VLANs = append(spec.VLANs, roce.VLANTag{TPID: tpid, ID: t.ID, PCP: *t.PCP})
	}
	if w.RoCEVersion == 2 {
		spec.SrcPort = d.UDPSport
		if spec.SrcPort == 0 {
			if w.UDPSport == nil {
				return nil, fmt.Errorf("ah: %w (%s): the frame needs the port the sender uses", ErrUDPSportUnknown, w.UDPSportFrom)
			}
			spec.SrcPort = *w.UDPSport
		}
	}
	if w.FlowLabel != nil && w.IPVersion != 4 {
		spec.FlowLabel = *w.FlowLabel
	}
	return spec.Build()
}
