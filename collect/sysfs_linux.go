package collect

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
)

// maxRereads bounds how often an entry that changes under the reader is
// read again before ReadPort gives up.
const maxRereads = 8

// sysfs reads RDMA devices and GID tables below a sysfs root. The zero
// value reads /sys; tests point Root at a fixture tree with the same
// layout (class/infiniband/<dev>/ports/<p>/...). Reads need no privileges.
type sysfs struct {
	// Root is the sysfs mount point; "" means DefaultSysfsRoot.
	Root string

	// readFile replaces the file reader in tests (to simulate a table
	// that changes between reads); nil reads the file.
	readFile func(path string) ([]byte, error)
}

func (s *sysfs) root() string {
	if s == nil || s.Root == "" {
		return "/sys"
	}
	return s.Root
}

func (s *sysfs) ibDir() string { return filepath.Join(s.root(), "class", "infiniband") }

// devices lists the RDMA device names, sorted; none (and no error) when
// the class directory is missing or empty.
func (s *sysfs) devices() ([]string, error) {
	ents, err := os.ReadDir(s.ibDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing RDMA devices: %w", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// readAll reads every device and port (ports concurrently) and detects
// each device's driver. A read failure costs only what it covers: a device
// whose ports cannot be listed is left out, a port that cannot be read
// (no gids/ directory, a device going away mid-read) is left out of its
// device; each is returned as a SourceError ("rdma DEV", "rdma DEV port
// P"). Only a class directory that cannot be listed fails the whole read.
func (s *sysfs) readAll() ([]host.Device, []host.SourceError, error) {
	names, err := s.devices()
	if err != nil {
		return nil, nil, err
	}
	devs := make([]host.Device, 0, len(names))
	var devErrs []host.SourceError
	type job struct{ d, p, port int }
	var jobs []job
	for _, n := range names {
		ports, err := s.ports(n)
		if err != nil {
			devErrs = append(devErrs, host.SourceError{Source: "rdma " + n, Error: err.Error()})
			continue
		}
		i := len(devs)
		devs = append(devs, host.Device{Name: n, Driver: s.driver(n), Ports: make([]host.Port, len(ports))})
		for j, p := range ports {
			jobs = append(jobs, job{i, j, p})
		}
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for k, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			devs[j.d].Ports[j.p], errs[k] = s.readPort(devs[j.d].Name, j.port)
		}()
	}
	wg.Wait()
	failed := map[[2]int]bool{}
	for k, j := range jobs {
		if errs[k] != nil {
			failed[[2]int{j.d, j.p}] = true
			devErrs = append(devErrs, host.SourceError{Source: fmt.Sprintf("rdma %s port %d", devs[j.d].Name, j.port), Error: errs[k].Error()})
		}
	}
	if len(failed) > 0 {
		for i := range devs {
			kept := devs[i].Ports[:0]
			for j, p := range devs[i].Ports {
				if !failed[[2]int{i, j}] {
					kept = append(kept, p)
				}
			}
			devs[i].Ports = kept
		}
	}
	return devs, devErrs, nil
}

// ports lists a device's port numbers, ascending.
func (s *sysfs) ports(dev string) ([]int, error) {
	if err := checkName("device", dev); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(s.ibDir(), dev, "ports"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("RDMA device %q: no ports directory in %s", dev, filepath.Join(s.ibDir(), dev))
		}
		return nil, fmt.Errorf("RDMA device %s: listing ports: %w", dev, err)
	}
	var ports []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p < 1 {
			continue
		}
		ports = append(ports, p)
	}
	sort.Ints(ports)
	return ports, nil
}

func checkName(what, v string) error {
	if v == "" || v == "." || v == ".." || strings.ContainsRune(v, '/') {
		return fmt.Errorf("%s name %q is not valid: want a name from /sys/class/infiniband", what, v)
	}
	return nil
}

