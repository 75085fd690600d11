package collect

import (
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/qos"
)

// rdmaStats reads a port's driver counters over RDMA netlink
// (RDMA_NLDEV_CMD_STAT_GET through vishvananda/netlink: what `rdma
// statistic show link DEV/PORT` prints, enabled optional counters
// included). Tests replace it.
type rdmaStats interface {
	portStats(dev string, port int) (map[string]uint64, error)
	close()
}

// nlRDMA is rdmaStats over a NETLINK_RDMA socket.
type nlRDMA struct {
	h     *netlink.Handle
	links map[string]*netlink.RdmaLink
}

// openRDMANetlink opens RDMA netlink and lists the devices; an error
// (no ib_core, a kernel without RDMA netlink) makes the collector read
// sysfs instead.
func openRDMANetlink() (rdmaStats, error) {
	h, err := netlink.NewHandle(unix.NETLINK_RDMA)
	if err != nil {
		return nil, err
	}
	links, err := h.RdmaLinkList()
	if err != nil {
		h.Close()
		return nil, err
	}
	n := &nlRDMA{h: h, links: map[string]*netlink.RdmaLink{}}
	for _, l := range links {
		n.links[l.Attrs.Name] = l
	}
	return n, nil
}

func (n *nlRDMA) portStats(dev string, port int) (map[string]uint64, error) {
	l, ok := n.links[dev]
	if !ok {
		return nil, fmt.Errorf("RDMA netlink does not list %s", dev)
	}
	st, err := n.h.RdmaPortStatisticList(l, uint32(port))
	if err != nil {
		return nil, err
	}
	return st.Statistics, nil
}

func (n *nlRDMA) close() { n.h.Close() }

