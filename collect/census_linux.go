package collect

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/internal/errno"
)

// censusDumpHook, when set (lab tests), is given the bytes of every dump
// reply as read from the socket, to keep as fixtures.
var censusDumpHook func(dev string, d census.Dump, reply []byte)

func readCensus(opt CensusOptions) (*census.Census, error) {
	h, err := netlink.NewHandle(unix.NETLINK_RDMA)
	if err != nil && len(opt.Devices) > 0 {
		return nil, fmt.Errorf("RDMA device %q: cannot list RDMA devices: NETLINK_RDMA socket: %w (is ib_core loaded?)", opt.Devices[0], err)
	}
	if err != nil {
		return &census.Census{QPs: []census.QP{}, CMIDs: []census.CMID{}, Sources: []census.Source{{
			Source: "RDMA netlink", Status: census.StatusNotExposed,
			Reason: fmt.Sprintf("cannot open a NETLINK_RDMA socket: %v (is ib_core loaded?)", err)}}}, nil
	}
	links, err := h.RdmaLinkList()
	h.Close()
	if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
		return &census.Census{QPs: []census.QP{}, CMIDs: []census.CMID{}, Sources: []census.Source{{
			Source: "RDMA netlink", Status: census.StatusError, Reason: fmt.Sprintf("listing RDMA devices (RDMA_NLDEV_CMD_GET): %v", err)}}}, nil
	}
	type dev struct {
		name  string
		index uint32
	}
	var devs []dev
	var names []string
	for _, l := range links {
		names = append(names, l.Attrs.Name)
		if opt.Devices == nil || contains(opt.Devices, l.Attrs.Name) {
			devs = append(devs, dev{l.Attrs.Name, l.Attrs.Index})
		}
	}
	for _, d := range opt.Devices {
		if !contains(names, d) {
			sort.Strings(names)
			have := "the host has none"
			if len(names) > 0 {
				have = "want one of " + strings.Join(names, ", ")
			}
			return nil, fmt.Errorf("RDMA device %q: no such device in RDMA netlink's list (%s)", d, have)
		}
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].name < devs[j].name })
	dumps := []census.Dump{census.DumpQP, census.DumpCMID}
	if opt.Raw {
		dumps = append(dumps, census.DumpQPRaw)
	}
	c := &census.Census{QPs: []census.QP{}, CMIDs: []census.CMID{}}
	if opt.Raw {
		c.RawQPs = []census.RawQP{}
	}
	for _, d := range devs {
		for _, dump := range dumps {
			got, err := dumpDevice(d.index, dump)
			if censusDumpHook != nil && got.reply != nil {
				censusDumpHook(d.name, dump, got.reply)
			}
			src := census.Source{Device: d.name, Source: dump.String(), Status: census.StatusRead}
			if err != nil {
				src.Status, src.Reason = dumpError(dump, err)
			}
			c.Sources = append(c.Sources, src)
			if got.census == nil {
				continue
			}
			// What was decoded before an error is kept: a dump that
			// failed part-way still listed its first QPs.
			for _, q := range got.census.QPs {
				if q.Device == d.name {
					c.QPs = append(c.QPs, q)
				}
			}
			for _, id := range got.census.CMIDs {
				if id.Device == d.name {
					c.CMIDs = append(c.CMIDs, id)
				}
			}
			for _, r := range got.census.RawQPs {
				if r.Device == d.name {
					c.RawQPs = append(c.RawQPs, r)
				}
			}
		}
	}
	fillComms(c, opt.ProcRoot)
	c.Sort()
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// dumpError is a failed dump's status and reason, saying plainly what
// the kernel needs (drivers/infiniband/core/nldev.c).
func dumpError(d census.Dump, err error) (string, string) {
	var ke *census.KernelError
	if errors.As(err, &ke) {
		switch {
		case ke.Errno == int(unix.EPERM) || ke.Errno == int(unix.EACCES):
			return census.StatusNotPermitted, fmt.Sprintf("%s needs CAP_NET_ADMIN (the kernel answered %s: nldev.c marks the raw dumps RDMA_NL_ADMIN_PERM); run as root to read it", d, errno.Name(unix.Errno(ke.Errno)))
		case d == census.DumpQPRaw && (ke.Errno == int(unix.EINVAL) || ke.Errno == int(unix.EOPNOTSUPP)):
			return census.StatusNotExposed, fmt.Sprintf("the driver gives no raw QP context, or the kernel has no raw dumps (the kernel answered %s: nldev.c fill_res_qp_raw_entry without the driver's fill_res_qp_entry_raw)", errno.Name(unix.Errno(ke.Errno)))
		case ke.Errno == int(unix.EINVAL) || ke.Errno == int(unix.EOPNOTSUPP):
			return census.StatusNotExposed, fmt.Sprintf("this kernel does not answer %s (%s)", d, errno.Name(unix.Errno(ke.Errno)))
		}
		return census.StatusError, fmt.Sprintf("%s: the kernel answered %s", d, errno.Name(unix.Errno(ke.Errno)))
	}
	return census.StatusError, fmt.Sprintf("%s: %v", d, err)
}

