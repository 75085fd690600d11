//go:build ibverbs && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#include <infiniband/verbs.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <arpa/inet.h>

// Helpers keep unions, pointer-to-pointer arguments and static inline
// verbs on the C side.

static const char *rp_dev_name(struct ibv_device **list, int i) {
	return ibv_get_device_name(list[i]);
}

static struct ibv_context *rp_open_index(struct ibv_device **list, int i) {
	return ibv_open_device(list[i]);
}

static int rp_query_port(struct ibv_context *ctx, int port, int *state, int *max_mtu,
                         int *active_mtu, int *gid_tbl_len, int *link_layer) {
	struct ibv_port_attr a;
	memset(&a, 0, sizeof a);
	int r = ibv_query_port(ctx, (uint8_t)port, &a);
	if (r) return r;
	*state = a.state; *max_mtu = a.max_mtu; *active_mtu = a.active_mtu;
	*gid_tbl_len = a.gid_tbl_len; *link_layer = a.link_layer;
	return 0;
}

static int rp_query_gid(struct ibv_context *ctx, int port, int index, uint8_t *gid,
                        uint32_t *type, uint32_t *ifindex) {
	struct ibv_gid_entry e;
	memset(&e, 0, sizeof e);
	int r = ibv_query_gid_ex(ctx, (uint32_t)port, (uint32_t)index, &e, 0);
	if (r) return r;
	memcpy(gid, e.gid.raw, 16);
	*type = e.gid_type; *ifindex = e.ndev_ifindex;
	return 0;
}

static struct ibv_qp *rp_create_ud_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
                                      int send_wr, int recv_wr) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = scq; a.recv_cq = rcq; a.qp_type = IBV_QPT_UD; a.sq_sig_all = 1;
	a.cap.max_send_wr = send_wr; a.cap.max_recv_wr = recv_wr;
	a.cap.max_send_sge = 1; a.cap.max_recv_sge = 1;
	return ibv_create_qp(pd, &a);
}

static int rp_fix(int r) { return r < 0 ? errno : r; }

// rp_ud_to_rts moves a UD QP RESET → INIT → RTR → RTS; *stage says which
// transition failed.
static int rp_ud_to_rts(struct ibv_qp *qp, int port, uint32_t qkey, uint32_t psn, int *stage) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT; a.pkey_index = 0; a.port_num = (uint8_t)port; a.qkey = qkey;
	*stage = 1;
	int r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	if (r) return rp_fix(r);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	*stage = 2;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (r) return rp_fix(r);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS; a.sq_psn = psn & 0xffffff;
	*stage = 3;
	r = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	return rp_fix(r);
}

static struct ibv_ah *rp_create_ah(struct ibv_pd *pd, int is_global, int port, int sl, int rate,
                                   int sgid_index, int hop_limit, int tclass, uint32_t flow_label,
                                   const uint8_t *dgid, int dlid, int src_path_bits) {
	struct ibv_ah_attr a;
	memset(&a, 0, sizeof a);
	a.is_global = (uint8_t)is_global; a.port_num = (uint8_t)port; a.sl = (uint8_t)sl;
	a.static_rate = (uint8_t)rate; a.dlid = (uint16_t)dlid; a.src_path_bits = (uint8_t)src_path_bits;
	a.grh.sgid_index = (uint8_t)sgid_index; a.grh.hop_limit = (uint8_t)hop_limit;
	a.grh.traffic_class = (uint8_t)tclass; a.grh.flow_label = flow_label;
	memcpy(a.grh.dgid.raw, dgid, 16);
	return ibv_create_ah(pd, &a);
}

static int rp_post_send(struct ibv_qp *qp, struct ibv_ah *ah, uint32_t rqpn, uint32_t rqkey,
                        void *buf, uint32_t len, uint32_t lkey, uint64_t wr_id) {
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	sge.addr = (uintptr_t)buf; sge.length = len; sge.lkey = lkey;
	wr.wr_id = wr_id; wr.sg_list = &sge; wr.num_sge = len ? 1 : 0;
	wr.opcode = IBV_WR_SEND; wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah; wr.wr.ud.remote_qpn = rqpn; wr.wr.ud.remote_qkey = rqkey;
	return rp_fix(ibv_post_send(qp, &wr, &bad));
}

