package census

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/internal/null"
)

// Census is the queue pairs and rdma_cm IDs of one host at one moment, as
// the kernel's RDMA netlink resource dumps (`rdma resource show qp`,
// `rdma resource show cm_id`) report them, with the process behind each.
type Census struct {
	// QPs are the queue pairs, by device and QPN.
	QPs []QP
	// CMIDs are the rdma_cm IDs, by device and ID.
	CMIDs []CMID
	// RawQPs are the drivers' raw QP contexts
	// (RDMA_NLDEV_CMD_RES_QP_GET_RAW); nil unless asked for: the dump
	// needs CAP_NET_ADMIN and costs a firmware command per QP.
	RawQPs []RawQP
	// Sources says, per device and dump, whether it was read and why
	// not: what the census lacks.
	Sources []Source
}

// Owner values: who created a QP or rdma_cm ID.
const (
	// OwnerProcess is a user process; PID says which (0 when it is not
	// visible from the reader's PID namespace).
	OwnerProcess = "process"
	// OwnerKernel is a kernel module (ib_core's GSI QP, NVMe-oF, RDS,
	// IPoIB); Comm is the name it registered.
	OwnerKernel = "kernel"
)

// QP is one queue pair: the attributes of one RDMA_NLDEV_ATTR_RES_QP_ENTRY
// (drivers/infiniband/core/nldev.c fill_res_qp_entry and
// fill_res_qp_entry_query), the names iproute2's rdma/res-qp.c prints for
// its enumerations, and the owning process's command.
type QP struct {
	// Device is the RDMA device.
	Device string
	// Port is the port the QP is bound to, from 1; 0 before the QP is
	// bound to one (a QP still in RESET: the kernel reports no port).
	Port int
	// QPN is the local QP number.
	QPN uint32
	// DestQP is the remote QP number (RC and UC only); nil otherwise.
	DestQP *uint32
	// Type is the QP type as iproute2 names it: "RC", "UC", "UD",
	// "XRC_INI", "XRC_TGT", "GSI", "SMI", "RAW_PACKET", "DRIVER", ...; a
	// value without a name is given as its number.
	Type string
	// Subtype is a driver QP's kind (RDMA_NLDEV_ATTR_RES_SUBTYPE, Linux
	// 6.10+: mlx5's "DCI", "DCT", "REG_UMR"); "" when none.
	Subtype string
	// State is "RESET", "INIT", "RTR", "RTS", "SQD", "SQE" or "ERR".
	State string
	// SQPSN is the send queue's next PSN.
	SQPSN uint32
	// RQPSN is the receive queue's expected PSN (RC and UC only); nil
	// otherwise.
	RQPSN *uint32
	// PathMigState is "MIGRATED", "REARM" or "ARMED" (RC, UC and XRC
	// only); "" otherwise.
	PathMigState string
	// PDN is the protection domain's restrack ID (user QPs only); nil
	// otherwise.
	PDN *uint32
	// Owner is OwnerProcess or OwnerKernel; "" when the kernel gave
	// neither a PID nor a kernel name: the owning task is not visible
	// from the reader's PID namespace (nldev.c fill_res_name_pid reports
	// task_pid_vnr, 0 there) or has exited.
	Owner string
	// PID is the owning process in the reader's PID namespace; 0 for a
	// kernel owner and when not known.
	PID int
	// Comm is the owner's command: /proc/PID/comm for a process (what
	// `rdma resource show` prints; "" when it exited meanwhile or
	// /proc was not read), the registered name for a kernel owner.
	Comm string
	// Driver are the driver's attributes (RDMA_NLDEV_ATTR_DRIVER), in
	// the kernel's order; nil when the driver adds none (rxe, mlx5 for
	// verbs QPs).
	Driver []DriverAttr
	// TrafficClass, SL and DSCP are the QP's markings where the kernel
	// or the driver reports them; nil otherwise, with MarkingsReason
	// saying why. No Linux driver reports them in the QP dump today
	// (docs/qps.md, "What each driver shows"): the wire shows them
	// (roce-probe audit).
	TrafficClass *int
	SL           *int
	DSCP         *int
	// MarkingsReason says why TrafficClass, SL or DSCP is nil; "" when
	// all three are known.
	MarkingsReason string
}

