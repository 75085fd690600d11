package ah

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/errno"
)

// GlobalRoute mirrors struct ibv_global_route (rdma-core) and the kernel's
// struct ib_global_route: the GRH part of an address handle. On RoCE it is
// mandatory and decides the IP addresses, DSCP/ECN, TTL and flow label.
type GlobalRoute struct {
	DGID         gid.GID `json:"dgid"`          // dgid: the destination's GID (IPv6 or ::ffff:IPv4)
	FlowLabel    uint32  `json:"flow_label"`    // flow_label: 20 bits
	SGIDIndex    uint8   `json:"sgid_index"`    // sgid_index: the source entry of the port's GID table
	HopLimit     uint8   `json:"hop_limit"`     // hop_limit: IPv4 TTL / IPv6 hop limit (often replaced, see Resolve)
	TrafficClass uint8   `json:"traffic_class"` // traffic_class: the IP TOS / traffic class byte (DSCP << 2 | ECN)
}

// Attr mirrors struct ibv_ah_attr (rdma-core) and the kernel's struct
// rdma_ah_attr as user space fills it: the one address-handle type of
// roce-probe. Field widths are those of the C structure, so every value
// ibv_create_ah can be given is representable, including invalid ones that
// Validate reports.
type Attr struct {
	GRH         GlobalRoute `json:"grh"`           // grh: used only when IsGlobal
	DLID        uint16      `json:"dlid"`          // dlid: InfiniBand destination LID, ignored on RoCE
	SL          uint8       `json:"sl"`            // sl: service level, 4 bits
	SrcPathBits uint8       `json:"src_path_bits"` // src_path_bits: InfiniBand only
	StaticRate  uint8       `json:"static_rate"`   // static_rate: enum ibv_rate, 0 = the port's rate
	IsGlobal    bool        `json:"is_global"`     // is_global: the GRH is valid; must be true on RoCE
	PortNum     uint8       `json:"port_num"`      // port_num: from 1
}

// Limits of the ibv_ah_attr fields.
const (
	MaxSL         = 15      // sl is a 4-bit field
	MaxFlowLabel  = 0xFFFFF // flow_label is a 20-bit field
	MaxStaticRate = 24      // IBV_RATE_1200_GBPS, the largest enum ibv_rate value (rdma-core 44)
)

// Problem is one reason an Attr is wrong: the field (as in struct
// ibv_ah_attr, "grh.sgid_index"), its value, what is allowed, why, and the
// errno ibv_create_ah fails with ("" when the kernel or driver accepts the
// value and silently changes or misuses it).
//
// In JSON the value is "requested" (what the AH asked for, as in Warning)
// and errno is null when the value is accepted.
type Problem struct {
	Field   string `json:"field"`
	Value   string `json:"requested"`
	Allowed string `json:"allowed"`
	Reason  string `json:"reason"`
	Errno   string `json:"errno"`
}

// MarshalJSON writes {field, requested, allowed, reason, errno}.
func (p Problem) MarshalJSON() ([]byte, error) {
	w := struct {
		Field   string  `json:"field"`
		Value   string  `json:"requested"`
		Allowed string  `json:"allowed"`
		Reason  string  `json:"reason"`
		Errno   *string `json:"errno"`
	}{Field: p.Field, Value: p.Value, Allowed: p.Allowed, Reason: p.Reason}
	if p.Errno != "" {
		w.Errno = &p.Errno
	}
	return json.Marshal(w)
}

// String returns "field value: want allowed: reason (errno)".
func (p Problem) String() string {
	s := fmt.Sprintf("%s %s: want %s: %s", p.Field, p.Value, p.Allowed, p.Reason)
	if p.Errno != "" {
		s += " (ibv_create_ah fails with " + p.Errno + ")"
	}
	return s
}

// ValidationError lists every problem Validate found.
type ValidationError struct {
	Problems []Problem
}

// Error lists every problem.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	if len(parts) == 1 {
		return "ah: invalid attribute: " + parts[0]
	}
	return fmt.Sprintf("ah: %d invalid attributes: %s", len(parts), strings.Join(parts, "; "))
}

// Is reports whether one of the problems makes ibv_create_ah fail with
// target (a syscall.Errno such as syscall.EINVAL or syscall.ENODATA).
func (e *ValidationError) Is(target error) bool {
	var errno syscall.Errno
	if !errors.As(target, &errno) {
		return false
	}
	name := ErrnoName(errno)
	for _, p := range e.Problems {
		if p.Errno == name {
			return true
		}
	}
	return false
}

// ErrnoName returns the symbolic name of the errnos address handles fail
// with ("EINVAL", "ETIMEDOUT", ...), or "errno N".
func ErrnoName(e syscall.Errno) string { return errno.Name(e) }

