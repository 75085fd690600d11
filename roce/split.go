package roce

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/pcapgo"
)

// Summarizing a capture file in parallel: the file is cut into segments
// at frame boundaries, and each segment is read by its own pcapgo reader
// (given the capture's header first) and decoded by its own goroutine,
// without copying frames. A cut is looked for as a run of plausible frame
// headers near the wanted offset and proven by pcapgo itself: the segment
// before a cut must end exactly at it without error and (pcapng) with the
// interfaces the header describes. If a cut cannot be found or proven,
// Summarize falls back to reading the capture in one sequence.

// segResult is what one segment gave; frame numbers are relative to the
// segment's first frame.
type segResult struct {
	sum    *Summary
	stats  CaptureStats
	bad    []FrameError
	err    error // read error; io.EOF at a clean end
	bytes  int64 // pcap: bytes of the frames read, with their headers
	ifaces []pcapgo.NgInterface
}

// splitChain is how many consecutive plausible frame headers make a cut
// candidate; splitWindow is how many bytes from the wanted offset on are
// searched.
const (
	splitChain  = 8
	splitWindow = 256 << 10
	splitMaxLen = 1 << 18 // largest frame or block a candidate chain accepts
)

// summarizeSplit summarises the capture file in n segments. ok is false
// when the capture could not be cut or a cut was not proven; nothing has
// been reported then.
func (c *CaptureReader) summarizeSplit(n int, malformed func(FrameError)) (*Summary, CaptureStats, error, bool) {
	hdr, order, ok := c.headerBytes()
	if !ok {
		return nil, CaptureStats{}, nil, false
	}
	cuts := []int64{c.base}
	for k := 1; k < n; k++ {
		cut, found := c.findCut(c.base+(c.size-c.base)*int64(k)/int64(n), order, c.base+int64(len(hdr)))
		if !found || cut <= cuts[len(cuts)-1] {
			return nil, CaptureStats{}, nil, false
		}
		cuts = append(cuts, cut)
	}
	cuts = append(cuts, c.size)
	var want []pcapgo.NgInterface
	if c.format == FormatPcapNG {
		var r segResult
		c.summarizeSegment(hdr, c.base+int64(len(hdr)), c.base+int64(len(hdr)), &r)
		if !errors.Is(r.err, io.EOF) {
			return nil, CaptureStats{}, nil, false
		}
		want = r.ifaces
	}
	res := make([]segResult, n)
	done := make(chan struct{}, n)
	for k := 0; k < n; k++ {
		go func() {
			defer func() { done <- struct{}{} }()
			var h []byte
			if k > 0 {
				h = hdr
			}
			c.summarizeSegment(h, cuts[k], cuts[k+1], &res[k])
		}()
	}
	for k := 0; k < n; k++ {
		<-done
	}
	for k := 0; k < n-1; k++ {
		if res[k].err != io.EOF || !sameInterfaces(res[k].ifaces, want) {
			return nil, CaptureStats{}, nil, false
		}
		// pcapgo's Reader reports a clean end also after a frame header
		// whose data is missing: the frames must fill the segment.
		if hl := int64(len(hdr)); c.format == FormatPcap && res[k].bytes+hl*int64(1-min(k, 1)) != cuts[k+1]-cuts[k] {
			return nil, CaptureStats{}, nil, false
		}
	}
	// A pcapng section after the first may have another byte order, which
	// the checks above do not see; a damaged capture is rare, so its error
	// comes from reading it again in one sequence.
	if c.format == FormatPcapNG && !errors.Is(res[n-1].err, io.EOF) {
		return nil, CaptureStats{}, nil, false
	}
	total := res[0].sum
	var stats CaptureStats
	for k := range res {
		if k > 0 {
			total.Merge(res[k].sum)
		}
		if malformed != nil {
			for _, e := range res[k].bad {
				e.Frame += stats.Frames
				malformed(e)
			}
		}
		stats.add(res[k].stats)
	}
	c.frame = stats.Frames
	if err := res[n-1].err; !errors.Is(err, io.EOF) {
		_, _, err = c.result(nil, gopacket.CaptureInfo{}, err)
		return total, stats, err, true
	}
	return total, stats, nil, true
}

