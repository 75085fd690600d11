package capture

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/roce"
)

// Reader reads the frames of a pcap or pcapng capture, telling the
// two apart by their magic number. Ethernet captures (link type 1) are
// accepted, and Linux cooked captures (`tcpdump -i any`: LINUX_SLL, 113,
// and LINUX_SLL2, 276), whose frames it returns as the Ethernet frames
// they stand for (see cooked.go).
type Reader struct {
	src    gopacket.ZeroCopyPacketDataSource
	br     *bufio.Reader // what src reads from
	format string
	frame  int

	// for NextPacket
	dec   *roce.Decoder
	stats Stats

	// for Summarize: the capture as random-access bytes from base to
	// size, when it is an uncompressed file (or bytes.Reader)
	ra         io.ReaderAt
	base, size int64

	// read-ahead (see ReadAhead)
	ahead chan *batch
	free  chan *batch
	done  chan struct{}
	cur   *batch
	idx   int
}

// batch is a group of frames copied out of the capture (by the read-ahead
// goroutine, or Summarize's reading goroutine).
type batch struct {
	buf    []byte
	frames []batchFrame
	err    error
}

// batchFrame holds no pointers, so filling a batch needs no GC write
// barriers; the capture info is rebuilt in nextAhead.
type batchFrame struct {
	start, end int
	sec        int64 // timestamp: Unix seconds and nanoseconds (any year)
	nsec       int32
	noTime     bool // the frame has no timestamp (time.Time{}): a pcapng simple packet block
	linkType   layers.LinkType
	capLen     int
	length     int
	ifIndex    int
}

const (
	batchBytes  = 1 << 20
	batchFrames = 1024
	batches     = 4
)

// Capture formats reported by Reader.Format.
const (
	FormatPcap   = "pcap"
	FormatPcapNG = "pcapng"
)

// NewReader reads a capture's file header from r. Captures
// compressed with gzip are decompressed.
func NewReader(r io.Reader) (*Reader, error) {
	c := &Reader{}
	if ra, ok := r.(interface {
		io.ReaderAt
		io.Seeker
	}); ok {
		if pos, err := ra.Seek(0, io.SeekCurrent); err == nil {
			if end, err := ra.Seek(0, io.SeekEnd); err == nil {
				if _, err := ra.Seek(pos, io.SeekStart); err == nil && end > pos {
					c.ra, c.base, c.size = ra, pos, end
				}
			}
		}
	}
	size := 1 << 20
	if c.ra != nil {
		size = 64 << 10 // Summarize reads the file with its own readers
	}
	br := bufio.NewReaderSize(r, size)
	if m, err := br.Peek(2); err == nil && m[0] == 0x1f && m[1] == 0x8b {
		c.ra = nil
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: %w", err) // "gzip: invalid header" and the like
		}
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("capture: %d bytes, want at least a 4-byte pcap or pcapng magic number", len(magic))
		}
		return nil, fmt.Errorf("capture: %w", err)
	}
	var lt layers.LinkType
	switch m := binary.BigEndian.Uint32(magic); m {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: pcap header: %w", err)
		}
		if pr.Snaplen() > MaxFrameBytes {
			// pcapgo takes records up to the larger of the snap
			// length and MaxFrameBytes, and refuses longer ones
			// before reading them.
			pr.SetSnaplen(MaxFrameBytes)
		}
		c.src, c.format, lt = pr, FormatPcap, pr.LinkType()
		if cookedLinkType(lt) {
			c.src = linkTypeSource{pr, []any{lt}}
			// Summarize's chunks read pcap records as Ethernet frames
			// (summarizePcapBytes): read in one sequence instead.
			c.ra = nil
		}
	case 0x0a0d0d0a:
		lt = layers.LinkTypeEthernet
		if first, ok := ngFirstLinkType(br); ok {
			lt = first
		}
		nr, err := pcapgo.NewNgReader(&ngGuard{br: br}, ngOptions)
		if err != nil {
			return nil, fmt.Errorf("capture: pcapng header: %w", err)
		}
		c.src, c.format = nr, FormatPcapNG
	default:
		return nil, fmt.Errorf("capture: magic number %#08x is neither pcap (0xa1b2c3d4, 0xa1b23c4d, either byte order) nor pcapng (0x0a0d0d0a)", m)
	}
	if lt != layers.LinkTypeEthernet && !cookedLinkType(lt) {
		return nil, fmt.Errorf("capture: link type %d (%s), want 1 (Ethernet), or 113 or 276 (Linux cooked, tcpdump -i any); capture on an Ethernet interface", lt, lt)
	}
	c.br = br
	return c, nil
}

