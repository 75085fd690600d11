package capture_test

// Tests of the capture paths other than the chunked one (Next, ReadAhead,
// the Summarize pipeline used for streams and gzip), from a review of
// them; each failed before its fix.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// readTimes reads a capture frame by frame, with or without ReadAhead.
func readTimes(t *testing.T, capt []byte, ahead bool) ([]time.Time, error) {
	t.Helper()
	cr, err := capture.NewReader(bytes.NewReader(capt))
	if err != nil {
		t.Fatal(err)
	}
	if ahead {
		cr.ReadAhead()
		defer cr.Close()
	}
	var ts []time.Time
	for {
		_, ci, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return ts, nil
		}
		if err != nil {
			return ts, err
		}
		ts = append(ts, ci.Timestamp)
	}
}

// ReadAhead (decode without --summary) gives the timestamps plain Next
// gives, also outside the years 1678–2262 that Unix nanoseconds cover and
// for a packet without one (a pcapng simple packet block).
func TestReadAheadTimestamps(t *testing.T) {
	f := rocegen.Sample()[0].Data
	y2300 := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	y1600 := time.Date(1600, 6, 1, 12, 0, 0, 7000, time.UTC)
	spb, epb := &ngWriter{order: binary.LittleEndian}, &ngWriter{order: binary.LittleEndian}
	spb.shb()
	spb.idb(1)
	spb.spb(f)
	epb.shb()
	epb.idb(1)
	epb.epbAt(0, uint64(y2300.UnixMicro()), f)
	for _, tc := range []struct {
		name string
		capt []byte
		want time.Time
	}{
		{"simple packet block", spb.b.Bytes(), time.Time{}},
		{"enhanced packet block in 2300", epb.b.Bytes(), y2300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, ahead := range []bool{false, true} {
				ts, err := readTimes(t, tc.capt, ahead)
				if err != nil || len(ts) != 1 || !ts[0].Equal(tc.want) {
					t.Errorf("ReadAhead %v: %v, times %v, want [%v]", ahead, err, ts, tc.want)
				}
			}
		})
	}
	// pcap: seconds are 32 bits; a negative time_t reads as before 1970 in
	// neither path, but both must agree
	var pcap bytes.Buffer
	if err := rocegen.WritePcap(&pcap, []rocegen.Frame{{Data: f, Time: y1600}}); err != nil {
		t.Fatal(err)
	}
	plain, err1 := readTimes(t, pcap.Bytes(), false)
	ahead, err2 := readTimes(t, pcap.Bytes(), true)
	if err1 != nil || err2 != nil || !reflect.DeepEqual(plain, ahead) {
		t.Errorf("pcap: Next %v %v, ReadAhead %v %v", plain, err1, ahead, err2)
	}
}

// A pcap that ends right after a record header (the frame's data is
// missing) is damaged, not a clean end: every path names frame 3.
func TestTruncatedAfterRecordHeader(t *testing.T) {
	frames := rocegen.Sample()[:3]
	var buf bytes.Buffer
	if err := rocegen.WritePcap(&buf, frames); err != nil {
		t.Fatal(err)
	}
	capt := buf.Bytes()[:24+16+len(frames[0].Data)+16+len(frames[1].Data)+16]
	for _, tc := range []struct {
		name string
		capt []byte
	}{{"pcap", capt}, {"pcap.gz", rocegen.Gzip(capt)}} {
		for _, mode := range []string{"Next", "ReadAhead", "Summarize"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				cr, err := capture.NewReader(bytes.NewReader(tc.capt))
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				if mode == "Summarize" {
					_, st, serr := cr.Summarize(nil)
					n, err = st.Frames, serr
				} else {
					if mode == "ReadAhead" {
						cr.ReadAhead()
						defer cr.Close()
					}
					for err = nil; err == nil; n++ {
						_, _, err = cr.Next()
					}
					n--
				}
				if n != 2 || err == nil || !strings.Contains(err.Error(), "frame 3") || !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("%d frames, error %v; want 2 frames and an unexpected EOF naming frame 3", n, err)
				}
			})
		}
	}
}

// On a stream (standard input from `tcpdump -U -w -`), ReadAhead hands
// over the frames that have arrived instead of waiting for a full batch,
// and Ready says when Next would wait.
func TestReadAheadStream(t *testing.T) {
	pr, pw := io.Pipe()
	var capt bytes.Buffer
	if err := rocegen.WritePcap(&capt, rocegen.Sample()[:3]); err != nil {
		t.Fatal(err)
	}
	go pw.Write(capt.Bytes())
	cr, err := capture.NewReader(pr)
	if err != nil {
		t.Fatal(err)
	}
	cr.ReadAhead()
	defer cr.Close()
	defer pw.Close() // first: ends the read-ahead goroutine's read
	got := make(chan error, 1)
	go func() {
		for i := 0; i < 3; i++ {
			if _, _, err := cr.Next(); err != nil {
				got <- err
				return
			}
		}
		got <- nil
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next has not returned the 3 frames 5 s after they arrived on an open stream")
	}
	if cr.Ready() {
		t.Error("Ready with no data on the stream, want false")
	}
}

