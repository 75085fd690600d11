package gid

import (
	"encoding/json"
	"net/netip"

	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/vlan"
)

// Namespace values of Entry.Netns besides a namespace name.
const (
	// NetnsCurrent marks a netdev found in the reader's own network
	// namespace (when no namespace name was given).
	NetnsCurrent = "current"
	// NetnsOther marks a valid entry whose netdev is not visible from the
	// namespace that was looked at: gid_attrs/ndevs/N failed (the kernel
	// hides it) or named a netdev that namespace does not have. Typical
	// for a GID of the host's netdev seen from inside a container.
	NetnsOther = "other"
)

// Entry is one slot of a port's GID table, mapped to its netdev. It is the
// one type for a table entry in every roce-probe package.
//
// Device, Port, Index, GID, Type, Netdev, Default and Empty come from the
// table itself (sysfs); Kind and IP are derived from the GID; the other
// fields describe the netdev (from a vlan.Namespace) and are zero when the
// netdev is unknown. The JSON form has exactly the keys of
// `roce-probe gids -o json`, with null for unknown values.
type Entry struct {
	Device string // RDMA device, e.g. "mlx5_0", "rxe0"
	Port   int    // port number, from 1
	Index  int    // GID index within the port's table
	GID    GID
	Type   Type
	Kind   AddrKind   // what kind of address the GID is
	IP     netip.Addr // the address the GID stands for (IPv4 for an IPv4-mapped GID); invalid for an empty slot
	Netdev string     // gid_attrs/ndevs/<index>: the netdev that owns the address ("" when unreadable)

	Ifindex int // the netdev's ifindex
	// VLAN is the ID of the outermost VLAN tag frames sent with this
	// entry carry (the tag the first switch classifies on); nil when
	// untagged or unknown.
	VLAN *uint16
	// VLANChain lists every tag down to the real netdev, outermost first
	// (two for QinQ), each with the VLAN device that adds it. Empty when
	// untagged; nil when the netdev is unknown.
	VLANChain []vlan.ChainTag
	// L2VLAN is the VLAN ID the kernel itself associates with the entry
	// (rdma_read_gid_l2_fields, drivers/infiniband/core/cache.c): the
	// netdev's own VID if it is a VLAN device, else the VID of its
	// first-level lower VLAN device; nil otherwise. It is the inner tag for
	// QinQ, and what the kernel's GID lookups by VLAN (find_gid_filter)
	// compare. Not in the JSON form (vlan and vlan_chain say what the wire
	// carries).
	L2VLAN     *uint16
	RealNetdev string   // the device at the bottom of the VLAN/macvlan stack
	MAC        vlan.MAC // the netdev's MAC: the source MAC of frames sent with this entry
	MTU        int      // the netdev's MTU
	State      string   // the netdev's operstate ("up", "down", ...)
	// NetnsBoundary is, for a netdev whose lower device is in another
	// network namespace (a pod's macvlan), why VLAN, VLANChain and
	// RealNetdev are unknown (vlan.Description.Boundary); "" otherwise.
	NetnsBoundary string
	// Netns is the network namespace the netdev was found in: a name
	// given by the caller, NetnsCurrent, or NetnsOther; "" for an empty
	// slot or an entry without a netdev (InfiniBand).
	Netns string

	// Default is true for a default GID: the link-local GID the kernel
	// derives from the RDMA netdev's MAC and keeps in the reserved slots
	// at the start of the table (one per supported GID type).
	Default bool
	Empty   bool // zero GID: the slot is unused
}

// entryJSON is Entry's wire form; pointers give null for unknown values.
type entryJSON struct {
	Device     string          `json:"device"`
	Port       int             `json:"port"`
	Index      int             `json:"index"`
	GID        GID             `json:"gid"`
	Type       *Type           `json:"type"`
	Kind       *AddrKind       `json:"kind"`
	IP         *string         `json:"ip"`
	Netdev     *string         `json:"netdev"`
	Ifindex    *int            `json:"ifindex"`
	VLAN       *uint16         `json:"vlan"`
	VLANChain  []vlan.ChainTag `json:"vlan_chain"`
	RealNetdev *string         `json:"real_netdev"`
	MAC        *string         `json:"mac"`
	MTU        *int            `json:"mtu"`
	State      *string         `json:"operstate"`
	Netns      *string         `json:"netns"`
	Boundary   *string         `json:"netns_boundary"`
	Default    bool            `json:"default"`
	Empty      bool            `json:"empty"`
}

// MarshalJSON writes the keys device, port, index, gid, type, kind, ip,
// netdev, ifindex, vlan, vlan_chain, real_netdev, mac, mtu, operstate, netns,
// netns_boundary, default and empty; unknown values are null; type and kind are null for
// an empty slot.
func (e Entry) MarshalJSON() ([]byte, error) {
	w := entryJSON{
		Device: e.Device, Port: e.Port, Index: e.Index, GID: e.GID,
		Netdev: null.String(e.Netdev), Ifindex: null.Int(e.Ifindex), VLAN: e.VLAN,
		VLANChain: e.VLANChain, RealNetdev: null.String(e.RealNetdev), MTU: null.Int(e.MTU),
		State: null.String(e.State), Netns: null.String(e.Netns), Boundary: null.String(e.NetnsBoundary), Default: e.Default, Empty: e.Empty,
	}
	if !e.Empty {
		t, k := e.Type, e.Kind
		w.Type, w.Kind = &t, &k
	}
	if e.IP.IsValid() {
		s := e.IP.String()
		w.IP = &s
	}
	if len(e.MAC) > 0 {
		s := e.MAC.String()
		w.MAC = &s
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var w entryJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	n := Entry{Device: w.Device, Port: w.Port, Index: w.Index, GID: w.GID, VLAN: w.VLAN,
		VLANChain: w.VLANChain, Default: w.Default, Empty: w.Empty}
	if w.Type != nil {
		n.Type = *w.Type
	}
	if w.Kind != nil {
		n.Kind = *w.Kind
	}
	if w.IP != nil {
		a, err := netip.ParseAddr(*w.IP)
		if err != nil {
			return err
		}
		n.IP = a
	}
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	n.Netdev, n.RealNetdev, n.State, n.Netns = deref(w.Netdev), deref(w.RealNetdev), deref(w.State), deref(w.Netns)
	n.NetnsBoundary = deref(w.Boundary)
	if w.Ifindex != nil {
		n.Ifindex = *w.Ifindex
	}
	if w.MTU != nil {
		n.MTU = *w.MTU
	}
	if w.MAC != nil {
		if err := n.MAC.UnmarshalText([]byte(*w.MAC)); err != nil {
			return err
		}
	}
	*e = n
	return nil
}

// Key identifies an entry the way the kernel's GID cache does when it
// looks for a duplicate (ib_cache_gid_add): GID value, type and netdev.
type Key struct {
	GID    GID
	Type   Type
	Netdev string
}

// Key returns e's (GID, type, netdev) identity.
func (e Entry) Key() Key { return Key{e.GID, e.Type, e.Netdev} }