// ngOptions makes pcapgo return the packets of every interface of a pcapng
// capture, with the interface's link type, rather than leave out those
// whose link type is not the first interface's: they are frames of the
// capture, counted and numbered as tshark numbers them, and not RoCE.
var ngOptions = pcapgo.NgReaderOptions{WantMixedLinkType: true}

// ngFirstLinkType peeks at the first blocks of a pcapng capture for the
// link type of its first interface, which pcapgo reads only when it leaves
// out the packets of other link types (see ngOptions). ok is false when no
// interface description comes before a packet or within what br holds.
func ngFirstLinkType(br *bufio.Reader) (lt layers.LinkType, ok bool) {
	b, err := br.Peek(12)
	if err != nil {
		return 0, false
	}
	var order binary.ByteOrder = binary.LittleEndian
	if binary.BigEndian.Uint32(b[8:]) == 0x1A2B3C4D {
		order = binary.BigEndian
	}
	for off := 0; ; {
		b, err := br.Peek(off + 12)
		if err != nil {
			return 0, false
		}
		typ, l := order.Uint32(b[off:]), int(order.Uint32(b[off+4:]))
		switch typ {
		case 1: // interface description: link type, reserved, snap length
			return layers.LinkType(order.Uint16(b[off+8:])), true
		case 2, 3, 6: // a packet before any interface: pcapgo reports it
			return 0, false
		}
		if l < 12 || l%4 != 0 || off+l+12 > br.Size() {
			return 0, false
		}
		off += l
	}
}

// readFrame reads the next frame from src, as ZeroCopyReadPacketData does
// except that a pcap record whose header is there but whose data is
// missing is io.ErrUnexpectedEOF (pcapgo reports io.EOF, the clean end),
// and that a Linux cooked frame is returned as an Ethernet frame (uncook).
func readFrame(src gopacket.ZeroCopyPacketDataSource) ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := src.ZeroCopyReadPacketData()
	if err != nil && (ci.CaptureLength > MaxFrameBytes || ci.CaptureLength < 0) && !errors.Is(err, ErrTooLarge) {
		return nil, ci, frameTooLarge(int64(uint32(ci.CaptureLength)))
	}
	if err == io.EOF && ci.CaptureLength > 0 {
		err = fmt.Errorf("record header of a %d-byte frame, then the end: %w", ci.CaptureLength, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return data, ci, err
	}
	data, ci = uncook(data, ci)
	return data, ci, nil
}

// Format returns FormatPcap or FormatPcapNG.
func (c *Reader) Format() string { return c.format }

// Frame returns the 1-based number of the frame last returned by Next.
func (c *Reader) Frame() int { return c.frame }

// ReadAhead makes the reader read and copy frames in a separate goroutine,
// so that reading the file and decoding the frames use two cores. Call it
// before the first Next, and call Close when done.
func (c *Reader) ReadAhead() {
	if c.ahead != nil {
		return
	}
	c.ahead = make(chan *batch, batches)
	c.free = make(chan *batch, batches)
	c.done = make(chan struct{})
	for i := 0; i < batches; i++ {
		c.free <- &batch{buf: make([]byte, 0, batchBytes), frames: make([]batchFrame, 0, batchFrames)}
	}
	go c.readAhead()
}