// readDir lists a directory's entry names, sorted; nil when it does not
// exist.
func readDirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// readCounterDir reads every counter file of dir (hw_counters/ or
// counters/), leaving out hw_counters' lifespan (the cache lifetime in
// ms, ib core sysfs.c setup_hw_port_stats, not a counter) and files that
// cannot be read (a PMA counter the port does not support fails with
// EINVAL): a counter the driver lacks is absent, never 0. nil when the
// directory does not exist.
func (s *sysfs) readCounterDir(dir string) (map[string]uint64, error) {
	names, err := readDirNames(dir)
	if err != nil || names == nil {
		return nil, err
	}
	m := make(map[string]uint64, len(names))
	for _, n := range names {
		if n == "lifespan" {
			continue
		}
		v, err := s.read(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		c, err := parseCounter([]byte(v))
		if err != nil {
			continue
		}
		m[n] = c
	}
	return m, nil
}

// readRDMACounters reads every port's counters: the driver's counters
// over RDMA netlink when it answers, else sysfs hw_counters/; and sysfs
// counters/ (IB PMA counters, which netlink does not carry) without those
// the driver answers with a constant 0 (counters.PMACounted: rxe 7.x).
func (s *sysfs) readRDMACounters(devs []host.Device, nl rdmaStats) ([]counters.RDMAPort, []host.SourceError) {
	var out []counters.RDMAPort
	var errs []host.SourceError
	for _, d := range devs {
		for _, p := range d.Ports {
			pdir := filepath.Join(s.ibDir(), d.Name, "ports", strconv.Itoa(p.Port))
			rp := counters.RDMAPort{Device: d.Name, Port: p.Port, Source: counters.SourceSysfs}
			if nl != nil {
				if m, err := nl.portStats(d.Name, p.Port); err == nil && len(m) > 0 {
					rp.HWCounters, rp.Source = m, counters.SourceNetlink
				}
			}
			if rp.HWCounters == nil {
				m, err := s.readCounterDir(filepath.Join(pdir, "hw_counters"))
				if err != nil {
					errs = append(errs, host.SourceError{Source: fmt.Sprintf("counters %s/%d", d.Name, p.Port), Error: err.Error()})
				}
				rp.HWCounters = m
			}
			m, err := s.readCounterDir(filepath.Join(pdir, "counters"))
			if err != nil {
				errs = append(errs, host.SourceError{Source: fmt.Sprintf("counters %s/%d", d.Name, p.Port), Error: err.Error()})
			}
			for n := range m {
				if !counters.PMACounted(string(d.Driver.Driver), n) {
					delete(m, n) // a field the driver answers with a constant 0
				}
			}
			rp.Counters = m
			out = append(out, rp)
		}
	}
	return out, errs
}

func strp(s string) *string { return &s }

// configfsDir is where rdma_cm's configfs subsystem appears.
func (s *sysfs) configfsDir() string { return filepath.Join(s.root(), "kernel", "config", "rdma_cm") }

// readRDMACM reads rdma_cm's configfs defaults of one port
// (cma_configfs.c: <configfs>/rdma_cm/<dev>/ports/<port>/default_roce_tos
// and default_roce_mode). The group exists only once someone made it
// (mkdir, root); the collector never creates it.
func (s *sysfs) readRDMACM(dev string, port int) qos.RDMACMDefault {
	base := s.configfsDir()
	dir := filepath.Join(base, dev, "ports", strconv.Itoa(port))
	c := qos.RDMACMDefault{Device: dev, Port: port, Source: filepath.Join(dir, "default_roce_tos")}
	if _, err := os.Stat(base); err != nil {
		c.Status = qos.SettingNotExposed
		c.Reason = strp(fmt.Sprintf("%s does not exist: configfs is not mounted on %s or rdma_cm is not loaded (mount -t configfs none %s; modprobe rdma_cm); rdma_cm uses ToS 0 unless it was set", base, filepath.Dir(base), filepath.Dir(base)))
		return c
	}
	if _, err := os.Stat(filepath.Join(base, dev)); err != nil {
		c.Status = qos.SettingNotExposed
		c.Reason = strp(fmt.Sprintf("no rdma_cm configfs group for %s: the defaults show only after `mkdir %s` (root); rdma_cm uses ToS 0 unless it was set", dev, filepath.Join(base, dev)))
		return c
	}
	v, err := s.read(c.Source)
	if err != nil {
		c.Status, c.Reason = qos.SettingError, strp(err.Error())
		return c
	}
	tos, err := parseSmall([]byte(v), 255)
	if err != nil {
		c.Status, c.Reason = qos.SettingError, strp(fmt.Sprintf("%s: %v", c.Source, err))
		return c
	}
	t := uint8(tos)
	c.ToS, c.Status = &t, qos.SettingRead
	if m, err := s.read(filepath.Join(dir, "default_roce_mode")); err == nil && (m == "RoCE v2" || m == "IB/RoCE v1") {
		c.Mode = &m
	}
	return c
}

// readTCOverride reads MLNX_OFED mlx5_ib's tc/<port>/traffic_class.
func (s *sysfs) readTCOverride(dev string, port int) qos.TCOverride {
	tcDir := filepath.Join(s.ibDir(), dev, "tc")
	o := qos.TCOverride{Device: dev, Port: port, Source: filepath.Join(tcDir, strconv.Itoa(port), "traffic_class"), Rules: []qos.TCRule{}}
	if _, err := os.Stat(tcDir); err != nil {
		o.Status = qos.SettingNotExposed
		o.Reason = strp(fmt.Sprintf("%s does not exist: the driver has no traffic class override (only MLNX_OFED's mlx5_ib adds it)", tcDir))
		return o
	}
	b, err := os.ReadFile(o.Source)
	if err != nil {
		o.Status, o.Reason = qos.SettingError, strp(err.Error())
		return o
	}
	g, rules, err := parseTCOverride(string(b))
	if err != nil {
		o.Status, o.Reason = qos.SettingError, strp(fmt.Sprintf("%s: %v", o.Source, err))
		return o
	}
	o.Global, o.Status = g, qos.SettingRead
	if rules != nil {
		o.Rules = rules
	}
	return o
}

// readDCQCN reads MLNX_OFED mlx5_core's /sys/class/net/<netdev>/ecn.
func (s *sysfs) readDCQCN(netdev string) qos.DCQCN {
	dir := filepath.Join(s.root(), "class", "net", netdev, "ecn")
	d := qos.DCQCN{Netdev: netdev, Source: dir}
	if _, err := os.Stat(dir); err != nil {
		d.Status = qos.SettingNotExposed
		d.Reason = strp(fmt.Sprintf("%s does not exist: the driver exposes no DCQCN settings in sysfs (MLNX_OFED's mlx5_core does; upstream mlx5 keeps them in debugfs cc_params, root only)", dir))
		return d
	}
	for p := 0; p < 8; p++ {
		for _, x := range []struct {
			proto string
			dst   *[8]*bool
		}{{"roce_np", &d.NP}, {"roce_rp", &d.RP}} {
			v, err := s.read(filepath.Join(dir, x.proto, "enable", strconv.Itoa(p)))
			if err != nil {
				continue
			}
			if b, err := parseEnable([]byte(v)); err == nil {
				x.dst[p] = b
			}
		}
	}
	if v, err := s.read(filepath.Join(dir, "roce_np", "cnp_dscp")); err == nil {
		if n, err := parseSmall([]byte(v), 63); err == nil {
			u := uint8(n)
			d.CNPDSCP = &u
		}
	}
	if v, err := s.read(filepath.Join(dir, "roce_np", "cnp_802p_prio")); err == nil {
		if n, err := parseSmall([]byte(v), 7); err == nil {
			u := uint8(n)
			d.CNPPrio = &u
		}
	}
	d.Status = qos.SettingRead
	return d
}

// readSettings reads the settings of every RDMA port and of the netdevs
// given (the real netdevs below them).
func (s *sysfs) readSettings(devs []host.Device, netdevs []string) *host.Settings {
	st := &host.Settings{RDMACM: []qos.RDMACMDefault{}, TrafficClass: []qos.TCOverride{}, DCQCN: []qos.DCQCN{}}
	for _, d := range devs {
		for _, p := range d.Ports {
			st.RDMACM = append(st.RDMACM, s.readRDMACM(d.Name, p.Port))
			st.TrafficClass = append(st.TrafficClass, s.readTCOverride(d.Name, p.Port))
		}
	}
	for _, n := range netdevs {
		st.DCQCN = append(st.DCQCN, s.readDCQCN(n))
	}
	return st
}

// readEthtoolSet reads the ethtool sets of netdevs with one socket of the
// calling thread's namespace, without the per-queue statistics
// (perQueue); netdevs without a set are left out.
func readEthtoolSet(netns string, netdevs []string) ([]counters.Ethtool, []host.SourceError) {
	var out []counters.Ethtool
	var errs []host.SourceError
	if len(netdevs) == 0 {
		return nil, nil
	}
	fd, err := ethtoolSocket()
	if err != nil {
		return nil, []host.SourceError{{Source: "ethtool", Error: err.Error()}}
	}
	defer unix.Close(fd)
	for _, n := range netdevs {
		drv, m, err := readEthtool(fd, n)
		if errors.Is(err, errNoStats) {
			continue
		}
		if err != nil {
			errs = append(errs, host.SourceError{Source: "ethtool " + n, Error: err.Error()})
			continue
		}
		for k := range m {
			if perQueue(k) {
				delete(m, k)
			}
		}
		out = append(out, counters.Ethtool{Netns: netns, Netdev: n, Driver: drv, Stats: m})
	}
	return out, errs
}

// sampleCounters reads one counters sample of the given ports and real
// netdevs of the handle's namespace.
func (s *sysfs) sampleCounters(h *nsHandle, devs []host.Device, netdevs []string, nl rdmaStats) (*counters.Sample, []host.SourceError) {
	smp := &counters.Sample{Time: time.Now().UTC().Truncate(time.Microsecond), RDMA: []counters.RDMAPort{}, Ethtool: []counters.Ethtool{}, PFC: []counters.PFC{}}
	var errs []host.SourceError
	r, e := s.readRDMACounters(devs, nl)
	if r != nil {
		smp.RDMA = r
	}
	errs = append(errs, e...)
	var eth []counters.Ethtool
	if err := h.inNetns(func() { eth, e = readEthtoolSet(h.name, netdevs) }); err != nil {
		errs = append(errs, host.SourceError{Source: "ethtool", Error: err.Error()})
	} else {
		errs = append(errs, e...)
		if eth != nil {
			smp.Ethtool = eth
		}
	}
	for _, n := range netdevs {
		d, err := h.readDCB(n)
		if err != nil || !d.Supported || d.PFC == nil {
			continue
		}
		smp.PFC = append(smp.PFC, counters.PFC{Netns: h.name, Netdev: n, Requests: d.PFC.Requests, Indications: d.PFC.Indications})
	}
	return smp, errs
}
