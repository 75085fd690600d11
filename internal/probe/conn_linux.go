//go:build linux

package probe

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Conn is an AF_PACKET socket bound to one netdev (gopacket's afpacket,
// TPACKET_V2 ring, no cgo) whose kernel filter passes only RoCE v2 frames
// (UDP destination port 4791 over IPv4 or IPv6, untagged or with one or two
// tags) of one direction. VLAN tags the netdev moved out of the frame are
// put back, so the frame read is the frame on the wire.
type Conn struct {
	tp     *afpacket.TPacket
	netdev string
	mu     sync.Mutex // held by Read and Close: Close waits for a Read in progress
	wmu    sync.Mutex // held by Write and Close
	closed bool       // guarded by both mu and wmu
}

// The capture ring: 16 blocks of 128 KiB, each frame slot 16 KiB (a
// 9000-byte jumbo frame plus headers): 2 MiB and 128 frames.
const (
	frameSize  = 16384
	blockSize  = 128 << 10
	numBlocks  = 16
	ringFrames = numBlocks * blockSize / frameSize
)

// pollTimeout bounds how long one Read blocks, so Close is never late.
const pollTimeout = 50 * time.Millisecond

// Open opens a Conn on netdev. The ring takes 2 MiB, whatever the traffic.
func Open(netdev string, dir Direction) (*Conn, error) {
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil, &NetdevError{Netdev: netdev, Err: errors.New("no such netdev")}
	}
	if ifi.Flags&net.FlagUp == 0 {
		return nil, &NetdevError{Netdev: netdev, Err: errors.New("is down")}
	}
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(netdev),
		afpacket.TPacketVersion2,
		afpacket.OptFrameSize(frameSize),
		afpacket.OptBlockSize(blockSize),
		afpacket.OptNumBlocks(numBlocks),
		afpacket.OptAddVLANHeader(true),
		afpacket.OptPollTimeout(pollTimeout),
	)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, &PermissionError{Netdev: netdev, Err: err}
		}
		return nil, fmt.Errorf("probe: opening a raw socket on %s: %w", netdev, err)
	}
	prog, err := bpf.Assemble(filter(dir))
	if err == nil {
		err = tp.SetBPF(prog)
	}
	if err != nil {
		tp.Close()
		return nil, fmt.Errorf("probe: attaching the RoCE v2 filter on %s: %w", netdev, err)
	}
	// Frames that arrived between binding the socket and attaching the
	// filter (IPv6 router solicitations on a netdev just brought up, say)
	// sit in the ring unfiltered: drop them, so a Conn only ever returns
	// frames its filter passed. The ring holds at most ringFrames frames;
	// the loop ends at the first poll timeout.
	for i := 0; i < ringFrames; i++ {
		if _, _, err := tp.ZeroCopyReadPacketData(); err != nil {
			break
		}
	}
	return &Conn{tp: tp, netdev: netdev}, nil
}

// Read returns the next captured frame, or nil and no error when none came
// within about 50 ms (callers loop and check their deadline). The frame is
// a copy the caller owns.
func (c *Conn) Read() ([]byte, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, time.Time{}, ErrClosed
	}
	data, ci, err := c.tp.ReadPacketData()
	if errors.Is(err, afpacket.ErrTimeout) {
		return nil, time.Time{}, nil
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("probe: reading from %s: %w", c.netdev, err)
	}
	return data, ci.Timestamp, nil
}

// Write sends one frame out of the netdev, through its qdisc.
func (c *Conn) Write(frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if err := c.tp.WritePacketData(frame); err != nil {
		return fmt.Errorf("probe: sending on %s: %w", c.netdev, err)
	}
	return nil
}

// Close releases the socket and its ring. It waits for a Read in
// progress (at most about 50 ms).
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.closed {
		c.closed = true
		c.tp.Close()
	}
	return nil
}

// filter returns the classic BPF program of a Conn: the packet type check
// for dir, then one block per encapsulation (untagged, one tag, two tags;
// IPv4 without options or IPv6) that accepts UDP to port 4791. VLAN tags
// the driver moved into the skb's metadata are not in the data the filter
// sees, so the untagged block matches those frames.
func filter(dir Direction) []bpf.Instruction {
	const reject = 0
	var p []bpf.Instruction
	p = append(p, bpf.LoadExtension{Num: bpf.ExtType})
	if dir == Outgoing {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.PACKET_OUTGOING, SkipTrue: 1})
	} else {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: unix.PACKET_OUTGOING, SkipTrue: 1})
	}
	p = append(p, bpf.RetConstant{Val: reject})
	for tags := 0; tags <= 2; tags++ {
		for _, v6 := range []bool{false, true} {
			p = append(p, filterBlock(tags, v6)...)
		}
	}
	return append(p, bpf.RetConstant{Val: reject})
}

// filterBlock accepts the frame if it has tags inline VLAN tags and a
// RoCE v2 packet of the family; otherwise it falls through to whatever
// follows it.
func filterBlock(tags int, v6 bool) []bpf.Instruction {
	type check struct {
		load bpf.Instruction
		vals []uint32 // any of these passes
	}
	var cs []check
	off := uint32(12)
	for i := 0; i < tags; i++ {
		cs = append(cs, check{bpf.LoadAbsolute{Off: off, Size: 2}, []uint32{0x8100, 0x88a8}})
		off += 4
	}
	ip := off + 2
	if v6 {
		cs = append(cs,
			check{bpf.LoadAbsolute{Off: off, Size: 2}, []uint32{0x86dd}},
			check{bpf.LoadAbsolute{Off: ip + 6, Size: 1}, []uint32{17}},
			check{bpf.LoadAbsolute{Off: ip + 40 + 2, Size: 2}, []uint32{RoCEv2Port}})
	} else {
		cs = append(cs,
			check{bpf.LoadAbsolute{Off: off, Size: 2}, []uint32{0x0800}},
			check{bpf.LoadAbsolute{Off: ip, Size: 1}, []uint32{0x45}},
			check{bpf.LoadAbsolute{Off: ip + 9, Size: 1}, []uint32{17}},
			check{bpf.LoadAbsolute{Off: ip + 20 + 2, Size: 2}, []uint32{RoCEv2Port}})
	}
	// Size: each check is a load plus one jump per value; then accept.
	n := 1
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
	return append(p, bpf.RetConstant{Val: 0xffff})
}

// CheckRawSocket opens and closes an AF_PACKET socket, so a missing
// CAP_NET_RAW (a *PermissionError) is known before any output is printed.
func CheckRawSocket(netdev string) error {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return &PermissionError{Netdev: netdev, Err: err}
		}
		return fmt.Errorf("probe: opening a raw socket on %s: %w", netdev, err)
	}
	unix.Close(fd)
	return nil
}