// Close returns on a stream that sends nothing (the read-ahead goroutine
// is inside a read).
func TestCloseOnIdleStream(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var hdr bytes.Buffer
	if err := rocegen.WritePcap(&hdr, nil); err != nil {
		t.Fatal(err)
	}
	go pw.Write(hdr.Bytes())
	cr, err := capture.NewReader(pr)
	if err != nil {
		t.Fatal(err)
	}
	cr.ReadAhead()
	done := make(chan struct{})
	go func() { cr.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("Close blocked 5 s on an idle stream")
	}
}

// The packets of a pcapng interface that is not Ethernet are frames of the
// capture (counted, not RoCE), so later frames keep tshark's numbers, in
// every path.
func TestMixedLinkTypeFrameNumbers(t *testing.T) {
	good := rocegen.Sample()[0].Data
	w := &ngWriter{order: binary.LittleEndian}
	w.shb()
	w.idb(1)
	w.idb(113) // Linux cooked capture
	w.epb(1, []byte("a Linux cooked frame, not Ethernet"))
	w.epb(0, good[:len(good)-30]) // RoCE cut inside its headers: malformed
	w.epb(0, good)
	for _, tc := range []struct {
		name string
		capt []byte
	}{{"pcapng", w.b.Bytes()}, {"pcapng.gz", rocegen.Gzip(w.b.Bytes())}} {
		t.Run(tc.name, func(t *testing.T) {
			_, st, bad, err := sequential(t, tc.capt)
			want := capture.Stats{Frames: 3, RoCE: 1, NonRoCE: 1, Malformed: 1}
			if err != nil || st != want || len(bad) != 1 || !strings.HasPrefix(bad[0], "frame 2:") {
				t.Errorf("frame by frame: %v, %+v, %q; want %+v and frame 2 malformed", err, st, bad, want)
			}
			if err := sameAsSequential(t, tc.capt); err != nil {
				t.Error(err)
			}
		})
	}
}

// sameInfo compares capture infos; no link type means Ethernet.
func sameInfo(a, b gopacket.CaptureInfo) bool {
	lt := func(ci gopacket.CaptureInfo) string {
		if len(ci.AncillaryData) == 0 {
			return "Ethernet"
		}
		return fmt.Sprint(ci.AncillaryData[0])
	}
	return a.Timestamp.Equal(b.Timestamp) && a.CaptureLength == b.CaptureLength && a.Length == b.Length &&
		a.InterfaceIndex == b.InterfaceIndex && lt(a) == lt(b)
}

// FuzzCapturePaths: on any capture, the Summarize pipeline (gzip input)
// and ReadAhead give what plain frame-by-frame reading gives.
func FuzzCapturePaths(f *testing.F) {
	addCaptureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := capture.NewReader(bytes.NewReader(data)); err != nil {
			return
		}
		if err := sameAsSequential(t, rocegen.Gzip(data)); err != nil {
			t.Fatalf("gzip pipeline: %v", err)
		}
		a, _ := capture.NewReader(bytes.NewReader(data))
		b, _ := capture.NewReader(bytes.NewReader(data))
		b.ReadAhead()
		defer b.Close()
		for {
			d1, c1, e1 := a.Next()
			d2, c2, e2 := b.Next()
			if fmt.Sprint(e1) != fmt.Sprint(e2) || !bytes.Equal(d1, d2) || e1 == nil && !sameInfo(c1, c2) {
				t.Fatalf("ReadAhead differs at frame %d: %v %+v, plain %v %+v", a.Frame(), e2, c2, e1, c1)
			}
			if e1 != nil {
				break
			}
		}
	})
}

// Summarize after Next summarises the rest of the capture and numbers its
// frames on from those Next returned: malformed frames and the error of a
// truncated capture name the frames frame-by-frame reading names.
func TestSummarizeAfterNext(t *testing.T) {
	var pcap bytes.Buffer
	if err := rocegen.WritePcap(&pcap, summarizeFrames()); err != nil {
		t.Fatal(err)
	}
	capt := pcap.Bytes()[:pcap.Len()-7]
	_, all, wantBad, wantErr := sequential(t, capt)
	const skip = 10
	cr, err := capture.NewReader(bytes.NewReader(capt))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < skip; i++ {
		if _, _, err := cr.Next(); err != nil {
			t.Fatal(err)
		}
	}
	var bad []string
	_, st, err := cr.Summarize(func(e capture.FrameError) { bad = append(bad, fmt.Sprintf("frame %d: %v", e.Frame, e.Err)) })
	if fmt.Sprint(err) != fmt.Sprint(wantErr) || st.Frames != all.Frames-skip {
		t.Errorf("error %v, %d frames; want %v, %d frames", err, st.Frames, wantErr, all.Frames-skip)
	}
	var want []string
	for _, b := range wantBad {
		var n int
		fmt.Sscanf(b, "frame %d:", &n)
		if n > skip {
			want = append(want, b)
		}
	}
	if len(want) == 0 || !reflect.DeepEqual(bad, want) {
		t.Errorf("malformed frames %q, want %q", bad, want)
	}
}
