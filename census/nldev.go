package census

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
)

// RDMA netlink's numbers, from the kernel's UAPI header
// include/uapi/rdma/rdma_netlink.h (Linux 6.1; RDMA_NLDEV_ATTR_RES_SUBTYPE
// from Linux 6.10). They are ABI: the header says "don't change the order
// or add anything between".
const (
	rdmaNLNLDev = 5 // RDMA_NL_NLDEV, the client; a message type is client<<10 | op

	cmdResQPGet    = 10 // RDMA_NLDEV_CMD_RES_QP_GET
	cmdResCMIDGet  = 11 // RDMA_NLDEV_CMD_RES_CM_ID_GET
	cmdResQPGetRaw = 19 // RDMA_NLDEV_CMD_RES_QP_GET_RAW

	attrDevIndex       = 1  // RDMA_NLDEV_ATTR_DEV_INDEX, u32
	attrDevName        = 2  // RDMA_NLDEV_ATTR_DEV_NAME, string
	attrPortIndex      = 3  // RDMA_NLDEV_ATTR_PORT_INDEX, u32
	attrResQP          = 19 // RDMA_NLDEV_ATTR_RES_QP, nested table
	attrResQPEntry     = 20 // RDMA_NLDEV_ATTR_RES_QP_ENTRY, nested
	attrResLQPN        = 21 // RDMA_NLDEV_ATTR_RES_LQPN, u32
	attrResRQPN        = 22 // RDMA_NLDEV_ATTR_RES_RQPN, u32
	attrResRQPSN       = 23 // RDMA_NLDEV_ATTR_RES_RQ_PSN, u32
	attrResSQPSN       = 24 // RDMA_NLDEV_ATTR_RES_SQ_PSN, u32
	attrResPathMig     = 25 // RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, u8
	attrResType        = 26 // RDMA_NLDEV_ATTR_RES_TYPE, u8
	attrResState       = 27 // RDMA_NLDEV_ATTR_RES_STATE, u8
	attrResPID         = 28 // RDMA_NLDEV_ATTR_RES_PID, u32
	attrResKernName    = 29 // RDMA_NLDEV_ATTR_RES_KERN_NAME, string
	attrResCMID        = 30 // RDMA_NLDEV_ATTR_RES_CM_ID, nested table
	attrResCMIDEntry   = 31 // RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, nested
	attrResPS          = 32 // RDMA_NLDEV_ATTR_RES_PS, u32
	attrResSrcAddr     = 33 // RDMA_NLDEV_ATTR_RES_SRC_ADDR, __kernel_sockaddr_storage
	attrResDstAddr     = 34 // RDMA_NLDEV_ATTR_RES_DST_ADDR, __kernel_sockaddr_storage
	attrDriver         = 52 // RDMA_NLDEV_ATTR_DRIVER, nested table
	attrDriverString   = 54 // RDMA_NLDEV_ATTR_DRIVER_STRING, string
	attrDriverPrint    = 55 // RDMA_NLDEV_ATTR_DRIVER_PRINT_TYPE, u8
	attrDriverS32      = 56 // RDMA_NLDEV_ATTR_DRIVER_S32
	attrDriverU32      = 57 // RDMA_NLDEV_ATTR_DRIVER_U32
	attrDriverS64      = 58 // RDMA_NLDEV_ATTR_DRIVER_S64
	attrDriverU64      = 59 // RDMA_NLDEV_ATTR_DRIVER_U64
	attrResPDN         = 60 // RDMA_NLDEV_ATTR_RES_PDN, u32
	attrResCMIDN       = 63 // RDMA_NLDEV_ATTR_RES_CM_IDN, u32
	attrResRaw         = 85 // RDMA_NLDEV_ATTR_RES_RAW, binary
	attrResSubtype     = 98 // RDMA_NLDEV_ATTR_RES_SUBTYPE, string (Linux 6.10+)
	printTypeHex       = 1  // RDMA_NLDEV_PRINT_TYPE_HEX
	nlaTypeMask        = 0x3fff
	nlmsgHdrLen        = 16
	nlmsgError         = 2 // NLMSG_ERROR
	nlmsgDone          = 3 // NLMSG_DONE
	nlmFRequest        = 0x1
	nlmFAck            = 0x4
	nlmFDump           = 0x300 // NLM_F_ROOT | NLM_F_MATCH
	sockaddrStorageLen = 128   // sizeof(struct __kernel_sockaddr_storage)
	afInet             = 2     // AF_INET
	afInet6            = 10    // AF_INET6 (Linux)
)

