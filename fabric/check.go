package fabric

import (
	"sort"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
)

// Check names: the "check" key of a finding (docs/json.md, "fabric").
const (
	CheckGIDIndex     = "gid_index"
	CheckRoCEVersion  = "roce_version"
	CheckVLAN         = "vlan"
	CheckMTU          = "mtu"
	CheckTrust        = "trust"
	CheckPFC          = "pfc"
	CheckDSCPPrio     = "dscp_prio"
	CheckETS          = "ets"
	CheckEgressQoSMap = "egress_qos_map"
	CheckRDMACMToS    = "rdma_cm_tos"
	CheckRDMACMMode   = "rdma_cm_mode"
	CheckTrafficClass = "traffic_class"
	CheckDCQCN        = "dcqcn"
)

// state is what a check knows of one attachment.
type state int

const (
	known      state = iota
	unknown          // the fact was not collected or not readable
	notApplies       // the check does not apply (egress maps of an untagged netdev, a GID type the port has no entry of)
)

// check is one comparison across hosts.
type check struct {
	name string
	// what names the fact in messages; plural when it is a plural noun.
	what   string
	plural bool
	// perType checks compare each GID type separately.
	perType bool
	// metrics is true when Prometheus metrics carry the fact.
	metrics bool
	// why is what follows from a difference.
	why string
	// key returns the fact's text: what tables print, and what ports
	// are grouped by. It runs for every port, so it is cheap.
	key func(a *Attachment, t gid.Type) (string, state)
	// value returns the fact's value; it runs once per group.
	value func(a *Attachment, t gid.Type) Value
}

