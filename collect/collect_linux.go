package collect

import (
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/vlan"
)

// netnsDir is where `ip netns add` creates its namespace files.
const netnsDir = "/run/netns"

func collect(opt Options) (*host.Snapshot, error) {
	s := &host.Snapshot{Tool: opt.Tool, Time: time.Now().UTC().Truncate(time.Millisecond)}
	s.Hostname, _ = os.Hostname()
	var uts unix.Utsname
	if unix.Uname(&uts) == nil {
		s.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	if opt.SysfsCopy {
		// Not this machine's: a copy of /sys holds neither (collect
		// --hostname names the host).
		s.Hostname, s.Kernel = "", ""
	}
	sys := &sysfs{Root: opt.SysfsRoot}
	if opt.has(SectionRDMA) {
		devs, errs, err := sys.readAll()
		if err != nil {
			return nil, fmt.Errorf("reading RDMA devices from %s: %w", sys.ibDir(), err)
		}
		s.Errors = append(s.Errors, errs...)
		if !opt.SysfsCopy && (opt.SysfsRoot == "" || opt.SysfsRoot == "/sys") {
			portNetdevsFromNetlink(devs)
		}
		if devs == nil {
			devs = []host.Device{}
		}
		s.RDMA = &host.RDMA{Devices: devs}
	}
	if opt.SysfsCopy {
		collectCopy(s, sys, opt)
		return s, nil
	}
	if opt.has(SectionCensus) {
		// Never an error: without a device filter, what cannot be
		// read is in the census's sources.
		s.Census, _ = readCensus(CensusOptions{})
	}
	if !opt.has(SectionNet) && !opt.has(SectionDCB) {
		return s, nil
	}
	names, err := netnsNames(opt)
	if err != nil {
		return nil, err
	}
	if opt.has(SectionDCB) {
		s.DCB = []host.DCB{}
	}
	for i, name := range names {
		h, err := openNetns(name)
		if err != nil {
			return nil, err
		}
		ns, err := h.readNamespace()
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("network namespace %s: %w", host.NetnsName(name), err)
		}
		ns.Freeze()
		if opt.has(SectionNet) {
			s.Namespaces = append(s.Namespaces, ns)
		}
		if opt.has(SectionDCB) {
			for _, l := range ns.Links {
				if !hasDCB(l) {
					continue
				}
				d, err := h.readDCB(l.Name)
				if err != nil {
					s.Errors = append(s.Errors, host.SourceError{Source: host.DCBSource(name, l.Name), Error: err.Error()})
					continue
				}
				s.DCB = append(s.DCB, d)
			}
		}
		if i == 0 && s.RDMA != nil && opt.has(SectionTopology) {
			s.Topology = readTopology(h, counterNetdevs(s.RDMA.Devices, ns, opt.Netdevs), opt)
		}
		if i == 0 && s.RDMA != nil && (opt.has(SectionCounters) || opt.has(SectionSettings)) {
			netdevs := counterNetdevs(s.RDMA.Devices, ns, opt.Netdevs)
			if opt.has(SectionCounters) {
				nl, _ := openRDMANetlink()
				smp, errs := sys.sampleCounters(h, s.RDMA.Devices, netdevs, nl)
				if nl != nil {
					nl.close()
				}
				s.Counters = smp
				s.Errors = append(s.Errors, errs...)
			}
			if opt.has(SectionSettings) {
				s.Settings = sys.readSettings(s.RDMA.Devices, netdevs)
				s.Settings.Pause = h.readPause(netdevs)
			}
		}
		h.Close()
	}
	return s, nil
}

// notLive is the reason of what a copy of /sys cannot give.
const notLive = "not collected: read from a copy of /sys (collect --sysfs), and only the live kernel answers this (%s)"

// collectCopy reads the sections opt asks for that a copy of /sys holds
// (SysfsCopy) and records the others as not collected.
func collectCopy(s *host.Snapshot, sys *sysfs, opt Options) {
	var ns *vlan.Namespace
	if opt.has(SectionNet) || opt.has(SectionDCB) || opt.has(SectionSettings) {
		var errs []host.SourceError
		ns, errs = sys.readNetSysfs(opt.ProcRoot)
		s.Errors = append(s.Errors, errs...)
		if ns != nil {
			s.Namespaces = []*vlan.Namespace{ns}
			s.Errors = append(s.Errors, host.SourceError{Source: "namespaces",
				Error: fmt.Sprintf(notLive, "addresses, routes and neighbours: rtnetlink; links are from class/net")})
		}
	}
	if s.RDMA != nil {
		s.Errors = append(s.Errors, host.SourceError{Source: "netlink rdma", Error: fmt.Sprintf(notLive, "the ports' netdevs as RDMA netlink reports them: sysfs's parent and device/net are used")})
	}
	if opt.has(SectionDCB) && ns != nil {
		s.DCB = []host.DCB{}
		for _, l := range ns.Links {
			if hasDCB(l) {
				s.Errors = append(s.Errors, host.SourceError{Source: "dcb " + l.Name, Error: fmt.Sprintf(notLive, "RTM_GETDCB")})
			}
		}
	}
	if opt.has(SectionCounters) {
		s.Errors = append(s.Errors, host.SourceError{Source: "counters", Error: fmt.Sprintf(notLive, "one sample of live counters: RDMA netlink, hw_counters and ethtool")})
	}
	if opt.has(SectionTopology) {
		s.Errors = append(s.Errors, host.SourceError{Source: "topology", Error: fmt.Sprintf(notLive, "the switches the netdevs are plugged into: LLDP frames and lldpd's table")})
	}
	if opt.has(SectionCensus) {
		s.Errors = append(s.Errors, host.SourceError{Source: "census", Error: fmt.Sprintf(notLive, "the QP census: RDMA netlink's resource dumps")})
	}
	if opt.has(SectionSettings) && s.RDMA != nil {
		s.Settings = sys.readSettings(s.RDMA.Devices, counterNetdevs(s.RDMA.Devices, ns, opt.Netdevs))
	}
}