// Dump is one RDMA netlink resource dump of one device.
type Dump int

// The dumps the census reads.
const (
	// DumpQP is RDMA_NLDEV_CMD_RES_QP_GET: every QP (`rdma resource
	// show qp`). Unprivileged.
	DumpQP Dump = cmdResQPGet
	// DumpCMID is RDMA_NLDEV_CMD_RES_CM_ID_GET: every rdma_cm ID
	// (`rdma resource show cm_id`). Unprivileged.
	DumpCMID Dump = cmdResCMIDGet
	// DumpQPRaw is RDMA_NLDEV_CMD_RES_QP_GET_RAW: the driver's raw
	// context of every QP (`rdma resource show qp -r`). The kernel
	// answers EPERM without CAP_NET_ADMIN (nldev.c: RDMA_NL_ADMIN_PERM),
	// EINVAL when the driver has no raw contexts (rxe) or the kernel
	// predates the dump (before Linux 5.10).
	DumpQPRaw Dump = cmdResQPGetRaw
)

// String is the kernel's name of the command.
func (d Dump) String() string {
	switch d {
	case DumpQP:
		return "RDMA_NLDEV_CMD_RES_QP_GET"
	case DumpCMID:
		return "RDMA_NLDEV_CMD_RES_CM_ID_GET"
	case DumpQPRaw:
		return "RDMA_NLDEV_CMD_RES_QP_GET_RAW"
	}
	return fmt.Sprintf("RDMA_NLDEV command %d", int(d))
}

// MessageType is the netlink message type of the dump's request and
// replies: RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, command).
func (d Dump) MessageType() uint16 { return rdmaNLNLDev<<10 | uint16(d) }

// Request returns the dump's request for the device with index devIndex
// (RDMA_NLDEV_ATTR_DEV_INDEX: the kernel dumps one device per request,
// nldev.c res_get_common_dumpit), a whole netlink message with NLM_F_DUMP
// and sequence number seq, to send on a NETLINK_RDMA socket.
func (d Dump) Request(devIndex, seq uint32) []byte {
	b := make([]byte, nlmsgHdrLen+8)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], d.MessageType())
	ne.PutUint16(b[6:], nlmFRequest|nlmFAck|nlmFDump)
	ne.PutUint32(b[8:], seq)
	ne.PutUint16(b[16:], 8)
	ne.PutUint16(b[18:], attrDevIndex)
	ne.PutUint32(b[20:], devIndex)
	return b
}

// KernelError is the error the kernel answered a dump with (an
// NLMSG_ERROR, or an NLMSG_DONE carrying the dump's error).
type KernelError struct {
	// Dump is the command answered.
	Dump Dump
	// Errno is the error number (positive: 1 is EPERM).
	Errno int
}

func (e *KernelError) Error() string {
	return fmt.Sprintf("%s: the kernel answered %v", e.Dump, syscall.Errno(e.Errno))
}

// Unwrap returns the errno as a syscall.Errno, for errors.Is(err,
// syscall.EPERM).
func (e *KernelError) Unwrap() error { return syscall.Errno(e.Errno) }