static int rp_post_recv(struct ibv_qp *qp, void *buf, uint32_t len, uint32_t lkey, uint64_t wr_id) {
	struct ibv_sge sge;
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	sge.addr = (uintptr_t)buf; sge.length = len; sge.lkey = lkey;
	wr.wr_id = wr_id; wr.sg_list = &sge; wr.num_sge = 1;
	return rp_fix(ibv_post_recv(qp, &wr, &bad));
}

struct rp_wc {
	uint64_t wr_id;
	int status, opcode;
	uint32_t vendor_err, byte_len, imm, qp_num, src_qp, wc_flags;
	uint16_t pkey_index, slid;
	uint8_t sl, dlid_path_bits;
};

// rp_poll returns 1 with *o filled, 0 when the CQ is empty, < 0 on error.
static int rp_poll(struct ibv_cq *cq, struct rp_wc *o) {
	struct ibv_wc wc;
	memset(&wc, 0, sizeof wc);
	int n = ibv_poll_cq(cq, 1, &wc);
	if (n <= 0) return n;
	o->wr_id = wc.wr_id; o->status = wc.status; o->opcode = wc.opcode;
	o->vendor_err = wc.vendor_err; o->byte_len = wc.byte_len; o->imm = ntohl(wc.imm_data);
	o->qp_num = wc.qp_num; o->src_qp = wc.src_qp; o->wc_flags = wc.wc_flags;
	o->pkey_index = wc.pkey_index; o->slid = wc.slid; o->sl = wc.sl; o->dlid_path_bits = wc.dlid_path_bits;
	return 1;
}
*/
import "C"

import (
	"fmt"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Devices lists the names of the RDMA devices libibverbs sees.
func Devices() ([]string, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, verr("ibv_get_device_list", err, "")
	}
	defer C.ibv_free_device_list(list)
	names := make([]string, 0, int(n))
	for i := 0; i < int(n); i++ {
		names = append(names, C.GoString(C.rp_dev_name(list, C.int(i))))
	}
	return names, nil
}

// Context is an open RDMA device (struct ibv_context).
type Context struct {
	mu   sync.Mutex
	name string
	ctx  *C.struct_ibv_context
	uds  map[*UD]struct{}
}

// Open opens the RDMA device called name (as in /sys/class/infiniband).
// If there is none, the error wraps ErrNoDevice and lists the devices
// present.
func Open(name string) (*Context, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, verr("ibv_get_device_list", err, "")
	}
	defer C.ibv_free_device_list(list)
	var names []string
	for i := 0; i < int(n); i++ {
		dn := C.GoString(C.rp_dev_name(list, C.int(i)))
		if dn != name {
			names = append(names, dn)
			continue
		}
		ctx, err := C.rp_open_index(list, C.int(i))
		if ctx == nil {
			return nil, verr("ibv_open_device", err, "device "+name)
		}
		return &Context{name: name, ctx: ctx, uds: map[*UD]struct{}{}}, nil
	}
	present := "none"
	if len(names) > 0 {
		present = fmt.Sprint(names)
	}
	return nil, fmt.Errorf("verbs: %w %q (devices present: %s)", ErrNoDevice, name, present)
}

// Name returns the device name.
func (c *Context) Name() string { return c.name }

