package ah

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"syscall"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// NetworkType is the kernel's enum rdma_network_type: what a received RoCE
// packet carried under the Ethernet header.
type NetworkType uint8

// Network types.
const (
	NetworkIB     NetworkType = 0 // RDMA_NETWORK_IB
	NetworkRoCEv1 NetworkType = 1 // RDMA_NETWORK_ROCE_V1: a GRH (EtherType 0x8915)
	NetworkIPv4   NetworkType = 2 // RDMA_NETWORK_IPV4: RoCE v2 over IPv4
	NetworkIPv6   NetworkType = 3 // RDMA_NETWORK_IPV6: RoCE v2 over IPv6
)

// String returns "IB", "RoCE v1", "IPv4" or "IPv6".
func (t NetworkType) String() string {
	switch t {
	case NetworkIB:
		return "IB"
	case NetworkRoCEv1:
		return "RoCE v1"
	case NetworkIPv4:
		return "IPv4"
	case NetworkIPv6:
		return "IPv6"
	}
	return fmt.Sprintf("NetworkType(%d)", uint8(t))
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (t NetworkType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// gidType is ib_network_to_gid_type.
func (t NetworkType) gidType() gid.Type {
	switch t {
	case NetworkIPv4, NetworkIPv6:
		return gid.TypeRoCEv2
	case NetworkRoCEv1:
		return gid.TypeRoCEv1
	}
	return gid.TypeIB
}

// WC is the part of a receive work completion (struct ib_wc / struct
// ibv_wc) that an address handle is derived from. Flags are given as
// booleans because the kernel's IB_WC_* and libibverbs' IBV_WC_* bit
// values differ.
type WC struct {
	Status int    `json:"status"` // 0 = success (IB_WC_SUCCESS, IBV_WC_SUCCESS)
	GRH    bool   `json:"grh"`    // wc_flags has IB_WC_GRH / IBV_WC_GRH: the 40-byte buffer holds a header
	SrcQP  uint32 `json:"src_qp"` // the sender's QPN
	SL     uint8  `json:"sl"`     // rxe never fills it; mlx5 puts the PCP there
	// VLAN is the completion's VLAN ID when wc_flags has IB_WC_WITH_VLAN
	// (kernel completions only), nil otherwise.
	VLAN *uint16 `json:"vlan,omitempty"`
	// NetworkHdrType is wc.network_hdr_type when wc_flags has
	// IB_WC_WITH_NETWORK_HDR_TYPE (kernel completions only; rxe and mlx5
	// set it), nil otherwise.
	NetworkHdrType *NetworkType `json:"network_hdr_type,omitempty"`
	SLID           uint16       `json:"slid,omitempty"`           // InfiniBand only
	DLIDPathBits   uint8        `json:"dlid_path_bits,omitempty"` // InfiniBand only
}

// Behaviour selects whose ibv_init_ah_from_wc FromWC reproduces.
type Behaviour int

// Behaviours (drivers/infiniband/core/verbs.c, ib_init_ah_attr_from_wc,
// Linux 6.1; libibverbs/verbs.c, ibv_init_ah_from_wc, rdma-core v64.0;
// docs/ah.md compares them).
const (
	// Kernel is ib_init_ah_attr_from_wc (drivers/infiniband/core/verbs.c):
	// what kernel ULPs get. network_hdr_type when given, else the checksum
	// test; hop_limit 0xFF then the route's; traffic_class and flow_label
	// from bytes 0..3 even for IPv4; the source entry must match GID, type
	// and VLAN; a RoCE completion without the GRH flag is -EPROTOTYPE.
	Kernel Behaviour = iota
	// RDMACore is ibv_init_ah_from_wc (rdma-core libibverbs/verbs.c):
	// what user-space verbs applications get. Always the checksum test
	// with the carry folded once; hop_limit and traffic_class from the IP
	// header for IPv4; GID and type match only (an empty slot reads as the
	// zero GID of type RoCE v1); multicast destinations are EINVAL; no GRH
	// flag gives is_global = 0 and success.
	RDMACore
)

// String returns "kernel" or "rdma-core".
func (b Behaviour) String() string {
	if b == RDMACore {
		return "rdma-core"
	}
	return "kernel"
}

// Function names the function whose rule b is: "ib_init_ah_attr_from_wc"
// (the kernel's, drivers/infiniband/core/verbs.c) or "ibv_init_ah_from_wc"
// (rdma-core's, libibverbs/verbs.c).
func (b Behaviour) Function() string {
	if b == RDMACore {
		return "ibv_init_ah_from_wc"
	}
	return "ib_init_ah_attr_from_wc"
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (b Behaviour) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// ParseBehaviour parses "kernel" or "rdma-core".
func ParseBehaviour(s string) (Behaviour, error) {
	switch s {
	case "kernel":
		return Kernel, nil
	case "rdma-core", "rdmacore", "libibverbs", "user":
		return RDMACore, nil
	}
	return 0, fmt.Errorf("ah: behaviour %q is not known: want kernel or rdma-core", s)
}

// FromWCOptions chooses the behaviour and gives what the kernel's version
// needs beyond the completion.
type FromWCOptions struct {
	Behaviour Behaviour
	// Port is the port number the completion came from; 0 takes the
	// table's port.
	Port int
	// Net, the table's network namespace, when given, lets the kernel
	// behaviour replace hop_limit with
	// the route's hop limit as ib_resolve_unicast_gid_dmac does. Without
	// it hop_limit stays 0xFF and a note says so.
	Net *vlan.Namespace
}

// FromWCResult is the address handle that answers the sender of a
// received datagram, with how it was derived.
type FromWCResult struct {
	Attr Attr `json:"attr"`
	// HeaderVersion is what the GRH buffer was taken for: 4, 6, or 0
	// (neither, kernel only).
	HeaderVersion int `json:"header_version"`
	// NetworkType is what the datagram is taken for; meaningful when the
	// header was looked at (null in JSON otherwise: rdma-core without the
	// GRH flag, or a buffer it could not tell).
	NetworkType NetworkType `json:"network_type"`
	// Detection explains how IPv4 and IPv6 were told apart.
	Detection string `json:"detection"`
	// Source is the local GID entry the datagram was addressed to (its full
	// index; Attr.GRH.SGIDIndex is truncated to 8 bits as in the C struct);
	// nil when none matched.
	Source *gid.Entry `json:"sgid_entry"`
	// Route is the kernel behaviour's route to the sender (with Net).
	Route *vlan.RouteResult `json:"route"`
	// Notes are caveats: undefined bytes used, fields the kernel replaces.
	Notes []string `json:"notes"`

	netKnown bool // NetworkType was decided
}

// MarshalJSON writes {attr, header_version, network_type, detection,
// sgid_entry, route, notes}: network_type null when it was not decided,
// sgid_entry and route null when there are none, notes [] without notes.
func (r FromWCResult) MarshalJSON() ([]byte, error) {
	w := struct {
		Attr          Attr              `json:"attr"`
		HeaderVersion int               `json:"header_version"`
		NetworkType   *NetworkType      `json:"network_type"`
		Detection     string            `json:"detection"`
		Source        *gid.Entry        `json:"sgid_entry"`
		Route         *vlan.RouteResult `json:"route"`
		Notes         []string          `json:"notes"`
	}{Attr: r.Attr, HeaderVersion: r.HeaderVersion, Detection: r.Detection, Source: r.Source, Route: r.Route, Notes: r.Notes}
	if r.netKnown {
		w.NetworkType = &r.NetworkType
	}
	if w.Notes == nil {
		w.Notes = []string{}
	}
	return json.Marshal(w)
}

// IPv4 header checksums as the two implementations verify them.

// csumFull is the kernel's ip_fast_csum over a 20-byte header with the
// check field zeroed: the one's-complement sum with every carry folded.
func csumFull(h []byte) uint16 {
	var sum uint32
	for i := 0; i < 20; i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// csumOnceLE is rdma-core's ipv4_calc_hdr_csum as it runs on a
// little-endian host: ten 16-bit loads in host order, the carry folded
// once, the result truncated to 16 bits. It returns the checksum in wire
// byte order, comparable with bytes 10..11 read big-endian.
func csumOnceLE(h []byte) uint16 {
	var sum uint32
	for i := 0; i < 20; i += 2 {
		if i == 10 {
			continue
		}
		sum += uint32(binary.LittleEndian.Uint16(h[i:]))
	}
	sum = sum&0xffff + sum>>16
	c := ^uint16(sum)
	return c>>8 | c<<8
}

// HeaderVersion is ib_get_rdma_header_version (Kernel) or rdma-core's
// get_grh_header_version (RDMACore): whether a 40-byte GRH buffer holds an
// IPv6 header / GRH (6) or an IPv4 header in bytes 20..39 (4). The kernel
// returns 0 when neither fits; rdma-core fails with EPROTONOSUPPORT then.
// The string explains the decision.
func HeaderVersion(grh [40]byte, b Behaviour) (int, string, error) {
	ip4 := grh[20:40]
	if grh[0]>>4 != 6 {
		if ip4[0]>>4 == 4 {
			return 4, fmt.Sprintf("byte 0 is 0x%02x (version %d, not 6) and byte 20 is 0x%02x (version 4): IPv4 header in bytes 20..39", grh[0], grh[0]>>4, ip4[0]), nil
		}
		why := fmt.Sprintf("byte 0 is 0x%02x (version %d) and byte 20 is 0x%02x (version %d): neither IPv6 nor IPv4", grh[0], grh[0]>>4, ip4[0], ip4[0]>>4)
		if b == RDMACore {
			return 0, why, fmt.Errorf("ah: %s: %w", why, syscall.EPROTONOSUPPORT)
		}
		return 0, why, nil
	}
	if ihl := ip4[0] & 0x0f; ihl != 5 {
		return 6, fmt.Sprintf("byte 0 is 0x%02x (version 6) and byte 20's IHL is %d, not 5 (RoCE v2 IPv4 has no options): IPv6 / GRH", grh[0], ihl), nil
	}
	stored := binary.BigEndian.Uint16(ip4[10:12])
	var calc uint16
	how := "ip_fast_csum"
	if b == RDMACore {
		calc, how = csumOnceLE(ip4), "ipv4_calc_hdr_csum (carry folded once)"
	} else {
		calc = csumFull(ip4)
	}
	if stored == calc {
		return 4, fmt.Sprintf("byte 0 is 0x%02x (version 6) but bytes 20..39 are an IPv4 header with IHL 5 and a valid checksum 0x%04x (%s): IPv4", grh[0], stored, how), nil
	}
	return 6, fmt.Sprintf("byte 0 is 0x%02x (version 6); bytes 20..39 have IHL 5 but checksum 0x%04x, computed 0x%04x (%s): IPv6 / GRH", grh[0], stored, calc, how), nil
}

func v4mapped(b []byte) gid.GID {
	a, _ := netip.AddrFromSlice(b[:4])
	return gid.FromAddr(a)
}

// entryVLAN is rdma_read_gid_l2_fields' VLAN ID of an entry
// (drivers/infiniband/core/cache.c, Linux 6.1), the one the kernel's GID
// filter (find_gid_filter) compares with a completion's VLAN: Entry.L2VLAN
// (the inner tag for QinQ, which rxe reports in the completion), else
// 0xffff for an entry mapped to its netdev (gid.Map sets Ifindex). An
// entry built by hand (no ifindex) falls back to its chain's innermost tag,
// then to Entry.VLAN.
func entryVLAN(e gid.Entry) uint16 {
	switch {
	case e.L2VLAN != nil:
		return *e.L2VLAN
	case e.Ifindex != 0:
		return 0xffff
	case e.VLANChain != nil:
		if n := len(e.VLANChain); n > 0 {
			return e.VLANChain[n-1].ID
		}
		return 0xffff
	case e.VLAN != nil:
		return *e.VLAN
	}
	return 0xffff
}

// FromWC builds the address handle that answers the sender of a received
// datagram from its completion wc, the 40 bytes the receive buffer starts
// with (the GRH, or for RoCE v2 over IPv4 the IPv4 header in its last 20)
// and the receiving port's GID table, as opt.Behaviour's
// ibv_init_ah_from_wc does: how it told IPv4, IPv6 and RoCE v1 apart, the
// local entry the datagram was addressed to, and notes on what differs
// between the two implementations (docs/ah.md). It fails where that
// implementation fails (no matching source entry, a multicast destination
// for rdma-core, no GRH flag for the kernel), with the reason; and for a
// completion whose status is not success, or a port out of range.
func FromWC(wc WC, grh [40]byte, table Table, opt FromWCOptions) (FromWCResult, error) {
	var r FromWCResult
	if wc.Status != 0 {
		return r, fmt.Errorf("ah: completion status %d is not success: the receive buffer holds no header to answer (neither implementation checks this; their result would be garbage)", wc.Status)
	}
	port := opt.Port
	if port == 0 {
		port = table.port()
	}
	if port < 0 || port > 255 {
		return r, fmt.Errorf("ah: port %d is out of range: want 1..255", port)
	}
	r.Attr.PortNum = uint8(port)
	r.Attr.SL = wc.SL
	fc := binary.BigEndian.Uint32(grh[0:4])
	if opt.Behaviour == RDMACore {
		return fromWCRDMACore(r, wc, grh, fc, table)
	}
	return fromWCKernel(r, wc, grh, fc, table, opt)
}

func fromWCKernel(r FromWCResult, wc WC, grh [40]byte, fc uint32, table Table, opt FromWCOptions) (FromWCResult, error) {
	if wc.NetworkHdrType != nil {
		r.NetworkType, r.netKnown = *wc.NetworkHdrType, true
		r.Detection = "network_hdr_type " + r.NetworkType.String() + " given by the completion (IB_WC_WITH_NETWORK_HDR_TYPE)"
		switch r.NetworkType {
		case NetworkIPv4:
			r.HeaderVersion = 4
		case NetworkIPv6, NetworkRoCEv1:
			r.HeaderVersion = 6
		}
	} else {
		v, why, _ := HeaderVersion(grh, Kernel)
		r.HeaderVersion, r.Detection = v, why
		r.netKnown = true
		switch {
		case v == 4:
			r.NetworkType = NetworkIPv4
		case grh[6] == 17:
			r.NetworkType = NetworkIPv6
			r.Detection += "; next header 17 (UDP): RoCE v2 over IPv6"
		default:
			r.NetworkType = NetworkRoCEv1
			r.Detection += fmt.Sprintf("; next header %d (not UDP): RoCE v1 GRH", grh[6])
		}
	}
	gtype := r.NetworkType.gidType()
	var sgid, dgid gid.GID
	if r.NetworkType == NetworkIPv4 {
		sgid, dgid = v4mapped(grh[32:36]), v4mapped(grh[36:40])
		r.Notes = append(r.Notes, "IPv4: the kernel takes traffic_class and flow_label from bytes 0..3 of the buffer, which are undefined for IPv4 (rxe zeroes them), not from the IPv4 TOS")
	} else {
		copy(sgid[:], grh[8:24])
		copy(dgid[:], grh[24:40])
	}
	if !wc.GRH {
		return r, fmt.Errorf("ah: the completion has no GRH flag (IB_WC_GRH): a RoCE address handle needs the sender's GID: %w", syscall.EPROTOTYPE)
	}
	vlanID := uint16(0xffff)
	if wc.VLAN != nil {
		vlanID = *wc.VLAN
	}
	var src *gid.Entry
	for i := range table.Entries {
		e := &table.Entries[i]
		if e.Empty || e.GID != dgid {
			continue
		}
		if e.Type == gtype && entryVLAN(*e) == vlanID {
			src = e
			break
		}
	}
	if src == nil {
		return r, notInTable(dgid, gtype, vlanID, table, Kernel)
	}
	ec := *src
	r.Source = &ec
	r.Attr.IsGlobal = true
	r.Attr.GRH = GlobalRoute{DGID: sgid, FlowLabel: fc & MaxFlowLabel, SGIDIndex: uint8(src.Index), HopLimit: 0xFF, TrafficClass: uint8(fc >> 20)}
	if src.Index > 255 {
		r.Notes = append(r.Notes, fmt.Sprintf("the source entry's index %d does not fit the 8-bit sgid_index (%d); the kernel keeps the full index in sgid_attr", src.Index, uint8(src.Index)))
	}
	if sgid.IsLinkLocal() && src.Type == gid.TypeRoCEv1 {
		r.Notes = append(r.Notes, "link-local sender with a RoCE v1 entry: the kernel takes the MAC from the GID and keeps hop_limit 0xFF")
		return r, nil
	}
	if opt.Net == nil {
		r.Notes = append(r.Notes, "hop_limit is 0xFF here; the kernel replaces it with the route's hop limit (usually 64) when it resolves the sender's MAC")
		return r, nil
	}
	rr, err := opt.Net.RouteTo(sgid.Addr(), src.Netdev, src.Ifindex)
	if err != nil {
		return r, err
	}
	r.Route = &rr
	r.Attr.GRH.HopLimit = uint8(rr.HopLimit)
	r.Notes = append(r.Notes, fmt.Sprintf("hop_limit 0xFF replaced by the route's hop limit %d (%s)", rr.HopLimit, rr.HopLimitFrom))
	return r, nil
}

func fromWCRDMACore(r FromWCResult, wc WC, grh [40]byte, fc uint32, table Table) (FromWCResult, error) {
	r.Attr.GRH.FlowLabel = fc & MaxFlowLabel
	r.Attr.DLID = wc.SLID
	r.Attr.SrcPathBits = wc.DLIDPathBits
	if !wc.GRH {
		r.Detection = "no GRH flag: the buffer is not looked at"
		r.Notes = append(r.Notes, "no IBV_WC_GRH flag: rdma-core succeeds with is_global = 0, which ibv_create_ah rejects with EINVAL on RoCE (the kernel returns EPROTOTYPE here)")
		return r, nil
	}
	r.Attr.IsGlobal = true
	v, why, err := HeaderVersion(grh, RDMACore)
	r.HeaderVersion, r.Detection = v, why
	if err != nil {
		return r, err
	}
	var local gid.GID
	var gtype gid.Type
	switch v {
	case 4:
		r.NetworkType, r.netKnown = NetworkIPv4, true
		ip := grh[20:40]
		if ip[16]&0xf0 == 0xe0 {
			return r, fmt.Errorf("ah: the datagram was sent to the IPv4 multicast address %d.%d.%d.%d (IN_CLASSD): an address handle cannot answer a multicast destination: %w", ip[16], ip[17], ip[18], ip[19], syscall.EINVAL)
		}
		local, gtype = v4mapped(ip[16:20]), gid.TypeRoCEv2
		r.Attr.GRH.DGID = v4mapped(ip[12:16])
		r.Attr.GRH.HopLimit = ip[8]
		r.Attr.GRH.TrafficClass = ip[1]
		r.Notes = append(r.Notes, "IPv4: flow_label comes from bytes 0..3 of the buffer, which are undefined for IPv4 (rxe zeroes them)")
	default:
		if grh[24] == 0xff {
			var d gid.GID
			copy(d[:], grh[24:40])
			return r, fmt.Errorf("ah: the datagram was sent to the multicast GID %s: an address handle cannot answer a multicast destination: %w", d, syscall.EINVAL)
		}
		copy(r.Attr.GRH.DGID[:], grh[8:24])
		copy(local[:], grh[24:40])
		switch grh[6] {
		case 17:
			r.NetworkType, r.netKnown, gtype = NetworkIPv6, true, gid.TypeRoCEv2
			r.Detection += "; next header 17 (UDP): RoCE v2"
		case 0x1B:
			r.NetworkType, r.netKnown, gtype = NetworkRoCEv1, true, gid.TypeRoCEv1
			r.Detection += "; next header 0x1B (BTH): RoCE v1"
		default:
			return r, fmt.Errorf("ah: next header %d (0x%02x) is neither 17 (UDP, RoCE v2) nor 0x1B (BTH, RoCE v1): %w", grh[6], grh[6], syscall.EPROTONOSUPPORT)
		}
		r.Attr.GRH.HopLimit = grh[7]
		r.Attr.GRH.TrafficClass = uint8(fc >> 20)
	}
	// ibv_find_gid_index: slots in order, (GID, type) only; an empty slot
	// reads as the zero GID with type IB/RoCE v1, which sysfs does not
	// tell apart.
	n := table.Size()
	for i := 0; i < n; i++ {
		e, _ := table.Lookup(i)
		g, t := e.GID, e.Type
		if e.Empty {
			g, t = gid.Zero, gid.TypeRoCEv1
		}
		if t == gid.TypeIB {
			t = gid.TypeRoCEv1
		}
		if g == local && t == gtype {
			ec := e
			r.Source = &ec
			r.Attr.GRH.SGIDIndex = uint8(i)
			if i > 255 {
				r.Notes = append(r.Notes, fmt.Sprintf("the source entry's index %d is truncated to the 8-bit sgid_index %d (rdma-core casts to uint8_t)", i, uint8(i)))
			}
			if e.Empty {
				r.Notes = append(r.Notes, fmt.Sprintf("the destination GID is zero and matched the empty slot %d (an empty slot reads as a zero RoCE v1 GID)", i))
			}
			return r, nil
		}
	}
	return r, notInTable(local, gtype, 0xffff, table, RDMACore)
}

// ErrNotInTable is wrapped by FromWC when the datagram's destination GID
// is not in the port's GID table.
var ErrNotInTable = errors.New("destination GID not in the GID table")

// ErrUDPSportUnknown is wrapped by Resolution.Frame's error for a RoCE v2
// frame whose UDP source port the resolution does not predict (mlx5's
// random port without a flow label) and the Datagram does not give
// (Datagram.UDPSport).
var ErrUDPSportUnknown = errors.New("the UDP source port is not predictable")

func notInTable(g gid.GID, t gid.Type, vlanID uint16, table Table, b Behaviour) error {
	what := fmt.Sprintf("%s with type %s", g, t)
	if b == Kernel {
		v := "untagged"
		if vlanID != 0xffff {
			v = fmt.Sprintf("VLAN %d", vlanID)
		}
		what += " on a netdev that is " + v
	}
	hint := ""
	for _, e := range table.Entries {
		if !e.Empty && e.GID == g {
			hint = fmt.Sprintf(" (entry %d has this GID with type %s, VLAN %s)", e.Index, e.Type, vlanString(e))
			break
		}
	}
	if g.IsMulticast() {
		hint += "; it is a multicast GID, which is never a table entry"
	}
	errno := syscall.ENOENT
	how := "rdma_find_gid_by_filter"
	if b == RDMACore {
		how = "ibv_find_gid_index"
	}
	return fmt.Errorf("ah: the datagram's destination %s is not in the port's GID table (%s)%s: %w: %w", what, how, hint, ErrNotInTable, errno)
}

// vlanString names the VLAN the kernel's GID filter sees for e.
func vlanString(e gid.Entry) string {
	if v := entryVLAN(e); v != 0xffff {
		return fmt.Sprint(v)
	}
	return "untagged"
}
