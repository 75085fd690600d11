package capture

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/roce-probe/roce-probe/roce"
)

// Stats counts the frames of a capture by what they held.
type Stats struct {
	Frames    int // frames read
	RoCE      int // RoCE packets decoded
	NonRoCE   int // frames that are not RoCE (roce.ErrNotRoCE)
	Malformed int // RoCE frames whose headers are cut short or inconsistent
	BadICRC   int // RoCE packets with an invalid ICRC
	Unchecked int // RoCE packets whose ICRC could not be checked (truncated)
}

func (s *Stats) add(o Stats) {
	s.Frames += o.Frames
	s.RoCE += o.RoCE
	s.NonRoCE += o.NonRoCE
	s.Malformed += o.Malformed
	s.BadICRC += o.BadICRC
	s.Unchecked += o.Unchecked
}

// Sizes of the pieces Summarize hands to its decoding goroutines.
const (
	sumBatchBytes  = 128 << 10
	sumBatchFrames = 512
	sumBatchSlack  = 16 << 10 // room for the frame that fills a batch
)

// sumBatch is a run of consecutive frames copied out of the capture, the
// seq-th, after first frames.
type sumBatch struct {
	batch
	seq   int
	first int
}

// sumResult is what decoding one batch gave.
type sumResult struct {
	seq   int
	sum   *Summary
	stats Stats
	bad   []FrameError
	err   error
	first int
}

// FrameError is a RoCE frame that could not be decoded, numbered from 1.
type FrameError struct {
	Frame int
	Err   error
}

// Summarize reads the rest of the capture and summarises its RoCE packets
// per flow, decoding them on all cores (GOMAXPROCS). A capture file (an
// uncompressed *os.File, or any reader with ReadAt and Seek) of 4 MiB or
// more is cut at frame boundaries into chunks of 1 MiB or more, up to 8 per
// core, which the goroutines take in order as they become free, each
// reading its chunks with its own pcapgo reader; other captures are read by
// one goroutine and decoded in batches by the others. Per-chunk or
// per-batch Summaries are merged in capture order, so the result is
// exactly what decoding the frames one by one (Next,
// roce.Decoder.DecodeCaptured, one Summary.Add each) gives. A capture file
// growing while it is read is read up to the size it had when
// NewReader was called.
//
// malformed, if not nil, is called in frame order for each RoCE frame whose
// headers are cut short or inconsistent. A damaged capture returns the
// summary of the frames before the damage and an error naming the frame,
// as Next does. Summarize may follow calls of Next (not ReadAhead): it then
// summarises the frames Next did not return, numbered on from them, and
// the Stats count only those.
func (c *Reader) Summarize(malformed func(FrameError)) (*Summary, Stats, error) {
	workers := runtime.GOMAXPROCS(0)
	if c.ra != nil && c.frame == 0 && c.ahead == nil && workers > 1 && c.size-c.base >= splitMinBytes {
		if sum, st, err, ok := c.summarizeSplit(workers, malformed); ok {
			splitCount.Add(1)
			return sum, st, err
		}
		// read the capture again, in one sequence
		fresh, err := NewReader(io.NewSectionReader(c.ra, c.base, c.size-c.base))
		if err != nil {
			return NewSummary(), Stats{}, err
		}
		c.src = fresh.src
	}
	return c.summarizePipeline(workers, malformed)
}

// splitMinBytes is the smallest capture Summarize cuts into chunks.
var splitMinBytes int64 = 4 << 20

// splitCount counts the captures summarised in chunks, for tests.
var splitCount atomic.Int64

func (c *Reader) summarizePipeline(workers int, malformed func(FrameError)) (*Summary, Stats, error) {
	nbuf := 2*workers + 2
	work := make(chan *sumBatch, nbuf)
	free := make(chan *sumBatch, nbuf)
	results := make(chan *sumResult, nbuf)
	for i := 0; i < nbuf; i++ {
		free <- &sumBatch{batch: batch{buf: make([]byte, 0, sumBatchBytes+sumBatchSlack), frames: make([]batchFrame, 0, sumBatchFrames)}}
	}
	sums := make(chan *Summary, nbuf+workers)

	go c.readBatches(work, free)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			decodeBatches(work, free, results, sums)
		}()
	}
	go func() { wg.Wait(); close(results) }()

	total := NewSummary()
	var stats Stats
	var readErr error
	base := c.frame // frames Next returned before: numbers go on from there
	pending := map[int]*sumResult{}
	next := 0
	for r := range results {
		pending[r.seq] = r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			total.Merge(r.sum)
			r.sum.Reset()
			select {
			case sums <- r.sum:
			default:
			}
			stats.add(r.stats)
			if malformed != nil {
				for _, e := range r.bad {
					e.Frame += base
					malformed(e)
				}
			}
			if r.err != nil && readErr == nil {
				readErr = r.err
			}
		}
	}
	c.frame = base + stats.Frames
	if readErr != nil && !errors.Is(readErr, io.EOF) {
		_, _, err := c.result(nil, gopacket.CaptureInfo{}, readErr)
		return total, stats, err
	}
	return total, stats, nil
}

// readBatches copies the capture's frames into batches until the end of
// the capture or a read error, which ends the last batch.
func (c *Reader) readBatches(work chan<- *sumBatch, free <-chan *sumBatch) {
	defer close(work)
	n := 0
	for seq := 0; ; seq++ {
		b := <-free
		b.seq, b.first = seq, n
		c.fill(&b.batch, sumBatchFrames, sumBatchBytes)
		n += len(b.frames)
		work <- b
		if b.err != nil {
			return
		}
	}
}

// summarizeFrame decodes one frame into p and counts it in st and sum; a
// malformed RoCE frame goes into bad as frame number n.
func summarizeFrame(dec *roce.Decoder, p *roce.Packet, data []byte, capLen, length int, lt layers.LinkType, n int, st *Stats, sum *Summary, bad *[]FrameError) {
	err := errNotEthernet
	if lt == layers.LinkTypeEthernet {
		err = dec.DecodeLengths(data, capLen, length, p)
	}
	if st.count(p, err) {
		sum.Add(p, length)
	} else if !errors.Is(err, roce.ErrNotRoCE) {
		*bad = append(*bad, FrameError{Frame: n, Err: err})
	}
}

// errNotEthernet counts a frame of an interface that is not Ethernet.
var errNotEthernet = fmt.Errorf("%w: not an Ethernet frame", roce.ErrNotRoCE)

// decodeBatches decodes batches from work into results, returning each
// batch to free once decoded.
func decodeBatches(work <-chan *sumBatch, free chan<- *sumBatch, results chan<- *sumResult, sums chan *Summary) {
	dec := roce.NewDecoder()
	var p roce.Packet
	for b := range work {
		r := &sumResult{seq: b.seq, first: b.first, err: b.err}
		select {
		case r.sum = <-sums:
		default:
			r.sum = NewSummary()
		}
		for i := range b.frames {
			f := &b.frames[i]
			summarizeFrame(dec, &p, b.buf[f.start:f.end], f.capLen, f.length, f.linkType, b.first+i+1, &r.stats, r.sum, &r.bad)
		}
		if b.err == nil {
			free <- b
		}
		results <- r
	}
}
