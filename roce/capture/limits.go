package capture

import (
	"bufio"
	"encoding/binary"
	"fmt"

	"github.com/roce-probe/roce-probe/internal/bound"
)

// MaxFrameBytes bounds a capture's records: a frame longer than this
// (libpcap's MAXIMUM_SNAPLEN, the longest snap length tcpdump and
// Wireshark take, far above a 9 KB jumbo frame) is an error wrapping
// ErrTooLarge, returned before the record is read. A capture as a whole
// has no limit: it is read one frame at a time (docs/decode.md, "Limits").
const MaxFrameBytes = 262144

// ngBlockSlack is what a pcapng packet block holds besides the frame: its
// header, trailer and options (comments, flags, hashes).
const ngBlockSlack = 64 << 10

// ErrTooLarge is wrapped by the error of a record longer than
// MaxFrameBytes; the same value as host.ErrTooLarge.
var ErrTooLarge = bound.ErrTooLarge

// frameTooLarge is the error of a record of n bytes.
func frameTooLarge(n int64) error {
	return &bound.Error{What: fmt.Sprintf("a record of %d bytes", n), Limit: MaxFrameBytes, Unit: "bytes"}
}

// ngGuard passes a pcapng capture on to pcapgo block by block, refusing a
// block longer than MaxFrameBytes and its slack before pcapgo reads it:
// pcapgo would read a packet block of any length (up to 4 GiB) into
// memory.
type ngGuard struct {
	br    *bufio.Reader
	order binary.ByteOrder
	left  int64 // bytes left of the current block; -1: not checking
	err   error
}

func (g *ngGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.left == 0 {
		h, _ := g.br.Peek(12)
		if len(h) < 12 {
			return g.br.Read(p) // the end, or a truncated block pcapgo names
		}
		if binary.BigEndian.Uint32(h) == 0x0a0d0d0a { // section header: its byte order
			g.order = binary.LittleEndian
			if binary.BigEndian.Uint32(h[8:]) == 0x1a2b3c4d {
				g.order = binary.BigEndian
			}
		}
		if g.order == nil {
			g.left = -1
			return g.br.Read(p)
		}
		n := int64(g.order.Uint32(h[4:]))
		if n < 12 || n%4 != 0 {
			g.left = -1 // a damaged block: pcapgo names it
			return g.br.Read(p)
		}
		if n > MaxFrameBytes+ngBlockSlack {
			g.err = &bound.Error{What: fmt.Sprintf("a pcapng block of %d bytes", n), Limit: MaxFrameBytes + ngBlockSlack, Unit: "bytes"}
			return 0, g.err
		}
		g.left = n
	}
	if g.left > 0 && int64(len(p)) > g.left {
		p = p[:g.left]
	}
	k, err := g.br.Read(p)
	if g.left > 0 {
		g.left -= int64(k)
	}
	return k, err
}