// summarizeSegment reads the capture's bytes from..to, after hdr, with a
// pcapgo reader, and summarises their frames into r.
func (c *CaptureReader) summarizeSegment(hdr []byte, from, to int64, r *segResult) {
	r.sum = NewSummary()
	in := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(hdr), io.NewSectionReader(c.ra, from, to-from)), 256<<10)
	var src gopacket.ZeroCopyPacketDataSource
	var ng *pcapgo.NgReader
	var err error
	if c.format == FormatPcapNG {
		ng, err = pcapgo.NewNgReader(in, pcapgo.DefaultNgReaderOptions)
		src = ng
	} else {
		src, err = pcapgo.NewReader(in)
	}
	if err != nil {
		r.err = err
		return
	}
	dec := NewDecoder()
	var p Packet
	st := &r.stats
	for {
		data, ci, err := src.ZeroCopyReadPacketData()
		if err != nil {
			r.err = err
			break
		}
		st.Frames++
		r.bytes += 16 + int64(len(data))
		if err := dec.decodeLens(data, ci.CaptureLength, ci.Length, &p); err != nil {
			if errors.Is(err, ErrNotRoCE) {
				st.NonRoCE++
			} else {
				st.Malformed++
				r.bad = append(r.bad, FrameError{Frame: st.Frames, Err: err})
			}
			continue
		}
		st.RoCE++
		switch p.ICRCStatus {
		case ICRCInvalid:
			st.BadICRC++
		case ICRCUnchecked:
			st.Unchecked++
		}
		r.sum.Add(&p, ci.Length)
	}
	if ng != nil {
		for i := 0; i < ng.NInterfaces(); i++ {
			ifc, _ := ng.Interface(i)
			r.ifaces = append(r.ifaces, ifc)
		}
	}
}

// sameInterfaces reports whether two interface lists decode packets alike.
func sameInterfaces(a, b []pcapgo.NgInterface) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].LinkType != b[i].LinkType || a[i].SnapLength != b[i].SnapLength ||
			a[i].TimestampResolution != b[i].TimestampResolution || a[i].TimestampOffset != b[i].TimestampOffset {
			return false
		}
	}
	return true
}

// headerBytes returns what precedes the first frame: the pcap file header,
// or the pcapng blocks before the first packet block.
func (c *CaptureReader) headerBytes() ([]byte, binary.ByteOrder, bool) {
	if c.format == FormatPcap {
		h := make([]byte, 24)
		if _, err := c.ra.ReadAt(h, c.base); err != nil {
			return nil, nil, false
		}
		switch binary.LittleEndian.Uint32(h) {
		case 0xa1b2c3d4, 0xa1b23c4d:
			return h, binary.LittleEndian, true
		}
		return h, binary.BigEndian, true
	}
	var b [12]byte
	if _, err := c.ra.ReadAt(b[:], c.base); err != nil {
		return nil, nil, false
	}
	var order binary.ByteOrder = binary.LittleEndian
	if binary.BigEndian.Uint32(b[8:]) == 0x1A2B3C4D {
		order = binary.BigEndian
	}
	off := c.base
	for i := 0; i < 64; i++ {
		if _, err := c.ra.ReadAt(b[:8], off); err != nil {
			return nil, nil, false
		}
		typ, l := order.Uint32(b[:4]), int64(order.Uint32(b[4:8]))
		if typ == 2 || typ == 3 || typ == 6 { // packet blocks
			h := make([]byte, off-c.base)
			if _, err := c.ra.ReadAt(h, c.base); err != nil {
				return nil, nil, false
			}
			return h, order, true
		}
		if l < 12 || l%4 != 0 || l > 1<<20 || (i > 0 && typ == 0x0A0D0D0A) {
			return nil, nil, false
		}
		off += l
	}
	return nil, nil, false
}

// findCut looks for a frame boundary at or after want (and after min).
func (c *CaptureReader) findCut(want int64, order binary.ByteOrder, min int64) (int64, bool) {
	if want < min {
		want = min
	}
	if c.format == FormatPcapNG { // blocks are 32-bit aligned
		want += (4 - (want-c.base)%4) % 4
	}
	win := make([]byte, splitWindow)
	n, err := c.ra.ReadAt(win, want)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false
	}
	win = win[:n]
	atEnd := want+int64(n) == c.size
	step := 1
	if c.format == FormatPcapNG {
		step = 4
	}
	for o := 0; o < n; o += step {
		if c.chainAt(win, o, order, atEnd) {
			return want + int64(o), true
		}
	}
	return 0, false
}

// chainAt reports whether splitChain plausible frame headers follow each
// other from win[o:] (or run exactly to the end of the capture).
func (c *CaptureReader) chainAt(win []byte, o int, order binary.ByteOrder, atEnd bool) bool {
	for i := 0; i < splitChain; i++ {
		if o == len(win) && atEnd && i > 0 {
			return true
		}
		if c.format == FormatPcap {
			if o+16 > len(win) {
				return false
			}
			frac, capLen, length := order.Uint32(win[o+4:]), order.Uint32(win[o+8:]), order.Uint32(win[o+12:])
			if frac >= 1e9 || capLen > length || length > splitMaxLen || capLen < 14 {
				return false
			}
			o += 16 + int(capLen)
			continue
		}
		if o+28 > len(win) {
			return false
		}
		typ, l := order.Uint32(win[o:]), order.Uint32(win[o+4:])
		if (i == 0 && typ != 6 && typ != 3) || typ == 0x0A0D0D0A || l < 12 || l%4 != 0 || l > splitMaxLen ||
			o+int(l) > len(win) || order.Uint32(win[o+int(l)-4:]) != l {
			return false
		}
		o += int(l)
	}
	return true
}
