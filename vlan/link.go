package vlan

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/internal/null"
)

// Kind is a netdev's link kind: the rtnetlink IFLA_INFO_KIND ("vlan",
// "macvlan", "bond", "veth", ...), or KindPhysical for a device without a
// kind (a NIC port), or KindLoopback.
type Kind string

// Link kinds roce-probe treats specially. Other kinds keep the kernel's name.
const (
	KindPhysical Kind = "physical" // no IFLA_INFO_KIND: a NIC port or VF
	KindLoopback Kind = "loopback"
	KindVeth     Kind = "veth"
	KindVLAN     Kind = "vlan"
	KindMacvlan  Kind = "macvlan"
	KindMacvtap  Kind = "macvtap"
	KindIPvlan   Kind = "ipvlan"
	KindIPvtap   Kind = "ipvtap"
	KindBond     Kind = "bond"
	KindBridge   Kind = "bridge"
	KindTeam     Kind = "team"
	KindVXLAN    Kind = "vxlan"
)

// Stacked reports whether a link of this kind sits on a lower device given
// by IFLA_LINK and registers itself as that device's upper device (VLAN,
// macvlan, macvtap, ipvlan, ipvtap). A veth's IFLA_LINK names its peer, not
// a lower device, so a veth is not stacked.
func (k Kind) Stacked() bool {
	switch k {
	case KindVLAN, KindMacvlan, KindMacvtap, KindIPvlan, KindIPvtap:
		return true
	}
	return false
}

// TPID is a VLAN tag's protocol identifier, the EtherType in front of the
// tag: 0x8100 for an 802.1Q (customer) tag, 0x88a8 for an 802.1ad
// (service, QinQ outer) tag. In JSON it is a number.
type TPID uint16

// Tag protocol identifiers.
const (
	TPID8021Q  TPID = 0x8100 // 802.1Q customer tag
	TPID8021AD TPID = 0x88a8 // 802.1ad service tag (QinQ outer tag)
)

// String returns "802.1Q", "802.1ad" or the TPID in hex.
func (p TPID) String() string {
	switch p {
	case TPID8021Q:
		return "802.1Q"
	case TPID8021AD:
		return "802.1ad"
	}
	return fmt.Sprintf("0x%04x", uint16(p))
}

// ParseTPID accepts "802.1Q", "802.1ad" (any case), "8021q", "8021ad", or
// a hex TPID such as "0x8100".
func ParseTPID(s string) (TPID, error) {
	switch strings.ToLower(s) {
	case "802.1q", "8021q":
		return TPID8021Q, nil
	case "802.1ad", "8021ad":
		return TPID8021AD, nil
	}
	if l := strings.ToLower(s); strings.HasPrefix(l, "0x") {
		if v, err := strconv.ParseUint(l[2:], 16, 16); err == nil {
			return TPID(v), nil
		}
	}
	return 0, fmt.Errorf("vlan: unknown VLAN protocol %q: want 802.1Q, 802.1ad or a hex TPID such as 0x8100", s)
}

// Tag is one VLAN tag as a VLAN device adds it: the VLAN ID and the tag
// protocol.
type Tag struct {
	ID   uint16 `json:"id"`
	TPID TPID   `json:"tpid"`
}

// String returns "100" for an 802.1Q tag and "802.1ad:1000" otherwise.
func (t Tag) String() string {
	if t.TPID == TPID8021Q || t.TPID == 0 {
		return strconv.Itoa(int(t.ID))
	}
	return t.TPID.String() + ":" + strconv.Itoa(int(t.ID))
}

// ChainTag is one tag of the chain a frame carries, in the one shape every
// roce-probe output uses for `vlan_chain` elements: {id, tpid, pcp,
// netdev}. PCP is nil where the priority is not known (a GID table entry
// carries no flow); Netdev is "" (null in JSON) where no VLAN device is
// known (a tag read from a captured frame).
type ChainTag struct {
	Tag
	PCP    *uint8 `json:"pcp"`
	Netdev string `json:"-"`
	// EgressQoS and IngressQoS are the maps of the VLAN device that adds
	// the tag (skb priority → PCP, PCP → skb priority); not in JSON (the
	// snapshot's links carry them).
	EgressQoS  QoSMap `json:"-"`
	IngressQoS QoSMap `json:"-"`
}

type chainTagJSON struct {
	ID     uint16  `json:"id"`
	TPID   TPID    `json:"tpid"`
	PCP    *uint8  `json:"pcp"`
	Netdev *string `json:"netdev"`
}

