package vlan

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
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

// Proto is a VLAN tag protocol (TPID).
type Proto uint16

// VLAN protocols.
const (
	Proto8021Q  Proto = 0x8100 // 802.1Q customer tag
	Proto8021AD Proto = 0x88a8 // 802.1ad service tag (QinQ outer tag)
)

// String returns "802.1Q", "802.1ad" or the TPID in hex.
func (p Proto) String() string {
	switch p {
	case Proto8021Q:
		return "802.1Q"
	case Proto8021AD:
		return "802.1ad"
	}
	return fmt.Sprintf("0x%04x", uint16(p))
}

// MarshalText implements encoding.TextMarshaler with String's form.
func (p Proto) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText accepts "802.1Q", "802.1ad" (any case) or a hex TPID "0x8100".
func (p *Proto) UnmarshalText(b []byte) error {
	s := strings.ToLower(string(b))
	switch s {
	case "802.1q":
		*p = Proto8021Q
		return nil
	case "802.1ad":
		*p = Proto8021AD
		return nil
	}
	if strings.HasPrefix(s, "0x") {
		v, err := strconv.ParseUint(s[2:], 16, 16)
		if err == nil {
			*p = Proto(v)
			return nil
		}
	}
	return fmt.Errorf("vlan: unknown VLAN protocol %q: want \"802.1Q\", \"802.1ad\" or a hex TPID such as 0x8100", string(b))
}

// Tag is one VLAN tag: the VLAN ID and the tag protocol.
type Tag struct {
	ID    uint16 `json:"id"`
	Proto Proto  `json:"proto"`
}

// String returns "100" for an 802.1Q tag and "802.1ad:1000" otherwise.
func (t Tag) String() string {
	if t.Proto == Proto8021Q || t.Proto == 0 {
		return strconv.Itoa(int(t.ID))
	}
	return t.Proto.String() + ":" + strconv.Itoa(int(t.ID))
}

// MAC is a hardware address that marshals to JSON as "02:00:00:00:00:01"
// (net.HardwareAddr would marshal as base64).
type MAC net.HardwareAddr

// String returns the colon-separated lower-case hex form, or "" for none.
func (m MAC) String() string { return net.HardwareAddr(m).String() }

// MarshalText implements encoding.TextMarshaler.
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

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

// Link is one netdev as rtnetlink describes it: plain data, so a Snapshot
// can be read from the kernel or from a JSON fixture.
type Link struct {
	Name      string `json:"name"`
	Index     int    `json:"ifindex"`
	Kind      Kind   `json:"kind"`
	MAC       MAC    `json:"mac,omitempty"`
	MTU       int    `json:"mtu"`
	OperState string `json:"operstate"` // "up", "down", "unknown", ... (IFLA_OPERSTATE)
	// Ether is true for ARPHRD_ETHER devices, the only ones whose
	// addresses the kernel turns into RoCE GIDs.
	Ether bool `json:"ether"`
	// ParentIndex is IFLA_LINK: for a stacked kind (VLAN, macvlan, ipvlan)
	// the ifindex of the lower device; 0 for none.
	ParentIndex int `json:"link,omitempty"`
	// ParentOtherNetns is true when IFLA_LINK_NETNSID says the lower
	// device lives in another network namespace (e.g. a macvlan moved
	// into a container), so ParentIndex is not an index of this snapshot.
	ParentOtherNetns bool `json:"link_other_netns,omitempty"`
	// MasterIndex is the ifindex of the bond, team or bridge this link is
	// enslaved to; 0 for none.
	MasterIndex int `json:"master,omitempty"`
	// ActiveSlave is, for a bond with an active slave (active-backup),
	// that slave's ifindex; 0 otherwise.
	ActiveSlave int            `json:"active_slave,omitempty"`
	VLAN        *Tag           `json:"vlan,omitempty"`        // the link's own tag when Kind is KindVLAN
	EgressQoS   QoSMap         `json:"egress_qos,omitempty"`  // VLAN only: skb priority → PCP
	IngressQoS  QoSMap         `json:"ingress_qos,omitempty"` // VLAN only: PCP → skb priority
	Addrs       []netip.Prefix `json:"addrs,omitempty"`       // IPv4 and IPv6 addresses, in the kernel's dump order
}
