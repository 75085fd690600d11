package gid

// Port is one port of an RDMA device with its GID table: every slot, the
// empty ones included, each mapped to its netdev (Map).
type Port struct {
	Device    string `json:"device"`
	Port      int    `json:"port"`
	State     string `json:"state"`      // ports/P/state without the number: "ACTIVE", "DOWN", ...
	PhysState string `json:"phys_state"` // ports/P/phys_state: "LinkUp", "Disabled", ...
	LinkLayer string `json:"link_layer"` // "Ethernet" or "InfiniBand"
	// Netdev is the RDMA device's own netdev for this port (rxe: the
	// parent file; PCI devices: device/net/<name>, matched by dev_port).
	Netdev string `json:"netdev"`
	// ActiveMTU is the RoCE path MTU the port uses with Netdev's MTU
	// (iboe_get_mtu): sysfs has no active-MTU file, so it is computed
	// when the netdev is mapped; 0 when unknown.
	ActiveMTU int `json:"active_mtu"`
	// Types lists the GID types the port supports, as seen in its table
	// (IB; or RoCE v1 and/or RoCE v2). The kernel reserves one default
	// slot per type at the start of the table.
	Types   []Type  `json:"types"`
	Entries []Entry `json:"entries"` // every slot, index order, empty ones included
}

// NewPort builds a port's table from the slots its GID table uses: every
// slot below tableLen, the empty ones included. used holds the used slots
// as sysfs reports them (Index, GID, Type, Netdev); NewPort fills in the
// rest: Device, Port, Kind and IP of each entry, the GID types the port
// supports (Types), the default GIDs in the reserved slots, and, when
// p.Netdev is empty, the RDMA netdev from the default GID's netdev. It
// does not map netdevs: call Map.
func NewPort(p Port, tableLen int, used []Entry) Port {
	p.Entries = make([]Entry, tableLen)
	for i := range p.Entries {
		p.Entries[i] = Entry{Device: p.Device, Port: p.Port, Index: i, Empty: true}
	}
	seen := map[Type]bool{}
	for _, u := range used {
		if u.Index < 0 || u.Index >= tableLen || u.GID.IsZero() {
			continue
		}
		e := Entry{Device: p.Device, Port: p.Port, Index: u.Index, GID: u.GID, Type: u.Type, Kind: u.GID.Kind(), IP: addrOf(u.GID), Netdev: u.Netdev}
		seen[e.Type] = true
		p.Entries[u.Index] = e
	}
	p.Types = nil
	for _, t := range []Type{TypeIB, TypeRoCEv1, TypeRoCEv2} {
		if seen[t] {
			p.Types = append(p.Types, t)
		}
	}
	markDefaults(&p)
	if p.Netdev == "" {
		// The default GID's netdev is the RDMA netdev (or its bond).
		for _, e := range p.Entries {
			if e.Default && e.Netdev != "" {
				p.Netdev = e.Netdev
				break
			}
		}
	}
	return p
}

// markDefaults flags the entries in the reserved default slots: one per
// supported type at indices 0..n-1 (gid_table_reserve_default; only
// indices below 32 can be reserved). Only default GIDs go there.
func markDefaults(p *Port) {
	n := len(p.Types)
	if p.LinkLayer == "InfiniBand" {
		return
	}
	for i := range p.Entries {
		if i < n && i < 32 && !p.Entries[i].Empty {
			p.Entries[i].Default = true
		}
	}
}
