package fabric

import (
	"sort"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

// NetworkLinkLocal is the network of a link-local GID (fe80::/10,
// 169.254/16, the default GIDs): it reaches only its own link.
const NetworkLinkLocal = "link-local"

// Family names, as the metrics' family label and the JSON family key
// write them.
const (
	FamilyIPv4 = "ipv4"
	FamilyIPv6 = "ipv6"
)

// Family returns "ipv4" for an IPv4-mapped GID, "ipv6" otherwise.
func Family(g gid.GID) string {
	if g.IsIPv4Mapped() {
		return FamilyIPv4
	}
	return FamilyIPv6
}

// Network returns the network an entry's GID belongs to: the prefix, masked
// ("10.0.100.0/24"), of the address of its netdev in ns that the GID is;
// NetworkLinkLocal for a link-local GID; "" when the entry is empty or no
// netdev of ns has the address (a stale entry, or a netdev of another
// namespace).
func Network(e gid.Entry, ns *vlan.Namespace) string {
	if e.Empty {
		return ""
	}
	if e.Default || e.GID.Kind().LinkLocal() {
		return NetworkLinkLocal
	}
	if e.Netdev == "" || e.Netns == gid.NetnsOther || ns == nil {
		return ""
	}
	l, ok := ns.ByName(e.Netdev)
	if !ok {
		return ""
	}
	a := e.GID.Addr().Unmap()
	for _, p := range l.Addrs {
		if p.Addr().Unmap() == a {
			return p.Masked().String()
		}
	}
	return ""
}

// GIDIndex is the GID index a workload should use on one RDMA port for one
// network, GID type and family: what NCCL_IB_GID_INDEX (UCX_IB_GID_INDEX,
// perftest -x) must be set to on this host for this network. It is the
// roce_probe_gid_index metric.
type GIDIndex struct {
	Device  string
	Port    int
	Type    gid.Type
	Family  string // FamilyIPv4 or FamilyIPv6
	Network string // Network of the entry
	// Index is the lowest index of a usable entry (gid.Unusable) of the port
	// with this type on this network.
	Index int
	// Entry is that entry, mapped: its netdev, VLAN chain, MTU.
	Entry gid.Entry
}

// GIDEntry is one used GID table entry with what the rules make of it:
// the roce_probe_gid_info series of the agent.
type GIDEntry struct {
	Device string
	Port   int
	// Entry is the entry, mapped (netdev, VLAN chain, state).
	Entry gid.Entry
	// Family is Family(Entry.GID); Network is Network(Entry, ns).
	Family  string
	Network string
	// Usable says a workload can choose the entry for Network:
	// gid.Unusable finds nothing against it (the port's stale entries
	// excluded, host.View.Stale) and Network is a prefix (not "", not NetworkLinkLocal: a
	// network that reaches other hosts). This is the one rule of what a
	// workload can choose: GIDIndexes' index of a network is its lowest
	// usable entry, and the agent's metrics and its flows' select rule
	// decide by it.
	Usable bool
}

// GIDEntries returns every used entry (not empty, with an address) of
// every port of v, in port and index order, with its family, network and
// whether it is usable. On a host without RDMA devices the ports are the
// predicted Soft-RoCE tables, as in GIDIndexes.
func GIDEntries(v *host.View) []GIDEntry {
	var out []GIDEntry
	for _, p := range v.Ports {
		var stale map[int]string
		staleDone := false
		for _, e := range p.Entries {
			if e.Empty || !e.IP.IsValid() {
				continue
			}
			if !staleDone && !e.Default && !e.GID.Kind().LinkLocal() {
				// Predicting the table costs more than the rest: only for
				// ports with an entry it can matter to (gid.Unusable
				// refuses default and link-local entries anyway).
				stale, staleDone = v.Stale(p), true
			}
			ge := GIDEntry{Device: p.Device, Port: p.Port, Entry: e, Family: Family(e.GID), Network: Network(e, v.NS)}
			ge.Usable = gid.Unusable(e, stale) == "" && ge.Network != "" && ge.Network != NetworkLinkLocal
			out = append(out, ge)
		}
	}
	return out
}

// GIDIndexes returns, for every port of v, the usable index of each (type,
// family, network): the lowest index of a usable entry, in device, port,
// network, type order. On a host without RDMA devices the ports are the
// predicted Soft-RoCE tables (v.Predicted), as every command and the
// agent's metrics use them.
func GIDIndexes(v *host.View) []GIDIndex { return IndexesOf(GIDEntries(v)) }

// IndexesOf is GIDIndexes from the view's GIDEntries, for a caller that
// has them already (the agent: its gid_info series and its gid_index
// series from one reading of the tables).
func IndexesOf(entries []GIDEntry) []GIDIndex {
	var out []GIDIndex
	type key struct {
		t   gid.Type
		net string
	}
	var seen map[key]bool
	first := 0
	for i, ge := range entries {
		if i == 0 || ge.Device != entries[i-1].Device || ge.Port != entries[i-1].Port {
			sortIndexes(out[first:])
			first, seen = len(out), map[key]bool{}
		}
		if !ge.Usable {
			continue
		}
		k := key{ge.Entry.Type, ge.Network}
		if seen[k] {
			continue // entries are in index order: the first is the lowest
		}
		seen[k] = true
		out = append(out, GIDIndex{Device: ge.Device, Port: ge.Port, Type: ge.Entry.Type, Family: ge.Family, Network: ge.Network, Index: ge.Entry.Index, Entry: ge.Entry})
	}
	sortIndexes(out[first:])
	return out
}

// sortIndexes orders one port's indexes by network, then type.
func sortIndexes(ix []GIDIndex) {
	sort.SliceStable(ix, func(i, j int) bool {
		if ix[i].Network != ix[j].Network {
			return ix[i].Network < ix[j].Network
		}
		return ix[i].Type < ix[j].Type
	})
}
