package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// Source is where a fabric report's facts come from.
type Source string

// Sources.
const (
	SourceFiles      Source = "files"      // snapshot files (roce-probe collect)
	SourceAgents     Source = "agents"     // the agents' /snapshot
	SourcePrometheus Source = "prometheus" // the agents' metrics, queried back from Prometheus
)

// Report is the result of comparing hosts.
type Report struct {
	Source   Source
	Hosts    []HostSummary
	Networks []NetworkSummary
	Checks   []CheckStatus
	Findings []Finding
	// Suspects are the faults localisation names from the agents' pair
	// detail (LocalizeAgents, Localize), most specific kind first; nil
	// with Localized false when the source has no pair detail.
	Suspects  []Suspect
	Localized bool
}

// HostSummary is one host of the report.
type HostSummary struct {
	// Host and Origin are the host's name and where it was read (Host).
	Host   string `json:"host"`
	Origin string `json:"origin"`
	// Networks are the networks its usable GIDs are on (JSON
	// network_names: the report's networks key holds NetworkSummary).
	Networks []string `json:"network_names"`
	// Notes say what its facts lack and why.
	Notes []string `json:"notes"`
}

// NetworkSummary is one network the hosts' usable GIDs are on.
type NetworkSummary struct {
	Network string `json:"network"`
	Family  string `json:"family"`
	// HostCount and PortCount count the hosts and RDMA ports on it.
	HostCount int `json:"host_count"`
	PortCount int `json:"port_count"`
}

// CheckStatus says whether a check could be made from the source.
type CheckStatus struct {
	Check     string `json:"check"`
	Available bool   `json:"available"`
	// Reason says why not; "" (null) when available.
	Reason string `json:"-"`
}

// MarshalJSON writes check, available and reason (null when available).
func (c CheckStatus) MarshalJSON() ([]byte, error) {
	type w CheckStatus
	return json.Marshal(struct {
		w
		Reason *string `json:"reason"`
	}{w(c), null.String(c.Reason)})
}

// Finding is one fact that differs across hosts where it must not: the
// groups of ports that agree, largest first.
type Finding struct {
	Check   string
	Network string
	Family  string
	// Type is the GID type for per-type checks (gid_index), else 0 with
	// PerType false.
	Type    gid.Type
	PerType bool
	Message string
	Groups  []Group
	// Unknown are the ports on the network whose value is not known.
	Unknown []PortRef
}

// Group is the ports that share one value.
type Group struct {
	// Value is the check's value; Text is how tables print it.
	Value Value
	Text  string
	Ports []PortRef
}

// Value is a group's value: the field of the finding's check is set,
// every other is nil. Its JSON form (docs/json.md, `fabric_group`) has a
// key per kind of value, every key present, null except the check's, so
// that a key has one meaning and one type in every finding.
type Value struct {
	// Index is the usable GID index of the finding's GID type
	// (gid_index): the NCCL_IB_GID_INDEX that works on the group's ports.
	Index *int `json:"index"`
	// RoCEVersions are the RoCE versions (1, 2) with a usable entry
	// (roce_version).
	RoCEVersions []int `json:"roce_versions"`
	// VLANIDs are the VLAN IDs frames carry, outermost first; empty for
	// untagged (vlan).
	VLANIDs []int `json:"vlan_ids"`
	// MTU is the netdev's MTU, bytes (mtu).
	MTU *int `json:"mtu"`
	// Trust is the DCB trust mode, "pcp" or "dscp" (trust).
	Trust *string `json:"trust"`
	// PFCPriorities are the priorities with PFC on (pfc).
	PFCPriorities []int `json:"pfc_priorities"`
	// DSCPPrio is the APP table's DSCP → priorities (dscp_prio).
	DSCPPrio map[string][]int `json:"dscp_prio"`
	// ETS is the compared part of ETS (ets).
	ETS *ETSValue `json:"ets"`
	// EgressQoSMaps are the VLAN devices' egress maps, outermost tag
	// first (egress_qos_map).
	EgressQoSMaps []vlan.QoSMap `json:"egress_qos_maps"`
	// DefaultRoCEToS and DefaultRoCEMode are rdma_cm's configfs defaults
	// (rdma_cm_tos, rdma_cm_mode).
	DefaultRoCEToS  *int    `json:"default_roce_tos"`
	DefaultRoCEMode *string `json:"default_roce_mode"`
	// TCOverride is MLNX_OFED's traffic class override in effect
	// (traffic_class).
	TCOverride *TCOverrideValue `json:"traffic_class_override"`
	// DCQCN are the DCQCN enable bits and CNP marking (dcqcn).
	DCQCN *DCQCNValue `json:"dcqcn"`
}

