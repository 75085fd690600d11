package fabric

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
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
	// value returns the fact's JSON value and its text (the grouping key
	// and what tables print).
	value func(a *Attachment, t gid.Type) (any, string, state)
}

// checks are every check, in report order.
var checks = []check{
	{name: CheckGIDIndex, what: "the usable GID index", perType: true, metrics: true,
		why: "one NCCL_IB_GID_INDEX or UCX_IB_GID_INDEX (perftest -x) works only on the ports of one value: set it per host as the groups show, or make the GID tables alike",
		value: func(a *Attachment, t gid.Type) (any, string, state) {
			p := a.indexOf(t)
			if p == nil {
				return nil, "", notApplies
			}
			return *p, strconv.Itoa(*p), known
		}},
	{name: CheckRoCEVersion, what: "the RoCE versions with a usable GID", plural: true, metrics: true,
		why: "a workload that asks for a RoCE version (NCCL_IB_ROCE_VERSION_NUM, rdma_cm's default_roce_mode) finds no GID of it on some hosts",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			var v []string
			for _, t := range []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2} {
				if a.indexOf(t) != nil {
					v = append(v, t.String())
				}
			}
			return v, strings.Join(v, ", "), known
		}},
	{name: CheckVLAN, what: "the VLAN tags", plural: true, metrics: true,
		why: "frames leave some hosts tagged differently: the switches put them in another VLAN or classify them by another PCP",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.VLANs == nil {
				return nil, "", unknown
			}
			if len(a.VLANs) == 0 {
				return []uint16{}, "untagged", known
			}
			parts := make([]string, len(a.VLANs))
			for i, v := range a.VLANs {
				parts[i] = strconv.Itoa(int(v))
			}
			return a.VLANs, strings.Join(parts, " over "), known
		}},
	{name: CheckMTU, what: "the netdev MTU",
		why: "a connection's path MTU must fit both ends (iboe_get_mtu: 4096 needs an MTU of 4192, 1024 one of 1120); frames larger than a hop's MTU are dropped",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.MTU == nil {
				return nil, "", unknown
			}
			return *a.MTU, fmt.Sprintf("%d (RoCE MTU %d)", *a.MTU, gid.RoCEMTU(*a.MTU)), known
		}},
	{name: CheckTrust, what: "the DCB trust mode",
		why: "the NICs classify received RoCE by PCP on some hosts and by DSCP on others: the same marking lands in different priorities",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.DCB == nil {
				return nil, "", unknown
			}
			t := string(a.DCB.Trust())
			return t, t, known
		}},
	{name: CheckPFC, what: "PFC on priorities",
		why: "a priority lossless on some hosts is lossy on others: its frames are dropped instead of paused there",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.DCB == nil || a.DCB.PFC == nil {
				return nil, "", unknown
			}
			p := a.DCB.PFC.EnabledPriorities()
			v := make([]int, len(p))
			for i, x := range p {
				v[i] = int(x)
			}
			return v, listText(v, "none"), known
		}},
	{name: CheckDSCPPrio, what: "the DSCP to priority map",
		why: "the same DSCP lands in different priorities (and traffic classes) on different hosts",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.DCB == nil {
				return nil, "", unknown
			}
			if a.DCB.Trust() != qos.TrustDSCP {
				// Under PCP trust the map classifies nothing; the
				// trust check names a port in the other mode.
				return nil, "", notApplies
			}
			m := a.DCB.DSCPMap()
			keys := make([]int, 0, len(m))
			for k := range m {
				keys = append(keys, int(k))
			}
			sort.Ints(keys)
			v := make(map[string][]int, len(m))
			parts := make([]string, len(keys))
			for i, k := range keys {
				ps := make([]int, len(m[uint8(k)]))
				for j, p := range m[uint8(k)] {
					ps[j] = int(p)
				}
				v[strconv.Itoa(k)] = ps
				parts[i] = strconv.Itoa(k) + ":" + listText(ps, "")
			}
			return v, orText(strings.Join(parts, " "), "none"), known
		}},
	{name: CheckETS, what: "ETS",
		why: "priorities map to other traffic classes, or the classes get other schedulers or bandwidth shares, on some hosts",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.DCB == nil || a.DCB.ETS == nil {
				return nil, "", unknown
			}
			e := a.DCB.ETS
			v := etsValue{PrioTC: ints8(e.PrioTC), TSA: make([]string, 8), TxBW: ints8(e.TCTxBW)}
			for i, t := range e.TCTSA {
				v.TSA[i] = qos.TSAName(t)
			}
			text := fmt.Sprintf("prio_tc %s, tsa %s, bw %s", listText(v.PrioTC, ""), strings.Join(v.TSA, ","), listText(v.TxBW, ""))
			return v, text, known
		}},
	{name: CheckEgressQoSMap, what: "the VLAN egress QoS maps", plural: true,
		why: "the same skb priority (socket priority, rdma_cm ToS) leaves with a different PCP on some hosts",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			switch {
			case a.VLANs == nil:
				return nil, "", unknown
			case len(a.VLANs) == 0:
				return nil, "", notApplies
			case a.Egress == nil:
				return nil, "", unknown
			}
			parts := make([]string, len(a.Egress))
			for i, m := range a.Egress {
				parts[i] = "[" + orText(m.String(), "none") + "]"
			}
			v := a.Egress
			if v == nil {
				v = []vlan.QoSMap{}
			}
			return v, strings.Join(parts, " "), known
		}},
	{name: CheckRDMACMToS, what: "rdma_cm's default ToS",
		why: "rdma_cm connections whose application sets no ToS are marked differently (DSCP, and the priority that follows) on some hosts",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.RDMACM == nil || a.RDMACM.Status != qos.SettingRead || a.RDMACM.ToS == nil {
				return nil, "", unknown
			}
			t := int(*a.RDMACM.ToS)
			return t, fmt.Sprintf("%d (DSCP %d)", t, t>>2), known
		}},
	{name: CheckRDMACMMode, what: "rdma_cm's default RoCE mode",
		why: "rdma_cm picks GIDs of another RoCE version on some hosts",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			if a.RDMACM == nil || a.RDMACM.Status != qos.SettingRead || a.RDMACM.Mode == nil {
				return nil, "", unknown
			}
			return *a.RDMACM.Mode, *a.RDMACM.Mode, known
		}},
	{name: CheckTrafficClass, what: "the traffic class override",
		why: "MLNX_OFED replaces the traffic class of connected QPs on some hosts only: their DSCP differs from what the application asks",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			o := a.TCOverride
			if o == nil || o.Status == qos.SettingError {
				return nil, "", unknown
			}
			v := tcValue{Rules: []qos.TCRule{}}
			if o.Status == qos.SettingRead {
				// Not exposed: the driver has no override (upstream
				// mlx5, every other driver).
				v.Global = o.Global
				if o.Rules != nil {
					v.Rules = o.Rules
				}
			}
			var parts []string
			if v.Global != nil {
				parts = append(parts, fmt.Sprintf("global %d", *v.Global))
			}
			for _, r := range v.Rules {
				src, dst := "any", "any"
				if r.Src != nil {
					src = r.Src.String()
				}
				if r.Dst != nil {
					dst = r.Dst.String()
				}
				parts = append(parts, fmt.Sprintf("%s->%s %d", src, dst, r.TrafficClass))
			}
			return v, orText(strings.Join(parts, ", "), "none"), known
		}},
	{name: CheckDCQCN, what: "DCQCN",
		why: "congestion notification and reaction differ: some hosts do not send CNPs or do not slow down on them, or send CNPs with another DSCP or priority",
		value: func(a *Attachment, _ gid.Type) (any, string, state) {
			d := a.DCQCN
			if d == nil || d.Status != qos.SettingRead {
				return nil, "", unknown
			}
			v := dcqcnValue{NP: d.NP, RP: d.RP, CNPDSCP: d.CNPDSCP, CNPPrio: d.CNPPrio}
			text := fmt.Sprintf("np %s, rp %s, cnp dscp %s prio %s", enabled(d.NP), enabled(d.RP), u8Text(d.CNPDSCP), u8Text(d.CNPPrio))
			return v, text, known
		}},
}

// etsValue is the JSON value of the ets check.
type etsValue struct {
	PrioTC []int    `json:"prio_tc"`
	TSA    []string `json:"tc_tsa"`
	TxBW   []int    `json:"tc_tx_bw"`
}

// tcValue is the JSON value of the traffic_class check: the override in
// effect (none: traffic_class null, no rules).
type tcValue struct {
	Global *uint8       `json:"traffic_class"`
	Rules  []qos.TCRule `json:"rules"`
}

// dcqcnValue is the JSON value of the dcqcn check.
type dcqcnValue struct {
	NP      [8]*bool `json:"np_enable"`
	RP      [8]*bool `json:"rp_enable"`
	CNPDSCP *uint8   `json:"cnp_dscp"`
	CNPPrio *uint8   `json:"cnp_802p_prio"`
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
