package qos

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// dcbMsg is struct dcbmsg {u8 dcb_family; u8 cmd; u16 dcb_pad}. It goes in
// with AddData: nl serializes RawData after all Data, which would put it
// behind the attributes.
type dcbMsg struct{ cmd uint8 }

// Len implements nl.NetlinkRequestData.
func (m dcbMsg) Len() int { return sizeofDCBMsg }

// Serialize implements nl.NetlinkRequestData: the 4-byte struct dcbmsg.
func (m dcbMsg) Serialize() []byte {
	return []byte{unix.AF_UNSPEC, m.cmd, 0, 0}
}

// newDCBRequest builds an RTM_GETDCB request for cmd on ifname.
func newDCBRequest(cmd uint8, ifname string) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(unix.RTM_GETDCB, 0)
	req.AddData(dcbMsg{cmd: cmd})
	req.AddData(nl.NewRtAttr(dcbAttrIfname, nl.ZeroTerminated(ifname)))
	return req
}

// DCBHandle reads DCB state over rtnetlink. The zero value works in the
// caller's network namespace; NewDCBHandleAt works in another one.
type DCBHandle struct {
	sockets map[int]*nl.SocketHandle
}

// NewDCBHandleAt returns a handle whose requests run in network namespace
// ns. Close it when done.
func NewDCBHandleAt(ns netns.NsHandle) (*DCBHandle, error) {
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("qos: netlink socket in namespace: %w", err)
	}
	return &DCBHandle{sockets: map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}}, nil
}

// Close releases the handle's socket.
func (h *DCBHandle) Close() {
	if h == nil {
		return
	}
	for _, s := range h.sockets {
		s.Close()
	}
}

func (h *DCBHandle) execute(req *nl.NetlinkRequest) ([][]byte, error) {
	if h != nil && h.sockets != nil {
		req.Sockets = h.sockets
	}
	return req.Execute(unix.NETLINK_ROUTE, unix.RTM_GETDCB)
}

// ErrNoNetdev is returned (wrapped) when the netdev does not exist.
var ErrNoNetdev = errors.New("no such netdev")

// ReadDCB reads the IEEE DCB state (PFC, ETS, APP table, trust order) and
// DCBX mode of netdev ifname in the caller's namespace. It needs no
// privileges. See DCBHandle.ReadDCB.
func ReadDCB(ifname string) (*DCB, error) { return (*DCBHandle)(nil).ReadDCB(ifname) }

// ReadDCB reads netdev ifname's DCB state. A netdev without DCB support is
// not an error: the result has Supported false and a Reason. Only a
// missing netdev or a failing netlink socket are errors.
//
// DCB is a property of the real device: for a VLAN device or a netdev
// stacked on one, pass the real device at the bottom (Link.Real).
func (h *DCBHandle) ReadDCB(ifname string) (*DCB, error) {
	if ifname == "" || len(ifname) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("qos: netdev name %q is not valid: want 1..%d bytes", ifname, unix.IFNAMSIZ-1)
	}
	if h == nil {
		// Without CONFIG_DCB the kernel answers EOPNOTSUPP even for a
		// netdev that does not exist; tell the two apart first.
		if _, err := net.InterfaceByName(ifname); err != nil {
			return nil, fmt.Errorf("qos: %w: %s", ErrNoNetdev, ifname)
		}
	}
	d := &DCB{Netdev: ifname}
	msgs, err := h.execute(newDCBRequest(dcbCmdIEEEGet, ifname))
	if err != nil {
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP):
			d.Reason = fmt.Sprintf("%s has no DCB support (RTM_GETDCB: operation not supported; the driver has no dcbnl_ops, as for veth, VLAN and bridge devices, or the kernel lacks CONFIG_DCB)", ifname)
			return d, nil
		case errors.Is(err, syscall.ENODEV):
			return nil, fmt.Errorf("qos: %w: %s", ErrNoNetdev, ifname)
		}
		return nil, fmt.Errorf("qos: RTM_GETDCB DCB_CMD_IEEE_GET on %s: %w", ifname, err)
	}
	d.Supported = true
	for _, m := range msgs {
		if err := ParseDCBReply(m, d); err != nil {
			return nil, fmt.Errorf("qos: DCB reply for %s: %w", ifname, err)
		}
	}
	if d.DCBX == nil {
		// The IEEE reply carries DCB_ATTR_DCBX only when the driver has
		// getdcbx; ask once more with DCB_CMD_GDCBX (EOPNOTSUPP means
		// the driver does not report a DCBX mode).
		if msgs, err := h.execute(newDCBRequest(dcbCmdGDCBX, ifname)); err == nil {
			for _, m := range msgs {
				_ = ParseDCBReply(m, d)
			}
		}
	}
	return d, nil
}
