package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"sync/atomic"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/internal/mapfile"
	"github.com/roce-probe/roce-probe/roce"
)

// Summarizing a capture file in parallel: the file is cut into chunks at
// frame boundaries, several per core, and the decoding goroutines take the
// chunks in order as they become free, so that a core slowed down by other
// work does less of the file. Each goroutine reads its chunks with one
// pcapgo reader (given the capture's header first), moved from chunk to
// chunk by resetting the buffered reader under it, and decodes the frames
// without copying them. A cut is looked for as a run of plausible frame
// headers near the wanted offset and proven while the chunks are read:
// each chunk but the last must end exactly at the next cut without error
// (pcap: its frames fill it; pcapng: its blocks do, see blockWatch), and a
// pcapng capture must have one section, whose interfaces every reader ends
// with. If a cut cannot be found or proven, Summarize falls back to
// reading the capture in one sequence.

// segResult is what one chunk gave; frame numbers are relative to the
// chunk's first frame.
type segResult struct {
	sum   *Summary
	stats Stats
	bad   []FrameError
	err   error // read error; io.EOF at a clean end
	bytes int64 // pcap: bytes of the frames read, with their headers
}

// splitChain is how many consecutive plausible frame headers make a cut
// candidate; a cut is searched in a window from the wanted offset on that
// starts at splitWindowMin bytes and doubles up to splitWindow.
const (
	splitChain     = 8
	splitWindowMin = 32 << 10
	splitWindow    = 256 << 10
	splitMaxLen    = 1 << 18 // largest frame or block a candidate chain accepts
)

// mapFiles makes Summarize map a pcap capture file into memory and walk its
// records there (no copy out of the page cache) where the system can map
// files; tests turn it off to check the other path.
var mapFiles = true

// Chunking: up to splitPerCore chunks per core, none smaller than
// splitMinChunk bytes.
var (
	splitPerCore        = 8
	splitMinChunk int64 = 1 << 20
)