// ETSValue is what the ets check compares: each priority's traffic class
// and each class's scheduler (TSA: 0 strict, 1 CBS, 2 ETS, 255 vendor, as
// struct ieee_ets has them) and bandwidth share, percent.
type ETSValue struct {
	PrioTC []int `json:"prio_tc"`
	TSA    []int `json:"tc_tsa"`
	TxBW   []int `json:"tc_tx_bw"`
}

// TCOverrideValue is the traffic class override in effect: the global
// traffic class (nil when none) and the address rules ([] when none,
// also where the driver has no override).
type TCOverrideValue struct {
	TrafficClass *uint8       `json:"traffic_class"`
	Rules        []qos.TCRule `json:"rules"`
}

// DCQCNValue is what the dcqcn check compares: the notification and
// reaction points' enable bits per priority (nil: not readable) and the
// DSCP and priority CNPs are sent with (nil: not read).
type DCQCNValue struct {
	NP      [8]*bool `json:"np_enable"`
	RP      [8]*bool `json:"rp_enable"`
	CNPDSCP *uint8   `json:"cnp_dscp"`
	CNPPrio *uint8   `json:"cnp_802p_prio"`
}

// PortRef names one RDMA port of one host.
type PortRef struct {
	Host       string
	Device     string
	Port       int
	Netdev     string
	RealNetdev string
}

type portRefJSON struct {
	Host       string  `json:"host"`
	Device     string  `json:"device"`
	Port       int     `json:"port"`
	Netdev     *string `json:"netdev"`
	RealNetdev *string `json:"real_netdev"`
}

// MarshalJSON writes host, device, port, netdev and real_netdev (null when
// not known).
func (p PortRef) MarshalJSON() ([]byte, error) {
	return json.Marshal(portRefJSON{p.Host, p.Device, p.Port, null.String(p.Netdev), null.String(p.RealNetdev)})
}

// MarshalJSON writes text, ports and the value's keys (every one,
// null except the check's).
func (g Group) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Text  string    `json:"text"`
		Ports []PortRef `json:"ports"`
		Value
	}{g.Text, g.Ports, g.Value})
}

// MarshalJSON writes check, network, family, type (null for checks not
// per GID type), message, groups and unknown.
func (f Finding) MarshalJSON() ([]byte, error) {
	var t *string
	if f.PerType {
		s := f.Type.String()
		t = &s
	}
	unknown := f.Unknown
	if unknown == nil {
		unknown = []PortRef{}
	}
	return json.Marshal(struct {
		Check   string    `json:"check"`
		Network string    `json:"network"`
		Family  string    `json:"family"`
		Type    *string   `json:"type"`
		Message string    `json:"message"`
		Groups  []Group   `json:"groups"`
		Unknown []PortRef `json:"unknown"`
	}{f.Check, f.Network, f.Family, t, f.Message, f.Groups, unknown})
}

// MarshalJSON writes the report document (docs/json.md, "fabric"); every
// key is always present.
func (r *Report) MarshalJSON() ([]byte, error) {
	w := struct {
		Source   Source           `json:"source"`
		Hosts    []HostSummary    `json:"hosts"`
		Networks []NetworkSummary `json:"networks"`
		Checks   []CheckStatus    `json:"checks"`
		Findings []Finding        `json:"findings"`
		Suspects []Suspect        `json:"suspects"`
	}{r.Source, r.Hosts, r.Networks, r.Checks, r.Findings, r.Suspects}
	if r.Localized && w.Suspects == nil {
		w.Suspects = []Suspect{}
	}
	if w.Hosts == nil {
		w.Hosts = []HostSummary{}
	}
	if w.Networks == nil {
		w.Networks = []NetworkSummary{}
	}
	if w.Findings == nil {
		w.Findings = []Finding{}
	}
	return json.Marshal(w)
}

// ErrDuplicateHost is wrapped when two sources name the same host.
var ErrDuplicateHost = errors.New("duplicate host")

// notFromMetrics says why a check cannot be made from Prometheus.
const notFromMetrics = "the agents' metrics do not carry it: use --from snapshot files or --agents"