// errnos are the errnos this package's errors carry, in the order ErrnoOf
// tries them: Validate's and Resolve's (ibv_create_ah's), FromWC's
// (ib_init_ah_attr_from_wc's and ibv_init_ah_from_wc's) and Create's.
var errnos = []syscall.Errno{syscall.EINVAL, syscall.ENODATA, syscall.ETIMEDOUT, syscall.ENETUNREACH,
	syscall.EHOSTUNREACH, syscall.EACCES, syscall.ENOENT, syscall.ENOSYS, syscall.EPERM,
	syscall.EPROTONOSUPPORT, syscall.EPROTOTYPE}

// ErrnoOf names the errno an error of Validate, Resolve, FromWC or Create
// stands for ("EINVAL", "ETIMEDOUT", "EPROTOTYPE", ...): the one the verbs
// call would fail with. It returns "" for an error that carries none (a
// missing GID table, a bad argument of this package's own).
func ErrnoOf(err error) string {
	for _, e := range errnos {
		if errors.Is(err, e) {
			return ErrnoName(e)
		}
	}
	return ""
}

// ValidStaticRate reports whether r is a value of enum ibv_rate, as
// Attr.StaticRate must be: 0 (the port's current rate) or
// 2..MaxStaticRate (1 is not assigned: rdma-core's libibverbs/verbs.h
// goes from IBV_RATE_MAX 0 to IBV_RATE_2_5_GBPS 2).
func ValidStaticRate(r uint8) bool { return r == 0 || (r >= 2 && r <= MaxStaticRate) }

// Table is the GID table of one port: entry i is slot i. Entries may be
// given sparsely (only valid ones); Len says how many slots the port has
// (gid_tbl_len), or 0 to use the highest index given plus one.
type Table struct {
	Entries []gid.Entry
	Len     int
}

// TableOf wraps the entries of one port's table, as gid/ reads them.
func TableOf(entries []gid.Entry) Table { return Table{Entries: entries} }

// Size returns the number of slots of the table.
func (t Table) Size() int {
	n := t.Len
	for _, e := range t.Entries {
		if e.Index+1 > n {
			n = e.Index + 1
		}
	}
	return n
}

// Lookup returns slot i; ok is false when i is beyond the table. A slot
// that was not given is returned as an empty entry.
func (t Table) Lookup(i int) (e gid.Entry, ok bool) {
	if i < 0 || i >= t.Size() {
		return gid.Entry{}, false
	}
	for _, e := range t.Entries {
		if e.Index == i {
			return e, true
		}
	}
	return gid.Entry{Index: i, Empty: true}, true
}

// entry returns a pointer to slot i's entry in t.Entries, or to a new
// empty entry when the slot was not given. i must be within the table.
func (t Table) entry(i int) *gid.Entry {
	for k := range t.Entries {
		if t.Entries[k].Index == i {
			return &t.Entries[k]
		}
	}
	return &gid.Entry{Index: i, Empty: true}
}

// port returns the port number of the table's entries, or 0 when it has none.
func (t Table) port() int {
	for _, e := range t.Entries {
		if e.Port != 0 {
			return e.Port
		}
	}
	return 0
}