// summarizeSplit summarises the capture file on workers goroutines. ok is
// false when the capture could not be cut or a cut was not proven; nothing
// has been reported then.
func (c *Reader) summarizeSplit(workers int, malformed func(FrameError)) (*Summary, Stats, error, bool) {
	hdr, order, ok := c.headerBytes()
	if !ok {
		return nil, Stats{}, nil, false
	}
	n := int(min(int64(workers*splitPerCore), (c.size-c.base)/splitMinChunk))
	n = max(n, workers)
	win := make([]byte, splitWindow)
	cuts := []int64{c.base}
	for k := 1; k < n; k++ {
		cut, found := c.findCut(c.base+(c.size-c.base)*int64(k)/int64(n), order, c.base+int64(len(hdr)), win)
		if !found || cut <= cuts[len(cuts)-1] {
			return nil, Stats{}, nil, false
		}
		cuts = append(cuts, cut)
	}
	cuts = append(cuts, c.size)
	var want []pcapgo.NgInterface
	if c.format == FormatPcapNG {
		// the interfaces the header describes
		ng, err := pcapgo.NewNgReader(bytes.NewReader(hdr), ngOptions)
		if err != nil {
			return nil, Stats{}, nil, false
		}
		if _, _, err := ng.ZeroCopyReadPacketData(); !errors.Is(err, io.EOF) {
			return nil, Stats{}, nil, false
		}
		want = interfaces(ng)
	}
	res := make([]segResult, n)
	var next atomic.Int64
	var stop atomic.Bool
	failed := make(chan bool, workers)
	// a pcap file is read in place, mapped, where the system can
	var mapped []byte
	if f, ok := c.ra.(*os.File); ok && c.format == FormatPcap && mapFiles {
		if mapped = mapfile.Map(f, c.size); mapped != nil {
			defer mapfile.Unmap(mapped)
		}
	}
	for w := 0; w < workers; w++ {
		go func() {
			if mapped != nil {
				// a file cut short under the mapping faults (SIGBUS): read
				// it again in one sequence, which names the damage
				defer func() {
					if recover() != nil {
						stop.Store(true)
						failed <- true
					}
				}()
				debug.SetPanicOnFault(true)
			}
			ng, ok := c.summarizeChunks(hdr, order, cuts, mapped, &next, &stop, res)
			failed <- !ok || ng != nil && !sameInterfaces(interfaces(ng), want)
		}()
	}
	bad := false
	for w := 0; w < workers; w++ {
		bad = <-failed || bad
	}
	if bad {
		return nil, Stats{}, nil, false
	}
	for k := 0; k < n-1; k++ {
		if res[k].err != io.EOF {
			return nil, Stats{}, nil, false
		}
		// pcapgo's Reader reports a clean end also after a frame header
		// whose data is missing: the frames must fill the chunk.
		if hl := int64(len(hdr)); c.format == FormatPcap && res[k].bytes+hl*int64(1-min(k, 1)) != cuts[k+1]-cuts[k] {
			return nil, Stats{}, nil, false
		}
	}
	// A damaged pcapng capture is read again in one sequence, which names
	// the damage as reading frame by frame does.
	if c.format == FormatPcapNG && !errors.Is(res[n-1].err, io.EOF) {
		return nil, Stats{}, nil, false
	}
	chunkCount.Add(int64(n))
	if mapped != nil {
		mappedCount.Add(1)
	}
	total := res[0].sum
	var stats Stats
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

// chunkCount counts the chunks of the captures summarised in chunks, and
// mappedCount the captures summarised from a mapping, for tests.
var chunkCount, mappedCount atomic.Int64

// summarizeChunks takes chunks (the capture's bytes cuts[k]..cuts[k+1]) in
// order from next and summarises each into res[k], reading them all
// through one buffered reader, reset to each chunk's bytes in turn. A pcap
// chunk's records are walked in the reader's buffer (summarizePcapChunk); a
// pcapng capture is read with one pcapgo reader, given the header blocks
// first (chunk 0 holds them), which goes on from chunk to chunk once it has
// reported the end of the one before. It returns the pcapng reader (nil for
// pcap, or when other goroutines took all the chunks), and false if a
// reader could not be made or a chunk before the last did not end cleanly
// (the others then stop too).
func (c *Reader) summarizeChunks(hdr []byte, order binary.ByteOrder, cuts []int64, mapped []byte, next *atomic.Int64, stop *atomic.Bool, res []segResult) (*pcapgo.NgReader, bool) {
	in := bufio.NewReaderSize(nil, 256<<10)
	var ng *pcapgo.NgReader
	dec := roce.NewDecoder()
	for !stop.Load() {
		k := int(next.Add(1)) - 1
		if k >= len(res) {
			break
		}
		sec := io.NewSectionReader(c.ra, cuts[k], cuts[k+1]-cuts[k])
		if c.format == FormatPcap {
			var chunk []byte
			if mapped != nil {
				chunk = mapped[cuts[k]:cuts[k+1]]
			}
			if !c.pcapChunk(in, sec, chunk, hdr, order, k == 0, k == len(res)-1, dec, &res[k]) {
				stop.Store(true)
				return nil, false
			}
			continue
		}
		watch := &blockWatch{r: sec, order: order, first: k == 0}
		switch {
		case ng != nil:
			in.Reset(watch)
		case k == 0:
			in.Reset(watch)
		default:
			in.Reset(io.MultiReader(bytes.NewReader(hdr), watch))
		}
		if ng == nil {
			var err error
			if ng, err = pcapgo.NewNgReader(in, ngOptions); err != nil {
				stop.Store(true)
				return nil, false
			}
		}
		res[k] = summarizeChunk(ng, dec)
		if res[k].err == io.EOF && !watch.clean() {
			// another section, or blocks not ending at the cut
			stop.Store(true)
			return nil, false
		}
		if res[k].err != io.EOF && k < len(res)-1 {
			// only the last chunk may end in an error: the capture is
			// read again in one sequence
			stop.Store(true)
			return nil, false
		}
	}
	return ng, true
}

// pcapChunk summarises one chunk of a pcap capture into r: chunk, its
// bytes in memory, or else sec read through in. A chunk whose records summarizePcapChunk leaves to pcapgo is
// read again with pcapgo when it is the last (a capture cut short, or still
// being written: pcapgo names the damage); before the last, pcapChunk
// returns false, and the capture is read again in one sequence.
func (c *Reader) pcapChunk(in *bufio.Reader, sec *io.SectionReader, chunk, hdr []byte, order binary.ByteOrder, first, last bool, dec *roce.Decoder, r *segResult) bool {
	switch {
	case chunk != nil && first:
		*r = summarizePcapBytes(chunk[len(hdr):], order, pcapMaxCapture(hdr, order), dec)
	case chunk != nil:
		*r = summarizePcapBytes(chunk, order, pcapMaxCapture(hdr, order), dec)
	default:
		in.Reset(sec)
		if first {
			in.Discard(len(hdr))
		}
		*r = summarizePcapChunk(in, order, pcapMaxCapture(hdr, order), dec)
	}
	switch {
	case r.err == io.EOF:
		return true
	case !last:
		return false
	}
	sec.Seek(0, io.SeekStart)
	if first {
		in.Reset(sec)
	} else {
		in.Reset(io.MultiReader(bytes.NewReader(hdr), sec))
	}
	pr, err := pcapgo.NewReader(in)
	if err != nil {
		return false
	}
	*r = summarizeChunk(pr, dec)
	return true
}

// blockWatch passes the bytes of a pcapng chunk through and walks its
// block headers as they go by, in the first section's byte order. A
// reader keeps the section state (byte order, interfaces) of the chunks
// it read before, and a chunk read first gets the file header's, so a
// chunk may be read in the section state of another part of the capture:
// Summarize reads in chunks only captures of one section, and blockWatch
// is what proves it. It also proves that the chunk's blocks end exactly at
// its end, so that every cut is a block boundary (chunk 0 starts at one).
type blockWatch struct {
	r     io.Reader
	order binary.ByteOrder
	first bool    // chunk 0: starts with the file's section header block
	off   int64   // bytes passed through
	next  int64   // offset of the next block
	hdr   [8]byte // type and length of the block at next
	have  int     // bytes of hdr seen
	bad   bool    // a section header block, or a length no block has
}

func (w *blockWatch) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	b := p[:n]
	start := w.off
	w.off += int64(n)
	for !w.bad && w.next < w.off {
		var h []byte
		if i := w.next - start; w.have == 0 && i+8 <= int64(len(b)) {
			h = b[i : i+8] // the whole header in this read
		} else {
			for i := w.next + int64(w.have) - start; w.have < 8 && i < int64(len(b)); i++ {
				w.hdr[w.have] = b[i]
				w.have++
			}
			if w.have < 8 {
				break
			}
			h = w.hdr[:]
		}
		typ, l := w.order.Uint32(h[:4]), w.order.Uint32(h[4:])
		if typ == 0x0A0D0D0A && !(w.first && w.next == 0) || l < 12 || l%4 != 0 {
			w.bad = true
			break
		}
		w.next += int64(l)
		w.have = 0
	}
	return n, err
}

