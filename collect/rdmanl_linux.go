package collect

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// RDMA netlink port attributes vishvananda/netlink does not name
// (include/uapi/rdma/rdma_netlink.h: enum rdma_nldev_command and enum
// rdma_nldev_attr, Linux 6.1).
const (
	rdmaNLDevCmdPortGet   = 5  // RDMA_NLDEV_CMD_PORT_GET
	rdmaNLDevAttrNdevName = 51 // RDMA_NLDEV_ATTR_NDEV_NAME
)

// portKey names one port of one RDMA device.
type portKey struct {
	dev  string
	port int
}

// rdmaPortNetdevs asks RDMA netlink for every port's netdev: what `rdma
// link show` prints as "netdev". The kernel's fill_port_info
// (drivers/infiniband/core/nldev.c) reports ib_device_get_netdev(dev,
// port) — for a RoCE LAG device the netdev its driver registered for the
// bond — and only when that netdev is in the caller's network namespace.
// A port the kernel reports without a netdev maps to "". The error is
// returned when RDMA netlink cannot be asked at all (no ib_core, an old
// kernel): the caller keeps what sysfs says.
func rdmaPortNetdevs() (map[portKey]string, error) {
	h, err := netlink.NewHandle(unix.NETLINK_RDMA)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	links, err := h.RdmaLinkList()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return nil, err
	}
	out := map[portKey]string{}
	for _, l := range links {
		// RDMA_NLDEV_CMD_PORT_GET as a dump needs the device index
		// (nldev_port_get_dumpit).
		req := nl.NewNetlinkRequest(nl.RDMA_NL_NLDEV<<nl.RDMA_NL_GET_CLIENT_SHIFT|rdmaNLDevCmdPortGet, unix.NLM_F_DUMP)
		b := make([]byte, 4)
		nl.NativeEndian().PutUint32(b, l.Attrs.Index)
		req.AddData(nl.NewRtAttr(nl.RDMA_NLDEV_ATTR_DEV_INDEX, b))
		msgs, err := req.Execute(unix.NETLINK_RDMA, 0)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			continue // the device went away, or the kernel refuses: sysfs answers for it
		}
		for _, m := range msgs {
			port, netdev, ok := parsePortMsg(m)
			if ok {
				out[portKey{l.Attrs.Name, port}] = netdev
			}
		}
	}
	return out, nil
}

// parsePortMsg reads RDMA_NLDEV_ATTR_PORT_INDEX and
// RDMA_NLDEV_ATTR_NDEV_NAME from one RDMA_NLDEV_CMD_PORT_GET reply.
func parsePortMsg(m []byte) (port int, netdev string, ok bool) {
	attrs, err := nl.ParseRouteAttr(m)
	if err != nil {
		return 0, "", false
	}
	for _, a := range attrs {
		switch a.Attr.Type &^ (unix.NLA_F_NESTED | unix.NLA_F_NET_BYTEORDER) {
		case nl.RDMA_NLDEV_ATTR_PORT_INDEX:
			if len(a.Value) >= 4 {
				port, ok = int(binary.NativeEndian.Uint32(a.Value)), true
			}
		case rdmaNLDevAttrNdevName:
			netdev = strings.TrimRight(string(a.Value), "\x00")
		}
	}
	return port, netdev, ok && port > 0
}
