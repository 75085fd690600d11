package topology

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"unicode/utf8"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// LLDP's link-layer constants (IEEE 802.1AB-2016 clause 7.1 and 7.2): the
// EtherType and the nearest-bridge group address every switch port sends
// its LLDPDUs to (a bridge never forwards frames to it).
const (
	EtherTypeLLDP = 0x88cc
)

// NearestBridge is the destination MAC of LLDPDUs, 01:80:c2:00:00:0e.
var NearestBridge = net.HardwareAddr{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}

// Neighbor is what an LLDPDU (or lldpd, which received one) says about the
// other end of a link: the switch and the port a netdev is plugged into.
// The identifiers are text: a MAC address as aa:bb:cc:dd:ee:ff, a network
// address as an IP address, a name as sent, anything else as hex digits.
type Neighbor struct {
	// ChassisID identifies the switch; ChassisIDType is how (lldpd's
	// names: "mac", "ip", "ifname", "ifalias", "local", and
	// "chassis-component", "port-component" for the subtypes lldpd
	// calls "unhandled").
	ChassisID     string `json:"chassis_id"`
	ChassisIDType string `json:"chassis_id_type"`
	// PortID identifies the switch's port; PortIDType is how ("mac",
	// "ip", "ifname", "ifalias", "local", "port-component",
	// "agent-circuit-id").
	PortID     string `json:"port_id"`
	PortIDType string `json:"port_id_type"`
	// SystemName and PortDescription are the optional TLVs ("" when
	// absent: null in JSON).
	SystemName      string `json:"-"`
	PortDescription string `json:"-"`
	// ManagementAddress is the first management address TLV's IP address
	// (invalid when absent or not IP).
	ManagementAddress netip.Addr `json:"-"`
	// TTL is how long the information is valid, seconds (0: the sender
	// is shutting LLDP down on the port and the information is void).
	TTL uint16 `json:"ttl_s"`
}

// Switch is the name a netdev's switch goes by: the system name when it
// is a valid switch name (ValidSwitch), else the chassis ID when it is;
// "" when neither is.
func (n Neighbor) Switch() string {
	if ValidSwitch(n.SystemName) {
		return n.SystemName
	}
	if ValidSwitch(n.ChassisID) {
		return n.ChassisID
	}
	return ""
}

// SwitchPort is the name of the switch's port: the port ID when it is a
// name (subtype interface name, interface alias or locally assigned),
// else the port description when there is one (lldpd and NIC firmware
// send a MAC address as the port ID and the name as its description),
// else the port ID as it is.
func (n Neighbor) SwitchPort() string {
	switch n.PortIDType {
	case "ifname", "ifalias", "local":
		if n.PortID != "" {
			return n.PortID
		}
	}
	if n.PortDescription != "" {
		return n.PortDescription
	}
	return n.PortID
}

// MaxSwitchLen is the longest switch name: it rides in probe replies and
// labels metrics.
const MaxSwitchLen = 64

