package capture

import (
	"errors"
	"fmt"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/roce"
)

// Error says which frame could not be decoded, and why.
func (e FrameError) Error() string {
	return fmt.Sprintf("frame %d: malformed RoCE packet: %v", e.Frame, e.Err)
}

// Unwrap returns the decoder's error.
func (e FrameError) Unwrap() error { return e.Err }

// count counts one frame, decoded into p with err, the way every reader of
// this package counts: a RoCE packet (and its ICRC verdict), a frame that
// is not RoCE (err wraps roce.ErrNotRoCE) or a malformed RoCE frame. It
// reports whether p holds a RoCE packet.
func (s *Stats) count(p *roce.Packet, err error) bool {
	s.Frames++
	switch {
	case err == nil:
		s.RoCE++
		switch p.ICRCStatus {
		case roce.ICRCInvalid:
			s.BadICRC++
		case roce.ICRCUnchecked:
			s.Unchecked++
		}
		return true
	case errors.Is(err, roce.ErrNotRoCE):
		s.NonRoCE++
	default:
		s.Malformed++
	}
	return false
}

// NextPacket reads frames up to the next RoCE packet and decodes it into p
// (roce.Decoder.DecodeCaptured: headers, extension headers, the ICRC
// checked), counting every frame it reads in Stats as Summarize counts
// them. It returns the packet's capture information; Frame is its number.
// A RoCE frame whose headers are cut short or inconsistent returns a
// FrameError (p is not valid; call NextPacket again to go on), the end of
// the capture io.EOF, and a damaged capture Next's error. Frames that are
// not RoCE are skipped.
func (c *Reader) NextPacket(p *roce.Packet) (gopacket.CaptureInfo, error) {
	if c.dec == nil {
		c.dec = roce.NewDecoder()
	}
	for {
		data, ci, err := c.Next()
		if err != nil {
			return ci, err
		}
		err = c.dec.DecodeCaptured(data, ci, p)
		if c.stats.count(p, err) {
			return ci, nil
		}
		if !errors.Is(err, roce.ErrNotRoCE) {
			return ci, FrameError{Frame: c.frame, Err: err}
		}
	}
}

// Stats returns the counts of the frames NextPacket has read.
func (c *Reader) Stats() Stats { return c.stats }