// Decode decodes the replies to RDMA netlink resource dumps: b is netlink
// messages as read from a NETLINK_RDMA socket, each with its header (one
// or more datagrams put end to end). Replies to DumpQP, DumpCMID and
// DumpQPRaw fill the census's QPs, CMIDs and RawQPs (Sources stays nil;
// Comm of a process is left for the reader of /proc to fill); an
// NLMSG_DONE ends the decoding. An NLMSG_ERROR, or an NLMSG_DONE carrying
// an error, is returned as a *KernelError with what was decoded before
// it. Malformed messages are an error naming the message and entry;
// messages of other types are skipped.
func Decode(b []byte) (*Census, error) {
	c := &Census{}
	ne := binary.NativeEndian
	for n := 0; len(b) > 0; n++ {
		if len(b) < nlmsgHdrLen {
			return c, fmt.Errorf("netlink message %d: %d bytes, shorter than a header (16)", n, len(b))
		}
		l := int(ne.Uint32(b[0:]))
		if l < nlmsgHdrLen || l > len(b) {
			return c, fmt.Errorf("netlink message %d: length %d, want 16..%d", n, l, len(b))
		}
		typ := ne.Uint16(b[4:])
		payload := b[nlmsgHdrLen:l]
		b = b[min(align4(l), len(b)):]
		switch {
		case typ == nlmsgError || typ == nlmsgDone:
			if len(payload) >= 4 {
				if e := int32(ne.Uint32(payload)); e < 0 {
					d := Dump(0)
					if typ == nlmsgError && len(payload) >= 4+nlmsgHdrLen {
						d = Dump(ne.Uint16(payload[8:]) & 0x3ff)
					}
					return c, &KernelError{Dump: d, Errno: int(-e)}
				}
			}
			if typ == nlmsgDone {
				return c, nil
			}
		case typ>>10 == rdmaNLNLDev:
			if err := c.decodeMessage(Dump(typ&0x3ff), payload); err != nil {
				return c, fmt.Errorf("netlink message %d (%s): %w", n, Dump(typ&0x3ff), err)
			}
		}
	}
	return c, nil
}

// decodeMessage decodes one reply message's attributes.
func (c *Census) decodeMessage(d Dump, payload []byte) error {
	attrs, err := parseAttrs(payload)
	if err != nil {
		return err
	}
	dev := ""
	var table []byte
	haveTable := false
	for _, a := range attrs {
		switch a.typ {
		case attrDevName:
			dev = str(a.val)
		case attrResQP:
			if d == DumpQP || d == DumpQPRaw {
				table, haveTable = a.val, true
			}
		case attrResCMID:
			if d == DumpCMID {
				table, haveTable = a.val, true
			}
		}
	}
	if !haveTable {
		return nil // a message of another command, or an empty device
	}
	if err := checkDevPort(dev, 0); err != nil {
		return err
	}
	entries, err := parseAttrs(table)
	if err != nil {
		return fmt.Errorf("%s: %w", dev, err)
	}
	for i, e := range entries {
		attrs, err := parseAttrs(e.val)
		if err != nil {
			return fmt.Errorf("%s entry %d: %w", dev, i, err)
		}
		switch {
		case d == DumpQP && e.typ == attrResQPEntry:
			q, err := decodeQP(dev, attrs)
			if err != nil {
				return fmt.Errorf("%s QP entry %d: %w", dev, i, err)
			}
			c.QPs = append(c.QPs, q)
		case d == DumpQPRaw && e.typ == attrResQPEntry:
			r := RawQP{Device: dev}
			for _, a := range attrs {
				switch a.typ {
				case attrPortIndex:
					r.Port, err = port(a)
				case attrResRaw:
					r.Data = append([]byte(nil), a.val...)
				}
				if err != nil {
					return fmt.Errorf("%s raw QP entry %d: %w", dev, i, err)
				}
			}
			c.RawQPs = append(c.RawQPs, r)
		case d == DumpCMID && e.typ == attrResCMIDEntry:
			id, err := decodeCMID(dev, attrs)
			if err != nil {
				return fmt.Errorf("%s rdma_cm ID entry %d: %w", dev, i, err)
			}
			c.CMIDs = append(c.CMIDs, id)
		}
	}
	return nil
}

// noMarkings is the reason a QP has no markings: nothing in the dump
// carries them (drivers/infiniband/core/nldev.c fill_res_qp_entry_query
// exports none; docs/qps.md lists what each driver adds). Short: every
// QP carries it.
const noMarkings = "not reported by the kernel or the driver (docs/qps.md)"

