package ah

import (
	"errors"
	"fmt"
	"time"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/verbs"
)

// ErrNotBuilt is wrapped by Create in binaries built without the build tag
// ibverbs (or without cgo): "built without ibverbs (rebuild with -tags
// ibverbs and libibverbs-dev)".
var ErrNotBuilt = verbs.ErrNotBuilt

// CreateOptions chooses the UD queue pair Create makes next to the AH.
type CreateOptions struct {
	// QKey is the UD QP's Q_Key: datagrams whose DETH Q_Key differs are
	// dropped by the receiver. 0 means 0x11111111.
	QKey uint32
	// SQPSN is the PSN of the first send (24 bits).
	SQPSN uint32
	// MaxPayload is the largest payload sent or received; 0 means 4096.
	MaxPayload int
}

// Handle is a real address handle created with ibv_create_ah on an open
// RDMA device, together with the minimal UD machinery to use it: a
// protection domain, completion queues, a UD QP in RTS and registered
// buffers. It is not safe for concurrent use.
type Handle struct {
	// Attr is the attribute the AH was created with.
	Attr Attr
	ctx  *verbs.Context
	ud   *verbs.UD
	ah   *verbs.AH
	qkey uint32
}

// Create opens the RDMA device dev, creates a UD QP on a.PortNum and the
// address handle a. When ibv_create_ah fails, the error wraps the errno
// (errors.Is(err, syscall.EINVAL), syscall.ETIMEDOUT, ...) and explains it.
// Needs read/write access to /dev/infiniband/uverbs* (usually any user on
// Debian). Without the build tag ibverbs it returns ErrNotBuilt. When no
// RDMA device is called dev the error wraps host.ErrNoDevice (the one
// "no such RDMA device" condition of the snapshot and the live host).
func Create(dev string, a Attr, opt CreateOptions) (*Handle, error) {
	if a.PortNum == 0 {
		return nil, fmt.Errorf("ah: port_num 0 is out of range: want 1..255")
	}
	if opt.QKey == 0 {
		opt.QKey = 0x11111111
	}
	ctx, err := verbs.Open(dev)
	if err != nil {
		return nil, fmt.Errorf("ah: %w", err)
	}
	ud, err := ctx.NewUDConfig(verbs.UDConfig{Port: int(a.PortNum), QKey: opt.QKey, SQPSN: opt.SQPSN, MaxPayload: opt.MaxPayload})
	if err != nil {
		ctx.Close()
		return nil, fmt.Errorf("ah: %w", err)
	}
	h, err := ud.CreateAH(verbsAttr(a))
	if err != nil {
		ctx.Close()
		return nil, fmt.Errorf("ah: creating the address handle on %s: %w", dev, err)
	}
	return &Handle{Attr: a, ctx: ctx, ud: ud, ah: h, qkey: opt.QKey}, nil
}

func verbsAttr(a Attr) verbs.AHAttr {
	return verbs.AHAttr{
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.IsGlobal, Port: a.PortNum,
		DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex, HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass,
	}
}

// QPN returns the number of the Handle's UD QP: the DETH SrcQP of what it
// sends and the BTH DestQP peers send to.
func (h *Handle) QPN() uint32 { return h.ud.QPN() }

// QKey returns the Handle's UD QP's Q_Key.
func (h *Handle) QKey() uint32 { return h.qkey }

// Send sends payload as one UD SEND through the AH to destQPN with the
// Q_Key qkey, and waits for its send completion.
func (h *Handle) Send(destQPN, qkey uint32, payload []byte, timeout time.Duration) error {
	if h == nil || h.ah == nil {
		return errors.New("ah: the handle is closed")
	}
	return h.ud.Send(h.ah, destQPN, qkey, payload, timeout)
}

// Received is one datagram received on the Handle's UD QP.
type Received struct {
	WC      WC       // the completion, in the form FromWC takes
	GRH     [40]byte // the GRH area in front of the payload
	Payload []byte
	// Flags are the raw libibverbs wc_flags (IBV_WC_*).
	Flags uint32
	// StatusText is ibv_wc_status_str(status).
	StatusText string
}

// Recv waits up to timeout for one datagram on the Handle's UD QP.
// libibverbs' struct ibv_wc carries neither VLAN nor network header type,
// so WC.VLAN and WC.NetworkHdrType stay nil.
func (h *Handle) Recv(timeout time.Duration) (Received, error) {
	if h == nil || h.ud == nil {
		return Received{}, errors.New("ah: the handle is closed")
	}
	c, err := h.ud.Recv(timeout)
	if err != nil {
		return Received{}, err
	}
	return Received{
		WC:      WC{Status: c.Status, GRH: c.Flags&verbs.WCGRH != 0, SrcQP: c.SrcQP, SL: c.SL, SLID: c.SLID, DLIDPathBits: c.DLIDPathBits},
		GRH:     c.GRH,
		Payload: c.Payload,
		Flags:   c.Flags, StatusText: c.StatusText,
	}, nil
}

// Answer derives the AH that answers the sender of r (FromWC with the
// Handle's port), for the port whose GID table is table.
func (h *Handle) Answer(r Received, table Table, opt FromWCOptions) (FromWCResult, error) {
	if opt.Port == 0 {
		opt.Port = int(h.Attr.PortNum)
	}
	return FromWC(r.WC, r.GRH, table, opt)
}

// QueryGIDTable reads the port's GID table through libibverbs
// (ibv_query_gid_ex): the entries' GIDs and types, without netdev details
// (a host snapshot's view has those: package host).
func (h *Handle) QueryGIDTable() (Table, error) {
	port := int(h.Attr.PortNum)
	pa, err := h.ctx.QueryPort(port)
	if err != nil {
		return Table{}, err
	}
	t := Table{Len: pa.GIDTableLen}
	for i := 0; i < pa.GIDTableLen; i++ {
		e, err := h.ctx.QueryGID(port, i)
		if err != nil {
			continue // empty entries fail with ENODATA
		}
		t.Entries = append(t.Entries, gid.Entry{Device: h.ctx.Name(), Port: port, Index: i, GID: e.GID, Type: gid.Type(e.Type), Ifindex: int(e.Ifindex)})
	}
	return t, nil
}

// Close destroys the AH, the QP and its resources, and closes the device.
func (h *Handle) Close() error {
	if h == nil || h.ctx == nil {
		return nil
	}
	err := h.ctx.Close()
	h.ctx, h.ud, h.ah = nil, nil, nil
	return err
}
