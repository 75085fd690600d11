package gid

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/roce-probe/roce-probe/vlan"
)

// PortSpec describes an RDMA port for Predict.
type PortSpec struct {
	Device string
	Port   int
	// Netdev is the RDMA device's own netdev (Port.Netdev).
	Netdev string
	// Types are the GID types the port supports: RoCE v1 and v2 for mlx5,
	// v2 only for rxe. Order does not matter.
	Types []Type
	// TableLen is the number of slots (rxe 1024; mlx5 from the HCA caps,
	// often 256). 0 means "as many as needed".
	TableLen int
}

// SpecOf returns the PortSpec of a port read from sysfs.
func SpecOf(p Port) PortSpec {
	return PortSpec{Device: p.Device, Port: p.Port, Netdev: p.Netdev, Types: p.Types, TableLen: len(p.Entries)}
}

// Prediction is the table Predict builds and what it could not place.
type Prediction struct {
	Entries []Entry `json:"entries"` // every slot, index order, empty ones included
	// Overflow lists GIDs that found no free slot (the kernel's -ENOSPC).
	Overflow []Entry `json:"overflow,omitempty"`
}

// DefaultGID is the kernel's make_default_gid: fe80::/64 with the
// interface identifier built from a 6-byte MAC (addrconf_ifid_eui48): the
// MAC with ff:fe in the middle and the universal/local bit flipped. For
// any other address length the identifier stays zero, as in the kernel.
// devID is the netdev's dev_id (0 for almost every netdev); when it is
// non-zero it replaces ff:fe and the U/L bit is not flipped.
func DefaultGID(mac []byte, devID uint16) GID {
	var g GID
	g[0], g[1] = 0xfe, 0x80
	if len(mac) != 6 {
		return g
	}
	copy(g[8:11], mac[0:3])
	copy(g[13:16], mac[3:6])
	if devID != 0 {
		g[11], g[12] = byte(devID>>8), byte(devID)
	} else {
		g[11], g[12] = 0xff, 0xfe
		g[8] ^= 0x02
	}
	return g
}

// Predict builds the GID table the kernel creates for a port when it scans
// the netdevs of snaps (drivers/infiniband/core/roce_gid_mgmt.c,
// rdma_roce_rescan_device and enum_all_gids_of_dev_cb; slots from
// drivers/infiniband/core/cache.c, ib_cache_gid_add and find_gid; Linux 6.1):
//
//   - one reserved default slot per supported type at indices 0..n-1,
//     holding the default GID made from the RDMA netdev's MAC (from the
//     bond's MAC when the netdev is a bond slave);
//   - for every Ethernet netdev, namespace by namespace (snaps in the
//     kernel's for_each_net order, the initial namespace first) and ifindex
//     by ifindex: the netdev's default GIDs if it is the default-GID netdev,
//     then its IPv4 addresses, then its IPv6 addresses, each address once
//     per supported type — if the netdev is the RDMA netdev, a VLAN on it,
//     or any upper device of it (macvlan, bond, VLAN on a bond, ...) of
//     which it is not an inactive bond slave;
//   - every GID goes into the lowest free non-reserved slot, unless an
//     entry with the same GID, type and netdev already exists.
//
// The RDMA netdev must be in snaps[0]. Tables that grew through address
// events can differ from a fresh scan in their indices; Diff reports that
// as moved entries.
func Predict(spec PortSpec, snaps ...*vlan.Namespace) (Prediction, error) {
	if len(snaps) == 0 || snaps[0] == nil {
		return Prediction{}, fmt.Errorf("gid: predicting %s port %d: no netdev snapshot", spec.Device, spec.Port)
	}
	primary := snaps[0]
	rdma, ok := primary.ByName(spec.Netdev)
	if !ok {
		return Prediction{}, fmt.Errorf("gid: predicting %s port %d: RDMA netdev %q is not in the snapshot", spec.Device, spec.Port, spec.Netdev)
	}
	types := sortedTypes(spec.Types)
	if len(types) == 0 {
		return Prediction{}, fmt.Errorf("gid: predicting %s port %d: no supported GID types", spec.Device, spec.Port)
	}
	t := &table{nDefault: len(types), limit: spec.TableLen}
	if t.nDefault > 32 {
		t.nDefault = 32
	}
	// The netdev that supplies the default GIDs (is_ndev_for_default_gid_filter).
	defNetdev := rdma
	if m, ok := primary.Master(rdma); ok && m.Kind == vlan.KindBond {
		defNetdev = m
	}
	for si, snap := range snaps {
		links := append([]vlan.Link(nil), snap.Links...)
		sort.SliceStable(links, func(i, j int) bool { return links[i].Index < links[j].Index })
		for li := range links {
			l := &links[li]
			if !l.Ether {
				continue
			}
			if si == 0 && l.Name == defNetdev.Name {
				g := DefaultGID(l.MAC, 0)
				for _, ty := range types {
					t.add(Entry{GID: g, Type: ty, Netdev: l.Name, Default: true}, snap)
				}
			}
			if !contributes(primary, rdma, snap, si, l) {
				continue
			}
			for _, fam := range []int{4, 6} {
				for _, a := range l.Addrs {
					if (fam == 4) != a.Addr().Is4() {
						continue
					}
					g := FromAddr(a.Addr())
					for _, ty := range types {
						t.add(Entry{GID: g, Type: ty, Netdev: l.Name}, snap)
					}
				}
			}
		}
	}
	out := Prediction{Overflow: t.overflow}
	n := spec.TableLen
	if n == 0 {
		n = len(t.slots)
	}
	out.Entries = make([]Entry, n)
	for i := 0; i < n; i++ {
		if i < len(t.slots) && t.slots[i] != nil {
			e := t.slots[i].e
			MapEntry(&e, "Ethernet", t.slots[i].snap)
			out.Entries[i] = e
		} else {
			out.Entries[i] = Entry{Empty: true}
		}
		out.Entries[i].Device, out.Entries[i].Port, out.Entries[i].Index = spec.Device, spec.Port, i
	}
	for i := range out.Overflow {
		out.Overflow[i].Device, out.Overflow[i].Port, out.Overflow[i].Index = spec.Device, spec.Port, -1
	}
	return out, nil
}

