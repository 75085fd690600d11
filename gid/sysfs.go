package gid

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// DefaultSysfsRoot is where sysfs is mounted.
const DefaultSysfsRoot = "/sys"

// maxRereads bounds how often an entry that changes under the reader is
// read again before ReadPort gives up.
const maxRereads = 8

// Sysfs reads RDMA devices and GID tables below a sysfs root. The zero
// value reads /sys; tests point Root at a fixture tree with the same
// layout (class/infiniband/<dev>/ports/<p>/...). Reads need no privileges.
type Sysfs struct {
	// Root is the sysfs mount point; "" means DefaultSysfsRoot.
	Root string

	// readFile replaces the file reader in tests (to simulate a table
	// that changes between reads); nil reads the file.
	readFile func(path string) ([]byte, error)
}

// Device is one RDMA device and its ports.
type Device struct {
	Name  string `json:"device"`
	Ports []Port `json:"ports"`
}

// Port is one port of an RDMA device with its GID table.
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

func (s *Sysfs) root() string {
	if s == nil || s.Root == "" {
		return DefaultSysfsRoot
	}
	return s.Root
}

func (s *Sysfs) ibDir() string { return filepath.Join(s.root(), "class", "infiniband") }

// ErrNoDevices is returned by Devices and ReadAll when the machine has no
// RDMA device (no /sys/class/infiniband or an empty one).
var ErrNoDevices = errors.New("gid: no RDMA devices (/sys/class/infiniband is missing or empty)")

// Devices lists the RDMA device names, sorted.
func (s *Sysfs) Devices() ([]string, error) {
	ents, err := os.ReadDir(s.ibDir())
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNoDevices
		}
		return nil, fmt.Errorf("gid: listing RDMA devices: %w", err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) == 0 {
		return nil, ErrNoDevices
	}
	sort.Strings(names)
	return names, nil
}

