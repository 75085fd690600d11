package host

import (
	"fmt"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// MissingError is returned when a snapshot lacks a section an analysis
// needs (it was collected without it).
type MissingError struct {
	Section string // "rdma", "namespaces", "dcb"
}

// Error names the section and how to get it.
func (e *MissingError) Error() string {
	return fmt.Sprintf("the snapshot has no %s section: take it with 'roce-probe collect' (which records every section)", e.Section)
}

// ErrNoDevice is wrapped when an RDMA device or port is not in the
// snapshot. It is the one "no such RDMA device" condition: ah.Create's
// error wraps it too when the live host has no device of that name.
var ErrNoDevice = verbs.ErrNoDevice

// Namespace returns the namespace called netns ("" for the view: the first
// one, which commands use unless told otherwise).
func (s *Snapshot) Namespace(netns string) (*vlan.Namespace, error) {
	if len(s.Namespaces) == 0 {
		return nil, &MissingError{Section: "namespaces"}
	}
	if netns == "" {
		return s.Namespaces[0], nil
	}
	var names []string
	for _, n := range s.Namespaces {
		if n.Netns == netns {
			return n, nil
		}
		if n.Netns != "" {
			names = append(names, n.Netns)
		}
	}
	want := "it holds only the collector's own namespace (collect with --netns NAME or --all-netns)"
	if len(names) > 0 {
		want = "want one of " + strings.Join(names, ", ")
	}
	return nil, fmt.Errorf("%w %q in the snapshot: %s", ErrNoNetns, netns, want)
}

// Device returns the RDMA device called name.
func (s *Snapshot) Device(name string) (*Device, bool) {
	if s.RDMA == nil {
		return nil, false
	}
	for i := range s.RDMA.Devices {
		if s.RDMA.Devices[i].Name == name {
			return &s.RDMA.Devices[i], true
		}
	}
	return nil, false
}

// DeviceNames lists the RDMA devices, sorted.
func (s *Snapshot) DeviceNames() []string {
	var out []string
	if s.RDMA != nil {
		for _, d := range s.RDMA.Devices {
			out = append(out, d.Name)
		}
	}
	sort.Strings(out)
	return out
}

// GIDPort is port p of device d as gid/ works with it: every slot of its
// table, unmapped.
func GIDPort(d *Device, p *Port) gid.Port {
	used := make([]gid.Entry, len(p.GIDs))
	for i, g := range p.GIDs {
		used[i] = gid.Entry{Index: g.Index, GID: g.GID, Type: g.Type, Netdev: g.Netdev}
	}
	return gid.NewPort(gid.Port{Device: d.Name, Port: p.Port, State: p.State, PhysState: p.PhysState,
		LinkLayer: p.LinkLayer, Netdev: p.Netdev}, p.TableLen, used)
}

// Ports returns every port of every RDMA device (device, then port order)
// with its GID table mapped to the netdevs of namespace ns (gid.Map).
func (s *Snapshot) Ports(ns *vlan.Namespace) ([]gid.Port, error) {
	if s.RDMA == nil {
		return nil, &MissingError{Section: "rdma"}
	}
	var out []gid.Port
	for i := range s.RDMA.Devices {
		d := &s.RDMA.Devices[i]
		for j := range d.Ports {
			out = append(out, GIDPort(d, &d.Ports[j]))
		}
	}
	gid.Map(out, ns)
	return out, nil
}

// DCBOf returns the DCB state of netdev in namespace netns ("" for the
// collector's own), as read; nil when the snapshot has none for it (a
// VLAN device, or a read that failed: see Errors). It fails only when the
// snapshot has no DCB section.
func (s *Snapshot) DCBOf(netns, netdev string) (*qos.DCB, error) {
	if s.DCB == nil {
		return nil, &MissingError{Section: "dcb"}
	}
	for i := range s.DCB {
		if s.DCB[i].Netns == netns && s.DCB[i].Netdev == netdev {
			return &s.DCB[i].DCB, nil
		}
	}
	return nil, nil
}

// ErrorsOf returns the collection errors whose source is one of sources.
func (s *Snapshot) ErrorsOf(sources ...string) []SourceError {
	var out []SourceError
	for _, e := range s.Errors {
		for _, src := range sources {
			if e.Source == src {
				out = append(out, e)
			}
		}
	}
	return out
}

// CandidateNetdevs lists the netdevs of ns Soft-RoCE could run on:
// Ethernet devices at the bottom of a stack (NIC ports, veths, bonds), not
// VLAN, macvlan, bridge or dummy-like devices, in ifindex order.
func CandidateNetdevs(ns *vlan.Namespace) []vlan.Link {
	var out []vlan.Link
	for _, l := range ns.Links {
		if !l.Ether || l.Kind.Stacked() || l.MasterIndex != 0 {
			continue
		}
		switch l.Kind {
		case vlan.KindPhysical, vlan.KindVeth, vlan.KindBond, vlan.KindTeam:
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// PredictedDevicePrefix starts the name of a predicted device:
// rxe_<netdev>, the device `rdma link add rxe_<netdev> type rxe netdev
// <netdev>` would create.
const PredictedDevicePrefix = "rxe_"

// PredictedPorts builds, for a host without RDMA devices, the table
// Soft-RoCE would get on each candidate netdev of ns (RoCE v2 only, port
// 1, device rxe_<netdev>), mapped.
func PredictedPorts(ns *vlan.Namespace) ([]gid.Port, error) {
	var ports []gid.Port
	for _, l := range CandidateNetdevs(ns) {
		spec := gid.PortSpec{Device: PredictedDevicePrefix + l.Name, Port: 1, Netdev: l.Name, Types: []gid.Type{gid.TypeRoCEv2}}
		pred, err := gid.Predict(spec, ns)
		if err != nil {
			return nil, err
		}
		ports = append(ports, gid.Port{Device: spec.Device, Port: 1, LinkLayer: "Ethernet", Netdev: l.Name,
			ActiveMTU: gid.RoCEMTU(l.MTU), Types: spec.Types, Entries: pred.Entries})
	}
	return ports, nil
}
