package host

import (
	"errors"
	"fmt"
	"strings"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// View is a snapshot opened for analysis in one network namespace: the
// namespace and every RDMA port with its GID table mapped to that
// namespace's netdevs. On a host without RDMA devices the ports are the
// tables Soft-RoCE would build (Predicted), so every command answers from
// the same data and says which.
type View struct {
	Snap  *Snapshot
	NS    *vlan.Namespace
	Ports []gid.Port
	// Predicted is true when the host has no RDMA device and Ports are the
	// tables `rdma link add rxe_<netdev> type rxe netdev <netdev>` would
	// create on each Ethernet netdev (PredictedPorts).
	Predicted bool
}

// View opens the snapshot in namespace netns ("" for its view). It needs
// the rdma and namespaces sections.
func (s *Snapshot) View(netns string) (*View, error) {
	ns, err := s.Namespace(netns)
	if err != nil {
		return nil, err
	}
	ports, err := s.Ports(ns)
	if err != nil {
		return nil, err
	}
	v := &View{Snap: s, NS: ns, Ports: ports}
	if len(s.RDMA.Devices) == 0 {
		v.Predicted = true
		if v.Ports, err = PredictedPorts(ns); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// Devices lists the device names of the view's ports, in order.
func (v *View) Devices() []string {
	var out []string
	for _, p := range v.Ports {
		if len(out) == 0 || out[len(out)-1] != p.Device {
			out = append(out, p.Device)
		}
	}
	return out
}

// Port returns port port of device dev. Its error wraps ErrNoDevice and
// lists what there is.
func (v *View) Port(dev string, port int) (*gid.Port, error) {
	var have []string
	devFound := false
	for i := range v.Ports {
		p := &v.Ports[i]
		if p.Device != dev {
			continue
		}
		devFound = true
		if p.Port == port {
			return p, nil
		}
		have = append(have, fmt.Sprint(p.Port))
	}
	if !devFound {
		names := v.Devices()
		if len(names) == 0 {
			return nil, fmt.Errorf("%w %q: the host has none, and no Ethernet netdev to predict a Soft-RoCE table for", ErrNoDevice, dev)
		}
		what := "want one of "
		if v.Predicted {
			what = "the host has none; the predicted Soft-RoCE devices are "
		}
		return nil, fmt.Errorf("%w %q: %s%s", ErrNoDevice, dev, what, strings.Join(names, ", "))
	}
	return nil, fmt.Errorf("%w: %s has no port %d: want one of %s", ErrNoDevice, dev, port, strings.Join(have, ", "))
}

// Driver returns device dev's driver; a predicted device is Soft-RoCE.
func (v *View) Driver(dev string) qos.DriverInfo {
	if d, ok := v.Snap.Device(dev); ok {
		return d.Driver
	}
	if v.Predicted {
		return qos.DriverInfo{Driver: qos.DriverRXE, Kernel: "rdma_rxe", Evidence: "predicted: the host has no RDMA device; this is the Soft-RoCE device rdma link add would create"}
	}
	return qos.DriverInfo{Driver: qos.DriverUnknown, Evidence: "not in the snapshot"}
}

// DCB returns the DCB state of the real netdev below netdev in the view's
// namespace: nil when it was not read (no DCB section, or its read failed:
// the snapshot's Errors say why).
func (v *View) DCB(netdev string) *qos.DCB {
	d, err := v.NS.Describe(netdev)
	if err != nil {
		return nil
	}
	dcb, _ := v.Snap.DCBOf(v.NS.Netns, d.Real)
	return dcb
}

// Diff compares port p's GID table with the one the kernel would build
// from the view's netdevs (gid.Predict, then gid.Diff): the changes, none
// (an empty, non-nil slice) when they match. compared is false, with no
// changes and no error, when there is nothing to compare: a predicted
// view (its tables are the prediction), or a port that is not RoCE's (an
// InfiniBand port, whose GIDs no netdev explains) or has no netdev. err
// says why the prediction failed.
func (v *View) Diff(p gid.Port) (changes []gid.Change, compared bool, err error) {
	if v.Predicted || p.LinkLayer != "Ethernet" || p.Netdev == "" {
		return nil, false, nil
	}
	pred, err := gid.Predict(gid.SpecOf(p), v.NS)
	if err != nil {
		return nil, true, err
	}
	changes = gid.Diff(pred.Entries, p.Entries)
	if changes == nil {
		changes = []gid.Change{}
	}
	return changes, true, nil
}

// Stale returns the entries of p whose address no netdev has any more
// (the Stale changes of Diff), with why: a source GID that replies can
// never reach. It is nil when Diff compares nothing or fails.
func (v *View) Stale(p gid.Port) map[int]string {
	changes, ok, err := v.Diff(p)
	if !ok || err != nil {
		return nil
	}
	out := map[int]string{}
	for _, c := range changes {
		if c.Kind == gid.Stale {
			out[c.ActualIndex] = fmt.Sprintf("stale: no netdev has the address %s any more (the peer's replies would go nowhere)", c.Entry.IP)
		}
	}
	return out
}

// Errors of Source, for errors.Is.
var (
	// ErrEmptySlot: the GID index names an empty slot.
	ErrEmptySlot = errors.New("empty GID slot")
	// ErrNetdevAbsent: the GID entry's netdev is not in the namespace
	// (another namespace's address, or a netdev that went away): its VLAN
	// tags, MAC and routes cannot be known from here.
	ErrNetdevAbsent = errors.New("the GID entry's netdev is not in this network namespace")
)

// Source is a flow's source on this host: the GID entry, its port, the
// netdev's VLAN stack, the driver, and the DCB state of the real netdev —
// what both the AH resolution and the QoS check start from.
type Source struct {
	Port   *gid.Port
	Entry  gid.Entry
	Desc   vlan.Description
	Driver qos.DriverInfo
	DCB    *qos.DCB // nil when not read
	// Bond is, when the real netdev is a bond (RoCE LAG), its slaves that
	// carry the traffic with their DCB (BondFlow); nil otherwise.
	Bond *qos.BondFlow
}

// BondFlow is the bond d's traffic leaves by, with the DCB state of each
// slave that carries it as read in the view's namespace; nil when d's real
// netdev is not a bond.
func (v *View) BondFlow(d vlan.Description) *qos.BondFlow {
	if d.Bond == nil {
		return nil
	}
	b := &qos.BondFlow{Netdev: d.Bond.Name, Mode: d.Bond.Mode, Backup: d.Bond.Backup}
	for _, s := range d.Bond.Slaves {
		dcb, _ := v.Snap.DCBOf(v.NS.Netns, s)
		b.Slaves = append(b.Slaves, qos.SlaveDCB{Netdev: s, DCB: dcb})
	}
	return b
}

// Source looks up GID index index of dev port port. Its errors wrap
// ErrNoDevice, ErrEmptySlot or ErrNetdevAbsent and name the index.
func (v *View) Source(dev string, port, index int) (*Source, error) {
	p, err := v.Port(dev, port)
	if err != nil {
		return nil, err
	}
	if index < 0 || index >= len(p.Entries) {
		return nil, fmt.Errorf("GID index %d is out of range: %s port %d has GID indices 0..%d", index, dev, port, len(p.Entries)-1)
	}
	e := p.Entries[index]
	if e.Empty {
		return nil, fmt.Errorf("GID index %d: %w on %s port %d: pick a populated index ('roce-probe gids --dev %s')", index, ErrEmptySlot, dev, port, dev)
	}
	src := &Source{Port: p, Entry: e, Driver: v.Driver(dev)}
	if p.LinkLayer == "InfiniBand" {
		return src, nil
	}
	if e.Netdev == "" {
		return nil, fmt.Errorf("GID index %d on %s port %d: %w: the kernel does not show its netdev here (it belongs to another network namespace)", index, dev, port, ErrNetdevAbsent)
	}
	d, err := v.NS.Describe(e.Netdev)
	if err != nil {
		if errors.Is(err, vlan.ErrNoLink) {
			return nil, fmt.Errorf("GID index %d on %s port %d: %w: %s is not in %s (another namespace's netdev, or one that went away): its VLAN tags, MAC and routes cannot be known", index, dev, port, ErrNetdevAbsent, e.Netdev, v.NS.What())
		}
		return nil, fmt.Errorf("GID index %d on %s port %d: %w", index, dev, port, err)
	}
	src.Desc = d
	src.DCB, _ = v.Snap.DCBOf(v.NS.Netns, d.Real)
	src.Bond = v.BondFlow(d)
	return src, nil
}

// AHRequest is an address handle to resolve on this host.
type AHRequest struct {
	Device string
	Attr   ah.Attr // Attr.PortNum names the port (0: 1)
	// AutoIndex picks grh.sgid_index as `roce-probe select` does (route
	// to the destination, RoCE v2 first, stale entries excluded) instead
	// of using Attr.GRH.SGIDIndex.
	AutoIndex bool
	// Driver overrides the detected driver ("" keeps it); Path, SrcQPN
	// and NextHopMAC (the MAC of a next hop the neighbour table does not
	// have) go to ah.ResolveOptions.
	Driver     qos.Driver
	Path       qos.Path
	SrcQPN     uint32
	NextHopMAC vlan.MAC
}

// AHResult is a resolved AH and what it was resolved with.
type AHResult struct {
	*ah.Resolution
	Source *Source
	// Selection is the automatic index choice (AutoIndex), nil otherwise.
	Selection *gid.Selection
}

// ResolveAH resolves an address handle against the view: the one "what
// does this AH put on the wire on this host" call of `ah`, `send` and
// `check`. It fails before resolving when the device, port or entry is
// unusable (ErrNoDevice, ErrEmptySlot, ErrNetdevAbsent, or no entry for
// AutoIndex wrapping gid.ErrNoEntry); otherwise it returns what ah.Resolve
// returns (a *ah.ValidationError, a route error, or a resolution with an
// *ah.NeighborError).
func (v *View) ResolveAH(req AHRequest) (*AHResult, error) {
	var sel *gid.Selection
	if req.AutoIndex {
		p, err := v.ahPort(req)
		if err != nil {
			return nil, err
		}
		s, err := gid.Select(p.Entries, req.Attr.GRH.DGID, gid.Preferences{Exclude: v.Stale(*p)}, v.NS)
		if err != nil {
			return nil, err
		}
		sel = &s
		req.AutoIndex, req.Attr.GRH.SGIDIndex = false, uint8(s.Entry.Index)
	}
	r, err := v.NewAHResolver(req)
	if err != nil {
		return nil, err
	}
	out, err := r.Resolve(req.Attr.GRH.DGID)
	out.Selection = sel
	return out, err
}

// ahPort is the port an AH request names, which must be Ethernet.
func (v *View) ahPort(req AHRequest) (*gid.Port, error) {
	port := req.Attr.PortNum
	if port == 0 {
		port = 1
	}
	p, err := v.Port(req.Device, int(port))
	if err != nil {
		return nil, err
	}
	if p.LinkLayer == "InfiniBand" {
		return nil, fmt.Errorf("%s port %d is an InfiniBand port: roce-probe resolves RoCE (Ethernet) address handles", req.Device, p.Port)
	}
	return p, nil
}

// AHResolver resolves one address handle request to many destinations
// against a view (the agent's flow to each of its peers): ResolveAH's work
// that does not depend on the destination — the port, the source entry
// and its netdev's VLAN stack, the driver and its profile — is done once,
// by NewAHResolver and the first Resolve. Every result of one AHResolver
// has the same source, netdev, source MAC, VLAN chain, traffic class
// (TOS, DSCP, ECN), flow label and UDP source port; the route, next hop,
// neighbour, destination MAC, TTL, path MTU and warnings are the
// destination's. It is not safe for concurrent use.
type AHResolver struct {
	attr ah.Attr
	src  *Source
	r    *ah.Resolver
}

// NewAHResolver prepares req for Resolve; req.Attr.GRH.DGID is not used.
// It fails as ResolveAH fails before resolving, and for AutoIndex (the
// entry it picks depends on the destination: use ResolveAH).
func (v *View) NewAHResolver(req AHRequest) (*AHResolver, error) {
	if req.AutoIndex {
		return nil, errors.New("host: an AHResolver resolves one GID index: AutoIndex picks it per destination (use ResolveAH)")
	}
	p, err := v.ahPort(req)
	if err != nil {
		return nil, err
	}
	out := &AHResolver{attr: req.Attr}
	out.attr.PortNum = uint8(p.Port)
	table := ah.Table{Entries: p.Entries, Len: len(p.Entries)}
	opts := ah.ResolveOptions{Driver: req.Driver, Path: req.Path, SrcQPN: req.SrcQPN, PortMTU: p.ActiveMTU, NextHopMAC: req.NextHopMAC}
	if e, ok := table.Lookup(int(req.Attr.GRH.SGIDIndex)); ok && !e.Empty {
		// An entry that exists must be usable here; an empty or missing
		// one is the AH validation's to report (ENODATA/EINVAL).
		src, err := v.Source(req.Device, p.Port, e.Index)
		if err != nil {
			return nil, err
		}
		out.src = src
		opts.DCB = src.DCB
		if opts.Driver == "" {
			opts.Driver = src.Driver.Driver
		}
	} else if opts.Driver == "" {
		opts.Driver = v.Driver(req.Device).Driver
	}
	out.r = ah.NewResolver(table, v.NS, opts)
	return out, nil
}

// Source is the request's source GID entry with its port, netdev stack,
// driver and DCB; nil when the GID index names no entry (Resolve's
// validation reports that).
func (r *AHResolver) Source() *Source { return r.src }

// Resolve resolves the request to dgid: what ResolveAH returns for the
// request with that destination (Selection nil). The results share one
// Source.
func (r *AHResolver) Resolve(dgid gid.GID) (*AHResult, error) {
	a := r.attr
	a.GRH.DGID = dgid
	res, err := r.r.Resolve(a)
	return &AHResult{Resolution: res, Source: r.src}, err
}
