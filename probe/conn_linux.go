//go:build linux

package probe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/roce"
)

// Conn is an AF_PACKET socket bound to one netdev whose kernel filter
// passes only RoCE v2 frames (UDP destination port 4791 over IPv4 or IPv6,
// untagged or with one or two tags) of one direction. VLAN tags the netdev
// moved out of the frame are put back, so the frame read is the frame on
// the wire.
//
// The socket is non-blocking and waits in Go's network poller (epoll), as
// a net.Conn does: a Read that waits parks its goroutine and holds no
// thread, so an idle or lightly loaded Conn costs the process nothing
// between frames (a socket waiting in a blocking poll(2) keeps a thread in
// a system call, which the runtime's monitor thread keeps taking its P
// from). Each frame is one recvmsg(2); its VLAN tag and timestamp come in
// the control messages (PACKET_AUXDATA, SO_TIMESTAMPNS).
type Conn struct {
	f         *os.File
	rc        syscall.RawConn
	netdev    string
	drainOnly bool
	closed    atomic.Bool
	timeout   atomic.Int64 // Read's timeout in nanoseconds; 0: none

	rmu    sync.Mutex // held by Read: what follows, up to wmu
	buf    []byte     // vlanLen bytes of room for a tag, then the frame
	oob    []byte
	iov    unix.Iovec
	msg    unix.Msghdr
	readFn func(fd uintptr) bool // one recvmsg into buf; made once (no closure per Read)
	wait   bool                  // readFn reports EAGAIN as "wait for the socket"
	n      int
	rerr   error

	wmu     sync.Mutex // held by Write: what follows
	wframe  []byte
	writeFn func(fd uintptr) bool
	werr    error
}

const (
	// snapLen is the most of a frame a Read returns: a 9000-byte jumbo
	// frame and its headers fit.
	snapLen = 16384
	// vlanLen is the size of a VLAN tag.
	vlanLen = 4
	// rcvBuf is the socket receive buffer asked for (the kernel caps it at
	// net.core.rmem_max, 208 KiB by default, and doubles it): frames that
	// wait to be read take their size plus the kernel's overhead from it.
	rcvBuf = 2 << 20
	// sizeofAuxdata is the size of struct tpacket_auxdata.
	sizeofAuxdata = int(unsafe.Sizeof(unix.TpacketAuxdata{}))
)

// DefaultReadTimeout is how long a Read waits for a frame before it
// returns nil (SetReadTimeout changes it).
const DefaultReadTimeout = 50 * time.Millisecond

// Open opens a Conn on netdev that captures every RoCE v2 frame of dir.
// Frames wait for Read in the socket's receive buffer; the Conn holds one
// 16 KiB buffer of its own.
func Open(netdev string, dir Direction) (*Conn, error) { return OpenWith(netdev, dir, OpenOptions{}) }

