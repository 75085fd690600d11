package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/roce-probe/roce-probe/ah"
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
	intVar(c.Flags(), &s.port, "port", 0, 1, 255, "only this port (1..255)")
	c.Flags().StringVar(&s.netns, "netns", "", "look netdevs and routes up in this network namespace (a name from 'ip netns list'; needs root)")
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
	t := &tables{close: func() {}}
	if s.links != "" {
		snap, err := readLinks(s.links)
		if err != nil {
			return nil, err
		}
		if s.netns != "" {
			snap.Netns = s.netns
		}
		t.snap, t.router = snap, gid.SnapshotRouter{Snapshot: snap}
	} else {
		h, err := vlan.Open(s.netns)
		if err != nil {
			if s.netns != "" {
				return nil, usagef("--netns %q: %v", s.netns, err)
			}
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
		if err := checkRDMADevice(s.sysfs, s.dev); err != nil {
			t.close()
			return nil, err
		}
		var ports []int
		ports, err = sys.Ports(s.dev)
		if err != nil {
			t.close()
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
			if s.sysfs != "" {
				return nil, usagef("--sysfs %q: %v", s.sysfs, err)
			}
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

// readLinks reads the --links file: a vlan.Snapshot in JSON.
func readLinks(path string) (*vlan.Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--links %q: %v: want a netdev snapshot (JSON) written by 'roce-probe gids --save-links'", path, pathErr(err))
	}
	defer f.Close()
	snap, err := vlan.DecodeSnapshot(f)
	if err != nil {
		return nil, usagef("--links %q: %v: want a netdev snapshot (JSON) written by 'roce-probe gids --save-links'", path, err)
	}
	return snap, nil
}

// pathErr drops the operation and path from a *fs.PathError, for messages
// that name the path themselves.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkRDMADevice returns a usage error naming --dev when dev is not an
// RDMA device under sysfsRoot ("" is /sys): it lists the devices there
// are, or says there are none.
func checkRDMADevice(sysfsRoot, dev string) error {
	sys := &gid.Sysfs{Root: sysfsRoot}
	names, err := sys.Devices()
	if err != nil && !errors.Is(err, gid.ErrNoDevices) {
		return err
	}
	if slices.Contains(names, dev) {
		return nil
	}
	if sysfsRoot == "" {
		sysfsRoot = gid.DefaultSysfsRoot
	}
	if len(names) == 0 {
		return usagef("--dev %q: no such RDMA device: this machine has none (%s is missing or empty; 'rdma link add rxe0 type rxe netdev DEV' creates a Soft-RoCE device)",
			dev, filepath.Join(sysfsRoot, "class", "infiniband"))
	}
	return usagef("--dev %q: no such RDMA device: want one of %s", dev, strings.Join(names, ", "))
}

// checkPort returns a usage error naming --port when dev has no such port.
func checkPort(sysfsRoot, dev string, port int) error {
	ports, err := (&gid.Sysfs{Root: sysfsRoot}).Ports(dev)
	if err != nil {
		return usageError{err}
	}
	if slices.Contains(ports, port) {
		return nil
	}
	var have []string
	for _, p := range ports {
		have = append(have, fmt.Sprintf("%s port %d", dev, p))
	}
	return usagef("--port %d: no such port on %s: want one of %s", port, dev, strings.Join(have, ", "))
}

// checkNetdev returns a usage error naming flag when snap has no netdev
// called name. linksFile is the --links file snap was read from, if any.
func checkNetdev(flag, name string, snap *vlan.Snapshot, linksFile string) error {
	if _, ok := snap.ByName(name); ok {
		return nil
	}
	switch {
	case linksFile != "":
		return usagef("%s %q: no such network device in the --links file %s", flag, name, linksFile)
	case snap.Netns != "":
		return usagef("%s %q: no such network device in network namespace %s (see 'ip -n %s link')", flag, name, snap.Netns, snap.Netns)
	}
	return usagef("%s %q: no such network device (see 'ip link')", flag, name)
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
		return gid.GID{}, usagef("--dst %q has a zone: want the address without %%%s (the source GID's netdev decides the link)", s, a.Zone())
	}
	g, err := gid.Parse(s)
	if err != nil {
		return gid.GID{}, usagef("--dst %q is not an IP address or GID: want e.g. 10.0.0.2, fd00::2 or fe80:0000:0000:0000:0202:c9ff:fe00:0001", s)
	}
	if g.IsZero() || g.Addr().Unmap().IsUnspecified() {
		return gid.GID{}, usagef("--dst %q is the unspecified address: want the peer's IP address or GID", s)
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

// ibDir is the directory the RDMA devices are listed in.
func (s *gidSource) ibDir() string {
	root := s.sysfs
	if root == "" {
		root = gid.DefaultSysfsRoot
	}
	return filepath.Join(root, "class", "infiniband")
}

// readNet reads the routes, neighbours and sysctls of --netns (or this
// namespace) for ah.Resolve.
func (s *gidSource) readNet() (*ah.Net, error) {
	n, err := ah.ReadNet(s.netns)
	if err != nil && s.netns != "" {
		return nil, usagef("--netns %q: %v", s.netns, err)
	}
	return n, err
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