// MarshalJSON writes {id, tpid, pcp, netdev}, null for what is not known.
func (t ChainTag) MarshalJSON() ([]byte, error) {
	w := chainTagJSON{ID: t.ID, TPID: t.TPID, PCP: t.PCP}
	if t.Netdev != "" {
		w.Netdev = &t.Netdev
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (t *ChainTag) UnmarshalJSON(b []byte) error {
	var w chainTagJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*t = ChainTag{Tag: Tag{ID: w.ID, TPID: w.TPID}, PCP: w.PCP}
	if w.Netdev != nil {
		t.Netdev = *w.Netdev
	}
	return nil
}

// String returns the tag as Tag.String does, with "/pcp N" when the PCP
// is known.
func (t ChainTag) String() string {
	if t.PCP == nil {
		return t.Tag.String()
	}
	return t.Tag.String() + "/pcp " + strconv.Itoa(int(*t.PCP))
}

// MAC is a hardware address that marshals to JSON as "02:00:00:00:00:01"
// (net.HardwareAddr would marshal as base64).
type MAC net.HardwareAddr

// String returns the colon-separated lower-case hex form, or "" for none.
func (m MAC) String() string { return net.HardwareAddr(m).String() }

// MarshalText implements encoding.TextMarshaler.
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// MarshalJSON writes the colon-separated form, or null for no MAC: in
// roce-probe's JSON, what is absent is null, never "".
func (m MAC) MarshalJSON() ([]byte, error) {
	if len(m) == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(m.String())
}

// UnmarshalText implements encoding.TextUnmarshaler; "" gives a nil MAC.
func (m *MAC) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*m = nil
		return nil
	}
	hw, err := net.ParseMAC(string(b))
	if err != nil {
		return fmt.Errorf("vlan: %q is not a MAC address: want six colon-separated hex bytes", string(b))
	}
	*m = MAC(hw)
	return nil
}

// QoSMap is a VLAN device's egress map (skb priority → PCP) or ingress map
// (PCP → skb priority). The kernel reports only non-zero egress mappings: a
// priority missing from an egress map is sent with PCP 0.
type QoSMap map[uint32]uint32

// String returns the map in iproute2's form, "0:3 2:5", sorted by key.
func (q QoSMap) String() string {
	keys := make([]int, 0, len(q))
	for k := range q {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d:%d", k, q[uint32(k)])
	}
	return strings.Join(parts, " ")
}

// Link is one netdev as rtnetlink describes it: plain data, so a Namespace
// can be read from the kernel or from a JSON fixture. Its JSON form has
// every key always (docs/json.md, "link"): null for what the link does not
// have (no MAC, no lower device, no tag, no QoS maps). It decodes with the
// field tags (a null leaves the zero value), so that a snapshot decoder
// checks it in its one strict pass.
type Link struct {
	Name      string `json:"name"`
	Index     int    `json:"ifindex"`
	Kind      Kind   `json:"kind"`
	MAC       MAC    `json:"mac"`
	MTU       int    `json:"mtu"`
	OperState string `json:"operstate"` // IFLA_OPERSTATE as the kernel names it ("up", "lowerlayerdown", ...: OperUp)
	// Ether is true for ARPHRD_ETHER devices, the only ones whose
	// addresses the kernel turns into RoCE GIDs.
	Ether bool `json:"ether"`
	// ParentIndex is IFLA_LINK: for a stacked kind (VLAN, macvlan, ipvlan)
	// the ifindex of the lower device; 0 for none.
	ParentIndex int `json:"parent_ifindex"`
	// ParentOtherNetns is true when IFLA_LINK_NETNSID says the lower
	// device lives in another network namespace (e.g. a macvlan moved
	// into a container), so ParentIndex is not an index of this snapshot.
	ParentOtherNetns bool `json:"parent_other_netns"`
	// MasterIndex is the ifindex of the bond, team or bridge this link is
	// enslaved to; 0 for none.
	MasterIndex int `json:"master_ifindex"`
	// ActiveSlave is, for a bond with an active slave (active-backup),
	// that slave's ifindex; 0 otherwise.
	ActiveSlave int `json:"active_slave_ifindex"`
	// BondMode is, for a bond, its mode as the kernel names it
	// (IFLA_BOND_MODE: "active-backup", "802.3ad", "balance-xor",
	// "balance-rr", "broadcast", "balance-tlb", "balance-alb"); "" (null in
	// JSON) for other kinds and in snapshots collected before the key
	// existed.
	BondMode   string         `json:"bond_mode"`
	Tag        *Tag           `json:"tag"`             // the link's own tag when Kind is KindVLAN
	EgressQoS  QoSMap         `json:"egress_qos_map"`  // VLAN only: skb priority → PCP
	IngressQoS QoSMap         `json:"ingress_qos_map"` // VLAN only: PCP → skb priority
	Addrs      []netip.Prefix `json:"addrs"`           // IPv4 and IPv6 addresses, in the kernel's dump order
}