// ReadAll reads every device and port. Ports are read concurrently.
func (s *Sysfs) ReadAll() ([]Device, error) {
	names, err := s.Devices()
	if err != nil {
		return nil, err
	}
	devs := make([]Device, len(names))
	type job struct{ d, p, port int }
	var jobs []job
	for i, n := range names {
		ports, err := s.Ports(n)
		if err != nil {
			return nil, err
		}
		devs[i] = Device{Name: n, Ports: make([]Port, len(ports))}
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
			devs[j.d].Ports[j.p], errs[k] = s.ReadPort(names[j.d], j.port)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return devs, nil
}

// Ports lists a device's port numbers, ascending.
func (s *Sysfs) Ports(dev string) ([]int, error) {
	if err := checkName("device", dev); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(filepath.Join(s.ibDir(), dev, "ports"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("gid: RDMA device %q not found in %s", dev, s.ibDir())
		}
		return nil, fmt.Errorf("gid: device %s: listing ports: %w", dev, err)
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
		return fmt.Errorf("gid: %s name %q is not valid: want a name from /sys/class/infiniband", what, v)
	}
	return nil
}

// read returns a sysfs file's content without the trailing newline.
func (s *Sysfs) read(path string) (string, error) {
	if s.readFile != nil {
		b, err := s.readFile(path)
		return string(bytes.TrimRight(b, "\n")), err
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
	return string(bytes.TrimRight(buf[:n], "\n")), nil
}

// ReadPort reads one port: state, link layer, netdev and every GID slot.
func (s *Sysfs) ReadPort(dev string, port int) (Port, error) {
	if err := checkName("device", dev); err != nil {
		return Port{}, err
	}
	if port < 1 {
		return Port{}, fmt.Errorf("gid: port %d is not valid: want a port number ≥ 1", port)
	}
	devDir := filepath.Join(s.ibDir(), dev)
	pdir := filepath.Join(devDir, "ports", strconv.Itoa(port))
	p := Port{Device: dev, Port: port}
	var err error
	if p.State, err = s.read(filepath.Join(pdir, "state")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Port{}, fmt.Errorf("gid: %s port %d not found in %s", dev, port, s.ibDir())
		}
		return Port{}, fmt.Errorf("gid: %s port %d: %w", dev, port, err)
	}
	p.State = stripNumber(p.State)
	p.PhysState, _ = s.read(filepath.Join(pdir, "phys_state"))
	p.PhysState = stripNumber(p.PhysState)
	p.LinkLayer, _ = s.read(filepath.Join(pdir, "link_layer"))
	p.Netdev = s.portNetdev(devDir, port)

	n, err := s.tableLen(pdir)
	if err != nil {
		return Port{}, fmt.Errorf("gid: %s port %d: %w", dev, port, err)
	}
	ib := p.LinkLayer == "InfiniBand"
	var files portFiles = pathFiles{s, pdir}
	if s.readFile == nil {
		ff, err := openPortFiles(pdir)
		if err != nil {
			return Port{}, fmt.Errorf("gid: %s port %d: %w", dev, port, err)
		}
		files = ff
	}
	defer files.close()
	p.Entries = make([]Entry, n)
	seen := map[Type]bool{}
	for i := 0; i < n; i++ {
		e, err := s.readEntry(files, i, ib)
		if err != nil {
			return Port{}, fmt.Errorf("gid: %s port %d index %d: %w", dev, port, i, err)
		}
		e.Device, e.Port, e.Index = dev, port, i
		if !e.Empty {
			seen[e.Type] = true
		}
		p.Entries[i] = e
	}
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
	return p, nil
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

// stripNumber turns "4: ACTIVE" into "ACTIVE".
func stripNumber(s string) string {
	if i := strings.Index(s, ": "); i >= 0 {
		return s[i+2:]
	}
	return s
}

// tableLen counts gids/<n> files (sysfs creates one per table slot).
func (s *Sysfs) tableLen(pdir string) (int, error) {
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
	readGID(i int, again bool) (GID, error)
	// readAttr reads gid_attrs/<kind>/i, kind "types" or "ndevs".
	readAttr(kind string, i int) (string, error)
	close()
}

// pathFiles reads by path through Sysfs.read (used with the test hook).
type pathFiles struct {
	s    *Sysfs
	pdir string
}

func (f pathFiles) readGID(i int, _ bool) (GID, error) {
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
	return bytes.TrimRight(f.buf[:n], "\n"), nil
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

func (f *fdFiles) readGID(i int, again bool) (GID, error) {
	name := strconv.Itoa(i)
	path := func() string { return filepath.Join(f.pdir, "gids", name) }
	if !again || f.cur < 0 || f.curIdx != i {
		if f.cur >= 0 {
			unix.Close(f.cur)
			f.cur = -1
		}
		fd, err := openat(f.gids, name)
		if err != nil {
			return GID{}, &fs.PathError{Op: "open", Path: path(), Err: err}
		}
		f.cur, f.curIdx = fd, i
	}
	n, err := pread(f.cur, f.buf[:])
	if err != nil {
		return GID{}, &fs.PathError{Op: "read", Path: path(), Err: err}
	}
	g, ok := parseSysfsGID(bytes.TrimRight(f.buf[:n], "\n"))
	if !ok {
		v, err := Parse(string(bytes.TrimSpace(f.buf[:n])))
		if err != nil {
			return GID{}, fmt.Errorf("%s: %w", path(), err)
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
func parseSysfsGID(b []byte) (GID, bool) {
	var g GID
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

// readEntry reads gids/i, then types/i and ndevs/i, then gids/i again; if
// the GID changed, the slot was rewritten in between and everything is
// read again, so type and netdev always belong to the GID reported.
func (s *Sysfs) readEntry(f portFiles, i int, ib bool) (Entry, error) {
	var last GID
	for try := 0; try < maxRereads; try++ {
		g1, err := f.readGID(i, false)
		if err != nil {
			return Entry{}, err
		}
		if g1.IsZero() {
			// An empty slot: types and ndevs fail with EINVAL.
			return Entry{Empty: true}, nil
		}
		e := Entry{GID: g1, Kind: g1.Kind(), IP: addrOf(g1)}
		ts, terr := f.readAttr("types", i)
		nd, nerr := f.readAttr("ndevs", i)
		g2, err := f.readGID(i, true)
		if err != nil {
			return Entry{}, err
		}
		if g2 != g1 {
			last = g2
			continue
		}
		// Unreadable types/N is IB/RoCE v1, as rdma-core's
		// query_sysfs_gid_type treats it.
		switch {
		case terr != nil || ts == "IB/RoCE v1" || ts == "RoCE v1":
			e.Type = TypeRoCEv1
			if ib {
				e.Type = TypeIB
			}
		default:
			t, err := ParseType(ts)
			if err != nil {
				return Entry{}, fmt.Errorf("gid_attrs/types/%d: %w", i, err)
			}
			e.Type = t
		}
		if nerr == nil {
			e.Netdev = nd
		}
		return e, nil
	}
	return Entry{}, fmt.Errorf("the entry changed on each of %d reads (last GID %s)", maxRereads, last)
}

// portNetdev finds the RDMA device's own netdev for a port: Soft-RoCE's
// parent file, else the PCI function's net/ directory (matching dev_port
// to port-1 when the function has several netdevs).
func (s *Sysfs) portNetdev(devDir string, port int) string {
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

func (s *Sysfs) readGID(path string) (GID, error) {
	v, err := s.read(path)
	if err != nil {
		return GID{}, err
	}
	g, err := Parse(v)
	if err != nil {
		return GID{}, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}