// OpenWith is Open with options.
func OpenWith(netdev string, dir Direction, o OpenOptions) (*Conn, error) {
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil, &NetdevError{Netdev: netdev, Err: errors.New("no such netdev")}
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, &NetdevError{Netdev: netdev, Err: errors.New("is down")}
	}
	// Protocol 0: the socket receives nothing until bind names one, after
	// the filter is attached, so it never holds a frame its filter did not
	// pass.
	typ := unix.SOCK_RAW | unix.SOCK_CLOEXEC
	if !o.DrainOnly {
		typ |= unix.SOCK_NONBLOCK // in the network poller
	}
	fd, err := unix.Socket(unix.AF_PACKET, typ, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, &PermissionError{Netdev: netdev, Err: err}
		}
		return nil, fmt.Errorf("probe: opening a raw socket on %s: %w", netdev, err)
	}
	fail := func(what string, err error) (*Conn, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("probe: %s on %s: %w", what, netdev, err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_AUXDATA, 1); err != nil {
		return fail("asking for VLAN tags (PACKET_AUXDATA)", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return fail("asking for receive timestamps (SO_TIMESTAMPNS)", err)
	}
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, rcvBuf) // capped by the kernel; never fails for a size
	if dir == Incoming {
		// The filter refuses outgoing frames anyway; told so, the kernel
		// does not even clone each frame the host sends for this socket
		// (Linux 4.20 and later; older kernels refuse the option).
		unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}
	prog, err := bpf.Assemble(filter(dir, o.Select))
	if err != nil {
		return fail("attaching the RoCE v2 filter", err)
	}
	ins := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		ins[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}); err != nil {
		return fail("attaching the RoCE v2 filter", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		return fail("binding the raw socket", err)
	}
	// os.NewFile puts a non-blocking socket in the network poller and
	// leaves a blocking one out of it.
	f := os.NewFile(uintptr(fd), "packet:"+netdev)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("probe: raw socket on %s: %w", netdev, err)
	}
	c := &Conn{f: f, rc: rc, netdev: netdev, drainOnly: o.DrainOnly, buf: make([]byte, vlanLen+snapLen),
		oob: make([]byte, unix.CmsgSpace(sizeofAuxdata)+unix.CmsgSpace(int(unsafe.Sizeof(unix.Timespec{}))))}
	c.timeout.Store(int64(DefaultReadTimeout))
	c.iov.Base = &c.buf[vlanLen]
	c.iov.SetLen(snapLen)
	c.msg.Iov = &c.iov
	c.msg.SetIovlen(1)
	c.msg.Control = &c.oob[0]
	// recvmsg and sendto never block (MSG_DONTWAIT, whatever the socket's
	// mode): they are raw system calls, which do not hand the P back to
	// the scheduler and wake its monitor thread as a blocking one must.
	c.readFn = func(fd uintptr) bool {
		c.msg.SetControllen(len(c.oob))
		c.msg.Flags = 0
		n, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.msg)), unix.MSG_TRUNC|unix.MSG_DONTWAIT)
		c.n, c.rerr = int(n), nil
		if errno != 0 {
			c.rerr = errno
		}
		return !c.wait || (errno != unix.EAGAIN && errno != unix.EINTR)
	}
	c.writeFn = func(fd uintptr) bool {
		_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, fd, uintptr(unsafe.Pointer(unsafe.SliceData(c.wframe))), uintptr(len(c.wframe)),
			unix.MSG_DONTWAIT, 0, 0)
		c.werr = nil
		if errno != 0 {
			c.werr = errno
		}
		// Out of the poller nothing can wait for room: a full send
		// buffer is the Write's error.
		return c.drainOnly || (errno != unix.EAGAIN && errno != unix.EINTR)
	}
	return c, nil
}

// htons is v in network byte order, as the kernel takes sll_protocol.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// SetReadTimeout sets how long a Read waits for a frame (DefaultReadTimeout
// unless changed); 0 makes Read wait until a frame comes or the Conn is
// closed.
func (c *Conn) SetReadTimeout(d time.Duration) { c.timeout.Store(int64(max(d, 0))) }

// Read returns the next captured frame, or nil and no error when none came
// within the read timeout (50 ms unless SetReadTimeout changed it; callers
// loop and check their deadline), and the time the kernel received it. The
// frame is a copy the caller owns.
func (c *Conn) Read() ([]byte, time.Time, error) {
	frame, at, err := c.ReadZeroCopy()
	if frame != nil {
		frame = append([]byte(nil), frame...)
	}
	return frame, at, err
}

// ReadZeroCopy is Read without the copy: the frame is the Conn's buffer,
// valid until the next Read, ReadZeroCopy or Drain.
func (c *Conn) ReadZeroCopy() ([]byte, time.Time, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.closed.Load() {
		return nil, time.Time{}, ErrClosed
	}
	if c.drainOnly {
		return nil, time.Time{}, fmt.Errorf("probe: reading from %s: %w", c.netdev, ErrDrainOnly)
	}
	var deadline time.Time
	if d := c.timeout.Load(); d > 0 {
		deadline = time.Now().Add(time.Duration(d))
	}
	if err := c.f.SetReadDeadline(deadline); err != nil {
		return nil, time.Time{}, c.readError(err)
	}
	c.wait = true
	if err := c.rc.Read(c.readFn); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, time.Time{}, nil
		}
		return nil, time.Time{}, c.readError(err)
	}
	if c.rerr != nil {
		return nil, time.Time{}, c.readError(c.rerr)
	}
	frame, at := c.received()
	return frame, at, nil
}

