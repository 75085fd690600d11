package fabric

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// Host is what the checks compare of one host: its RDMA ports' attachments
// to networks. A snapshot gives every fact; Prometheus metrics give fewer
// (Source.Checks says which).
type Host struct {
	// Name identifies the host: the snapshot's hostname, or the value of
	// the Prometheus label that names hosts.
	Name string
	// Origin is where the facts came from: a file, an agent's URL, a
	// Prometheus server's instance label.
	Origin string
	// Attachments are the host's RDMA ports on each network, in device,
	// port, network order.
	Attachments []Attachment
	// Notes say what the host's facts lack and why: no RDMA device,
	// sections that could not be collected.
	Notes []string
}

// Attachment is one RDMA port of a host on one network (the prefix of the
// addresses its usable GIDs are): the facts the checks compare, from the
// netdev of its lowest usable entry. A nil pointer or slice is a fact not
// known (not collected, not readable, or not in the source).
type Attachment struct {
	Network string
	Family  string
	Device  string
	Port    int
	// Netdev is the netdev of the port's lowest usable entry on the
	// network; RealNetdev the device at the bottom of its stack ("" when
	// not known).
	Netdev, RealNetdev string
	// Switch is the switch (ToR) RealNetdev is plugged into, from the
	// snapshot's topology section; "" when not known.
	Switch string
	// Addr is the address of the port's lowest usable entry on the
	// network (the GID as an IP address): the NIC's name in the agents'
	// pair detail (ReadAgentPairs) and in the Prometheus source's
	// observations (ObservationsFromMetrics).
	Addr netip.Addr
	// Index is the usable GID index per type (GIDIndex.Index):
	// Index[gid.TypeRoCEv1], Index[gid.TypeRoCEv2]; nil for a type the
	// port has no usable entry of.
	Index [3]*int
	// VLANs are the VLAN IDs frames carry, outermost first (empty:
	// untagged); nil when not known. From Prometheus only the outermost.
	VLANs []uint16
	// Egress are the egress QoS maps (skb priority → PCP) of the VLAN
	// devices that add the tags, outermost first; nil when untagged or
	// not known.
	Egress []vlan.QoSMap
	// MTU is the netdev's MTU.
	MTU *int
	// DCB is the DCB state of the real netdev; nil when not read or not
	// supported.
	DCB *qos.DCB
	// RDMACM, TCOverride and DCQCN are the settings of the port (and of
	// the real netdev for DCQCN); nil when not collected.
	RDMACM     *qos.RDMACMDefault
	TCOverride *qos.TCOverride
	DCQCN      *qos.DCQCN

	// keys are the checks' texts of the facts above (prepare), worked
	// out where the host is read (on many goroutines), not in Analyze.
	keys []factKey
}

// factKey is one check's text of an attachment's fact and whether it is
// known.
type factKey struct {
	text string
	st   state
}

// keyIndex is where check ci's key for GID type t is in keys: two slots
// per check, the second for RoCE v2 of per-type checks.
func keyIndex(ci int, t gid.Type) int {
	if t == gid.TypeRoCEv2 {
		return 2*ci + 1
	}
	return 2 * ci
}

// prepare works out the checks' keys once; the facts must not change
// afterwards.
func (a *Attachment) prepare() {
	if a.keys != nil {
		return
	}
	a.keys = make([]factKey, 2*len(checks))
	for ci, c := range checks {
		if c.perType {
			for _, t := range []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2} {
				text, st := c.key(a, t)
				a.keys[keyIndex(ci, t)] = factKey{text, st}
			}
			continue
		}
		text, st := c.key(a, 0)
		a.keys[keyIndex(ci, 0)] = factKey{text, st}
	}
}

// prepareAll prepares every attachment of h.
func (h *Host) prepareAll() {
	for i := range h.Attachments {
		h.Attachments[i].prepare()
	}
}

// Where names the attachment in messages: "mlx5_0 port 1 (enp1s0f0.100)".
func (a *Attachment) Where() string {
	s := fmt.Sprintf("%s port %d", a.Device, a.Port)
	if a.Netdev != "" {
		s += " (" + a.Netdev + ")"
	}
	return s
}