// dumped is one dump's reply: the bytes as read and what they decode to.
type dumped struct {
	reply  []byte
	census *census.Census
}

// dumpTimeout bounds the wait for the kernel's next reply datagram.
const dumpTimeout = 5 * time.Second

// dumpDevice runs one resource dump of one device on a NETLINK_RDMA
// socket of its own and decodes the reply (census.Decode).
func dumpDevice(index uint32, d census.Dump) (dumped, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_RDMA)
	if err != nil {
		return dumped{}, fmt.Errorf("NETLINK_RDMA socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return dumped{}, fmt.Errorf("binding the NETLINK_RDMA socket: %w", err)
	}
	tv := unix.NsecToTimeval(dumpTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return dumped{}, err
	}
	const seq = 1
	if err := unix.Sendto(fd, d.Request(index, seq), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return dumped{}, fmt.Errorf("sending %s: %w", d, err)
	}
	var reply bytes.Buffer
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) {
				err = fmt.Errorf("no reply within %v", dumpTimeout)
			}
			return dumped{reply: reply.Bytes()}, fmt.Errorf("reading %s: %w", d, err)
		}
		if n > len(buf) {
			return dumped{reply: reply.Bytes()}, fmt.Errorf("reading %s: a datagram of %d bytes, larger than the buffer", d, n)
		}
		reply.Write(buf[:n])
		if lastOfDump(buf[:n]) {
			break
		}
	}
	c, err := census.Decode(reply.Bytes())
	return dumped{reply: reply.Bytes(), census: c}, err
}

// lastOfDump reports whether a datagram ends the dump: it holds an
// NLMSG_DONE or an NLMSG_ERROR (or is not netlink at all).
func lastOfDump(b []byte) bool {
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b))
		typ := binary.NativeEndian.Uint16(b[4:])
		if typ == unix.NLMSG_DONE || typ == unix.NLMSG_ERROR {
			return true
		}
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return true
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return len(b) != 0
}

// fillComms gives each process owner its command, /proc/PID/comm (what
// iproute2's rdma tool prints: lib/fs.c get_task_name), and records what
// could not be known: owners whose process exited meanwhile, and QPs and
// rdma_cm IDs without an owner (another PID namespace's processes).
func fillComms(c *census.Census, procRoot string) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	cache := map[int]string{}
	var gone []int
	comm := func(pid int) string {
		if s, ok := cache[pid]; ok {
			return s
		}
		b, err := os.ReadFile(procRoot + "/" + strconv.Itoa(pid) + "/comm")
		s := strings.TrimSuffix(string(b), "\n")
		if err != nil {
			s = ""
			gone = append(gone, pid)
		}
		cache[pid] = s
		return s
	}
	hidden := 0
	for i := range c.QPs {
		q := &c.QPs[i]
		switch {
		case q.Owner == census.OwnerProcess:
			q.Comm = comm(q.PID)
		case q.Owner == "":
			hidden++
		}
	}
	for i := range c.CMIDs {
		id := &c.CMIDs[i]
		switch {
		case id.Owner == census.OwnerProcess:
			id.Comm = comm(id.PID)
		case id.Owner == "":
			hidden++
		}
	}
	if len(gone) > 0 {
		sort.Ints(gone)
		c.Sources = append(c.Sources, census.Source{Source: procRoot + "/PID/comm", Status: census.StatusError,
			Reason: fmt.Sprintf("no command for PID %s: the process exited after the dump", joinInts(gone))})
	}
	if hidden > 0 {
		c.Sources = append(c.Sources, census.Source{Source: "owner PIDs", Status: census.StatusNotExposed,
			Reason: fmt.Sprintf("%d QPs and rdma_cm IDs come without an owner: the kernel gives a PID only when the process is visible from the reader's PID namespace (nldev.c fill_res_name_pid); run in the host's PID namespace to see them", hidden)})
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
