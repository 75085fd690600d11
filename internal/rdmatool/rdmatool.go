// Package rdmatool reads what iproute2's rdma tool prints as JSON
// (`rdma -j resource show qp`, `rdma -j resource show cm_id`) and compares
// it with a census field for field: the independent reference of the QP
// census's lab test and of the census package's fixtures.
//
// The keys and their formats are iproute2's (rdma/res.c print_link and
// print_comm, res-qp.c res_qp_line, res-cmid.c res_cm_id_line, iproute2
// 6.1 and later): a key is absent where the kernel sent no attribute.
package rdmatool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/census"
)

// QP is one line of `rdma -j resource show qp`.
type QP struct {
	IfIndex      int     `json:"ifindex"` // the RDMA device's index (not in a census)
	IfName       string  `json:"ifname"`
	Port         *int    `json:"port"`
	LQPN         uint32  `json:"lqpn"`
	RQPN         *uint32 `json:"rqpn"`
	Type         string  `json:"type"`
	Subtype      *string `json:"subtype"`
	State        string  `json:"state"`
	RQPSN        *uint32 `json:"rq-psn"`
	SQPSN        uint32  `json:"sq-psn"`
	PathMigState *string `json:"path-mig-state"`
	PDN          *uint32 `json:"pdn"`
	PID          *int    `json:"pid"`
	Comm         *string `json:"comm"`
}

// CMID is one line of `rdma -j resource show cm_id`.
type CMID struct {
	IfIndex int     `json:"ifindex"`
	IfName  string  `json:"ifname"`
	Port    *int    `json:"port"`
	CMIDN   uint32  `json:"cm-idn"`
	LQPN    *uint32 `json:"lqpn"`
	QPType  *string `json:"qp-type"`
	State   string  `json:"state"`
	PS      string  `json:"ps"`
	PID     *int    `json:"pid"`
	Comm    *string `json:"comm"`
	SrcAddr *string `json:"src-addr"` // ADDRESS:PORT, IPv6 without brackets
	DstAddr *string `json:"dst-addr"`
}

// ParseQPs reads `rdma -j resource show qp`'s output; a key this package
// does not know is an error (a field the comparison would miss).
func ParseQPs(b []byte) ([]QP, error) {
	var out []QP
	return out, parse(b, &out)
}

// ParseCMIDs reads `rdma -j resource show cm_id`'s output. The rdma tool
// prints an rdma_cm ID bound to no port once per port of its device (it
// dumps each port in turn: rdma/utils.c rd_exec_link); the repeats are
// dropped.
func ParseCMIDs(b []byte) ([]CMID, error) {
	var all []CMID
	if err := parse(b, &all); err != nil {
		return nil, err
	}
	type key struct {
		dev string
		id  uint32
	}
	seen := map[key]bool{}
	var out []CMID
	for _, id := range all {
		k := key{id.IfName, id.CMIDN}
		if !seen[k] {
			seen[k] = true
			out = append(out, id)
		}
	}
	return out, nil
}