// portNetdevsFromNetlink gives each port the netdev RDMA netlink reports
// for it (rdmaPortNetdevs: `rdma link`'s netdev; for a RoCE LAG device
// the one its driver registered, where sysfs's device/net shows the
// first PCI function's netdev); applyPortNetdevs says how. A kernel
// without RDMA netlink leaves sysfs's answer everywhere.
func portNetdevsFromNetlink(devs []host.Device) {
	nd, err := rdmaPortNetdevs()
	if err != nil {
		return
	}
	applyPortNetdevs(devs, nd)
}

// applyPortNetdevs applies RDMA netlink's port netdevs nd to devs, read
// from sysfs. A port nd names a netdev for gets it. A port nd reports
// without one has its netdev in another network namespace: the kernel's
// fill_port_info (drivers/infiniband/core/nldev.c, Linux 4.17 and later)
// names the port's netdev only when it is in the caller's namespace,
// while sysfs does not look: Soft-RoCE's parent file and
// gid_attrs/ndevs/N (print_ndev, drivers/infiniband/core/sysfs.c) print
// the netdev's name whatever its namespace. With `rdma system` in shared
// mode (the default) every namespace sees every RDMA device, so another
// container's rxe device on its own "eth0" would look like a device on
// this namespace's eth0. Such a port's netdev becomes "", and so does
// each GID slot's that names the same netdev (the slots of a netdev of
// this namespace stacked on it, a pod's macvlan, keep theirs). A port nd
// says nothing about, and an InfiniBand port (no netdev for netlink; sysfs
// may show its IPoIB netdev), keep what sysfs showed.
func applyPortNetdevs(devs []host.Device, nd map[portKey]string) {
	for i := range devs {
		for j := range devs[i].Ports {
			p := &devs[i].Ports[j]
			v, ok := nd[portKey{devs[i].Name, p.Port}]
			switch {
			case !ok:
			case v != "":
				p.Netdev = v
			case p.LinkLayer == "Ethernet":
				if p.Netdev != "" {
					for k := range p.GIDs {
						if p.GIDs[k].Netdev == p.Netdev {
							p.GIDs[k].Netdev = ""
						}
					}
				}
				p.Netdev = ""
			}
		}
	}
}

// sampler reads counter samples of one snapshot's ports and netdevs.
type sampler struct {
	sys     *sysfs
	h       *nsHandle
	nl      rdmaStats
	devs    []host.Device
	netdevs []string
}

func newSampler(s *host.Snapshot, opt Options) (Sampler, error) {
	if s.RDMA == nil || len(s.Namespaces) == 0 {
		return nil, &host.MissingError{Section: "rdma"}
	}
	name := ""
	if len(opt.Netns) > 0 {
		name = opt.Netns[0]
	}
	ns, err := s.Namespace(name)
	if err != nil {
		return nil, err
	}
	h, err := openNetns(name)
	if err != nil {
		return nil, err
	}
	nl, _ := openRDMANetlink()
	return &sampler{sys: &sysfs{Root: opt.SysfsRoot}, h: h, nl: nl, devs: s.RDMA.Devices,
		netdevs: counterNetdevs(s.RDMA.Devices, ns, opt.Netdevs)}, nil
}

func (p *sampler) Sample() (*counters.Sample, []host.SourceError) {
	return p.sys.sampleCounters(p.h, p.devs, p.netdevs, p.nl)
}

func (p *sampler) Close() {
	if p.nl != nil {
		p.nl.close()
	}
	p.h.Close()
}

// hasDCB reports whether DCB is read for l: devices at the bottom of a
// stack (NIC ports, bonds, veths), not VLAN, macvlan or ipvlan devices
// (DCB is a property of the real device) and not the loopback.
func hasDCB(l vlan.Link) bool {
	return l.Ether && !l.Kind.Stacked() && l.Kind != vlan.KindLoopback
}

// netnsNames lists the namespaces opt asks for, the view first.
func netnsNames(opt Options) ([]string, error) {
	if !opt.AllNetns {
		if len(opt.Netns) == 0 {
			return []string{""}, nil
		}
		return opt.Netns, nil
	}
	out := []string{""}
	ents, err := os.ReadDir(netnsDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("listing network namespaces in %s: %w", netnsDir, err)
	}
	var named []string
	for _, e := range ents {
		if !e.IsDir() {
			named = append(named, e.Name())
		}
	}
	sort.Strings(named)
	for _, n := range named {
		if _, err := os.Stat(filepath.Join(netnsDir, n)); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