// DriverAttr is one driver attribute of a QP: a name and a number or a
// text (drivers/infiniband/core/nldev.c rdma_nl_put_driver_u32,
// _u64, _string).
type DriverAttr struct {
	Name string
	// Value is the number; nil for a text.
	Value *int64
	// Text is the text; "" for a number.
	Text string
	// Hex says the driver asks for the number to be shown in hex
	// (RDMA_NLDEV_PRINT_TYPE_HEX).
	Hex bool
}

// CMID is one rdma_cm ID: the attributes of one
// RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY (nldev.c fill_res_cm_id_entry), the
// names iproute2's rdma/res-cmid.c prints, and the owning process's
// command.
type CMID struct {
	// Device is the RDMA device the ID is bound to.
	Device string
	// Port is its port, from 1; 0 when it is bound to none (a listener
	// on a wildcard address).
	Port int
	// ID is the kernel's restrack ID of the rdma_cm ID (`rdma resource
	// show cm_id`'s cm-idn).
	ID uint32
	// QPN is the QP the ID uses; nil when it has none (a listener).
	QPN *uint32
	// QPType is that QP's type ("RC", "UD", ...); "" without a QP.
	QPType string
	// PortSpace is "TCP", "UDP", "IPoIB" or "IB" (RDMA_PS_*; a value
	// without a name as its number). iproute2 prints "IPoIB" for
	// RDMA_PS_IB too; this says "IB".
	PortSpace string
	// State is rdma_cm's state: "IDLE", "ADDR_QUERY", "ADDR_RESOLVED",
	// "ROUTE_QUERY", "ROUTE_RESOLVED", "CONNECT", "DISCONNECT",
	// "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING".
	State string
	// Src and Dst are the source and destination IP addresses and
	// rdma_cm ports; invalid when the kernel gave none (an AF_IB address
	// is not shown).
	Src, Dst netip.AddrPort
	// TOS is the ID's type of service where the kernel reports it; nil
	// otherwise (no Linux kernel reports it in the dump: nldev.c
	// fill_res_cm_id_entry).
	TOS *int
	// Owner, PID and Comm are as in QP.
	Owner string
	PID   int
	Comm  string
}

// RawQP is one driver's raw QP context (RDMA_NLDEV_CMD_RES_QP_GET_RAW):
// bytes in the device's own layout (mlx5: a resource dump of the PRM QPC;
// bnxt_re, hns: the firmware's QP context), not decoded here. The kernel
// sends no QPN with it.
type RawQP struct {
	Device string
	// Port is the port, from 1; 0 when the kernel gave none.
	Port int
	Data []byte
}

// Source is one dump of one device: read, or why not.
type Source struct {
	// Device is the RDMA device; "" for what concerns every device
	// (RDMA netlink cannot be opened).
	Device string
	// Source names the dump: "RDMA_NLDEV_CMD_RES_QP_GET",
	// "RDMA_NLDEV_CMD_RES_CM_ID_GET", "RDMA_NLDEV_CMD_RES_QP_GET_RAW",
	// or "/proc/PID/comm".
	Source string
	// Status is StatusRead, StatusNotExposed, StatusNotPermitted or
	// StatusError.
	Status string
	// Reason says why it was not read; "" when it was.
	Reason string
}

// Source statuses.
const (
	StatusRead = "read"
	// StatusNotExposed: the kernel or the driver does not offer it (no
	// RDMA netlink, a driver without raw QP contexts).
	StatusNotExposed = "not exposed"
	// StatusNotPermitted: it needs a privilege the reader does not have
	// (the raw dumps need CAP_NET_ADMIN).
	StatusNotPermitted = "not permitted"
	// StatusError: it failed otherwise.
	StatusError = "error"
)