func (c *Reader) readAhead() {
	defer close(c.ahead)
	for {
		var b *batch
		select {
		case b = <-c.free:
		case <-c.done:
			return
		}
		c.fill(b, batchFrames, batchBytes)
		select {
		case c.ahead <- b:
		case <-c.done:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// fill copies frames into b, emptied first, until it holds maxFrames
// frames or maxBytes bytes, or a read error (io.EOF at the end) is in
// b.err. On a stream (standard input from tcpdump -w -) it stops early,
// before waiting for more input, so that the frames that have arrived are
// handed on.
func (c *Reader) fill(b *batch, maxFrames, maxBytes int) {
	b.buf, b.frames, b.err = b.buf[:0], b.frames[:0], nil
	for len(b.frames) < maxFrames && len(b.buf) < maxBytes {
		if c.ra == nil && len(b.frames) > 0 && c.br.Buffered() == 0 {
			return
		}
		data, ci, err := readFrame(c.src)
		if err != nil {
			b.err = err
			return
		}
		start := len(b.buf)
		b.buf = append(b.buf, data...)
		b.frames = append(b.frames, batchFrame{start: start, end: len(b.buf),
			sec: ci.Timestamp.Unix(), nsec: int32(ci.Timestamp.Nanosecond()), noTime: ci.Timestamp.IsZero(),
			linkType: roce.CaptureLinkType(&ci), capLen: ci.CaptureLength, length: ci.Length, ifIndex: ci.InterfaceIndex})
	}
}

// Close stops the read-ahead goroutine, if any. It does not wait for it:
// on a stream with no data yet, the goroutine is inside a read that only
// new data, the end of the stream or closing the io.Reader ends; it then
// stops without reading further. Close does not close the io.Reader the
// Reader was made with.
func (c *Reader) Close() {
	if c.done != nil {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
	}
}

// Ready reports whether Next would return without waiting for the input:
// a frame read ahead is waiting, or input is buffered. A program printing
// frames from a stream flushes its output when Ready is false.
func (c *Reader) Ready() bool {
	if c.ahead != nil {
		return c.cur != nil && (c.idx < len(c.cur.frames) || c.cur.err != nil) || len(c.ahead) > 0
	}
	return c.br.Buffered() > 0
}

// Next returns the next frame. The data is valid until the next call. At
// the end of the capture it returns io.EOF; a damaged capture gives an
// error naming the frame.
func (c *Reader) Next() ([]byte, gopacket.CaptureInfo, error) {
	if c.ahead != nil {
		return c.nextAhead()
	}
	return c.result(readFrame(c.src))
}

func (c *Reader) nextAhead() ([]byte, gopacket.CaptureInfo, error) {
	for c.cur == nil || c.idx == len(c.cur.frames) {
		if c.cur != nil {
			if c.cur.err != nil {
				return c.result(nil, gopacket.CaptureInfo{}, c.cur.err)
			}
			c.free <- c.cur
			c.cur = nil
		}
		b, ok := <-c.ahead
		if !ok {
			return c.result(nil, gopacket.CaptureInfo{}, io.EOF)
		}
		c.cur, c.idx = b, 0
	}
	f := &c.cur.frames[c.idx]
	c.idx++
	ci := gopacket.CaptureInfo{CaptureLength: f.capLen, Length: f.length, InterfaceIndex: f.ifIndex}
	if !f.noTime {
		ci.Timestamp = time.Unix(f.sec, int64(f.nsec)).UTC()
	}
	if f.linkType != layers.LinkTypeEthernet {
		ci.AncillaryData = []any{f.linkType}
	}
	return c.result(c.cur.buf[f.start:f.end], ci, nil)
}

func (c *Reader) result(data []byte, ci gopacket.CaptureInfo, err error) ([]byte, gopacket.CaptureInfo, error) {
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ci, io.EOF
		}
		if errors.Is(err, ErrTooLarge) {
			return nil, ci, fmt.Errorf("capture: frame %d: %w", c.frame+1, err)
		}
		return nil, ci, fmt.Errorf("capture: frame %d: %w (the file is truncated or damaged)", c.frame+1, err)
	}
	c.frame++
	return data, ci, nil
}