// read returns a sysfs file's content without the trailing newline.
func (s *sysfs) read(path string) (string, error) {
	if s.readFile != nil {
		b, err := s.readFile(path)
		return string(bytes.TrimRight(b, "\n\x00")), err
	}
	// One open/read/close with a stack buffer: sysfs attributes are
	// small, and GID tables have thousands of them.
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var buf [256]byte
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return string(bytes.TrimRight(buf[:n], "\n\x00")), nil
}

// readPort reads one port: state, link layer, netdev and every used GID
// slot.
func (s *sysfs) readPort(dev string, port int) (host.Port, error) {
	if err := checkName("device", dev); err != nil {
		return host.Port{}, err
	}
	if port < 1 {
		return host.Port{}, fmt.Errorf("port %d is not valid: want a port number ≥ 1", port)
	}
	devDir := filepath.Join(s.ibDir(), dev)
	pdir := filepath.Join(devDir, "ports", strconv.Itoa(port))
	p := host.Port{Port: port}
	var err error
	if p.State, err = s.read(filepath.Join(pdir, "state")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return host.Port{}, fmt.Errorf("%s port %d not found in %s", dev, port, s.ibDir())
		}
		return host.Port{}, fmt.Errorf("%s port %d: %w", dev, port, err)
	}
	p.State = stripNumber(p.State)
	p.PhysState, _ = s.read(filepath.Join(pdir, "phys_state"))
	p.PhysState = stripNumber(p.PhysState)
	p.LinkLayer, _ = s.read(filepath.Join(pdir, "link_layer"))
	p.Netdev = s.portNetdev(devDir, port)

	n, err := s.tableLen(pdir)
	if err != nil {
		return host.Port{}, fmt.Errorf("%s port %d: %w", dev, port, err)
	}
	p.TableLen = n
	ib := p.LinkLayer == "InfiniBand"
	var files portFiles = pathFiles{s, pdir}
	if s.readFile == nil {
		ff, err := openPortFiles(pdir)
		if err != nil {
			return host.Port{}, fmt.Errorf("%s port %d: %w", dev, port, err)
		}
		files = ff
	}
	defer files.close()
	for i := 0; i < n; i++ {
		e, empty, err := s.readSlot(files, i, ib)
		if err != nil {
			return host.Port{}, fmt.Errorf("%s port %d index %d: %w", dev, port, i, err)
		}
		if !empty {
			e.Index = i
			p.GIDs = append(p.GIDs, e)
		}
	}
	return p, nil
}