func decodeQP(dev string, attrs []attr) (QP, error) {
	q := QP{Device: dev}
	var have [attrResSubtype + 1]bool
	var pid uint32
	var err error
	for _, a := range attrs {
		if int(a.typ) < len(have) {
			have[a.typ] = true
		}
		switch a.typ {
		case attrPortIndex:
			q.Port, err = port(a)
		case attrResLQPN:
			q.QPN, err = u32(a)
		case attrResRQPN:
			q.DestQP, err = u32p(a)
		case attrResRQPSN:
			q.RQPSN, err = u32p(a)
		case attrResSQPSN:
			q.SQPSN, err = u32(a)
		case attrResPathMig:
			var v uint8
			v, err = u8(a)
			q.PathMigState = name(pathMigStates, int(v))
		case attrResType:
			var v uint8
			v, err = u8(a)
			q.Type = qpType(v)
		case attrResSubtype:
			q.Subtype = str(a.val)
		case attrResState:
			var v uint8
			v, err = u8(a)
			q.State = name(qpStates, int(v))
		case attrResPDN:
			q.PDN, err = u32p(a)
		case attrResPID:
			pid, err = u32(a)
		case attrResKernName:
			q.Comm = str(a.val)
		case attrDriver:
			q.Driver, err = decodeDriver(a.val)
		}
		if err != nil {
			return q, err
		}
	}
	for _, req := range []struct {
		attr int
		name string
	}{{attrResLQPN, "RDMA_NLDEV_ATTR_RES_LQPN"}, {attrResSQPSN, "RDMA_NLDEV_ATTR_RES_SQ_PSN"}, {attrResType, "RDMA_NLDEV_ATTR_RES_TYPE"}, {attrResState, "RDMA_NLDEV_ATTR_RES_STATE"}} {
		if !have[req.attr] {
			return q, fmt.Errorf("no %s", req.name)
		}
	}
	q.Owner, q.PID, err = owner(have[attrResPID], pid, have[attrResKernName])
	if err != nil {
		return q, fmt.Errorf("QP %d: %w", q.QPN, err)
	}
	q.TrafficClass, q.SL, q.DSCP = driverMarkings(q.Driver)
	if q.TrafficClass == nil || q.SL == nil || q.DSCP == nil {
		q.MarkingsReason = noMarkings
		if q.TrafficClass != nil || q.SL != nil || q.DSCP != nil {
			q.MarkingsReason = "partly reported by the driver's attributes"
		}
	}
	return q, nil
}

// driverMarkings takes a traffic class, SL or DSCP from driver attributes
// named so ("tclass", "traffic_class", "sl", "dscp"), for a driver that
// adds them; no Linux driver does today (docs/qps.md).
func driverMarkings(attrs []DriverAttr) (tc, sl, dscp *int) {
	for _, a := range attrs {
		if a.Value == nil {
			continue
		}
		v := int(*a.Value)
		switch strings.ToLower(a.Name) {
		case "tclass", "traffic_class":
			if v >= 0 && v <= 255 {
				tc = &v
			}
		case "sl":
			if v >= 0 && v <= 15 {
				sl = &v
			}
		case "dscp":
			if v >= 0 && v <= 63 {
				dscp = &v
			}
		}
	}
	return tc, sl, dscp
}

func decodeCMID(dev string, attrs []attr) (CMID, error) {
	id := CMID{Device: dev}
	var have [attrResSubtype + 1]bool
	var pid uint32
	var err error
	for _, a := range attrs {
		if int(a.typ) < len(have) {
			have[a.typ] = true
		}
		switch a.typ {
		case attrPortIndex:
			id.Port, err = port(a)
		case attrResLQPN:
			id.QPN, err = u32p(a)
		case attrResType:
			var v uint8
			v, err = u8(a)
			id.QPType = qpType(v)
		case attrResPS:
			var v uint32
			v, err = u32(a)
			id.PortSpace = portSpace(v)
		case attrResState:
			var v uint8
			v, err = u8(a)
			id.State = name(cmStates, int(v))
		case attrResSrcAddr:
			id.Src, err = sockaddr(a.val)
		case attrResDstAddr:
			id.Dst, err = sockaddr(a.val)
		case attrResCMIDN:
			id.ID, err = u32(a)
		case attrResPID:
			pid, err = u32(a)
		case attrResKernName:
			id.Comm = str(a.val)
		}
		if err != nil {
			return id, err
		}
	}
	if !have[attrResPS] || !have[attrResState] {
		return id, errors.New("no RDMA_NLDEV_ATTR_RES_PS or RDMA_NLDEV_ATTR_RES_STATE")
	}
	id.Owner, id.PID, err = owner(have[attrResPID], pid, have[attrResKernName])
	if err != nil {
		return id, fmt.Errorf("rdma_cm ID %d: %w", id.ID, err)
	}
	return id, nil
}