// clean reports whether the chunk, read to its end, held blocks of the
// first section only, the last of them ending where the chunk ends.
func (w *blockWatch) clean() bool { return !w.bad && w.have == 0 && w.next == w.off }

// summarizeChunk reads frames from src up to an error (io.EOF at the end
// of the chunk) and summarises them. The counts are kept in locals and
// stored once: the goroutines' results lie next to each other in memory.
func summarizeChunk(src gopacket.ZeroCopyPacketDataSource, dec *roce.Decoder) segResult {
	r := segResult{sum: NewSummary()}
	var p roce.Packet
	var st Stats
	var nbytes int64
	for {
		data, ci, err := readFrame(src)
		if err != nil {
			r.err = err
			break
		}
		nbytes += 16 + int64(len(data))
		summarizeFrame(dec, &p, data, ci.CaptureLength, ci.Length, roce.CaptureLinkType(&ci), st.Frames+1, &st, r.sum, &r.bad)
	}
	r.stats, r.bytes = st, nbytes
	return r
}

// pcapMaxCapture is the longest frame pcapgo's Reader takes from a pcap
// capture with this file header: the snap length, and at least 256 KiB
// (pcapgo's maxCaptureLength, eagerReadMax).
func pcapMaxCapture(hdr []byte, order binary.ByteOrder) int {
	return max(int(order.Uint32(hdr[16:20])), 256<<10)
}