func parse(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Compare lists every difference between the rdma tool's QPs and rdma_cm
// IDs and the census's: an entry only one side has, and every field that
// differs. procComm says the census's commands of processes were read
// from /proc as the rdma tool's were (false for a census decoded from
// dump bytes alone: only kernel owners' names are compared then).
func Compare(qps []QP, ids []CMID, c *census.Census, procComm bool) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, fmt.Sprintf(format, args...)) }
	have := map[key]*census.QP{}
	for i := range c.QPs {
		have[key{c.QPs[i].Device, c.QPs[i].QPN}] = &c.QPs[i]
	}
	for _, r := range qps {
		k := key{r.IfName, r.LQPN}
		q := have[k]
		if q == nil {
			add("%s QP %d: listed by rdma, not in the census", r.IfName, r.LQPN)
			continue
		}
		delete(have, k)
		what := fmt.Sprintf("%s QP %d", r.IfName, r.LQPN)
		field := func(name, rdma, ours string) {
			if rdma != ours {
				add("%s: %s: rdma %s, census %s", what, name, rdma, ours)
			}
		}
		field("port", intp(r.Port), zeroNull(q.Port))
		field("rqpn/dest_qp", u32p(r.RQPN), u32p(q.DestQP))
		field("type", r.Type, q.Type)
		field("subtype", strp(r.Subtype), emptyNull(q.Subtype))
		field("state", r.State, q.State)
		field("rq-psn/rq_psn", u32p(r.RQPSN), u32p(q.RQPSN))
		field("sq-psn/sq_psn", strconv.FormatUint(uint64(r.SQPSN), 10), strconv.FormatUint(uint64(q.SQPSN), 10))
		field("path-mig-state", strp(r.PathMigState), emptyNull(q.PathMigState))
		field("pdn", u32p(r.PDN), u32p(q.PDN))
		field("pid", intp(r.PID), zeroNull(q.PID))
		if procComm || q.Owner == census.OwnerKernel {
			field("comm", strp(r.Comm), emptyNull(q.Comm))
		}
	}
	for _, q := range sortedQPs(have) {
		add("%s QP %d: in the census, not listed by rdma", q.Device, q.QPN)
	}
	haveID := map[key]*census.CMID{}
	for i := range c.CMIDs {
		haveID[key{c.CMIDs[i].Device, c.CMIDs[i].ID}] = &c.CMIDs[i]
	}
	for _, r := range ids {
		k := key{r.IfName, r.CMIDN}
		id := haveID[k]
		if id == nil {
			add("%s rdma_cm ID %d: listed by rdma, not in the census", r.IfName, r.CMIDN)
			continue
		}
		delete(haveID, k)
		what := fmt.Sprintf("%s rdma_cm ID %d", r.IfName, r.CMIDN)
		field := func(name, rdma, ours string) {
			if rdma != ours {
				add("%s: %s: rdma %s, census %s", what, name, rdma, ours)
			}
		}
		field("port", intp(r.Port), zeroNull(id.Port))
		field("lqpn/qpn", u32p(r.LQPN), u32p(id.QPN))
		field("qp-type", strp(r.QPType), emptyNull(id.QPType))
		field("state", r.State, id.State)
		// iproute2 prints "IPoIB" for RDMA_PS_IB as for RDMA_PS_IPOIB
		// (rdma/res-cmid.c cm_id_ps_to_str).
		ps := id.PortSpace
		if ps == "IB" {
			ps = "IPoIB"
		}
		field("ps/port_space", r.PS, ps)
		field("pid", intp(r.PID), zeroNull(id.PID))
		if procComm || id.Owner == census.OwnerKernel {
			field("comm", strp(r.Comm), emptyNull(id.Comm))
		}
		field("src-addr", addrp(r.SrcAddr), addrPort(id.Src))
		field("dst-addr", addrp(r.DstAddr), addrPort(id.Dst))
	}
	var left []*census.CMID
	for _, id := range haveID {
		left = append(left, id)
	}
	sort.Slice(left, func(i, j int) bool {
		return left[i].Device+strconv.Itoa(int(left[i].ID)) < left[j].Device+strconv.Itoa(int(left[j].ID))
	})
	for _, id := range left {
		add("%s rdma_cm ID %d: in the census, not listed by rdma", id.Device, id.ID)
	}
	return diffs
}

// key names a QP or an rdma_cm ID of a device.
type key struct {
	dev string
	n   uint32
}

func sortedQPs(m map[key]*census.QP) []*census.QP {
	var out []*census.QP
	for _, q := range m {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return out[i].Device < out[j].Device
		}
		return out[i].QPN < out[j].QPN
	})
	return out
}

const null = "null"

func intp(p *int) string {
	if p == nil {
		return null
	}
	return strconv.Itoa(*p)
}

func zeroNull(v int) string {
	if v == 0 {
		return null
	}
	return strconv.Itoa(v)
}

func u32p(p *uint32) string {
	if p == nil {
		return null
	}
	return strconv.FormatUint(uint64(*p), 10)
}

func strp(p *string) string {
	if p == nil {
		return null
	}
	return strconv.Quote(*p)
}

func emptyNull(s string) string {
	if s == "" {
		return null
	}
	return strconv.Quote(s)
}

// addrp normalises the rdma tool's ADDRESS:PORT (inet_ntop and %u; IPv6
// without brackets) to netip's form.
func addrp(p *string) string {
	if p == nil {
		return null
	}
	i := strings.LastIndexByte(*p, ':')
	if i < 0 {
		return "unparsable " + strconv.Quote(*p)
	}
	a, err := netip.ParseAddr((*p)[:i])
	port, perr := strconv.ParseUint((*p)[i+1:], 10, 16)
	if err != nil || perr != nil {
		return "unparsable " + strconv.Quote(*p)
	}
	return netip.AddrPortFrom(a, uint16(port)).String()
}

func addrPort(a netip.AddrPort) string {
	if !a.IsValid() {
		return null
	}
	return a.String()
}