// Validate checks a against the rules ibv_create_ah applies on a RoCE port
// whose GID table is table, and returns a *ValidationError listing every
// problem, or nil. Pass a zero Table to check only the field ranges.
//
// The rules (drivers/infiniband/core/verbs.c, rdma_check_ah_attr;
// cache.c, rdma_get_gid_attr; addr.c, rdma_resolve_ip; Linux 6.1;
// providers/mlx5/verbs.c, mlx5_create_ah, rdma-core v64.0; docs/ah.md):
//   - port_num ≥ 1 and the port of the table (EINVAL);
//   - is_global = 1 (EINVAL: a RoCE AH needs the GRH);
//   - static_rate is an enum ibv_rate value, 0 or 2..24 (libibverbs/verbs.h,
//     rdma-core v64.0; mlx5: EINVAL from drivers/infiniband/hw/mlx5/qp.c,
//     mlx5r_ib_rate, which create_ib_ah calls in Linux 6.12, while 6.1 checks
//     the rate only on the QP path, mlx5_set_path; rxe ignores the rate);
//   - sl ≤ 15 and flow_label ≤ 0xfffff (not checked by the kernel: drivers
//     mask or misplace the extra bits);
//   - sgid_index < the table size (EINVAL) and names a non-empty entry
//     (ENODATA) of RoCE type (EINVAL);
//   - the dgid is not zero, and its family (IPv4-mapped or IPv6) matches
//     the sgid's (EINVAL from rdma_resolve_ip). Multicast destinations are
//     accepted (their MAC is derived, no neighbour resolution), as are
//     link-local ones (RoCE v1: MAC taken from the GID; RoCE v2: neighbour
//     discovery on the sgid's netdev).
func (a Attr) Validate(table Table) error {
	var ps []Problem
	add := func(field, value, allowed, errno, reason string, args ...any) {
		ps = append(ps, Problem{Field: field, Value: value, Allowed: allowed, Errno: errno, Reason: fmt.Sprintf(reason, args...)})
	}
	size := table.Size()
	tport := table.port()
	switch {
	case a.PortNum == 0:
		add("port_num", "0", "1..255 (ports count from 1)", "EINVAL", "port 0 does not exist (rdma_is_port_valid)")
	case tport != 0 && int(a.PortNum) != tport:
		add("port_num", fmt.Sprint(a.PortNum), fmt.Sprint(tport), "EINVAL", "the GID table given is port %d's; sgid_index is looked up in the port_num's table", tport)
	}
	if !a.IsGlobal {
		add("is_global", "0", "1", "EINVAL", "a RoCE address handle needs the GRH: the IP addresses, traffic class and hop limit come from it (kernel rdma_check_ah_attr, mlx5_create_ah)")
	}
	if !ValidStaticRate(a.StaticRate) {
		add("static_rate", fmt.Sprint(a.StaticRate), "0 (port rate) or 2..24 (enum ibv_rate)", "EINVAL",
			"not an enum ibv_rate value; mlx5 rejects it (mlx5r_ib_rate), rxe ignores static_rate; an uninitialised ibv_ah_attr is the usual cause")
	}
	if a.SL > MaxSL {
		add("sl", fmt.Sprint(a.SL), "0..15", "", "sl is a 4-bit field; the kernel does not check it and drivers keep only some bits (mlx5 uses sl & 7 = %d as the Ethernet priority)", a.SL&7)
	}
	if !a.IsGlobal {
		return result(ps)
	}
	g := a.GRH
	if g.FlowLabel > MaxFlowLabel {
		add("grh.flow_label", fmt.Sprintf("%#x", g.FlowLabel), "0..0xfffff", "", "the flow label is 20 bits; the kernel does not check it: mlx5 ORs it into the word that also holds sgid_index, rxe masks it")
	}
	if g.DGID.IsZero() {
		add("grh.dgid", "::", "a unicast or multicast GID", "", "the zero GID is not a destination: neighbour resolution cannot succeed")
	}
	if size == 0 {
		return result(ps) // no table: field ranges only
	}
	e, ok := table.Lookup(int(g.SGIDIndex))
	switch {
	case !ok:
		add("grh.sgid_index", fmt.Sprint(g.SGIDIndex), fmt.Sprintf("0..%d (the port's GID table has %d entries)", size-1, size), "EINVAL",
			"beyond the GID table (rdma_get_gid_attr)")
	case e.Empty || e.GID.IsZero():
		add("grh.sgid_index", fmt.Sprint(g.SGIDIndex), "the index of a non-empty entry"+validIndexes(table), "ENODATA",
			"GID entry %d is empty (rdma_get_gid_attr): no address is configured for it, or it was deleted", g.SGIDIndex)
	case e.Type == gid.TypeIB:
		add("grh.sgid_index", fmt.Sprint(g.SGIDIndex), "a RoCE v1 or RoCE v2 entry", "EINVAL", "entry %d has GID type IB: not an Ethernet port", g.SGIDIndex)
	default:
		if !g.DGID.IsZero() && g.DGID.IsIPv4Mapped() != e.GID.IsIPv4Mapped() {
			errno := "EINVAL"
			why := "rdma_resolve_ip refuses source and destination addresses of different families"
			if g.DGID.IsMulticast() {
				errno = ""
				why = "the kernel accepts a multicast AH without resolving it, but the packet is built with the sgid's family"
			}
			add("grh.dgid", g.DGID.String(), fmt.Sprintf("an %s destination (sgid %d is %s)", familyName(e.GID), g.SGIDIndex, e.GID), errno, "%s", why)
		}
	}
	return result(ps)
}

func familyName(g gid.GID) string {
	if g.IsIPv4Mapped() {
		return "IPv4 (::ffff:a.b.c.d)"
	}
	return "IPv6"
}

// validIndexes lists the non-empty indexes of a table, for error messages.
func validIndexes(t Table) string {
	var idx []string
	for _, e := range t.Entries {
		if !e.Empty && !e.GID.IsZero() {
			idx = append(idx, fmt.Sprint(e.Index))
		}
	}
	if len(idx) == 0 {
		return " (the table has no valid entry)"
	}
	if len(idx) > 16 {
		idx = append(idx[:16], "...")
	}
	return " (valid: " + strings.Join(idx, ", ") + ")"
}

func result(ps []Problem) error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}