// summarizePcapChunk is summarizeChunk for a chunk of a classic pcap
// capture, the file header left out, read through in: it walks the
// records in in's buffer (pcapRecords) instead of having pcapgo copy each
// frame out of it. io.EOF: the chunk ended after a whole record; any other
// error: a record pcapgo's Reader would refuse or read otherwise, a record
// longer than in's buffer, or the chunk ending inside a record.
func summarizePcapChunk(in *bufio.Reader, order binary.ByteOrder, maxCap int, dec *roce.Decoder) segResult {
	var w pcapWalk
	w.init(order, maxCap, dec)
	for {
		b, err := in.Peek(in.Size())
		n, werr := w.records(b)
		in.Discard(n)
		switch {
		case werr != nil:
			return w.result(werr)
		case err == nil: // a full buffer
			if n == 0 {
				return w.result(errPcapRecord) // a record longer than the buffer
			}
		case errors.Is(err, io.EOF):
			if n == len(b) {
				return w.result(io.EOF)
			}
			return w.result(io.ErrUnexpectedEOF)
		default:
			return w.result(err)
		}
	}
}

// summarizePcapBytes is summarizePcapChunk for a chunk in memory (a mapped
// capture file).
func summarizePcapBytes(b []byte, order binary.ByteOrder, maxCap int, dec *roce.Decoder) segResult {
	var w pcapWalk
	w.init(order, maxCap, dec)
	n, err := w.records(b)
	switch {
	case err != nil:
	case n < len(b):
		err = io.ErrUnexpectedEOF
	default:
		err = io.EOF
	}
	return w.result(err)
}

// pcapWalk summarises the records of one pcap chunk.
type pcapWalk struct {
	order  binary.ByteOrder
	maxCap uint32
	dec    *roce.Decoder
	p      roce.Packet
	st     Stats
	r      segResult
	nbytes int64
}

func (w *pcapWalk) init(order binary.ByteOrder, maxCap int, dec *roce.Decoder) {
	w.order, w.maxCap, w.dec, w.r.sum = order, uint32(min(maxCap, 1<<31)), dec, NewSummary()
}

// records summarises the whole records at the start of b and returns the
// bytes they took; an error at a record pcapgo's Reader would refuse (a
// captured length beyond the original length or the largest capture
// length it takes), which is left unread.
func (w *pcapWalk) records(b []byte) (int, error) {
	n := 0
	for len(b)-n >= 16 {
		h := b[n : n+16]
		capLen, length := w.order.Uint32(h[8:12]), w.order.Uint32(h[12:16])
		if capLen > length || capLen > w.maxCap {
			return n, errPcapRecord
		}
		end := n + 16 + int(capLen)
		if end > len(b) {
			break
		}
		summarizeFrame(w.dec, &w.p, b[n+16:end], int(capLen), int(length), layers.LinkTypeEthernet, w.st.Frames+1, &w.st, w.r.sum, &w.r.bad)
		n = end
	}
	w.nbytes += int64(n)
	return n, nil
}

func (w *pcapWalk) result(err error) segResult {
	w.r.stats, w.r.bytes, w.r.err = w.st, w.nbytes, err
	return w.r
}

// errPcapRecord: a pcap record summarizePcapChunk leaves to pcapgo.
var errPcapRecord = errors.New("capture: a pcap record for pcapgo to read")

// interfaces returns the interfaces a pcapng reader has seen.
func interfaces(ng *pcapgo.NgReader) []pcapgo.NgInterface {
	var out []pcapgo.NgInterface
	for i := 0; i < ng.NInterfaces(); i++ {
		ifc, _ := ng.Interface(i)
		out = append(out, ifc)
	}
	return out
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
func (c *Reader) headerBytes() ([]byte, binary.ByteOrder, bool) {
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

// findCut looks for a frame boundary at or after want (and after first),
// reading the capture into buf.
func (c *Reader) findCut(want int64, order binary.ByteOrder, first int64, buf []byte) (int64, bool) {
	want = max(want, first)
	if c.format == FormatPcapNG { // blocks are 32-bit aligned
		want += (4 - (want-c.base)%4) % 4
	}
	step := 1
	if c.format == FormatPcapNG {
		step = 4
	}
	for size := splitWindowMin; ; size *= 2 {
		size = min(size, len(buf))
		n, err := c.ra.ReadAt(buf[:size], want)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false
		}
		win := buf[:n]
		atEnd := want+int64(n) == c.size
		for o := 0; o < n; o += step {
			if c.chainAt(win, o, order, atEnd) {
				return want + int64(o), true
			}
		}
		if atEnd || size == len(buf) {
			return 0, false
		}
	}
}

// chainAt reports whether splitChain plausible frame headers follow each
// other from win[o:] (or run exactly to the end of the capture).
func (c *Reader) chainAt(win []byte, o int, order binary.ByteOrder, atEnd bool) bool {
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