// owner is fill_res_name_pid's answer: a kernel name for a kernel
// resource, else the PID when the task is visible and alive.
func owner(havePID bool, pid uint32, haveKern bool) (string, int, error) {
	switch {
	case havePID && haveKern:
		return "", 0, errors.New("both a PID and a kernel name")
	case haveKern:
		return OwnerKernel, 0, nil
	case havePID:
		if pid == 0 || pid > math.MaxInt32 {
			return "", 0, fmt.Errorf("PID %d: want 1..%d", pid, math.MaxInt32)
		}
		return OwnerProcess, int(pid), nil
	}
	return "", 0, nil
}

// decodeDriver reads RDMA_NLDEV_ATTR_DRIVER: a flat list of a name
// (DRIVER_STRING), an optional print type, then the value (nldev.c
// put_driver_name_print_type and the rdma_nl_put_driver_* functions).
func decodeDriver(b []byte) ([]DriverAttr, error) {
	attrs, err := parseAttrs(b)
	if err != nil {
		return nil, fmt.Errorf("driver attributes: %w", err)
	}
	var out []DriverAttr
	var cur *DriverAttr
	for _, a := range attrs {
		if cur == nil {
			if a.typ != attrDriverString {
				return nil, fmt.Errorf("driver attributes: attribute %d where a name (RDMA_NLDEV_ATTR_DRIVER_STRING) was expected", a.typ)
			}
			cur = &DriverAttr{Name: str(a.val)}
			continue
		}
		var v int64
		switch a.typ {
		case attrDriverPrint:
			p, err := u8(a)
			if err != nil {
				return nil, fmt.Errorf("driver attribute %q: %w", cur.Name, err)
			}
			cur.Hex = p == printTypeHex
			continue
		case attrDriverString:
			cur.Text = str(a.val)
			out = append(out, *cur)
			cur = nil
			continue
		case attrDriverS32:
			x, err := u32(a)
			if err != nil {
				return nil, fmt.Errorf("driver attribute %q: %w", cur.Name, err)
			}
			v = int64(int32(x))
		case attrDriverU32:
			x, err := u32(a)
			if err != nil {
				return nil, fmt.Errorf("driver attribute %q: %w", cur.Name, err)
			}
			v = int64(x)
		case attrDriverS64, attrDriverU64:
			if len(a.val) < 8 {
				return nil, fmt.Errorf("driver attribute %q: %d bytes, want 8", cur.Name, len(a.val))
			}
			x := binary.NativeEndian.Uint64(a.val)
			if a.typ == attrDriverU64 && x > math.MaxInt64 {
				// Past a JSON consumer's integers: the text keeps it whole.
				cur.Text = strconv.FormatUint(x, 10)
				if cur.Hex {
					cur.Text = "0x" + strconv.FormatUint(x, 16)
				}
				out = append(out, *cur)
				cur = nil
				continue
			}
			v = int64(x)
		default:
			return nil, fmt.Errorf("driver attribute %q: value of unknown attribute type %d", cur.Name, a.typ)
		}
		cur.Value = &v
		out = append(out, *cur)
		cur = nil
	}
	if cur != nil {
		return nil, fmt.Errorf("driver attribute %q without a value", cur.Name)
	}
	return out, nil
}