// OperUp reports whether a netdev in operational state operstate (a
// Link's OperState: IFLA_OPERSTATE, RFC 2863, named as the kernel names it
// in /sys/class/net/*/operstate and `ip link` in upper case: "unknown",
// "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up")
// carries traffic: "up", or "unknown", which drivers that do not report
// carrier (dummy, some virtual NICs) leave: the kernel's netif_oper_up
// (include/linux/netdevice.h, Linux 6.1) and IFF_RUNNING.
// Documentation/networking/operstates.rst (Linux 6.1): an "unknown"
// interface "must be considered for user data"; "down" and
// "lowerlayerdown" (stacked on a device that is down; a veth whose peer
// is down) cannot transfer data; "testing" "can't be used for normal
// traffic until tests complete"; "dormant" waits for an external event
// (802.1X); "notpresent" is unused.
func OperUp(operstate string) bool { return operstate == "up" || operstate == "unknown" }

// OperNotUp reports whether operstate is known ("" is not: a Link read
// from a source that had none) and not OperUp: the netdev passes no
// traffic. The commands that name a reason against a netdev (listen's and
// send's --netdev, gid.Select's reasons) refuse exactly these.
func OperNotUp(operstate string) bool { return operstate != "" && !OperUp(operstate) }

// OperText describes a netdev in operstate for a message ("is down"),
// saying what the less obvious states mean.
func OperText(operstate string) string {
	switch operstate {
	case "lowerlayerdown":
		return "is down below (operstate lowerlayerdown: the device it is stacked on, or a veth's peer, is down)"
	case "dormant":
		return "is dormant (waiting for an external event, such as 802.1X authentication)"
	case "testing", "notpresent":
		return "is in operstate " + operstate
	}
	return "is " + operstate
}

// linkJSON is Link's wire form: pointers give null for what is absent.
type linkJSON struct {
	Name             string         `json:"name"`
	Index            int            `json:"ifindex"`
	Kind             Kind           `json:"kind"`
	MAC              MAC            `json:"mac"`
	MTU              int            `json:"mtu"`
	OperState        string         `json:"operstate"`
	Ether            bool           `json:"ether"`
	ParentIndex      *int           `json:"parent_ifindex"`
	ParentOtherNetns bool           `json:"parent_other_netns"`
	MasterIndex      *int           `json:"master_ifindex"`
	ActiveSlave      *int           `json:"active_slave_ifindex"`
	BondMode         *string        `json:"bond_mode"`
	Tag              *Tag           `json:"tag"`
	EgressQoS        QoSMap         `json:"egress_qos_map"`
	IngressQoS       QoSMap         `json:"ingress_qos_map"`
	Addrs            []netip.Prefix `json:"addrs"`
}

// qosMapJSON is m as a link's JSON writes it: {} for a VLAN device
// without mappings (vlan says whether the device is one); null for a
// device that is not a VLAN device and so has no map.
func qosMapJSON(m QoSMap, vlan bool) QoSMap {
	if m == nil && vlan {
		return QoSMap{}
	}
	if !vlan {
		return nil
	}
	return m
}

// MarshalJSON writes every key of docs/json.md's "link": null for a
// missing MAC, lower device, master, active slave, tag, and for the QoS
// maps of a device that is not a VLAN device ({} for a VLAN device
// without mappings); addrs is [] when the link has none.
func (l Link) MarshalJSON() ([]byte, error) {
	vlan := l.Kind == KindVLAN
	w := linkJSON{Name: l.Name, Index: l.Index, Kind: l.Kind, MAC: l.MAC, MTU: l.MTU, OperState: l.OperState, Ether: l.Ether,
		ParentIndex: null.Int(l.ParentIndex), ParentOtherNetns: l.ParentOtherNetns, MasterIndex: null.Int(l.MasterIndex),
		ActiveSlave: null.Int(l.ActiveSlave), BondMode: null.String(l.BondMode), Tag: l.Tag, EgressQoS: qosMapJSON(l.EgressQoS, vlan),
		IngressQoS: qosMapJSON(l.IngressQoS, vlan), Addrs: l.Addrs}
	if w.Addrs == nil {
		w.Addrs = []netip.Prefix{}
	}
	return json.Marshal(w)
}

// KernelOperState is the kernel's name for an operstate spelled as
// vishvananda/netlink spells it ("lower-layer-down", "not-present"): what
// a live read gives, and what snapshots collected before 2026-11-24 hold,
// so that they read as live ones do. Other names are returned as they are.
func KernelOperState(s string) string {
	switch s {
	case "lower-layer-down":
		return "lowerlayerdown"
	case "not-present":
		return "notpresent"
	}
	return s
}