// Close closes every UD opened from c and then the device.
func (c *Context) Close() error {
	c.mu.Lock()
	uds := make([]*UD, 0, len(c.uds))
	for u := range c.uds {
		uds = append(uds, u)
	}
	c.mu.Unlock()
	var first error
	for _, u := range uds {
		if err := u.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx != nil {
		if r := C.ibv_close_device(c.ctx); r != 0 && first == nil {
			first = &Error{Op: "ibv_close_device", Errno: syscall.Errno(-r), Detail: c.name}
		}
		c.ctx = nil
	}
	return first
}

func (c *Context) open() error {
	if c == nil || c.ctx == nil {
		return fmt.Errorf("verbs: device is closed")
	}
	return nil
}

// QueryPort returns the port's state, MTUs, GID table length and link layer.
func (c *Context) QueryPort(port int) (PortAttr, error) {
	if err := c.open(); err != nil {
		return PortAttr{}, err
	}
	if port < 1 || port > 255 {
		return PortAttr{}, fmt.Errorf("verbs: port %d is out of range: want 1..255", port)
	}
	var state, maxMTU, activeMTU, gidLen, ll C.int
	if r := C.rp_query_port(c.ctx, C.int(port), &state, &maxMTU, &activeMTU, &gidLen, &ll); r != 0 {
		return PortAttr{}, &Error{Op: "ibv_query_port", Errno: errnoOf(int(r)), Detail: fmt.Sprintf("%s port %d", c.name, port)}
	}
	a := PortAttr{
		State:       int(state),
		StateText:   C.GoString(C.ibv_port_state_str(uint32(state))),
		MaxMTU:      MTUBytes(int(maxMTU)),
		ActiveMTU:   MTUBytes(int(activeMTU)),
		GIDTableLen: int(gidLen),
		LinkLayer:   "unspecified",
	}
	switch ll {
	case C.IBV_LINK_LAYER_INFINIBAND:
		a.LinkLayer = "InfiniBand"
	case C.IBV_LINK_LAYER_ETHERNET:
		a.LinkLayer = "Ethernet"
	}
	return a, nil
}

// QueryGID returns one GID table entry with its type and netdev ifindex.
// An empty entry gives an *Error with ENODATA.
func (c *Context) QueryGID(port, index int) (GIDEntry, error) {
	if err := c.open(); err != nil {
		return GIDEntry{}, err
	}
	var e GIDEntry
	var typ, ifindex C.uint32_t
	r := C.rp_query_gid(c.ctx, C.int(port), C.int(index), (*C.uint8_t)(unsafe.Pointer(&e.GID[0])), &typ, &ifindex)
	if r != 0 {
		return GIDEntry{}, &Error{Op: "ibv_query_gid_ex", Errno: errnoOf(int(r)), Detail: fmt.Sprintf("%s port %d index %d", c.name, port, index)}
	}
	e.Index, e.Port, e.Type, e.Ifindex = uint32(index), uint32(port), uint32(typ), uint32(ifindex)
	return e, nil
}

// UD is an unreliable-datagram queue pair in RTS with its own protection
// domain, send and receive completion queues and registered buffers.
type UD struct {
	c        *Context
	cfg      UDConfig
	pd       *C.struct_ibv_pd
	scq, rcq *C.struct_ibv_cq
	qp       *C.struct_ibv_qp
	sbuf     unsafe.Pointer
	smr      *C.struct_ibv_mr
	rbuf     unsafe.Pointer
	rmr      *C.struct_ibv_mr
	slot     int // bytes per receive slot: GRHLen + MaxPayload
	ahs      map[*AH]struct{}
	wrid     uint64
}

// NewUD creates a UD QP on port with Q_Key qkey, SQ PSN 0, 16 posted
// receives and 4096-byte buffers.
func (c *Context) NewUD(port int, qkey uint32) (*UD, error) {
	return c.NewUDConfig(UDConfig{Port: port, QKey: qkey})
}

// NewUDConfig creates a UD QP as cfg says: PD, CQs, QP, memory regions,
// RESET → INIT → RTR → RTS, and RecvDepth posted receives.
func (c *Context) NewUDConfig(cfg UDConfig) (_ *UD, err error) {
	if err := c.open(); err != nil {
		return nil, err
	}
	if cfg.Port < 1 || cfg.Port > 255 {
		return nil, fmt.Errorf("verbs: port %d is out of range: want 1..255", cfg.Port)
	}
	if cfg.SQPSN > 0xFFFFFF {
		return nil, fmt.Errorf("verbs: SQ PSN %#x is out of range: want 0..0xffffff", cfg.SQPSN)
	}
	if cfg.RecvDepth == 0 {
		cfg.RecvDepth = 16
	}
	if cfg.MaxPayload == 0 {
		cfg.MaxPayload = 4096
	}
	if cfg.RecvDepth < 1 || cfg.RecvDepth > 4096 {
		return nil, fmt.Errorf("verbs: RecvDepth %d is out of range: want 1..4096", cfg.RecvDepth)
	}
	if cfg.MaxPayload < 1 || cfg.MaxPayload > 1<<20 {
		return nil, fmt.Errorf("verbs: MaxPayload %d is out of range: want 1..1048576", cfg.MaxPayload)
	}
	u := &UD{c: c, cfg: cfg, slot: GRHLen + cfg.MaxPayload, ahs: map[*AH]struct{}{}}
	defer func() {
		if err != nil {
			u.destroy()
		}
	}()
	where := fmt.Sprintf("%s port %d", c.name, cfg.Port)
	var e error
	if u.pd, e = C.ibv_alloc_pd(c.ctx); u.pd == nil {
		return nil, verr("ibv_alloc_pd", e, where)
	}
	if u.scq, e = C.ibv_create_cq(c.ctx, 4, nil, nil, 0); u.scq == nil {
		return nil, verr("ibv_create_cq", e, where)
	}
	if u.rcq, e = C.ibv_create_cq(c.ctx, C.int(cfg.RecvDepth), nil, nil, 0); u.rcq == nil {
		return nil, verr("ibv_create_cq", e, where)
	}
	if u.qp, e = C.rp_create_ud_qp(u.pd, u.scq, u.rcq, 2, C.int(cfg.RecvDepth)); u.qp == nil {
		return nil, verr("ibv_create_qp", e, where)
	}
	u.sbuf = C.calloc(1, C.size_t(cfg.MaxPayload))
	u.rbuf = C.calloc(C.size_t(cfg.RecvDepth), C.size_t(u.slot))
	if u.sbuf == nil || u.rbuf == nil {
		return nil, fmt.Errorf("verbs: cannot allocate %d bytes of buffers", cfg.MaxPayload+cfg.RecvDepth*u.slot)
	}
	if u.smr, e = C.ibv_reg_mr(u.pd, u.sbuf, C.size_t(cfg.MaxPayload), C.IBV_ACCESS_LOCAL_WRITE); u.smr == nil {
		return nil, verr("ibv_reg_mr", e, where)
	}
	if u.rmr, e = C.ibv_reg_mr(u.pd, u.rbuf, C.size_t(cfg.RecvDepth*u.slot), C.IBV_ACCESS_LOCAL_WRITE); u.rmr == nil {
		return nil, verr("ibv_reg_mr", e, where)
	}
	var stage C.int
	if r := C.rp_ud_to_rts(u.qp, C.int(cfg.Port), C.uint32_t(cfg.QKey), C.uint32_t(cfg.SQPSN), &stage); r != 0 {
		to := [...]string{"", "INIT", "RTR", "RTS"}[int(stage)]
		return nil, &Error{Op: "ibv_modify_qp", Errno: errnoOf(int(r)), Detail: fmt.Sprintf("%s: UD QP to %s", where, to)}
	}
	for i := 0; i < cfg.RecvDepth; i++ {
		if err := u.postRecv(i); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	c.uds[u] = struct{}{}
	c.mu.Unlock()
	return u, nil
}

func (u *UD) postRecv(i int) error {
	p := unsafe.Add(u.rbuf, i*u.slot)
	if r := C.rp_post_recv(u.qp, p, C.uint32_t(u.slot), u.rmr.lkey, C.uint64_t(i)); r != 0 {
		return &Error{Op: "ibv_post_recv", Errno: errnoOf(int(r)), Detail: fmt.Sprintf("QPN %#x", u.QPN())}
	}
	return nil
}

// QPN returns the queue pair number.
func (u *UD) QPN() uint32 {
	if u == nil || u.qp == nil {
		return 0
	}
	return uint32(u.qp.qp_num)
}

// Config returns the configuration the UD was created with, defaults filled in.
func (u *UD) Config() UDConfig { return u.cfg }

// AH is an address handle (struct ibv_ah) created on a UD's PD.
type AH struct {
	u    *UD
	ah   *C.struct_ibv_ah
	Attr AHAttr // the attributes it was created with
}

// CreateAH calls ibv_create_ah with a. Failures are *Error with the errno
// decoded for RoCE (see Hint).
func (u *UD) CreateAH(a AHAttr) (*AH, error) {
	if u == nil || u.pd == nil {
		return nil, fmt.Errorf("verbs: UD is closed")
	}
	if a.FlowLabel > 0xFFFFF {
		return nil, fmt.Errorf("verbs: flow label %#x is out of range: want 0..0xfffff", a.FlowLabel)
	}
	g := 0
	if a.IsGlobal {
		g = 1
	}
	dgid := a.DGID
	ah, err := C.rp_create_ah(u.pd, C.int(g), C.int(a.Port), C.int(a.SL), C.int(a.StaticRate),
		C.int(a.SGIDIndex), C.int(a.HopLimit), C.int(a.TrafficClass), C.uint32_t(a.FlowLabel),
		(*C.uint8_t)(unsafe.Pointer(&dgid[0])), C.int(a.DLID), C.int(a.SrcPathBits))
	if ah == nil {
		return nil, verr("ibv_create_ah", err, fmt.Sprintf("%s port %d is_global=%d sgid_index=%d dgid=%x hop_limit=%d traffic_class=%d flow_label=%#x sl=%d static_rate=%d",
			u.c.name, a.Port, g, a.SGIDIndex, a.DGID, a.HopLimit, a.TrafficClass, a.FlowLabel, a.SL, a.StaticRate))
	}
	h := &AH{u: u, ah: ah, Attr: a}
	u.ahs[h] = struct{}{}
	return h, nil
}

// Close destroys the address handle.
func (h *AH) Close() error {
	if h == nil || h.ah == nil {
		return nil
	}
	r := C.ibv_destroy_ah(h.ah)
	h.ah = nil
	delete(h.u.ahs, h)
	if r != 0 {
		return &Error{Op: "ibv_destroy_ah", Errno: errnoOf(int(r))}
	}
	return nil
}

// Send sends payload as one UD SEND (opcode 0x64) through ah to
// remoteQPN with remoteQKey in the DETH, and waits up to timeout for the
// send completion. Note that a payload larger than the path MTU is
// dropped by rxe while the send still completes successfully.
func (u *UD) Send(ah *AH, remoteQPN, remoteQKey uint32, payload []byte, timeout time.Duration) error {
	if u == nil || u.qp == nil {
		return fmt.Errorf("verbs: UD is closed")
	}
	if ah == nil || ah.ah == nil || ah.u != u {
		return fmt.Errorf("verbs: the AH is closed or belongs to another UD")
	}
	if len(payload) > u.cfg.MaxPayload {
		return fmt.Errorf("verbs: payload of %d bytes is too large: want at most %d (UDConfig.MaxPayload)", len(payload), u.cfg.MaxPayload)
	}
	if remoteQPN > 0xFFFFFF {
		return fmt.Errorf("verbs: remote QPN %#x is out of range: want 0..0xffffff", remoteQPN)
	}
	if len(payload) > 0 {
		copy(unsafe.Slice((*byte)(u.sbuf), u.cfg.MaxPayload), payload)
	}
	u.wrid++
	id := u.wrid
	if r := C.rp_post_send(u.qp, ah.ah, C.uint32_t(remoteQPN), C.uint32_t(remoteQKey), u.sbuf,
		C.uint32_t(len(payload)), u.smr.lkey, C.uint64_t(id)); r != 0 {
		return &Error{Op: "ibv_post_send", Errno: errnoOf(int(r)), Detail: fmt.Sprintf("QPN %#x → %#x", u.QPN(), remoteQPN)}
	}
	wc, err := u.poll(u.scq, timeout)
	if err != nil {
		return fmt.Errorf("verbs: send from QPN %#x to %#x: %w", u.QPN(), remoteQPN, err)
	}
	if wc.status != C.IBV_WC_SUCCESS {
		return fmt.Errorf("verbs: send from QPN %#x to %#x completed with status %d (%s), vendor error %#x",
			u.QPN(), remoteQPN, int(wc.status), C.GoString(C.ibv_wc_status_str(uint32(wc.status))), uint32(wc.vendor_err))
	}
	return nil
}

// Recv waits up to timeout for one receive completion and returns it with
// copies of its GRH area and payload. A completion with an error status is
// returned as is (Status != WCSuccess) together with a nil error.
func (u *UD) Recv(timeout time.Duration) (Completion, error) {
	if u == nil || u.qp == nil {
		return Completion{}, fmt.Errorf("verbs: UD is closed")
	}
	wc, err := u.poll(u.rcq, timeout)
	if err != nil {
		return Completion{}, fmt.Errorf("verbs: receive on QPN %#x: %w", u.QPN(), err)
	}
	c := Completion{
		WRID: uint64(wc.wr_id), Status: int(wc.status), Opcode: int(wc.opcode),
		StatusText: C.GoString(C.ibv_wc_status_str(uint32(wc.status))),
		VendorErr:  uint32(wc.vendor_err), ByteLen: uint32(wc.byte_len), Imm: uint32(wc.imm),
		QPN: uint32(wc.qp_num), SrcQP: uint32(wc.src_qp), Flags: uint32(wc.wc_flags),
		PKeyIndex: uint16(wc.pkey_index), SLID: uint16(wc.slid), SL: uint8(wc.sl), DLIDPathBits: uint8(wc.dlid_path_bits),
	}
	i := int(wc.wr_id)
	if i >= 0 && i < u.cfg.RecvDepth {
		buf := unsafe.Slice((*byte)(unsafe.Add(u.rbuf, i*u.slot)), u.slot)
		if c.Status == WCSuccess {
			copy(c.GRH[:], buf[:GRHLen])
			n := int(c.ByteLen)
			if n > u.slot {
				n = u.slot
			}
			if n > GRHLen {
				c.Payload = append([]byte(nil), buf[GRHLen:n]...)
			} else {
				c.Payload = []byte{}
			}
		}
		clear(buf)
		if err := u.postRecv(i); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (u *UD) poll(cq *C.struct_ibv_cq, timeout time.Duration) (C.struct_rp_wc, error) {
	var wc C.struct_rp_wc
	deadline := time.Now().Add(timeout)
	for {
		n := C.rp_poll(cq, &wc)
		if n > 0 {
			return wc, nil
		}
		if n < 0 {
			return wc, &Error{Op: "ibv_poll_cq", Errno: errnoOf(int(-n))}
		}
		if !time.Now().Before(deadline) {
			return wc, fmt.Errorf("%w after %v", ErrTimeout, timeout)
		}
		time.Sleep(50 * time.Microsecond)
	}
}

// Close destroys the UD's address handles, QP, memory regions, CQs and PD.
func (u *UD) Close() error {
	if u == nil {
		return nil
	}
	err := u.destroy()
	u.c.mu.Lock()
	delete(u.c.uds, u)
	u.c.mu.Unlock()
	return err
}

func (u *UD) destroy() error {
	var first error
	keep := func(op string, r C.int) {
		if r != 0 && first == nil {
			first = &Error{Op: op, Errno: errnoOf(int(r))}
		}
	}
	for h := range u.ahs {
		if err := h.Close(); err != nil && first == nil {
			first = err
		}
	}
	if u.qp != nil {
		keep("ibv_destroy_qp", C.ibv_destroy_qp(u.qp))
		u.qp = nil
	}
	if u.smr != nil {
		keep("ibv_dereg_mr", C.ibv_dereg_mr(u.smr))
		u.smr = nil
	}
	if u.rmr != nil {
		keep("ibv_dereg_mr", C.ibv_dereg_mr(u.rmr))
		u.rmr = nil
	}
	if u.scq != nil {
		keep("ibv_destroy_cq", C.ibv_destroy_cq(u.scq))
		u.scq = nil
	}
	if u.rcq != nil {
		keep("ibv_destroy_cq", C.ibv_destroy_cq(u.rcq))
		u.rcq = nil
	}
	if u.pd != nil {
		keep("ibv_dealloc_pd", C.ibv_dealloc_pd(u.pd))
		u.pd = nil
	}
	if u.sbuf != nil {
		C.free(u.sbuf)
		u.sbuf = nil
	}
	if u.rbuf != nil {
		C.free(u.rbuf)
		u.rbuf = nil
	}
	return first
}

// errnoOf turns a verbs return value (a positive errno, or a negative one
// from calls that return -errno) into a syscall.Errno.
func errnoOf(r int) syscall.Errno {
	if r < 0 {
		r = -r
	}
	return syscall.Errno(r)
}

// verr builds an *Error from the errno cgo reported for a call that
// returned NULL.
func verr(op string, err error, detail string) error {
	e, ok := err.(syscall.Errno)
	if !ok || e == 0 {
		e = syscall.EIO
		if detail != "" {
			detail += " "
		}
		detail += "(no errno set)"
	}
	return &Error{Op: op, Errno: e, Detail: detail}
}