// Drain hands fn the frames waiting on the socket, at most max of them
// (max > 0), without waiting for more, and returns how many it handed:
// max means more may be waiting. The frame is the Conn's buffer, valid
// during the call. A sender that reads its replies this way, a batch at a
// time from a loop that wakes anyway, from a Conn opened with DrainOnly,
// costs no wake-up per reply; the receive time is still the kernel's. The
// bound keeps a flood from holding the caller: frames arriving faster than
// they are drained would otherwise never leave the socket empty.
func (c *Conn) Drain(max int, fn func(frame []byte, at time.Time)) (int, error) {
	if max <= 0 {
		return 0, fmt.Errorf("probe: draining %s: max %d: want at least 1 frame", c.netdev, max)
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if !c.drainOnly {
		if err := c.f.SetReadDeadline(time.Time{}); err != nil { // one a Read left must not stop it
			return 0, c.readError(err)
		}
	}
	c.wait = false
	for n := 0; ; n++ {
		if c.closed.Load() {
			return n, ErrClosed
		}
		if n == max {
			return n, nil
		}
		if err := c.rc.Read(c.readFn); err != nil {
			return n, c.readError(err)
		}
		switch c.rerr {
		case nil:
		case unix.EAGAIN, unix.EINTR:
			return n, nil
		default:
			return n, c.readError(c.rerr)
		}
		fn(c.received())
	}
}

// received returns the frame recvmsg put in buf, its VLAN tag put back,
// and its receive time.
func (c *Conn) received() ([]byte, time.Time) {
	n := min(c.n, snapLen) // MSG_TRUNC: n is the frame's length, which may exceed the buffer
	frame := c.buf[vlanLen : vlanLen+n]
	var at time.Time
	for oob := c.oob[:min(int(c.msg.Controllen), len(c.oob))]; len(oob) >= unix.SizeofCmsghdr; {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Len < unix.SizeofCmsghdr || int(h.Len) > len(oob) {
			break
		}
		data := oob[unix.CmsgLen(0):h.Len]
		switch {
		case h.Level == unix.SOL_PACKET && h.Type == unix.PACKET_AUXDATA && len(data) >= sizeofAuxdata:
			aux := (*unix.TpacketAuxdata)(unsafe.Pointer(&data[0]))
			if aux.Status&unix.TP_STATUS_VLAN_VALID != 0 && n >= 12 {
				tpid := uint16(unix.ETH_P_8021Q)
				if aux.Status&unix.TP_STATUS_VLAN_TPID_VALID != 0 && aux.Vlan_tpid != 0 {
					tpid = aux.Vlan_tpid
				}
				// The tag goes back between the MAC addresses and the
				// EtherType, into the room before the frame.
				copy(c.buf[0:12], c.buf[vlanLen:vlanLen+12])
				binary.BigEndian.PutUint16(c.buf[12:], tpid)
				binary.BigEndian.PutUint16(c.buf[14:], aux.Vlan_tci)
				frame = c.buf[0 : vlanLen+n]
			}
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= int(unsafe.Sizeof(unix.Timespec{})):
			ts := (*unix.Timespec)(unsafe.Pointer(&data[0]))
			at = time.Unix(int64(ts.Sec), int64(ts.Nsec))
		}
		oob = oob[min(unix.CmsgSpace(int(h.Len)-unix.CmsgLen(0)), len(oob)):]
	}
	if at.IsZero() {
		at = time.Now()
	}
	return frame, at
}

func (c *Conn) readError(err error) error {
	if c.closed.Load() {
		return ErrClosed
	}
	return fmt.Errorf("probe: reading from %s: %w", c.netdev, err)
}

// Write sends one frame out of the netdev, through its qdisc. A full
// socket send buffer makes it wait in the network poller (an error for a
// DrainOnly Conn).
func (c *Conn) Write(frame []byte) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if len(frame) == 0 {
		return fmt.Errorf("probe: sending on %s: empty frame", c.netdev)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wframe = frame
	err := c.rc.Write(c.writeFn)
	c.wframe = nil
	if err == nil {
		err = c.werr
	}
	if err != nil {
		if c.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("probe: sending on %s: %w", c.netdev, err)
	}
	return nil
}

// Close releases the socket. A Read or Write waiting on it returns
// ErrClosed; Close returns once they have.
func (c *Conn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return c.f.Close()
}

// filter returns the classic BPF program of a Conn: the packet type check
// for dir, then filterRoCE.
func filter(dir Direction, sel Selection) []bpf.Instruction {
	var p []bpf.Instruction
	p = append(p, bpf.LoadExtension{Num: bpf.ExtType})
	if dir == Outgoing {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipTrue: 1})
	} else {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.PACKET_OUTGOING, SkipTrue: 1})
	}
	p = append(p, bpf.RetConstant{Val: 0})
	return append(p, filterRoCE(sel)...)
}