// QP returns the QP of device with number qpn, nil when the census has
// none.
func (c *Census) QP(device string, qpn uint32) *QP {
	if c == nil {
		return nil
	}
	for i := range c.QPs {
		if c.QPs[i].Device == device && c.QPs[i].QPN == qpn {
			return &c.QPs[i]
		}
	}
	return nil
}

// Sort orders the QPs by device and QPN, the rdma_cm IDs by device and
// ID, the raw contexts by device (stably), and the sources by device.
func (c *Census) Sort() {
	sort.SliceStable(c.QPs, func(i, j int) bool {
		a, b := c.QPs[i], c.QPs[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.QPN < b.QPN
	})
	sort.SliceStable(c.CMIDs, func(i, j int) bool {
		a, b := c.CMIDs[i], c.CMIDs[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		return a.ID < b.ID
	})
	sort.SliceStable(c.RawQPs, func(i, j int) bool { return c.RawQPs[i].Device < c.RawQPs[j].Device })
	sort.SliceStable(c.Sources, func(i, j int) bool { return c.Sources[i].Device < c.Sources[j].Device })
}

// Complete reports whether every source was read.
func (c *Census) Complete() bool {
	for _, s := range c.Sources {
		if s.Status != StatusRead {
			return false
		}
	}
	return true
}

// Filter returns the census of one device: its QPs, rdma_cm IDs, raw
// contexts and sources (with those of every device).
func (c *Census) Filter(device string) *Census {
	out := &Census{QPs: []QP{}, CMIDs: []CMID{}}
	for _, q := range c.QPs {
		if q.Device == device {
			out.QPs = append(out.QPs, q)
		}
	}
	for _, id := range c.CMIDs {
		if id.Device == device {
			out.CMIDs = append(out.CMIDs, id)
		}
	}
	if c.RawQPs != nil {
		out.RawQPs = []RawQP{}
		for _, r := range c.RawQPs {
			if r.Device == device {
				out.RawQPs = append(out.RawQPs, r)
			}
		}
	}
	for _, s := range c.Sources {
		if s.Device == device || s.Device == "" {
			out.Sources = append(out.Sources, s)
		}
	}
	return out
}

// Wire forms (docs/json.md, "census").
type (
	censusJSON struct {
		QPs     []QP     `json:"qps"`
		CMIDs   []CMID   `json:"cm_ids"`
		RawQPs  []RawQP  `json:"raw_qps"`
		Sources []Source `json:"sources"`
	}
	qpJSON struct {
		Device         string       `json:"device"`
		Port           *int         `json:"port"`
		QPN            uint32       `json:"qpn"`
		DestQP         *uint32      `json:"dest_qp"`
		Type           string       `json:"type"`
		Subtype        *string      `json:"subtype"`
		State          string       `json:"state"`
		SQPSN          uint32       `json:"sq_psn"`
		RQPSN          *uint32      `json:"rq_psn"`
		PathMigState   *string      `json:"path_mig_state"`
		PDN            *uint32      `json:"pdn"`
		Owner          *string      `json:"owner"`
		PID            *int         `json:"pid"`
		Comm           *string      `json:"comm"`
		Driver         []DriverAttr `json:"driver_attrs"`
		TrafficClass   *int         `json:"traffic_class"`
		SL             *int         `json:"sl"`
		DSCP           *int         `json:"dscp"`
		MarkingsReason *string      `json:"markings_reason"`
	}
	driverAttrJSON struct {
		Name  string  `json:"name"`
		Value *int64  `json:"value"`
		Text  *string `json:"value_text"`
		Hex   bool    `json:"hex"`
	}
	cmIDJSON struct {
		Device    string  `json:"device"`
		Port      *int    `json:"port"`
		ID        uint32  `json:"cm_id"`
		QPN       *uint32 `json:"qpn"`
		QPType    *string `json:"qp_type"`
		PortSpace string  `json:"port_space"`
		State     string  `json:"state"`
		Src       *string `json:"src"`
		SrcPort   *int    `json:"src_port"`
		Dst       *string `json:"dst"`
		DstPort   *int    `json:"dst_port"`
		TOS       *int    `json:"tos"`
		Owner     *string `json:"owner"`
		PID       *int    `json:"pid"`
		Comm      *string `json:"comm"`
	}
	rawQPJSON struct {
		Device string `json:"device"`
		Port   *int   `json:"port"`
		Data   string `json:"raw"`
	}
	sourceJSON struct {
		Device *string `json:"device"`
		Source string  `json:"source"`
		Status string  `json:"status"`
		Reason *string `json:"reason"`
	}
)

// MarshalJSON writes the census (docs/json.md, "census"): every list
// present ([] when empty), raw_qps null when not asked for.
func (c Census) MarshalJSON() ([]byte, error) {
	w := censusJSON{QPs: c.QPs, CMIDs: c.CMIDs, RawQPs: c.RawQPs, Sources: c.Sources}
	if w.QPs == nil {
		w.QPs = []QP{}
	}
	if w.CMIDs == nil {
		w.CMIDs = []CMID{}
	}
	if w.Sources == nil {
		w.Sources = []Source{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes, refusing unknown keys.
func (c *Census) UnmarshalJSON(b []byte) error {
	var w censusJSON
	if err := strict(b, &w); err != nil {
		return err
	}
	*c = Census{QPs: w.QPs, CMIDs: w.CMIDs, RawQPs: w.RawQPs, Sources: w.Sources}
	return c.Validate()
}

// Validate checks what a census read from the kernel satisfies: device
// names, port numbers 0..255, QP and rdma_cm ID numbers unique per
// device, known source statuses, driver attributes with a name and one
// value. Its errors name the entry.
func (c *Census) Validate() error {
	if c == nil {
		return nil
	}
	type key struct {
		dev string
		n   uint32
	}
	qps := map[key]bool{}
	for i, q := range c.QPs {
		if err := checkDevPort(q.Device, q.Port); err != nil {
			return fmt.Errorf("census: qps[%d]: %w", i, err)
		}
		if q.Type == "" || q.State == "" {
			return fmt.Errorf("census: %s QP %d (qps[%d]): want a type and a state", q.Device, q.QPN, i)
		}
		if qps[key{q.Device, q.QPN}] {
			return fmt.Errorf("census: %s QP %d appears twice", q.Device, q.QPN)
		}
		qps[key{q.Device, q.QPN}] = true
		if err := checkOwner(q.Owner, q.PID); err != nil {
			return fmt.Errorf("census: %s QP %d: %w", q.Device, q.QPN, err)
		}
		for _, m := range []struct {
			name string
			v    *int
			max  int
		}{{"traffic_class", q.TrafficClass, 255}, {"sl", q.SL, 15}, {"dscp", q.DSCP, 63}} {
			if m.v != nil && (*m.v < 0 || *m.v > m.max) {
				return fmt.Errorf("census: %s QP %d: %s %d: want 0..%d", q.Device, q.QPN, m.name, *m.v, m.max)
			}
		}
		for _, a := range q.Driver {
			if a.Name == "" {
				return fmt.Errorf("census: %s QP %d: a driver attribute without a name", q.Device, q.QPN)
			}
		}
	}
	ids := map[key]bool{}
	for i, id := range c.CMIDs {
		if err := checkDevPort(id.Device, id.Port); err != nil {
			return fmt.Errorf("census: cm_ids[%d]: %w", i, err)
		}
		if ids[key{id.Device, id.ID}] {
			return fmt.Errorf("census: %s rdma_cm ID %d appears twice", id.Device, id.ID)
		}
		ids[key{id.Device, id.ID}] = true
		if err := checkOwner(id.Owner, id.PID); err != nil {
			return fmt.Errorf("census: %s rdma_cm ID %d: %w", id.Device, id.ID, err)
		}
		if id.TOS != nil && (*id.TOS < 0 || *id.TOS > 255) {
			return fmt.Errorf("census: %s rdma_cm ID %d: tos %d: want 0..255", id.Device, id.ID, *id.TOS)
		}
	}
	for i, r := range c.RawQPs {
		if err := checkDevPort(r.Device, r.Port); err != nil {
			return fmt.Errorf("census: raw_qps[%d]: %w", i, err)
		}
	}
	for i, s := range c.Sources {
		switch s.Status {
		case StatusRead, StatusNotExposed, StatusNotPermitted, StatusError:
		default:
			return fmt.Errorf("census: sources[%d] (%s): status %q: want %q, %q, %q or %q", i, s.Source, s.Status, StatusRead, StatusNotExposed, StatusNotPermitted, StatusError)
		}
	}
	return nil
}

func checkDevPort(dev string, port int) error {
	if dev == "" || strings.ContainsAny(dev, "/\x00") {
		return fmt.Errorf("device name %q is not valid", dev)
	}
	if port < 0 || port > 255 {
		return fmt.Errorf("%s port %d: want 1..255, or null", dev, port)
	}
	return nil
}

func checkOwner(owner string, pid int) error {
	switch owner {
	case OwnerProcess, "":
	case OwnerKernel:
		if pid != 0 {
			return fmt.Errorf("pid %d with a kernel owner", pid)
		}
	default:
		return fmt.Errorf("owner %q: want %q, %q or null", owner, OwnerProcess, OwnerKernel)
	}
	if pid < 0 {
		return fmt.Errorf("pid %d: want a positive number or null", pid)
	}
	return nil
}

// MarshalJSON writes the QP (docs/json.md, "qp").
func (q QP) MarshalJSON() ([]byte, error) {
	w := qpJSON{Device: q.Device, Port: null.Int(q.Port), QPN: q.QPN, DestQP: q.DestQP, Type: q.Type, Subtype: null.String(q.Subtype),
		State: q.State, SQPSN: q.SQPSN, RQPSN: q.RQPSN, PathMigState: null.String(q.PathMigState), PDN: q.PDN,
		Owner: null.String(q.Owner), PID: null.Int(q.PID), Comm: null.String(q.Comm), Driver: q.Driver,
		TrafficClass: q.TrafficClass, SL: q.SL, DSCP: q.DSCP, MarkingsReason: null.String(q.MarkingsReason)}
	if w.Driver == nil {
		w.Driver = []DriverAttr{}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (q *QP) UnmarshalJSON(b []byte) error {
	var w qpJSON
	if err := strict(b, &w); err != nil {
		return err
	}
	*q = QP{Device: w.Device, Port: deref(w.Port), QPN: w.QPN, DestQP: w.DestQP, Type: w.Type, Subtype: derefS(w.Subtype),
		State: w.State, SQPSN: w.SQPSN, RQPSN: w.RQPSN, PathMigState: derefS(w.PathMigState), PDN: w.PDN,
		Owner: derefS(w.Owner), PID: deref(w.PID), Comm: derefS(w.Comm), Driver: w.Driver,
		TrafficClass: w.TrafficClass, SL: w.SL, DSCP: w.DSCP, MarkingsReason: derefS(w.MarkingsReason)}
	if len(q.Driver) == 0 {
		q.Driver = nil
	}
	return nil
}

// MarshalJSON writes the attribute (docs/json.md, "driver_attr").
func (a DriverAttr) MarshalJSON() ([]byte, error) {
	w := driverAttrJSON{Name: a.Name, Value: a.Value, Hex: a.Hex}
	if a.Value == nil {
		w.Text = &a.Text
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (a *DriverAttr) UnmarshalJSON(b []byte) error {
	var w driverAttrJSON
	if err := strict(b, &w); err != nil {
		return err
	}
	*a = DriverAttr{Name: w.Name, Value: w.Value, Text: derefS(w.Text), Hex: w.Hex}
	return nil
}

// MarshalJSON writes the rdma_cm ID (docs/json.md, "cm_id").
func (id CMID) MarshalJSON() ([]byte, error) {
	w := cmIDJSON{Device: id.Device, Port: null.Int(id.Port), ID: id.ID, QPN: id.QPN, QPType: null.String(id.QPType),
		PortSpace: id.PortSpace, State: id.State, TOS: id.TOS, Owner: null.String(id.Owner), PID: null.Int(id.PID), Comm: null.String(id.Comm)}
	w.Src, w.SrcPort = addrJSON(id.Src)
	w.Dst, w.DstPort = addrJSON(id.Dst)
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (id *CMID) UnmarshalJSON(b []byte) error {
	var w cmIDJSON
	if err := strict(b, &w); err != nil {
		return err
	}
	src, err := addrFromJSON("src", w.Src, w.SrcPort)
	if err != nil {
		return err
	}
	dst, err := addrFromJSON("dst", w.Dst, w.DstPort)
	if err != nil {
		return err
	}
	*id = CMID{Device: w.Device, Port: deref(w.Port), ID: w.ID, QPN: w.QPN, QPType: derefS(w.QPType), PortSpace: w.PortSpace,
		State: w.State, Src: src, Dst: dst, TOS: w.TOS, Owner: derefS(w.Owner), PID: deref(w.PID), Comm: derefS(w.Comm)}
	return nil
}

func addrJSON(a netip.AddrPort) (*string, *int) {
	if !a.IsValid() {
		return nil, nil
	}
	s, p := a.Addr().String(), int(a.Port())
	return &s, &p
}

func addrFromJSON(key string, s *string, port *int) (netip.AddrPort, error) {
	if s == nil {
		if port != nil {
			return netip.AddrPort{}, fmt.Errorf("%s_port %d without %s", key, *port, key)
		}
		return netip.AddrPort{}, nil
	}
	a, err := netip.ParseAddr(*s)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%s %q: not an IP address", key, *s)
	}
	p := 0
	if port != nil {
		p = *port
	}
	if p < 0 || p > 65535 {
		return netip.AddrPort{}, fmt.Errorf("%s_port %d: want 0..65535", key, p)
	}
	return netip.AddrPortFrom(a, uint16(p)), nil
}

// MarshalJSON writes the raw context as hex (docs/json.md, "raw_qp").
func (r RawQP) MarshalJSON() ([]byte, error) {
	return json.Marshal(rawQPJSON{Device: r.Device, Port: null.Int(r.Port), Data: hex.EncodeToString(r.Data)})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (r *RawQP) UnmarshalJSON(b []byte) error {
	var w rawQPJSON
	if err := strict(b, &w); err != nil {
		return err
	}
	d, err := hex.DecodeString(w.Data)
	if err != nil {
		return fmt.Errorf("raw: not hex: %v", err)
	}
	*r = RawQP{Device: w.Device, Port: deref(w.Port), Data: d}
	return nil
}

// MarshalJSON writes the source (docs/json.md, "census_source").
func (s Source) MarshalJSON() ([]byte, error) {
	return json.Marshal(sourceJSON{Device: null.String(s.Device), Source: s.Source, Status: s.Status, Reason: null.String(s.Reason)})
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (s *Source) UnmarshalJSON(b []byte) error {
	var w sourceJSON
	if err := strict(b, &w); err != nil {
		return err
	}
	*s = Source{Device: derefS(w.Device), Source: w.Source, Status: w.Status, Reason: derefS(w.Reason)}
	return nil
}

func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func deref(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func derefS(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
