//go:build linux

package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Frame is one captured Ethernet frame. VLAN tags the kernel moved out of
// the frame (VLAN acceleration: the outermost tag travels in skb metadata
// on veth) are put back, so Data is the frame as it was on the wire.
type Frame struct {
	Data []byte
	Info gopacket.CaptureInfo
}

// Capture records every frame on one netdev with an AF_PACKET socket
// (gopacket/afpacket, no cgo). It needs CAP_NET_RAW. Frames are read in a
// goroutine until Stop.
type Capture struct {
	iface string
	tp    *afpacket.TPacket

	mu     sync.Mutex
	frames []Frame
	notify chan struct{} // closed and replaced at every new frame
	err    error
	done   chan struct{}
	stop   chan struct{}
	once   sync.Once
	drops  uint // frames the kernel dropped (ring full), read by Stop
}

// CapturePeer starts a capture on the peer's end of the veth pair
// (PeerNetdev in PeerNetns): it sees every frame rxe0 sends, on every VLAN,
// with all tags.
func CapturePeer() (*Capture, error) { return CaptureIn(PeerNetns, PeerNetdev) }

// CaptureIn starts a capture on iface in the named network namespace; an
// empty namespace means the caller's own.
func CaptureIn(namespace, iface string) (*Capture, error) {
	var tp *afpacket.TPacket
	open := func() error {
		var err error
		tp, err = afpacket.NewTPacket(
			afpacket.OptInterface(iface),
			afpacket.OptTPacketVersion(afpacket.TPacketVersion2),
			afpacket.OptPollTimeout(50*time.Millisecond),
			afpacket.OptAddVLANHeader(true),
			// 8192 frame slots of 2 KiB (16 MiB): a whole MTU-1500 frame
			// with its tags fits a slot (longer ones, TCP segments the
			// kernel has not cut yet, are kept cut to the slot, Info.Length
			// telling their length), and a burst of RC traffic under TCG
			// fits the ring; 64 slots of 64 KiB dropped frames of an
			// ib_write_bw run (TestFabricLossRetransmits checks Drops)
			afpacket.OptFrameSize(1<<11),
			afpacket.OptBlockSize(1<<16),
			afpacket.OptNumBlocks(256),
		)
		if err != nil {
			return fmt.Errorf("lab: capture on %s: %w (AF_PACKET sockets need CAP_NET_RAW)", iface, err)
		}
		return nil
	}
	var err error
	if namespace == "" {
		err = open()
	} else {
		err = InNetns(namespace, open)
	}
	if err != nil {
		return nil, err
	}
	c := &Capture{iface: iface, tp: tp, notify: make(chan struct{}), done: make(chan struct{}), stop: make(chan struct{})}
	go c.loop()
	return c, nil
}

func (c *Capture) loop() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		data, ci, err := c.tp.ReadPacketData()
		if err != nil {
			if errors.Is(err, afpacket.ErrTimeout) || errors.Is(err, afpacket.ErrPoll) {
				continue
			}
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		c.frames = append(c.frames, Frame{Data: data, Info: ci})
		close(c.notify)
		c.notify = make(chan struct{})
		c.mu.Unlock()
	}
}

// Frames returns a copy of the list of frames captured so far.
func (c *Capture) Frames() []Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Frame(nil), c.frames...)
}

// Wait returns the first frame (in capture order, including frames captured
// before the call) for which match returns true, or an error when ctx ends
// first or the capture failed.
func (c *Capture) Wait(ctx context.Context, match func(Frame) bool) (Frame, error) {
	next := 0
	for {
		c.mu.Lock()
		frames, notify, cerr := c.frames, c.notify, c.err
		c.mu.Unlock()
		for ; next < len(frames); next++ {
			if match(frames[next]) {
				return frames[next], nil
			}
		}
		if cerr != nil {
			return Frame{}, fmt.Errorf("lab: capture on %s: %w", c.iface, cerr)
		}
		select {
		case <-notify:
		case <-ctx.Done():
			return Frame{}, fmt.Errorf("lab: no matching frame on %s among %d captured: %w", c.iface, len(frames), ctx.Err())
		}
	}
}

// Stop ends the capture and returns every frame captured.
func (c *Capture) Stop() []Frame {
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		if st, _, err := c.tp.SocketStats(); err == nil {
			c.drops = st.Drops()
		}
		c.tp.Close()
	})
	return c.Frames()
}

// Drops ends the capture (Stop) and returns how many frames the kernel
// dropped because the capture's ring was full (PACKET_STATISTICS): a test
// that counts frames needs it to be 0.
func (c *Capture) Drops() uint {
	c.Stop()
	return c.drops
}

// WritePcapng writes frames to path as a pcapng file with one Ethernet
// interface named iface, replacing the file only when complete.
func WritePcapng(path, iface string, frames []Frame) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*.pcapng")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w, err := pcapgo.NewNgWriterInterface(tmp, pcapgo.NgInterface{
		Name:       iface,
		LinkType:   layers.LinkTypeEthernet,
		SnapLength: 65536,
	}, pcapgo.DefaultNgWriterOptions)
	if err != nil {
		tmp.Close()
		return fmt.Errorf("lab: pcapng writer: %w", err)
	}
	for _, f := range frames {
		ci := f.Info
		ci.CaptureLength = len(f.Data)
		if ci.Length < len(f.Data) {
			ci.Length = len(f.Data)
		}
		ci.InterfaceIndex = 0
		if err := w.WritePacket(ci, f.Data); err != nil {
			tmp.Close()
			return fmt.Errorf("lab: write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ArtifactDir returns the directory where a lab test leaves files (captures)
// that scripts/lab.sh brings back to the host and lists: $LAB_ARTIFACTS
// when set (scripts/lab.sh sets it per test binary), else a temporary
// directory of the test.
func ArtifactDir(t interface{ TempDir() string }) string {
	if d := os.Getenv("LAB_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err == nil {
			return d
		}
	}
	return t.TempDir()
}
