package roce

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// CaptureReader reads the frames of a pcap or pcapng capture, telling the
// two apart by their magic number. Only Ethernet captures (link type 1)
// are accepted.
type CaptureReader struct {
	src    gopacket.ZeroCopyPacketDataSource
	format string
	frame  int
}

// Capture formats reported by CaptureReader.Format.
const (
	FormatPcap   = "pcap"
	FormatPcapNG = "pcapng"
)

// NewCaptureReader reads a capture's file header from r.
func NewCaptureReader(r io.Reader) (*CaptureReader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("capture: %d bytes, want at least a 4-byte pcap or pcapng magic number", len(magic))
		}
		return nil, fmt.Errorf("capture: %w", err)
	}
	c := &CaptureReader{}
	var lt layers.LinkType
	switch m := binary.BigEndian.Uint32(magic); m {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		pr, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("capture: pcap header: %w", err)
		}
		c.src, c.format, lt = pr, FormatPcap, pr.LinkType()
	case 0x0a0d0d0a:
		nr, err := pcapgo.NewNgReader(br, pcapgo.DefaultNgReaderOptions)
		if err != nil {
			return nil, fmt.Errorf("capture: pcapng header: %w", err)
		}
		c.src, c.format, lt = nr, FormatPcapNG, nr.LinkType()
	default:
		return nil, fmt.Errorf("capture: magic number %#08x is neither pcap (0xa1b2c3d4, 0xa1b23c4d, either byte order) nor pcapng (0x0a0d0d0a)", m)
	}
	if lt != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("capture: link type %d (%s), want 1 (Ethernet); capture on an Ethernet interface rather than \"any\"", lt, lt)
	}
	return c, nil
}

// Format returns FormatPcap or FormatPcapNG.
func (c *CaptureReader) Format() string { return c.format }

// Frame returns the 1-based number of the frame last returned by Next.
func (c *CaptureReader) Frame() int { return c.frame }

// Next returns the next frame. The data is valid until the next call. At
// the end of the capture it returns io.EOF; a damaged capture gives an
// error naming the frame.
func (c *CaptureReader) Next() ([]byte, gopacket.CaptureInfo, error) {
	data, ci, err := c.src.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ci, io.EOF
		}
		return nil, ci, fmt.Errorf("capture: frame %d: %w (the file is truncated or damaged)", c.frame+1, err)
	}
	c.frame++
	return data, ci, nil
}