// checks are every check, in report order.
var checks = []check{
	{name: CheckGIDIndex, what: "the usable GID index", perType: true, metrics: true,
		why: "one NCCL_IB_GID_INDEX or UCX_IB_GID_INDEX (perftest -x) works only on the ports of one value: set it per host as the groups show, or make the GID tables alike",
		key: func(a *Attachment, t gid.Type) (string, state) {
			p := a.indexOf(t)
			if p == nil {
				return "", notApplies
			}
			return strconv.Itoa(*p), known
		},
		value: func(a *Attachment, t gid.Type) Value { i := *a.indexOf(t); return Value{Index: &i} }},
	{name: CheckRoCEVersion, what: "the RoCE versions with a usable GID", plural: true, metrics: true,
		why: "a workload that asks for a RoCE version (NCCL_IB_ROCE_VERSION_NUM, rdma_cm's default_roce_mode) finds no GID of it on some hosts",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			v1, v2 := a.indexOf(gid.TypeRoCEv1) != nil, a.indexOf(gid.TypeRoCEv2) != nil
			switch {
			case v1 && v2:
				return "RoCE v1, RoCE v2", known
			case v1:
				return "RoCE v1", known
			}
			return "RoCE v2", known
		},
		value: func(a *Attachment, _ gid.Type) Value {
			v := []int{}
			for n, t := range []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2} {
				if a.indexOf(t) != nil {
					v = append(v, n+1)
				}
			}
			return Value{RoCEVersions: v}
		}},
	{name: CheckVLAN, what: "the VLAN tags", plural: true, metrics: true,
		why: "frames leave some hosts tagged differently: the switches put them in another VLAN or classify them by another PCP",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.VLANs == nil {
				return "", unknown
			}
			if len(a.VLANs) == 0 {
				return "untagged", known
			}
			var b []byte
			for i, v := range a.VLANs {
				if i > 0 {
					b = append(b, " over "...)
				}
				b = strconv.AppendInt(b, int64(v), 10)
			}
			return string(b), known
		},
		value: func(a *Attachment, _ gid.Type) Value {
			v := make([]int, len(a.VLANs))
			for i, id := range a.VLANs {
				v[i] = int(id)
			}
			return Value{VLANIDs: v}
		}},
	{name: CheckMTU, what: "the netdev MTU",
		why: "a connection's path MTU must fit both ends (iboe_get_mtu: 4096 needs an MTU of 4192, 1024 one of 1120); frames larger than a hop's MTU are dropped",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.MTU == nil {
				return "", unknown
			}
			return strconv.Itoa(*a.MTU) + " (RoCE MTU " + strconv.Itoa(gid.RoCEMTU(*a.MTU)) + ")", known
		},
		value: func(a *Attachment, _ gid.Type) Value { m := *a.MTU; return Value{MTU: &m} }},
	{name: CheckTrust, what: "the DCB trust mode",
		why: "the NICs classify received RoCE by PCP on some hosts and by DSCP on others: the same marking lands in different priorities",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.DCB == nil {
				return "", unknown
			}
			return string(a.DCB.Trust()), known
		},
		value: func(a *Attachment, _ gid.Type) Value { t := string(a.DCB.Trust()); return Value{Trust: &t} }},
	{name: CheckPFC, what: "the priorities with PFC on", plural: true,
		why: "a priority lossless on some hosts is lossy on others: its frames are dropped instead of paused there",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.DCB == nil || a.DCB.PFC == nil {
				return "", unknown
			}
			return listText(pfcPrios(a), "none"), known
		},
		value: func(a *Attachment, _ gid.Type) Value { return Value{PFCPriorities: pfcPrios(a)} }},
	{name: CheckDSCPPrio, what: "the DSCP to priority map",
		why: "the same DSCP lands in different priorities (and traffic classes) on different hosts",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.DCB == nil {
				return "", unknown
			}
			if a.DCB.Trust() != qos.TrustDSCP {
				// Under PCP trust the map classifies nothing; the
				// trust check names a port in the other mode.
				return "", notApplies
			}
			var b []byte
			for _, e := range dscpEntries(a) {
				if len(b) > 0 {
					b = append(b, ' ')
				}
				b = strconv.AppendInt(b, int64(e.dscp), 10)
				b = append(b, ':')
				b = append(b, listText(e.prios, "")...)
			}
			return orText(string(b), "none"), known
		},
		value: func(a *Attachment, _ gid.Type) Value {
			v := map[string][]int{}
			for _, e := range dscpEntries(a) {
				v[strconv.Itoa(e.dscp)] = e.prios
			}
			return Value{DSCPPrio: v}
		}},
	{name: CheckETS, what: "ETS",
		why: "priorities map to other traffic classes, or the classes get other schedulers or bandwidth shares, on some hosts",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.DCB == nil || a.DCB.ETS == nil {
				return "", unknown
			}
			e := a.DCB.ETS
			b := append(make([]byte, 0, 96), "prio_tc "...)
			b = appendInts(b, e.PrioTC[:])
			b = append(b, ", tsa "...)
			for i, t := range e.TCTSA {
				if i > 0 {
					b = append(b, ',')
				}
				b = append(b, qos.TSAName(t)...)
			}
			b = append(b, ", bw "...)
			b = appendInts(b, e.TCTxBW[:])
			return string(b), known
		},
		value: func(a *Attachment, _ gid.Type) Value {
			e := a.DCB.ETS
			return Value{ETS: &ETSValue{PrioTC: ints8(e.PrioTC), TSA: ints8(e.TCTSA), TxBW: ints8(e.TCTxBW)}}
		}},
	{name: CheckEgressQoSMap, what: "the VLAN egress QoS maps", plural: true,
		why: "the same skb priority (socket priority, rdma_cm ToS) leaves with a different PCP on some hosts",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			switch {
			case a.VLANs == nil:
				return "", unknown
			case len(a.VLANs) == 0:
				return "", notApplies
			case a.Egress == nil:
				return "", unknown
			}
			var b []byte
			for i, m := range a.Egress {
				if i > 0 {
					b = append(b, ' ')
				}
				b = append(b, '[')
				b = append(b, orText(m.String(), "none")...)
				b = append(b, ']')
			}
			return string(b), known
		},
		value: func(a *Attachment, _ gid.Type) Value { return Value{EgressQoSMaps: a.Egress} }},
	{name: CheckRDMACMToS, what: "rdma_cm's default ToS",
		why: "rdma_cm connections whose application sets no ToS are marked differently (DSCP, and the priority that follows) on some hosts",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.RDMACM == nil || a.RDMACM.Status != qos.SettingRead || a.RDMACM.ToS == nil {
				return "", unknown
			}
			t := int(*a.RDMACM.ToS)
			return strconv.Itoa(t) + " (DSCP " + strconv.Itoa(t>>2) + ")", known
		},
		value: func(a *Attachment, _ gid.Type) Value { t := int(*a.RDMACM.ToS); return Value{DefaultRoCEToS: &t} }},
	{name: CheckRDMACMMode, what: "rdma_cm's default RoCE mode",
		why: "rdma_cm picks GIDs of another RoCE version on some hosts",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			if a.RDMACM == nil || a.RDMACM.Status != qos.SettingRead || a.RDMACM.Mode == nil {
				return "", unknown
			}
			return *a.RDMACM.Mode, known
		},
		value: func(a *Attachment, _ gid.Type) Value { m := *a.RDMACM.Mode; return Value{DefaultRoCEMode: &m} }},
	{name: CheckTrafficClass, what: "the traffic class override",
		why: "MLNX_OFED replaces the traffic class of connected QPs on some hosts only: their DSCP differs from what the application asks",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			o := a.TCOverride
			if o == nil || o.Status == qos.SettingError {
				return "", unknown
			}
			v := tcOf(o)
			var parts []string
			if v.TrafficClass != nil {
				parts = append(parts, "global "+strconv.Itoa(int(*v.TrafficClass)))
			}
			for _, r := range v.Rules {
				src, dst := "any", "any"
				if r.Src != nil {
					src = r.Src.String()
				}
				if r.Dst != nil {
					dst = r.Dst.String()
				}
				parts = append(parts, src+"->"+dst+" "+strconv.Itoa(int(r.TrafficClass)))
			}
			return orText(strings.Join(parts, ", "), "none"), known
		},
		value: func(a *Attachment, _ gid.Type) Value { v := tcOf(a.TCOverride); return Value{TCOverride: &v} }},
	{name: CheckDCQCN, what: "DCQCN",
		why: "congestion notification and reaction differ: some hosts do not send CNPs or do not slow down on them, or send CNPs with another DSCP or priority",
		key: func(a *Attachment, _ gid.Type) (string, state) {
			d := a.DCQCN
			if d == nil || d.Status != qos.SettingRead {
				return "", unknown
			}
			return "np " + enabled(d.NP) + ", rp " + enabled(d.RP) + ", cnp dscp " + u8Text(d.CNPDSCP) + " prio " + u8Text(d.CNPPrio), known
		},
		value: func(a *Attachment, _ gid.Type) Value {
			d := a.DCQCN
			return Value{DCQCN: &DCQCNValue{NP: d.NP, RP: d.RP, CNPDSCP: d.CNPDSCP, CNPPrio: d.CNPPrio}}
		}},
}

