package collect

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// RTM_GETDCB request constants (include/uapi/linux/dcbnl.h); x/sys/unix
// has RTM_GETDCB but none of these. qos parses the replies.
const (
	dcbCmdIEEEGet = 21 // DCB_CMD_IEEE_GET
	dcbCmdGDCBX   = 22 // DCB_CMD_GDCBX
	dcbAttrIfname = 1  // DCB_ATTR_IFNAME
	sizeofDCBMsg  = 4
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

// dcbHandle reads DCB state over rtnetlink. The zero value works in the
// caller's network namespace; newDCBHandleAt works in another one.
type dcbHandle struct {
	sockets map[int]*nl.SocketHandle
}

// newDCBHandleAt returns a handle whose requests run in network namespace
// ns. Close it when done.
func newDCBHandleAt(ns netns.NsHandle) (*dcbHandle, error) {
	s, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket in the namespace: %w", err)
	}
	return &dcbHandle{sockets: map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: s}}}, nil
}

// Close releases the handle's socket.
func (h *dcbHandle) Close() {
	if h == nil {
		return
	}
	for _, s := range h.sockets {
		s.Close()
	}
}

func (h *dcbHandle) execute(req *nl.NetlinkRequest) ([][]byte, error) {
	if h != nil && h.sockets != nil {
		req.Sockets = h.sockets
	}
	return req.Execute(unix.NETLINK_ROUTE, unix.RTM_GETDCB)
}

// readDCB reads netdev ifname's DCB state. A netdev without DCB support is
// not an error: the result has Supported false and a Reason. Only a
// missing netdev or a failing netlink socket are errors.
//
// DCB is a property of the real device: for a VLAN device or a netdev
// stacked on one, pass the real device at the bottom (Link.Real).
func (h *dcbHandle) readDCB(ifname string) (*qos.DCB, error) {
	if ifname == "" || len(ifname) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("netdev name %q is not valid: want 1..%d bytes", ifname, unix.IFNAMSIZ-1)
	}
	d := &qos.DCB{Netdev: ifname}
	msgs, err := h.execute(newDCBRequest(dcbCmdIEEEGet, ifname))
	if err != nil {
		switch {
		case errors.Is(err, syscall.EOPNOTSUPP):
			d.Reason = fmt.Sprintf("%s has no DCB support (RTM_GETDCB: operation not supported; the driver has no dcbnl_ops, as for veth, VLAN and bridge devices, or the kernel lacks CONFIG_DCB)", ifname)
			return d, nil
		case errors.Is(err, syscall.ENODEV):
			return nil, fmt.Errorf("%w: %s", vlan.ErrNoLink, ifname)
		}
		return nil, fmt.Errorf("RTM_GETDCB DCB_CMD_IEEE_GET on %s: %w", ifname, err)
	}
	d.Supported = true
	for _, m := range msgs {
		if err := qos.ParseDCBReply(m, d); err != nil {
			return nil, fmt.Errorf("DCB reply for %s: %w", ifname, err)
		}
	}
	if d.DCBX == nil {
		// The IEEE reply carries DCB_ATTR_DCBX only when the driver has
		// getdcbx; ask once more with DCB_CMD_GDCBX (EOPNOTSUPP means
		// the driver does not report a DCBX mode).
		if msgs, err := h.execute(newDCBRequest(dcbCmdGDCBX, ifname)); err == nil {
			for _, m := range msgs {
				_ = qos.ParseDCBReply(m, d)
			}
		}
	}
	return d, nil
}