// FromSnapshot extracts the facts of one host snapshot, read in its view
// (the collector's namespace). It needs the rdma and namespaces sections;
// DCB and settings are compared when present. origin names where the
// snapshot came from, for messages.
func FromSnapshot(s *host.Snapshot, origin string) (Host, error) {
	h := Host{Name: s.Hostname, Origin: origin}
	if s.Hostname == "" {
		return h, fmt.Errorf("%s: the snapshot has no hostname: the hosts of a fabric are told apart by it", origin)
	}
	v, err := s.View("")
	if err != nil {
		return h, fmt.Errorf("%s: %w", origin, err)
	}
	if v.Predicted {
		h.Notes = append(h.Notes, "no RDMA device: the tables compared are the Soft-RoCE ones 'rdma link add rxe_NETDEV type rxe netdev NETDEV' would create")
	}
	if s.DCB == nil {
		h.Notes = append(h.Notes, "no dcb section: trust, PFC, DSCP and ETS unknown")
	}
	if s.Settings == nil {
		h.Notes = append(h.Notes, "no settings section: rdma_cm defaults, traffic class overrides and DCQCN unknown")
	}
	for _, e := range s.Errors {
		h.Notes = append(h.Notes, fmt.Sprintf("not collected: %s: %s", e.Source, e.Error))
	}
	type key struct {
		dev  string
		port int
		net  string
	}
	var order []key
	groups := map[key][]GIDIndex{}
	for _, gi := range GIDIndexes(v) {
		k := key{gi.Device, gi.Port, gi.Network}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], gi)
	}
	for _, k := range order {
		g := groups[k]
		best := g[0]
		for _, gi := range g[1:] {
			if gi.Index < best.Index {
				best = gi
			}
		}
		// The facts come from the netdev of the lowest usable entry (v1
		// and v2 twins share it).
		a := attachmentOf(s, v, best)
		for _, gi := range g {
			idx := gi.Index
			a.Index[gi.Type] = &idx
		}
		h.Attachments = append(h.Attachments, a)
	}
	sortAttachments(h.Attachments)
	h.prepareAll()
	return h, nil
}

// sortAttachments puts attachments in device, port, network order.
func sortAttachments(as []Attachment) {
	sort.SliceStable(as, func(i, j int) bool {
		a, b := as[i], as[j]
		if a.Device != b.Device {
			return a.Device < b.Device
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Network < b.Network
	})
}

// attachmentOf reads the facts of gi's entry.
func attachmentOf(s *host.Snapshot, v *host.View, gi GIDIndex) Attachment {
	e := gi.Entry
	a := Attachment{Network: gi.Network, Family: gi.Family, Device: gi.Device, Port: gi.Port, Netdev: e.Netdev, RealNetdev: e.RealNetdev,
		Addr: e.GID.Addr().Unmap()}
	if e.VLANChain != nil {
		a.VLANs = make([]uint16, len(e.VLANChain))
		for i, t := range e.VLANChain {
			a.VLANs[i] = t.ID
		}
		if len(e.VLANChain) > 0 {
			a.Egress = make([]vlan.QoSMap, len(e.VLANChain))
			for i, t := range e.VLANChain {
				m := t.EgressQoS
				if m == nil {
					m = vlan.QoSMap{} // no mapping: every priority is sent with PCP 0
				}
				a.Egress[i] = m
			}
		}
	}
	if t := s.Topology.AttachmentOf(e.RealNetdev); t != nil {
		a.Switch = t.Switch
	}
	if e.MTU > 0 {
		m := e.MTU
		a.MTU = &m
	}
	if e.RealNetdev != "" && s.DCB != nil {
		if d, _ := s.DCBOf(v.NS.Netns, e.RealNetdev); d != nil && d.Supported {
			a.DCB = d
		}
	}
	if s.Settings != nil {
		a.RDMACM = s.Settings.RDMACMOf(gi.Device, gi.Port)
		a.TCOverride = s.Settings.TCOverrideOf(gi.Device, gi.Port)
		if e.RealNetdev != "" {
			a.DCQCN = s.Settings.DCQCNOf(e.RealNetdev)
		}
	}
	return a
}

// indexOf is the usable index of type t, nil when none.
func (a *Attachment) indexOf(t gid.Type) *int {
	if int(t) >= len(a.Index) {
		return nil
	}
	return a.Index[t]
}
