package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
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
}

// HostSummary is one host of the report.
type HostSummary struct {
	Host     string   `json:"host"`
	Origin   string   `json:"origin"`
	Networks []string `json:"networks"`
	Notes    []string `json:"notes"`
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
	}{w(c), strPtr(c.Reason)})
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
	// Value is the check's value (its JSON type depends on the check:
	// docs/json.md); Text is how tables print it.
	Value any
	Text  string
	Ports []PortRef
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
	return json.Marshal(portRefJSON{p.Host, p.Device, p.Port, strPtr(p.Netdev), strPtr(p.RealNetdev)})
}

// MarshalJSON writes value, text and ports.
func (g Group) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Value any       `json:"value"`
		Text  string    `json:"text"`
		Ports []PortRef `json:"ports"`
	}{g.Value, g.Text, g.Ports})
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
	}{r.Source, r.Hosts, r.Networks, r.Checks, r.Findings}
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

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}
