package verbs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/roce-probe/roce-probe/internal/errno"
)

// ErrNotBuilt is returned by every call of a binary built without the
// ibverbs build tag or without cgo.
var ErrNotBuilt = errors.New("built without ibverbs (rebuild with -tags ibverbs and libibverbs-dev)")

// ErrNoDevice is wrapped by Open when no RDMA device has the given name;
// host.ErrNoDevice is this error (the snapshot's "no such device" too).
var ErrNoDevice = errors.New("no such RDMA device")

// ErrTimeout is wrapped by Send and Recv when no completion arrived in time.
var ErrTimeout = errors.New("timed out waiting for a completion")

// AHAttr mirrors struct ibv_ah_attr with its struct ibv_global_route
// (grh) flattened: the address handle attributes ibv_create_ah takes.
// Port is port_num (from 1). On RoCE, IsGlobal must be true.
type AHAttr struct {
	DLID         uint16   // dlid: destination LID (IB only; 0 on RoCE)
	SL           uint8    // sl: service level, 4 bits
	SrcPathBits  uint8    // src_path_bits (IB only)
	StaticRate   uint8    // static_rate: enum ibv_rate, 0 = port current rate
	IsGlobal     bool     // is_global: the GRH fields below are valid
	Port         uint8    // port_num
	DGID         [16]byte // grh.dgid
	FlowLabel    uint32   // grh.flow_label, 20 bits
	SGIDIndex    uint8    // grh.sgid_index
	HopLimit     uint8    // grh.hop_limit
	TrafficClass uint8    // grh.traffic_class
}

// Work completion flags (enum ibv_wc_flags of libibverbs). Note that the
// kernel's IB_WC_* values differ from these above bit 0.
const (
	WCGRH      uint32 = 1 << 0 // IBV_WC_GRH: the first 40 bytes of the buffer hold a GRH / IP header
	WCWithImm  uint32 = 1 << 1 // IBV_WC_WITH_IMM
	WCIPCsumOK uint32 = 1 << 2 // IBV_WC_IP_CSUM_OK
	WCWithInv  uint32 = 1 << 3 // IBV_WC_WITH_INV
)

// WCSuccess is IBV_WC_SUCCESS, the status of a good completion.
const WCSuccess = 0

// GRHLen is the size of the buffer a UD receive reserves in front of the
// payload for the GRH (RoCE v1/IB) or the IPv4/IPv6 header (RoCE v2).
const GRHLen = 40

// Completion is one receive work completion (struct ibv_wc) with the
// buffer it filled: the 40-byte GRH area and the payload behind it.
type Completion struct {
	WRID         uint64   // wr_id
	Status       int      // status: enum ibv_wc_status, WCSuccess = 0
	StatusText   string   // ibv_wc_status_str(status)
	Opcode       int      // opcode: enum ibv_wc_opcode (IBV_WC_RECV = 128)
	VendorErr    uint32   // vendor_err
	ByteLen      uint32   // byte_len: GRH area + payload
	Imm          uint32   // imm_data in host order (valid with WCWithImm)
	QPN          uint32   // qp_num: the local QP
	SrcQP        uint32   // src_qp: the sender's QPN
	Flags        uint32   // wc_flags: WCGRH, WCWithImm, ...
	PKeyIndex    uint16   // pkey_index
	SLID         uint16   // slid
	SL           uint8    // sl (rxe never fills it)
	DLIDPathBits uint8    // dlid_path_bits
	GRH          [40]byte // the GRH area: RoCE v2 IPv4 puts its header in bytes 20..39
	Payload      []byte   // the bytes behind the GRH area (byte_len - 40)
}

// PortAttr is the part of struct ibv_port_attr roce-probe uses.
type PortAttr struct {
	State       int    // enum ibv_port_state: 4 = ACTIVE
	StateText   string // ibv_port_state_str
	MaxMTU      int    // max_mtu in bytes (256..4096)
	ActiveMTU   int    // active_mtu in bytes
	GIDTableLen int    // gid_tbl_len
	LinkLayer   string // "Ethernet", "InfiniBand" or "unspecified"
}