// ValidSwitch reports whether s can name a switch (a ToR): 1..64
// characters of letters, digits, '_', '.', ':' and '-' — the characters
// of host names and MAC addresses, and the ones roce-probe allows in peer
// and flow names, so that a name is a Prometheus label value and a
// peers-file field as it is. A system name with other characters (a
// space) is not used: the chassis ID names the switch instead.
func ValidSwitch(s string) bool {
	if len(s) < 1 || len(s) > MaxSwitchLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// ErrNotLLDP is returned by DecodeLLDP for a frame that is not an LLDP
// frame at all (another EtherType), as opposed to a malformed one.
var ErrNotLLDP = errors.New("topology: not an LLDP frame (EtherType 0x88cc)")

// DecodeLLDP decodes an Ethernet frame carrying an LLDPDU (EtherType
// 0x88cc, untagged or behind 802.1Q/802.1ad tags). A frame of another
// EtherType is ErrNotLLDP; an LLDPDU without its mandatory chassis ID,
// port ID, TTL and end TLVs, or with a TLV running past the frame, is an
// error saying so. It never panics.
func DecodeLLDP(frame []byte) (Neighbor, error) {
	p := gopacket.NewPacket(frame, layers.LayerTypeEthernet, gopacket.DecodeOptions{Lazy: false, NoCopy: true})
	l := p.Layer(layers.LayerTypeLinkLayerDiscovery)
	if l == nil {
		if el := p.ErrorLayer(); el != nil && isLLDP(p) {
			return Neighbor{}, fmt.Errorf("topology: LLDPDU: %v", el.Error())
		}
		return Neighbor{}, ErrNotLLDP
	}
	if el := p.ErrorLayer(); el != nil {
		return Neighbor{}, fmt.Errorf("topology: LLDPDU: %v", el.Error())
	}
	info, _ := p.Layer(layers.LayerTypeLinkLayerDiscoveryInfo).(*layers.LinkLayerDiscoveryInfo)
	return neighborOf(l.(*layers.LinkLayerDiscovery), info), nil
}

// DecodeLLDPDU decodes an LLDPDU: the payload of an LLDP frame, from the
// chassis ID TLV to the end TLV (DecodeLLDP's errors).
func DecodeLLDPDU(pdu []byte) (Neighbor, error) {
	p := gopacket.NewPacket(pdu, layers.LayerTypeLinkLayerDiscovery, gopacket.DecodeOptions{NoCopy: true})
	l := p.Layer(layers.LayerTypeLinkLayerDiscovery)
	if el := p.ErrorLayer(); el != nil || l == nil {
		msg := "no LLDPDU"
		if el != nil {
			msg = el.Error().Error()
		}
		return Neighbor{}, fmt.Errorf("topology: LLDPDU: %s", msg)
	}
	info, _ := p.Layer(layers.LayerTypeLinkLayerDiscoveryInfo).(*layers.LinkLayerDiscoveryInfo)
	return neighborOf(l.(*layers.LinkLayerDiscovery), info), nil
}

// isLLDP reports whether p's link layer says LLDP (the frame's EtherType,
// after its tags).
func isLLDP(p gopacket.Packet) bool {
	for _, l := range p.Layers() {
		switch v := l.(type) {
		case *layers.Ethernet:
			if v.EthernetType == layers.EthernetTypeLinkLayerDiscovery {
				return true
			}
		case *layers.Dot1Q:
			if v.Type == layers.EthernetTypeLinkLayerDiscovery {
				return true
			}
		}
	}
	return false
}

func neighborOf(d *layers.LinkLayerDiscovery, info *layers.LinkLayerDiscoveryInfo) Neighbor {
	n := Neighbor{TTL: d.TTL}
	n.ChassisIDType, n.ChassisID = chassisID(d.ChassisID)
	n.PortIDType, n.PortID = portID(d.PortID)
	if info != nil {
		n.SystemName = printable(info.SysName)
		n.PortDescription = printable(info.PortDescription)
		n.ManagementAddress = ianaAddr(byte(info.MgmtAddress.Subtype), info.MgmtAddress.Address)
	}
	return n
}

// chassisID formats a chassis ID by its subtype (802.1AB-2016 Table 8-2).
func chassisID(c layers.LLDPChassisID) (string, string) {
	switch c.Subtype {
	case layers.LLDPChassisIDSubTypeMACAddr:
		return "mac", macText(c.ID)
	case layers.LLDPChassisIDSubTypeNetworkAddr:
		return "ip", addrText(c.ID)
	case layers.LLDPChassisIDSubtypeIfaceName:
		return "ifname", text(c.ID)
	case layers.LLDPChassisIDSubtypeIfaceAlias:
		return "ifalias", text(c.ID)
	case layers.LLDPChassisIDSubTypeLocal:
		return "local", text(c.ID)
	case layers.LLDPChassisIDSubTypeChassisComp:
		return "chassis-component", text(c.ID)
	case layers.LLDPChassisIDSubTypePortComp:
		return "port-component", text(c.ID)
	}
	return fmt.Sprintf("subtype-%d", c.Subtype), hex.EncodeToString(c.ID)
}

// portID formats a port ID by its subtype (802.1AB-2016 Table 8-3).
func portID(c layers.LLDPPortID) (string, string) {
	switch c.Subtype {
	case layers.LLDPPortIDSubtypeMACAddr:
		return "mac", macText(c.ID)
	case layers.LLDPPortIDSubtypeNetworkAddr:
		return "ip", addrText(c.ID)
	case layers.LLDPPortIDSubtypeIfaceName:
		return "ifname", text(c.ID)
	case layers.LLDPPortIDSubtypeIfaceAlias:
		return "ifalias", text(c.ID)
	case layers.LLDPPortIDSubtypeLocal:
		return "local", text(c.ID)
	case layers.LLDPPortIDSubtypePortComp:
		return "port-component", text(c.ID)
	case layers.LLDPPortIDSubtypeAgentCircuitID:
		return "agent-circuit-id", hex.EncodeToString(c.ID)
	}
	return fmt.Sprintf("subtype-%d", c.Subtype), hex.EncodeToString(c.ID)
}

// macText is a 6-byte MAC address as aa:bb:cc:dd:ee:ff, other lengths in
// hex.
func macText(b []byte) string {
	if len(b) == 6 {
		return net.HardwareAddr(b).String()
	}
	return hex.EncodeToString(b)
}

// addrText is a network address ID (an IANA address family byte, then
// the address) as an IP address, else in hex.
func addrText(b []byte) string {
	if len(b) > 0 {
		if a := ianaAddr(b[0], b[1:]); a.IsValid() {
			return a.String()
		}
	}
	return hex.EncodeToString(b)
}

// ianaAddr is an address of IANA family f (1 IPv4, 2 IPv6), invalid for
// other families and wrong lengths.
func ianaAddr(f byte, b []byte) netip.Addr {
	switch {
	case f == 1 && len(b) == 4:
		return netip.AddrFrom4([4]byte(b))
	case f == 2 && len(b) == 16:
		return netip.AddrFrom16([16]byte(b))
	}
	return netip.Addr{}
}

// text is a name as sent when it is printable UTF-8, else hex digits.
func text(b []byte) string {
	if s := printable(string(b)); s != "" || len(b) == 0 {
		return s
	}
	return hex.EncodeToString(b)
}

// printable returns s without trailing NULs (some switches pad names) when
// it is valid UTF-8 without control characters, else "".
func printable(s string) string {
	s = strings.TrimRight(s, "\x00")
	if !utf8.ValidString(s) {
		return ""
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return ""
		}
	}
	return s
}
