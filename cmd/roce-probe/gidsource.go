package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
	"github.com/spf13/cobra"
)

// gidSource holds the flags gids and select share: where the GID tables
// and the netdevs come from.
type gidSource struct {
	dev, netns, sysfs, links string
	port                     int
}

func (s *gidSource) addFlags(c *cobra.Command) {
	c.Flags().StringVar(&s.dev, "dev", "", "only this RDMA device (e.g. mlx5_0, rxe0)")
	c.Flags().IntVar(&s.port, "port", 0, "only this port (from 1)")
	c.Flags().StringVar(&s.netns, "netns", "", "look netdevs and routes up in this network namespace (a name from `ip netns list`; needs root)")
	c.Flags().StringVar(&s.sysfs, "sysfs", "", "read GID tables below this directory instead of /sys (a copied or fixture sysfs tree)")
	c.Flags().StringVar(&s.links, "links", "", "read netdevs from this JSON file (a vlan.Snapshot) instead of netlink")
}

// tables is what gidSource loads.
type tables struct {
	ports  []gid.Port // selected ports, mapped; nil when the machine has no RDMA device
	snap   *vlan.Snapshot
	router gid.Router
	close  func()
}

func (s *gidSource) load() (*tables, error) {
	if s.port < 0 {
		return nil, usagef("--port %d is out of range: want a port number ≥ 1", s.port)
	}
	t := &tables{close: func() {}}
	if s.links != "" {
		f, err := os.Open(s.links)
		if err != nil {
			return nil, usagef("--links: %v", err)
		}
		defer f.Close()
		snap, err := vlan.DecodeSnapshot(f)
		if err != nil {
			return nil, usagef("--links %s: %v", s.links, err)
		}
		if s.netns != "" {
			snap.Netns = s.netns
		}
		t.snap, t.router = snap, gid.SnapshotRouter{Snapshot: snap}
	} else {
		h, err := vlan.Open(s.netns)
		if err != nil {
			return nil, usageError{err}
		}
		snap, err := h.Snapshot()
		if err != nil {
			h.Close()
			return nil, err
		}
		t.snap, t.router, t.close = snap, h, h.Close
	}
	sys := &gid.Sysfs{Root: s.sysfs}
	var devs []gid.Device
	var err error
	var have []string // the ports there are, for a --port that names none
	if s.dev != "" {
		var ports []int
		ports, err = sys.Ports(s.dev)
		if err != nil {
			t.close()
			if errors.Is(err, gid.ErrNoDevices) {
				return nil, usagef("--dev %q: this machine has no RDMA devices", s.dev)
			}
			return nil, usageError{err}
		}
		d := gid.Device{Name: s.dev}
		for _, p := range ports {
			have = append(have, fmt.Sprintf("%s port %d", s.dev, p))
			if s.port != 0 && p != s.port {
				continue
			}
			pt, err := sys.ReadPort(s.dev, p)
			if err != nil {
				t.close()
				return nil, err
			}
			d.Ports = append(d.Ports, pt)
		}
		devs = []gid.Device{d}
	} else {
		devs, err = sys.ReadAll()
		if errors.Is(err, gid.ErrNoDevices) {
			return t, nil
		}
		if err != nil {
			t.close()
			return nil, err
		}
	}
	for _, d := range devs {
		for _, p := range d.Ports {
			if s.dev == "" {
				have = append(have, fmt.Sprintf("%s port %d", d.Name, p.Port))
			}
			if s.port != 0 && p.Port != s.port {
				continue
			}
			t.ports = append(t.ports, p)
		}
	}
	if len(t.ports) == 0 && s.port != 0 {
		t.close()
		want := "there are no RDMA ports"
		if len(have) > 0 {
			want = "want one of " + strings.Join(have, ", ")
		}
		return nil, usagef("--port %d: no such port%s: %s", s.port, devSuffix(s.dev), want)
	}
	gid.Map(t.ports, t.snap)
	return t, nil
}

func devSuffix(dev string) string {
	if dev == "" {
		return " on any RDMA device"
	}
	return " on " + dev
}

// candidateNetdevs lists the netdevs Soft-RoCE could run on: Ethernet
// devices at the bottom of a stack (NIC ports, veths, bonds), not VLAN,
// macvlan, bridge or dummy-like devices.
func candidateNetdevs(snap *vlan.Snapshot) []vlan.Link {
	var out []vlan.Link
	for _, l := range snap.Links {
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

// predictedPorts builds, for a machine without RDMA devices, the tables
// Soft-RoCE would get on each candidate netdev (RoCE v2 only).
func predictedPorts(snap *vlan.Snapshot) ([]gid.Port, error) {
	var ports []gid.Port
	for _, l := range candidateNetdevs(snap) {
		spec := gid.PortSpec{Device: "rxe_" + l.Name, Port: 1, Netdev: l.Name, Types: []gid.Type{gid.TypeRoCEv2}}
		pred, err := gid.Predict(spec, snap)
		if err != nil {
			return nil, err
		}
		ports = append(ports, gid.Port{Device: spec.Device, Port: 1, LinkLayer: "Ethernet", Netdev: l.Name,
			ActiveMTU: gid.RoCEMTU(l.MTU), Types: spec.Types, Entries: pred.Entries})
	}
	return ports, nil
}

// parseDst accepts an IP address or a GID.
func parseDst(s string) (gid.GID, error) {
	if s == "" {
		return gid.GID{}, usagef("--dst is required: give the peer's IP address or GID")
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() != "" {
		return gid.GID{}, usagef("--dst %q has a zone: give the address without %%%s and choose the netdev with --netdev", s, a.Zone())
	}
	g, err := gid.Parse(s)
	if err != nil {
		return gid.GID{}, usagef("--dst %q is not an IP address or GID: want e.g. 10.0.0.2, fd00::2 or fe80:0000:0000:0000:0202:c9ff:fe00:0001", s)
	}
	if g.IsZero() {
		return gid.GID{}, usagef("--dst %q is the zero GID: want the peer's address", s)
	}
	return g, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func vlanCol(e gid.Entry) string {
	if e.VLAN != nil {
		return fmt.Sprint(*e.VLAN)
	}
	if e.VLANChain != nil {
		return "untagged"
	}
	return "-"
}

// loadPort loads the one RDMA port that --dev and --port (default 1) name,
// for commands that work on a single port. The caller closes the tables.
func (s *gidSource) loadPort() (*tables, *gid.Port, error) {
	if s.port == 0 {
		s.port = 1
	}
	t, err := s.load()
	if err != nil {
		return nil, nil, err
	}
	if len(t.ports) == 0 {
		t.close()
		return nil, nil, usagef("--dev %q port %d: no such RDMA port", s.dev, s.port)
	}
	return t, &t.ports[0], nil
}