// stripNumber turns "4: ACTIVE" into "ACTIVE".
func stripNumber(s string) string {
	if i := strings.Index(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// tableLen counts gids/<n> files (sysfs creates one per table slot).
func (s *sysfs) tableLen(pdir string) (int, error) {
	ents, err := os.ReadDir(filepath.Join(pdir, "gids"))
	if err != nil {
		return 0, fmt.Errorf("listing GID table: %w", err)
	}
	n := 0
	for _, e := range ents {
		if i, err := strconv.Atoi(e.Name()); err == nil && i >= 0 && i+1 > n {
			n = i + 1
		}
	}
	return n, nil
}

// portFiles reads the per-entry files of one port's GID table.
type portFiles interface {
	// readGID reads gids/i; with again it reads the same file again
	// (the re-read that checks the slot did not change).
	readGID(i int, again bool) (gid.GID, error)
	// readAttr reads gid_attrs/<kind>/i, kind "types" or "ndevs".
	readAttr(kind string, i int) (string, error)
	close()
}

// pathFiles reads by path through Sysfs.read (used with the test hook).
type pathFiles struct {
	s    *sysfs
	pdir string
}

func (f pathFiles) readGID(i int, _ bool) (gid.GID, error) {
	return f.s.readGID(filepath.Join(f.pdir, "gids", strconv.Itoa(i)))
}

func (f pathFiles) readAttr(kind string, i int) (string, error) {
	return f.s.read(filepath.Join(f.pdir, "gid_attrs", kind, strconv.Itoa(i)))
}

func (pathFiles) close() {}

// fdFiles reads with openat relative to the three table directories and
// re-reads a GID with pread on the still-open file: sysfs regenerates an
// attribute on every read at offset 0. A read of a sysfs attribute at
// offset 0 returns it whole, so one read per file suffices.
type fdFiles struct {
	pdir               string
	gids, types, ndevs int // directory fds; -1 if missing
	cur                int // open gids/<curIdx> file, -1 for none
	curIdx             int
	buf                [128]byte
}

func openPortFiles(pdir string) (*fdFiles, error) {
	f := &fdFiles{pdir: pdir, cur: -1}
	var err error
	f.gids, err = unix.Open(filepath.Join(pdir, "gids"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(pdir, "gids"), Err: err}
	}
	f.types, _ = unix.Open(filepath.Join(pdir, "gid_attrs", "types"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	f.ndevs, _ = unix.Open(filepath.Join(pdir, "gid_attrs", "ndevs"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	return f, nil
}

func (f *fdFiles) close() {
	for _, fd := range []int{f.gids, f.types, f.ndevs, f.cur} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	f.cur = -1
}

// readAt opens name in dir, reads it once and closes it.
func (f *fdFiles) readAt(dir int, kind, name string) ([]byte, error) {
	if dir < 0 {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(f.pdir, kind), Err: unix.ENOENT}
	}
	fd, err := openat(dir, name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: filepath.Join(f.pdir, kind, name), Err: err}
	}
	defer unix.Close(fd)
	n, err := pread(fd, f.buf[:])
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: filepath.Join(f.pdir, kind, name), Err: err}
	}
	return bytes.TrimRight(f.buf[:n], "\n\x00"), nil
}

func openat(dir int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func pread(fd int, b []byte) (int, error) {
	for {
		n, err := unix.Pread(fd, b, 0)
		if err != unix.EINTR {
			return n, err
		}
	}
}

func (f *fdFiles) readGID(i int, again bool) (gid.GID, error) {
	name := strconv.Itoa(i)
	path := func() string { return filepath.Join(f.pdir, "gids", name) }
	if !again || f.cur < 0 || f.curIdx != i {
		if f.cur >= 0 {
			unix.Close(f.cur)
			f.cur = -1
		}
		fd, err := openat(f.gids, name)
		if err != nil {
			return gid.GID{}, &fs.PathError{Op: "open", Path: path(), Err: err}
		}
		f.cur, f.curIdx = fd, i
	}
	n, err := pread(f.cur, f.buf[:])
	if err != nil {
		return gid.GID{}, &fs.PathError{Op: "read", Path: path(), Err: err}
	}
	g, ok := parseSysfsGID(bytes.TrimRight(f.buf[:n], "\n\x00"))
	if !ok {
		v, err := gid.Parse(string(bytes.TrimSpace(f.buf[:n])))
		if err != nil {
			return gid.GID{}, fmt.Errorf("%s: %w", path(), err)
		}
		g = v
	}
	return g, nil
}

func (f *fdFiles) readAttr(kind string, i int) (string, error) {
	dir := f.types
	if kind == "ndevs" {
		dir = f.ndevs
	}
	sub := "gid_attrs/types"
	if kind == "ndevs" {
		sub = "gid_attrs/ndevs"
	}
	b, err := f.readAt(dir, sub, strconv.Itoa(i))
	return string(b), err
}

// parseSysfsGID decodes the kernel's "%pI6" form: 8 groups of 4 hex
// digits separated by colons.
func parseSysfsGID(b []byte) (gid.GID, bool) {
	var g gid.GID
	if len(b) != 39 {
		return g, false
	}
	for grp := 0; grp < 8; grp++ {
		o := grp * 5
		if grp > 0 && b[o-1] != ':' {
			return g, false
		}
		for k := 0; k < 2; k++ {
			hi, ok1 := unhex(b[o+2*k])
			lo, ok2 := unhex(b[o+2*k+1])
			if !ok1 || !ok2 {
				return g, false
			}
			g[grp*2+k] = hi<<4 | lo
		}
	}
	return g, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// readSlot reads gids/i, then types/i and ndevs/i, then gids/i again; if
// the GID changed, the slot was rewritten in between and everything is
// read again, so type and netdev always belong to the GID reported.
func (s *sysfs) readSlot(f portFiles, i int, ib bool) (host.Slot, bool, error) {
	var last gid.GID
	for try := 0; try < maxRereads; try++ {
		g1, err := f.readGID(i, false)
		if err != nil {
			return host.Slot{}, false, err
		}
		if g1.IsZero() {
			// An empty slot: types and ndevs fail with EINVAL.
			return host.Slot{}, true, nil
		}
		e := host.Slot{GID: g1}
		ts, terr := f.readAttr("types", i)
		nd, nerr := f.readAttr("ndevs", i)
		g2, err := f.readGID(i, true)
		if err != nil {
			return host.Slot{}, false, err
		}
		if g2 != g1 {
			last = g2
			continue
		}
		// Unreadable types/N is IB/RoCE v1, as rdma-core's
		// query_sysfs_gid_type treats it.
		switch {
		case terr != nil || ts == "IB/RoCE v1" || ts == "RoCE v1":
			e.Type = gid.TypeRoCEv1
			if ib {
				e.Type = gid.TypeIB
			}
		default:
			t, err := gid.ParseType(ts)
			if err != nil {
				return host.Slot{}, false, fmt.Errorf("gid_attrs/types/%d: %w", i, err)
			}
			e.Type = t
		}
		if nerr == nil {
			e.Netdev = nd
		}
		return e, false, nil
	}
	return host.Slot{}, false, fmt.Errorf("the entry changed on each of %d reads (last GID %s)", maxRereads, last)
}

// portNetdev finds the RDMA device's own netdev for a port: Soft-RoCE's
// parent file, else the PCI function's net/ directory (matching dev_port
// to port-1 when the function has several netdevs).
func (s *sysfs) portNetdev(devDir string, port int) string {
	if v, err := s.read(filepath.Join(devDir, "parent")); err == nil && v != "" {
		return v
	}
	netDir := filepath.Join(devDir, "device", "net")
	ents, err := os.ReadDir(netDir)
	if err != nil || len(ents) == 0 {
		return ""
	}
	if len(ents) == 1 {
		return ents[0].Name()
	}
	for _, e := range ents {
		v, err := s.read(filepath.Join(netDir, e.Name(), "dev_port"))
		if err == nil && v == strconv.Itoa(port-1) {
			return e.Name()
		}
	}
	return ""
}

func (s *sysfs) readGID(path string) (gid.GID, error) {
	v, err := s.read(path)
	if err != nil {
		return gid.GID{}, err
	}
	g, err := gid.Parse(v)
	if err != nil {
		return gid.GID{}, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// driver detects device dev's RDMA driver from the driver bound to its
// parent device or its parent attribute (qos.IdentifyDriver).
func (s *sysfs) driver(dev string) qos.DriverInfo {
	base := filepath.Join(s.ibDir(), dev)
	bound := ""
	if link, err := os.Readlink(filepath.Join(base, "device", "driver")); err == nil {
		bound = filepath.Base(link)
	} else if ev, err := s.read(filepath.Join(base, "device", "uevent")); err == nil {
		// A copy of /sys without the driver symlink: the device's
		// uevent names its driver (DRIVER=mlx5_core).
		for _, l := range strings.Split(ev, "\n") {
			if v, ok := strings.CutPrefix(l, "DRIVER="); ok {
				bound = v
			}
		}
	}
	parent, _ := s.read(filepath.Join(base, "parent"))
	return qos.IdentifyDriver(dev, bound, strings.TrimSpace(parent))
}