// filterRoCE is one block per encapsulation (untagged, one tag, two tags;
// IPv4 without options or IPv6) that accepts UDP to port 4791 as sel says.
// VLAN tags the driver moved into the skb's metadata are not in the data
// the filter sees, so the untagged block matches those frames.
func filterRoCE(sel Selection) []bpf.Instruction {
	var p []bpf.Instruction
	for tags := 0; tags <= 2; tags++ {
		for _, v6 := range []bool{false, true} {
			p = append(p, filterBlock(tags, v6, sel)...)
		}
	}
	return append(p, bpf.RetConstant{Val: 0})
}

// filterBlock decides on a frame with tags inline VLAN tags and a RoCE v2
// packet of the family, as sel says; any other frame falls through to
// whatever follows the block.
func filterBlock(tags int, v6 bool, sel Selection) []bpf.Instruction {
	const accept, reject = 0xffff, 0
	type check struct {
		load bpf.Instruction
		vals []uint32 // any of these passes
	}
	var cs []check
	off := uint32(12)
	for i := 0; i < tags; i++ {
		// The TPIDs roce.WalkFrame reads as tags.
		cs = append(cs, check{bpf.LoadAbsolute{Off: off, Size: 2}, []uint32{roce.TPIDDot1Q, roce.TPIDDot1AD, roce.TPIDQinQ}})
		off += 4
	}
	ip := off + 2
	var udp uint32
	if v6 {
		udp = ip + 40
		cs = append(cs,
			check{bpf.LoadAbsolute{Off: off, Size: 2}, []uint32{0x86dd}},
			check{bpf.LoadAbsolute{Off: ip + 6, Size: 1}, []uint32{17}},
			check{bpf.LoadAbsolute{Off: udp + 2, Size: 2}, []uint32{uint32(roce.UDPPort)}})
	} else {
		udp = ip + 20
		cs = append(cs,
			check{bpf.LoadAbsolute{Off: off, Size: 2}, []uint32{0x0800}},
			check{bpf.LoadAbsolute{Off: ip, Size: 1}, []uint32{0x45}},
			check{bpf.LoadAbsolute{Off: ip + 9, Size: 1}, []uint32{17}},
			check{bpf.LoadAbsolute{Off: udp + 2, Size: 2}, []uint32{uint32(roce.UDPPort)}})
	}
	// The payload's kind byte, behind UDP, BTH and DETH.
	kind := udp + 8 + bthLen + dethLen + payloadKindOff
	var tail []bpf.Instruction
	switch sel {
	case Replies: // a frame too short to hold the byte stops the program: rejected
		tail = []bpf.Instruction{
			bpf.LoadAbsolute{Off: kind, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: uint32(KindReply), SkipTrue: 1},
			bpf.RetConstant{Val: accept},
			bpf.RetConstant{Val: reject},
		}
	case NoReplies: // the exact complement: a frame too short to hold the byte is accepted
		tail = []bpf.Instruction{
			bpf.LoadExtension{Num: bpf.ExtLen},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: kind, SkipTrue: 1},
			bpf.RetConstant{Val: accept},
			bpf.LoadAbsolute{Off: kind, Size: 1},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(KindReply), SkipTrue: 1},
			bpf.RetConstant{Val: accept},
			bpf.RetConstant{Val: reject},
		}
	default:
		tail = []bpf.Instruction{bpf.RetConstant{Val: accept}}
	}
	// Size: each check is a load plus one jump per value; then the tail.
	n := len(tail)
	for _, c := range cs {
		n += 1 + len(c.vals)
	}
	var p []bpf.Instruction
	for _, c := range cs {
		p = append(p, c.load)
		for j, v := range c.vals {
			last := j == len(c.vals)-1
			// Instructions left in the block after this jump: the fall-through target is the next block.
			rest := n - len(p) - 1
			if last {
				p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: v, SkipTrue: uint8(rest)})
			} else {
				// Equal: skip the remaining jumps of this check.
				p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(c.vals) - j - 1)})
			}
		}
	}
	return append(p, tail...)
}

// CheckRawSocket opens and closes an AF_PACKET socket, so a missing
// CAP_NET_RAW (a *PermissionError) is known before any output is printed.
func CheckRawSocket(netdev string) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return &PermissionError{Netdev: netdev, Err: err}
		}
		return fmt.Errorf("probe: opening a raw socket on %s: %w", netdev, err)
	}
	unix.Close(fd)
	return nil
}
