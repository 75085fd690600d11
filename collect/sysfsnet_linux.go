package collect

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/vlan"
)

// readNetSysfs builds the links of the namespace a copy of /sys was taken
// in from its class/net: name, ifindex, kind (uevent's DEVTYPE; none is a
// NIC port, veths included), MAC, MTU, operstate, Ethernet or not, the
// lower device of a VLAN/macvlan/ipvlan (iflink), the master (master/
// ifindex) and a bond's mode and active slave (bonding/). VLAN IDs and QoS
// maps are only in /proc/net/vlan/<dev> (procRoot, "" when not given); a
// VLAN device whose tag cannot be read is left out, named in the errors.
// Addresses, routes and neighbours are not in sysfs: the namespace has
// none, and an error says so.
func (s *sysfs) readNetSysfs(procRoot string) (*vlan.Namespace, []host.SourceError) {
	dir := filepath.Join(s.root(), "class", "net")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, []host.SourceError{{Source: "namespaces", Error: fmt.Sprintf("listing %s: %v", dir, err)}}
	}
	var errs []host.SourceError
	n := &vlan.Namespace{Links: []vlan.Link{}, Routes: []vlan.Route{}, Neighbors: []vlan.Neighbor{}}
	byName := map[string]int{}
	actives := map[int]string{}
	for _, e := range ents {
		name := e.Name()
		d := filepath.Join(dir, name)
		num := func(f string) (int, bool) {
			v, err := s.read(filepath.Join(d, f))
			if err != nil {
				return 0, false
			}
			i, err := strconv.Atoi(strings.TrimSpace(v))
			return i, err == nil
		}
		idx, ok := num("ifindex")
		if !ok {
			errs = append(errs, host.SourceError{Source: "link " + name, Error: "no readable ifindex in " + d})
			continue
		}
		l := vlan.Link{Name: name, Index: idx, Kind: vlan.KindPhysical}
		typ, _ := num("type")
		l.Ether = typ == 1 // ARPHRD_ETHER
		if typ == 772 {    // ARPHRD_LOOPBACK
			l.Kind = vlan.KindLoopback
		}
		if ev, err := s.read(filepath.Join(d, "uevent")); err == nil {
			for _, line := range strings.Split(ev, "\n") {
				if v, ok := strings.CutPrefix(line, "DEVTYPE="); ok && v != "" {
					l.Kind = vlan.Kind(v)
				}
			}
		}
		l.MTU, _ = num("mtu")
		l.OperState, _ = s.read(filepath.Join(d, "operstate"))
		if mac, err := s.read(filepath.Join(d, "address")); err == nil && l.Ether {
			_ = l.MAC.UnmarshalText([]byte(strings.TrimSpace(mac)))
		}
		if iflink, ok := num("iflink"); ok && iflink != idx && l.Kind.Stacked() {
			l.ParentIndex = iflink
		}
		if m, ok := num(filepath.Join("master", "ifindex")); ok {
			l.MasterIndex = m
		}
		if l.Kind == vlan.KindBond {
			if v, err := s.read(filepath.Join(d, "bonding", "mode")); err == nil {
				l.BondMode, _, _ = strings.Cut(strings.TrimSpace(v), " ") // "802.3ad 4"
			}
			if v, err := s.read(filepath.Join(d, "bonding", "active_slave")); err == nil && strings.TrimSpace(v) != "" {
				actives[idx] = strings.TrimSpace(v)
			}
		}
		if l.Kind == vlan.KindVLAN {
			tag, eg, in, err := readProcVLAN(procRoot, name)
			if err != nil {
				errs = append(errs, host.SourceError{Source: "link " + name, Error: err.Error()})
				continue
			}
			l.Tag, l.EgressQoS, l.IngressQoS = tag, eg, in
		}
		byName[name] = len(n.Links)
		n.Links = append(n.Links, l)
	}
	for bond, slave := range actives {
		if i, ok := byName[slave]; ok {
			for j := range n.Links {
				if n.Links[j].Index == bond {
					n.Links[j].ActiveSlave = n.Links[i].Index
				}
			}
		}
	}
	sort.Slice(n.Links, func(i, j int) bool { return n.Links[i].Index < n.Links[j].Index })
	if err := n.Validate(); err != nil {
		return nil, append(errs, host.SourceError{Source: "namespaces", Error: err.Error()})
	}
	n.Freeze()
	return n, errs
}

// readProcVLAN reads a VLAN device's ID and QoS maps from
// <procRoot>/net/vlan/<name> (net/8021q/vlanproc.c, vlandev_seq_show:
// "<dev>  VID: <id>\t REORDER_HDR: ..." then "INGRESS priority
// mappings: 0:0 1:0 ..." and "EGRESS priority mappings: 0:3 ..."). The
// tag's protocol is not in the file: 802.1Q is assumed.
func readProcVLAN(procRoot, name string) (*vlan.Tag, vlan.QoSMap, vlan.QoSMap, error) {
	if procRoot == "" {
		return nil, nil, nil, fmt.Errorf("VLAN device: its VLAN ID is not in sysfs (give a copy of /proc/net/vlan with --proc)")
	}
	path := filepath.Join(procRoot, "net", "vlan", name)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("VLAN device: reading its VLAN ID: %w", err)
	}
	var tag *vlan.Tag
	eg, in := vlan.QoSMap{}, vlan.QoSMap{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\x00"), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "VID:" {
				if id, err := strconv.ParseUint(f[i+1], 10, 16); err == nil && id < 4096 {
					tag = &vlan.Tag{ID: uint16(id), TPID: vlan.TPID8021Q}
				}
			}
		}
		var m vlan.QoSMap
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "INGRESS priority mappings:"):
			m = in
		case strings.HasPrefix(strings.TrimSpace(line), "EGRESS priority mappings:"):
			m = eg
		default:
			continue
		}
		_, rest, _ := strings.Cut(line, "mappings:")
		for _, kv := range strings.Fields(rest) {
			k, v, ok := strings.Cut(kv, ":")
			ki, err1 := strconv.ParseUint(k, 10, 32)
			vi, err2 := strconv.ParseUint(v, 10, 32)
			if ok && err1 == nil && err2 == nil && vi != 0 { // rtnetlink reports non-zero mappings only (vlan_fill_info)
				m[uint32(ki)] = uint32(vi)
			}
		}
	}
	if tag == nil {
		return nil, nil, nil, fmt.Errorf("VLAN device: no VID in %s", path)
	}
	if len(in) == 0 {
		in = nil
	}
	if len(eg) == 0 {
		eg = nil
	}
	return tag, eg, in, nil
}