// Analyze compares hosts, all from src: every check the source supports,
// on every network, across the ports attached to it. Two hosts of the same
// name are an error (ErrDuplicateHost) naming both origins.
func Analyze(hosts []Host, src Source) (*Report, error) {
	r := &Report{Source: src}
	seen := make(map[string]int, len(hosts))
	for i, h := range hosts {
		if j, ok := seen[h.Name]; ok {
			return nil, fmt.Errorf("%w: %q is the name of %s and of %s: every host must be read once", ErrDuplicateHost, h.Name, hosts[j].Origin, h.Origin)
		}
		seen[h.Name] = i
	}
	order := make([]int, len(hosts))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return hosts[order[i]].Name < hosts[order[j]].Name })

	for _, c := range checks {
		st := CheckStatus{Check: c.name, Available: true}
		if src == SourcePrometheus && !c.metrics {
			st.Available, st.Reason = false, notFromMetrics
		}
		r.Checks = append(r.Checks, st)
	}

	// Networks, and each network's attachments.
	type att struct {
		h, a int
	}
	byNet := map[string][]att{}
	var nets []string
	r.Hosts = make([]HostSummary, 0, len(hosts))
	for _, hi := range order {
		h := &hosts[hi]
		hs := HostSummary{Host: h.Name, Origin: h.Origin, Networks: []string{}, Notes: h.Notes}
		if hs.Notes == nil {
			hs.Notes = []string{}
		}
		for ai := range h.Attachments {
			n := h.Attachments[ai].Network
			if _, ok := byNet[n]; !ok {
				nets = append(nets, n)
			}
			byNet[n] = append(byNet[n], att{hi, ai})
			hs.Networks = appendUnique(hs.Networks, n)
		}
		r.Hosts = append(r.Hosts, hs)
	}
	sort.Strings(nets)
	for _, n := range nets {
		as := byNet[n]
		ns := NetworkSummary{Network: n, Family: hosts[as[0].h].Attachments[as[0].a].Family, PortCount: len(as)}
		last := -1
		for _, x := range as {
			if x.h != last {
				ns.HostCount++
				last = x.h
			}
		}
		r.Networks = append(r.Networks, ns)
	}

	for i := range hosts {
		hosts[i].prepareAll()
	}
	for ci, c := range checks {
		if src == SourcePrometheus && !c.metrics {
			continue
		}
		types := []gid.Type{0}
		if c.perType {
			types = []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2}
		}
		for _, n := range nets {
			for _, t := range types {
				type group struct {
					first *Attachment
					atts  []att
				}
				groups := map[string]*group{}
				var keys []string
				var unk []att
				for _, x := range byNet[n] {
					a := &hosts[x.h].Attachments[x.a]
					k := a.keys[keyIndex(ci, t)]
					text, s := k.text, k.st
					switch s {
					case notApplies:
						continue
					case unknown:
						unk = append(unk, x)
						continue
					}
					g, ok := groups[text]
					if !ok {
						g = &group{first: a}
						groups[text] = g
						keys = append(keys, text)
					}
					g.atts = append(g.atts, x)
				}
				if len(groups) < 2 {
					continue
				}
				refs := func(as []att) []PortRef {
					out := make([]PortRef, len(as))
					for i, x := range as {
						h := &hosts[x.h]
						a := &h.Attachments[x.a]
						out[i] = PortRef{Host: h.Name, Device: a.Device, Port: a.Port, Netdev: a.Netdev, RealNetdev: a.RealNetdev}
					}
					return out
				}
				first := &hosts[byNet[n][0].h].Attachments[byNet[n][0].a]
				f := Finding{Check: c.name, Network: n, Family: first.Family, Type: t, PerType: c.perType, Unknown: refs(unk)}
				for _, k := range keys {
					f.Groups = append(f.Groups, Group{Value: c.value(groups[k].first, t), Text: k, Ports: refs(groups[k].atts)})
				}
				sort.SliceStable(f.Groups, func(i, j int) bool {
					if len(f.Groups[i].Ports) != len(f.Groups[j].Ports) {
						return len(f.Groups[i].Ports) > len(f.Groups[j].Ports)
					}
					return f.Groups[i].Text < f.Groups[j].Text
				})
				f.Message = message(c, f)
				r.Findings = append(r.Findings, f)
			}
		}
	}
	return r, nil
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// message writes a finding's sentence: what differs where, each value with
// the hosts that have it, and what follows.
func message(c check, f Finding) string {
	var b strings.Builder
	b.WriteString(f.Network)
	if f.PerType {
		fmt.Fprintf(&b, " (%s, %s)", f.Type, f.Family)
	}
	verb := "is"
	if c.plural {
		verb = "are"
	}
	fmt.Fprintf(&b, ": %s %s ", c.what, verb)
	for i, g := range f.Groups {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s on %s", g.Text, HostList(g.Ports, 3))
	}
	b.WriteString(". ")
	b.WriteString(strings.ToUpper(c.why[:1]) + c.why[1:])
	b.WriteString(".")
	return b.String()
}

// HostList names the hosts of ports, at most max of them ("a, b, c and 7
// more"); a host with several ports is named once.
func HostList(ports []PortRef, max int) string {
	var names []string
	seen := map[string]bool{}
	for _, p := range ports {
		if !seen[p.Host] {
			seen[p.Host] = true
			names = append(names, p.Host)
		}
	}
	return NameList(names, max)
}

// NameList joins at most max of names with ", " and says how many more
// there are: "h1, h2 and 3 more".
func NameList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
