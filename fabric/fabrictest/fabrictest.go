package fabrictest

import (
	"bytes"
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
)

// Host returns a copy of the snapshot document base (as collect writes
// it) for host i of a fleet: hostname name, and every address that is not
// link-local moved by i — the same way in the links' addresses, the GID
// tables, the routes and the neighbours, so the copy is as consistent as
// the original and its GID tables are what the kernel would build. IPv4
// prefixes shorter than /32 become /16 (10.100.0.10/24 becomes
// 10.100.0.(10+i)/16, carried into the third octet), so that up to some
// 65,000 hosts share each network; IPv6 addresses get i added to their last
// 16 bits. Link-local addresses and MACs are kept: the default GIDs follow
// the MAC.
func Host(base []byte, name string, i int) (*host.Snapshot, error) {
	s, err := host.Decode(bytes.NewReader(base))
	if err != nil {
		return nil, err
	}
	s.Hostname = name
	for _, ns := range s.Namespaces {
		for li := range ns.Links {
			l := &ns.Links[li]
			for ai, p := range l.Addrs {
				l.Addrs[ai] = MovePrefix(p, i, false)
			}
		}
		for ri := range ns.Routes {
			r := &ns.Routes[ri]
			r.Dst = MovePrefix(r.Dst, i, true)
			r.PrefSrc = MoveAddr(r.PrefSrc, i)
			r.Gateway = MoveAddr(r.Gateway, i)
		}
		for ni := range ns.Neighbors {
			ns.Neighbors[ni].IP = MoveAddr(ns.Neighbors[ni].IP, i)
		}
	}
	if s.RDMA != nil {
		for di := range s.RDMA.Devices {
			for pi := range s.RDMA.Devices[di].Ports {
				p := &s.RDMA.Devices[di].Ports[pi]
				for gi := range p.GIDs {
					g := &p.GIDs[gi]
					a := g.GID.Addr()
					if m := MoveAddr(a.Unmap(), i); m != a.Unmap() {
						g.GID = gid.FromAddr(m)
					}
				}
			}
		}
	}
	// Re-decode: the copy is checked as any snapshot is, and its
	// namespaces' lookup tables are rebuilt.
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		return nil, err
	}
	return host.Decode(&buf)
}

// MoveAddr moves an address that is not link-local (nor loopback,
// unspecified or multicast) by i: IPv4 by adding i to its last 16 bits,
// IPv6 to its last 16 bits. Other addresses are returned as they are.
func MoveAddr(a netip.Addr, i int) netip.Addr {
	if !a.IsValid() || a.IsLinkLocalUnicast() || a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() || i == 0 {
		return a
	}
	b := a.AsSlice()
	n := len(b)
	v := (int(b[n-2])<<8 | int(b[n-1])) + i
	b[n-2], b[n-1] = byte(v>>8), byte(v)
	out, _ := netip.AddrFromSlice(b)
	return out
}

// MovePrefix moves p's address by i (MoveAddr) and, for IPv4 prefixes
// shorter than /32, widens them to /16; masked masks the result (route
// destinations), otherwise the host part is kept (interface addresses).
func MovePrefix(p netip.Prefix, i int, masked bool) netip.Prefix {
	a := p.Addr()
	if a.IsLinkLocalUnicast() || a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() || !p.IsValid() {
		return p
	}
	bits := p.Bits()
	if a.Is4() && bits < 32 && bits > 16 {
		bits = 16
	}
	out := netip.PrefixFrom(MoveAddr(a, i), bits)
	if masked {
		out = out.Masked()
	}
	return out
}

// WriteFleet writes n host snapshots made from base by Host (hostnames
// node-00000, node-00001, ...) into dir as node-NNNNN.json, each changed by
// vary (nil: none) before it is written, and returns their paths.
func WriteFleet(dir string, base []byte, n int, vary func(i int, s *host.Snapshot)) ([]string, error) {
	paths := make([]string, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%05d", i)
		s, err := Host(base, name, i)
		if err != nil {
			return nil, err
		}
		if vary != nil {
			vary(i, s)
		}
		p := filepath.Join(dir, name+".json")
		if err := s.Save(p); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// VaryBench makes the benchmarks' odd hosts of a fleet of mlx5-counters
// copies: host i with i % 100 == 17 has enp1s0f0.100's GID pair (indexes
// 4 and 5) moved to 14 and 15 — its lowest usable entries on that network
// are then mv0's 8 and 9 —, and i % 100 == 42 an MTU of 1500 on enp1s0f0.
func VaryBench(i int, s *host.Snapshot) {
	switch i % 100 {
	case 17:
		if s.RDMA == nil || len(s.RDMA.Devices) == 0 || len(s.RDMA.Devices[0].Ports) == 0 {
			return
		}
		p := &s.RDMA.Devices[0].Ports[0]
		for j := range p.GIDs {
			if p.GIDs[j].Index == 4 || p.GIDs[j].Index == 5 {
				p.GIDs[j].Index += 10
			}
		}
	case 42:
		if len(s.Namespaces) > 0 {
			if l, ok := s.Namespaces[0].ByName("enp1s0f0"); ok {
				l.MTU = 1500
			}
		}
	}
}

// VaryExample makes the fleet of docs/fabric.md's example (four or more
// mlx5-counters copies): host 2 has enp1s0f0.100's GID pair (indexes 4
// and 5) moved to 14 and 15, as after a port flap, and host 3 PFC on
// priorities 3 and 4 of enp1s0f0 instead of 3.
func VaryExample(i int, s *host.Snapshot) {
	switch i {
	case 2:
		VaryBench(17, s)
	case 3:
		for j := range s.DCB {
			if s.DCB[j].Netdev == "enp1s0f0" && s.DCB[j].PFC != nil {
				s.DCB[j].PFC.Enabled = 1<<3 | 1<<4
			}
		}
	}
}