func pfcPrios(a *Attachment) []int {
	v := []int{}
	for _, p := range a.DCB.PFC.EnabledPriorities() {
		v = append(v, int(p))
	}
	return v
}

type dscpEntry struct {
	dscp  int
	prios []int
}

// dscpEntries is the DSCP APP table, by DSCP, each DSCP's priorities
// sorted.
func dscpEntries(a *Attachment) []dscpEntry {
	m := a.DCB.DSCPMap()
	out := make([]dscpEntry, 0, len(m))
	for k, ps := range m {
		e := dscpEntry{dscp: int(k), prios: make([]int, len(ps))}
		for i, p := range ps {
			e.prios[i] = int(p)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dscp < out[j].dscp })
	return out
}

// tcOf is the override in effect: "not exposed" means the driver has no
// override (upstream mlx5, every other driver).
func tcOf(o *qos.TCOverride) TCOverrideValue {
	v := TCOverrideValue{Rules: []qos.TCRule{}}
	if o.Status == qos.SettingRead {
		v.TrafficClass = o.Global
		if o.Rules != nil {
			v.Rules = o.Rules
		}
	}
	return v
}

func appendInts(b []byte, v []uint8) []byte {
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return b
}

func ints8(a [8]uint8) []int {
	v := make([]int, 8)
	for i, x := range a {
		v[i] = int(x)
	}
	return v
}

func listText(v []int, none string) string {
	if len(v) == 0 {
		return none
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return strings.Join(parts, ",")
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// enabled lists the priorities whose bit is on ("?" for unreadable ones).
func enabled(bits [8]*bool) string {
	var parts []string
	for p, b := range bits {
		switch {
		case b == nil:
			parts = append(parts, strconv.Itoa(p)+"?")
		case *b:
			parts = append(parts, strconv.Itoa(p))
		}
	}
	return orText(strings.Join(parts, ","), "none")
}

func u8Text(p *uint8) string {
	if p == nil {
		return "?"
	}
	return strconv.Itoa(int(*p))
}