// contributes is the kernel's is_eth_port_of_netdev_filter: does netdev l
// (in snaps[si]) give IP GIDs to the port whose netdev is rdma?
func contributes(primary *vlan.Namespace, rdma *vlan.Link, snap *vlan.Namespace, si int, l *vlan.Link) bool {
	if si > 0 {
		// A netdev in another namespace: only a stacked device whose lower
		// device is the RDMA netdev (a macvlan or VLAN moved into a
		// container) can be linked to it; IFLA_LINK_NETNSID is taken to
		// name the primary namespace.
		return l.Kind.Stacked() && l.ParentOtherNetns && l.ParentIndex == rdma.Index
	}
	real := l
	if l.Kind == vlan.KindVLAN {
		if lo, ok := primary.ByIndex(l.ParentIndex); ok && !l.ParentOtherNetns {
			real = lo
		}
	}
	if real.Name == rdma.Name {
		return true
	}
	if !primary.IsUpper(l.Name, rdma.Name) {
		return false
	}
	// bond_state: an inactive slave of an active-backup bond gets no GIDs.
	if real.Kind == vlan.KindBond && real.ActiveSlave != 0 && rdma.MasterIndex == real.Index {
		return real.ActiveSlave == rdma.Index
	}
	return true
}

func sortedTypes(ts []Type) []Type {
	seen := map[Type]bool{}
	var out []Type
	for _, t := range []Type{TypeIB, TypeRoCEv1, TypeRoCEv2} {
		for _, x := range ts {
			if x == t && !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

type slot struct {
	e    Entry
	snap *vlan.Namespace
}

// table models the kernel's GID cache (cache.c) for Predict.
type table struct {
	slots    []*slot
	nDefault int
	limit    int // 0: unlimited
	overflow []Entry
}

func (t *table) add(e Entry, snap *vlan.Namespace) {
	if e.GID.IsZero() {
		return // ib_cache_gid_add: -EINVAL
	}
	if e.Default {
		// Mask TYPE|DEFAULT|NETDEV: a default entry of this type and
		// netdev is replaced in place.
		for _, s := range t.slots {
			if s != nil && s.e.Default && s.e.Type == e.Type && s.e.Netdev == e.Netdev {
				s.e = e
				return
			}
		}
	} else {
		// Mask GID|TYPE|NETDEV over every valid entry, defaults included.
		for _, s := range t.slots {
			if s != nil && s.e.Key() == e.Key() {
				return
			}
		}
	}
	for i := 0; t.limit == 0 || i < t.limit; i++ {
		if e.Default && i >= t.nDefault {
			break
		}
		if i >= len(t.slots) {
			t.slots = append(t.slots, nil)
		}
		if t.slots[i] == nil && (i < t.nDefault) == e.Default {
			e.Kind, e.IP = e.GID.Kind(), addrOf(e.GID)
			t.slots[i] = &slot{e: e, snap: snap}
			return
		}
	}
	e.Kind, e.IP = e.GID.Kind(), addrOf(e.GID)
	t.overflow = append(t.overflow, e)
}

// AddAddress returns the table after the kernel handles a new address on
// netdev (inet/inet6 NETDEV_UP → GID_ADD: drivers/infiniband/core/roce_gid_mgmt.c,
// addr_event; slots from drivers/infiniband/core/cache.c, ib_cache_gid_add
// and find_gid; Linux 6.1):
// for each supported type, unless an entry with the same GID, type and
// netdev exists, the GID goes into the lowest free slot outside the
// reserved default slots. Entries added this way land wherever a hole is,
// not where a fresh scan would put them: this is why indices move. The
// new entries are unmapped (no VLAN, MAC, ...); the input is not modified.
// ok is false when a slot was missing (the kernel's -ENOSPC).
func AddAddress(table []Entry, types []Type, addr netip.Addr, netdev string) (out []Entry, ok bool) {
	out = append([]Entry(nil), table...)
	types = sortedTypes(types)
	g := FromAddr(addr.Unmap())
	ok = true
	for _, ty := range types {
		dup := false
		for _, e := range out {
			if !e.Empty && e.GID == g && e.Type == ty && e.Netdev == netdev {
				dup = true
			}
		}
		if dup {
			continue
		}
		placed := false
		for i := range out {
			if out[i].Empty && (i >= len(types) || i >= 32) {
				dev, port := out[i].Device, out[i].Port
				out[i] = Entry{Device: dev, Port: port, Index: i, GID: g, Type: ty, Kind: g.Kind(), IP: addrOf(g), Netdev: netdev}
				placed = true
				break
			}
		}
		ok = ok && placed
	}
	return out, ok
}

// RemoveAddress returns the table after the kernel deletes an address of
// netdev (GID_DEL): its entries of every type become empty. (A slot that
// a QP or AH still references stays in use until released; sysfs shows it
// as empty meanwhile.) The input is not modified.
func RemoveAddress(table []Entry, addr netip.Addr, netdev string) []Entry {
	out := append([]Entry(nil), table...)
	g := FromAddr(addr.Unmap())
	for i, e := range out {
		if !e.Empty && e.GID == g && e.Netdev == netdev {
			out[i] = Entry{Device: e.Device, Port: e.Port, Index: e.Index, Empty: true}
		}
	}
	return out
}
