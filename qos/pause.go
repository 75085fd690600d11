package qos

import "fmt"

// Pause is a netdev's 802.3x pause (link-level flow control) settings:
// what `ethtool -a` shows, read over ethtool netlink
// (ETHTOOL_MSG_PAUSE_GET: ETHTOOL_A_PAUSE_AUTONEG, _RX, _TX;
// net/ethtool/pause.c, Linux 6.1, which answers from the driver's
// get_pauseparam and needs no privilege). RX on: the port stops sending
// when it receives a pause frame; TX on: the port sends pause frames when
// its receive buffer fills. 802.3x pause stops every priority of the
// link at once, unlike PFC, which pauses one priority.
//
// Drivers differ in what they report while PFC is on: ice reports rx and
// tx off whenever PFC is enabled (ice_ethtool.c ice_get_pauseparam) and
// refuses to turn them on; mlx5 reports what its PFCC register holds
// (mlx5_query_port_pause).
type Pause struct {
	// Netdev is the real netdev the settings are of.
	Netdev string `json:"netdev"`
	// Autoneg, RX and TX are nil when not read.
	Autoneg *bool         `json:"autoneg"`
	RX      *bool         `json:"rx"`
	TX      *bool         `json:"tx"`
	Source  string        `json:"source"`
	Status  SettingStatus `json:"status"`
	Reason  *string       `json:"reason"`
}

// PauseSource is the Source of settings read over ethtool netlink.
const PauseSource = "ethtool netlink ETHTOOL_MSG_PAUSE_GET"

// On reports whether 802.3x pause was read and is on in either
// direction; known is false when the settings were not read.
func (p *Pause) On() (on, known bool) {
	if p == nil || p.Status != SettingRead || p.RX == nil || p.TX == nil {
		return false, false
	}
	return *p.RX || *p.TX, true
}

// Directions names the directions that are on: "rx and tx", "rx", "tx"
// or "" (none, or not read).
func (p *Pause) Directions() string {
	if p == nil || p.Status != SettingRead || p.RX == nil || p.TX == nil {
		return ""
	}
	switch {
	case *p.RX && *p.TX:
		return "rx and tx"
	case *p.RX:
		return "rx"
	case *p.TX:
		return "tx"
	}
	return ""
}

// ethtool netlink attributes of a PAUSE_GET reply
// (include/uapi/linux/ethtool_netlink.h, Linux 6.1).
const (
	sizeofGenlMsgHdr = 4 // struct genlmsghdr: cmd, version, reserved
	pauseAttrAutoneg = 2 // ETHTOOL_A_PAUSE_AUTONEG (u8)
	pauseAttrRX      = 3 // ETHTOOL_A_PAUSE_RX (u8)
	pauseAttrTX      = 4 // ETHTOOL_A_PAUSE_TX (u8)
)

// ParsePauseReply decodes the payload of an ETHTOOL_MSG_PAUSE_GET reply
// (the bytes after the netlink message header: struct genlmsghdr, then
// attributes) into p's Autoneg, RX and TX; it does not set Status.
// Attributes it does not know (the header, the statistics) are skipped;
// a flag that is not one byte is an error.
func ParsePauseReply(b []byte, p *Pause) error {
	if len(b) < sizeofGenlMsgHdr {
		return fmt.Errorf("qos: pause reply is %d bytes: want at least the %d-byte genlmsghdr", len(b), sizeofGenlMsgHdr)
	}
	attrs, err := parseAttrs(b[sizeofGenlMsgHdr:])
	if err != nil {
		return err
	}
	for _, a := range attrs {
		var dst **bool
		switch a.typ {
		case pauseAttrAutoneg:
			dst = &p.Autoneg
		case pauseAttrRX:
			dst = &p.RX
		case pauseAttrTX:
			dst = &p.TX
		default:
			continue
		}
		if len(a.data) != 1 {
			return fmt.Errorf("qos: pause attribute %d is %d bytes: want a 1-byte flag", a.typ, len(a.data))
		}
		v := a.data[0] != 0
		*dst = &v
	}
	return nil
}