// sockaddr reads a __kernel_sockaddr_storage holding an IPv4 or IPv6
// address; another family (AF_IB) gives an invalid AddrPort.
func sockaddr(b []byte) (netip.AddrPort, error) {
	if len(b) < 2 {
		return netip.AddrPort{}, fmt.Errorf("socket address of %d bytes", len(b))
	}
	switch binary.NativeEndian.Uint16(b) {
	case afInet:
		if len(b) < 8 {
			return netip.AddrPort{}, fmt.Errorf("IPv4 socket address of %d bytes, want 8 or more", len(b))
		}
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:])), nil
	case afInet6:
		if len(b) < 24 {
			return netip.AddrPort{}, fmt.Errorf("IPv6 socket address of %d bytes, want 24 or more", len(b))
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:])), nil
	}
	return netip.AddrPort{}, nil
}

// Names of the kernel's enumerations, as iproute2's rdma tool prints them
// (rdma/res.c qp_types_to_str, res-qp.c qp_states_to_str and
// path_mig_to_str, res-cmid.c cm_id_state_to_str and cm_id_ps_to_str):
// enum ib_qp_type and ib_qp_state (include/rdma/ib_verbs.h), ib_mig_state,
// rdma_cm_state (drivers/infiniband/core/cma_priv.h), rdma_ucm_port_space
// (include/uapi/rdma/rdma_user_cm.h).
var (
	qpTypes       = []string{"SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE", "", "RAW_PACKET", "XRC_INI", "XRC_TGT"}
	qpStates      = []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}
	pathMigStates = []string{"MIGRATED", "REARM", "ARMED"}
	cmStates      = []string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY", "ROUTE_RESOLVED", "CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}
)

// name is names[v], or v in decimal when it has no name.
func name(names []string, v int) string {
	if v >= 0 && v < len(names) && names[v] != "" {
		return names[v]
	}
	return strconv.Itoa(v)
}

func qpType(v uint8) string {
	if v == 0xff {
		return "DRIVER" // IB_QPT_DRIVER
	}
	return name(qpTypes, int(v))
}

func portSpace(v uint32) string {
	switch v {
	case 0x0002:
		return "IPoIB"
	case 0x013f:
		return "IB"
	case 0x0106:
		return "TCP"
	case 0x0111:
		return "UDP"
	}
	return strconv.FormatUint(uint64(v), 10)
}

// attr is one netlink attribute: its type without the NLA_F_NESTED and
// NLA_F_NET_BYTEORDER flags, and its payload.
type attr struct {
	typ uint16
	val []byte
}

// parseAttrs splits b into netlink attributes.
func parseAttrs(b []byte) ([]attr, error) {
	var out []attr
	ne := binary.NativeEndian
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("%d bytes left, shorter than an attribute header (4)", len(b))
		}
		l := int(ne.Uint16(b))
		if l < 4 || l > len(b) {
			return nil, fmt.Errorf("attribute %d: length %d, want 4..%d", ne.Uint16(b[2:])&nlaTypeMask, l, len(b))
		}
		out = append(out, attr{typ: ne.Uint16(b[2:]) & nlaTypeMask, val: b[4:l]})
		b = b[min(align4(l), len(b)):]
	}
	return out, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

func u32(a attr) (uint32, error) {
	if len(a.val) < 4 {
		return 0, fmt.Errorf("attribute %d: %d bytes, want 4", a.typ, len(a.val))
	}
	return binary.NativeEndian.Uint32(a.val), nil
}

func u32p(a attr) (*uint32, error) {
	v, err := u32(a)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func u8(a attr) (uint8, error) {
	if len(a.val) < 1 {
		return 0, fmt.Errorf("attribute %d: empty, want 1 byte", a.typ)
	}
	return a.val[0], nil
}

func port(a attr) (int, error) {
	v, err := u32(a)
	if err != nil {
		return 0, err
	}
	if v > 255 {
		return 0, fmt.Errorf("port %d: want 1..255", v)
	}
	return int(v), nil
}

// str is a NUL-terminated string attribute's text; bytes that are not
// UTF-8 (none in a kernel's names) become U+FFFD, as JSON writes them.
func str(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