// GIDEntry is one GID table entry as ibv_query_gid_ex returns it.
type GIDEntry struct {
	GID     [16]byte
	Index   uint32 // gid_index
	Port    uint32 // port_num
	Type    uint32 // enum ibv_gid_type: 0 IB, 1 RoCE v1, 2 RoCE v2 (gid.Type)
	Ifindex uint32 // ndev_ifindex: the netdev that owns the address
}

// MTUBytes converts enum ibv_mtu (1..5) to bytes (256..4096); 0 otherwise.
func MTUBytes(m int) int {
	if m < 1 || m > 5 {
		return 0
	}
	return 128 << m
}

// UDConfig chooses the details of a UD queue pair.
type UDConfig struct {
	Port       int    // port number, from 1
	QKey       uint32 // the QP's Q_Key: receives whose DETH Q_Key differs are dropped
	SQPSN      uint32 // sq_psn: the BTH PSN of the first send (24 bits)
	RecvDepth  int    // receive buffers kept posted; 0 means 16
	MaxPayload int    // bytes per send and per receive payload; 0 means 4096
}

// Error is a failed verbs call: the call, its errno and what that errno
// means for the call on RoCE. errors.Is(err, syscall.EINVAL) etc. work.
type Error struct {
	Op     string        // the verbs call, e.g. "ibv_create_ah"
	Errno  syscall.Errno // the errno it set or returned
	Detail string        // context: device, port, attribute values
}

// Error names the call, the errno, the detail and the hint.
func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %v (%s)", e.Op, e.Errno, errno.Name(e.Errno))
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if h := Hint(e.Op, e.Errno); h != "" {
		s += "; " + h
	}
	return s
}

// Unwrap returns the errno.
func (e *Error) Unwrap() error { return e.Errno }

// Hint explains what errno means when the verbs call op fails on a RoCE
// port, with the causes in the order users hit them; "" if there is no
// specific advice.
func Hint(op string, errno syscall.Errno) string {
	switch op {
	case "ibv_create_ah":
		switch errno {
		case syscall.EINVAL:
			return "EINVAL from ibv_create_ah on RoCE means one of: is_global = 0 (a RoCE AH needs the GRH); " +
				"static_rate is not an enum ibv_rate value (0, or 2..24; uninitialised memory is the usual cause); " +
				"port_num is not a port of the device; sgid_index is beyond the port's GID table; " +
				"the sgid entry's netdev has no usable link-layer address; the PD belongs to another device"
		case syscall.ENODATA:
			return "ENODATA: sgid_index names an empty GID table entry (or one being deleted); list the table with 'roce-probe gids'"
		case syscall.ETIMEDOUT:
			return "ETIMEDOUT: neighbour resolution (ARP for IPv4, neighbour discovery for IPv6) of the destination " +
				"got no answer from the sgid's netdev: check the route ('ip route get DST oif NETDEV') and " +
				"the neighbour entry ('ip neigh show DST'), that the peer is up, and that the GID index is on the right VLAN/subnet"
		case syscall.ENETUNREACH, syscall.EHOSTUNREACH:
			return "no route from the sgid's netdev to the destination ('ip route get DST oif NETDEV')"
		case syscall.EADDRNOTAVAIL, syscall.ENODEV:
			return "the sgid entry's netdev is gone or down, or is in another network namespace"
		case syscall.ENOMEM:
			return "out of address handles (device max_ah) or memory"
		case syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT:
			return "the sgid type cannot carry this destination (e.g. an IPv4 sgid with an IPv6 dgid)"
		}
	case "ibv_open_device", "ibv_get_device_list":
		switch errno {
		case syscall.ENOSYS:
			return "the kernel has no RDMA support (ib_uverbs not loaded)"
		case syscall.EPERM, syscall.EACCES:
			return "no permission on /dev/infiniband/uverbs*"
		}
	case "ibv_modify_qp", "ibv_create_qp":
		if errno == syscall.EINVAL {
			return "the port number or Q_Key is invalid for this device, or the port is not ACTIVE"
		}
	case "ibv_post_send":
		if errno == syscall.EINVAL {
			return "the payload exceeds the QP's limits or the AH belongs to another PD"
		}
	}
	return ""
}
