package roce_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
)

// summarizeFrames is a capture of several of Summarize's batches: the
// synthetic flows with the sample's frames (bad ICRC, not RoCE, RoCE v1,
// CNP, QinQ) and RoCE frames cut short inside their headers (malformed)
// mixed in.
func summarizeFrames() []rocegen.Frame {
	frames := rocegen.Synthetic(5000)
	sample := rocegen.Sample()
	var out []rocegen.Frame
	for i, f := range frames {
		out = append(out, f)
		if i%700 == 0 {
			out = append(out, sample...)
			for _, cut := range []int{4, 9, 13} {
				d := sample[0].Data
				out = append(out, rocegen.Frame{Data: d[:len(d)-cut-roce.ICRCLen-len("roce-probe sample")], Time: f.Time})
			}
		}
	}
	return out
}

// sequential decodes a capture frame by frame with Next, DecodeCaptured
// and one Summary, as `roce-probe decode` without --summary does.
func sequential(t *testing.T, capture []byte) ([]roce.FlowSummary, roce.CaptureStats, []string, error) {
	t.Helper()
	cr, err := roce.NewCaptureReader(bytes.NewReader(capture))
	if err != nil {
		t.Fatal(err)
	}
	dec, sum := roce.NewDecoder(), roce.NewSummary()
	var st roce.CaptureStats
	var bad []string
	var p roce.Packet
	for {
		data, ci, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return sum.Flows(), st, bad, nil
		}
		if err != nil {
			return sum.Flows(), st, bad, err
		}
		st.Frames++
		switch err := dec.DecodeCaptured(data, ci, &p); {
		case errors.Is(err, roce.ErrNotRoCE):
			st.NonRoCE++
			continue
		case err != nil:
			st.Malformed++
			bad = append(bad, fmt.Sprintf("frame %d: %v", cr.Frame(), err))
			continue
		}
		st.RoCE++
		switch p.ICRCStatus {
		case roce.ICRCInvalid:
			st.BadICRC++
		case roce.ICRCUnchecked:
			st.Unchecked++
		}
		sum.Add(&p, ci.Length)
	}
}

// Summarize, which decodes batches on several goroutines and merges their
// Summaries, gives exactly what decoding frame by frame gives: the same
// flows in the same order with the same first and last PSNs, counts,
// malformed frames in frame order, and read error naming the frame.
func TestSummarizeMatchesSequential(t *testing.T) {
	frames := summarizeFrames()
	var pcap, pcapng bytes.Buffer
	if err := rocegen.WritePcap(&pcap, frames); err != nil {
		t.Fatal(err)
	}
	if err := rocegen.WritePcapNG(&pcapng, frames); err != nil {
		t.Fatal(err)
	}
	for _, split := range []bool{false, true} {
		if split {
			defer roce.SetSplitMinBytes(0)()
		}
		splits := roce.SplitCount()
		for _, tc := range []struct {
			name    string
			capture []byte
			wantErr bool
		}{
			{"pcap", pcap.Bytes(), false},
			{"pcapng", pcapng.Bytes(), false},
			{"pcap truncated", pcap.Bytes()[:pcap.Len()-7], true},
			{"pcapng truncated", pcapng.Bytes()[:pcapng.Len()-100], true},
			{"pcap header only", pcap.Bytes()[:24], false},
		} {
			t.Run(fmt.Sprintf("%s/split=%v", tc.name, split), func(t *testing.T) {
				wantFlows, wantStats, wantBad, wantErr := sequential(t, tc.capture)
				if tc.name != "pcap header only" && (wantStats.Malformed == 0 || wantStats.NonRoCE == 0 || wantStats.BadICRC == 0 || len(wantFlows) < 8) {
					t.Fatalf("the test capture lacks malformed, non-RoCE or bad-ICRC frames or flows: %+v, %d flows", wantStats, len(wantFlows))
				}
				if (wantErr != nil) != tc.wantErr {
					t.Fatalf("sequential read error %v, want error %v", wantErr, tc.wantErr)
				}
				cr, err := roce.NewCaptureReader(bytes.NewReader(tc.capture))
				if err != nil {
					t.Fatal(err)
				}
				var bad []string
				sum, st, err := cr.Summarize(func(e roce.FrameError) { bad = append(bad, fmt.Sprintf("frame %d: %v", e.Frame, e.Err)) })
				if fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Errorf("error %v, want %v", err, wantErr)
				}
				if st != wantStats {
					t.Errorf("stats %+v, want %+v", st, wantStats)
				}
				if !reflect.DeepEqual(bad, wantBad) {
					t.Errorf("malformed frames %q, want %q", bad, wantBad)
				}
				if got := sum.Flows(); !reflect.DeepEqual(got, wantFlows) {
					t.Errorf("flows differ:\n got %+v\nwant %+v", got, wantFlows)
				}
			})
		}
		// the whole captures, and the truncated pcap, are cut into
		// segments (a damaged pcapng is read again in one sequence)
		if got := roce.SplitCount() - splits; split && runtime.GOMAXPROCS(0) > 1 && got < 3 {
			t.Errorf("Summarize cut %d of the captures into segments, want at least 3", got)
		}
	}
}

// Merging the Summaries of consecutive pieces of a packet sequence gives
// the Summary of the whole sequence, wherever it is cut.
func TestSummaryMerge(t *testing.T) {
	frames := append(rocegen.Sample(), rocegen.Synthetic(40)...)
	frames = append(frames, rocegen.Sample()...)
	dec := roce.NewDecoder()
	var pkts []roce.Packet
	var lens []int
	for _, f := range frames {
		var p roce.Packet
		if dec.Decode(f.Data, &p) == nil {
			pkts, lens = append(pkts, p), append(lens, len(f.Data))
		}
	}
	whole := roce.NewSummary()
	for i := range pkts {
		whole.Add(&pkts[i], lens[i])
	}
	want := whole.Flows()
	part := roce.NewSummary()
	for cut1 := 0; cut1 <= len(pkts); cut1 += 3 {
		for cut2 := cut1; cut2 <= len(pkts); cut2 += 5 {
			total := roce.NewSummary()
			for _, r := range [][2]int{{0, cut1}, {cut1, cut2}, {cut2, len(pkts)}} {
				part.Reset()
				for i := r[0]; i < r[1]; i++ {
					part.Add(&pkts[i], lens[i])
				}
				total.Merge(part)
			}
			if got := total.Flows(); !reflect.DeepEqual(got, want) {
				t.Fatalf("cut at %d and %d: flows differ:\n got %+v\nwant %+v", cut1, cut2, got, want)
			}
		}
	}
}

// FuzzSummarize: whatever the capture, Summarize cutting it into segments
// gives what reading it frame by frame gives.
func FuzzSummarize(f *testing.F) {
	for _, frames := range [][]rocegen.Frame{rocegen.Sample(), rocegen.Synthetic(8)} {
		var pcap, pcapng bytes.Buffer
		if rocegen.WritePcap(&pcap, frames) != nil || rocegen.WritePcapNG(&pcapng, frames) != nil {
			f.Fatal("writing the seed captures")
		}
		f.Add(pcap.Bytes())
		f.Add(pcapng.Bytes())
	}
	defer roce.SetSplitMinBytes(0)()
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := roce.NewCaptureReader(bytes.NewReader(data)); err != nil {
			return
		}
		wantFlows, wantStats, wantBad, wantErr := sequential(t, data)
		cr, _ := roce.NewCaptureReader(bytes.NewReader(data))
		var bad []string
		sum, st, err := cr.Summarize(func(e roce.FrameError) { bad = append(bad, fmt.Sprintf("frame %d: %v", e.Frame, e.Err)) })
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || st != wantStats || !reflect.DeepEqual(bad, wantBad) {
			t.Fatalf("Summarize: %v %+v %q, frame by frame: %v %+v %q", err, st, bad, wantErr, wantStats, wantBad)
		}
		if got := sum.Flows(); !reflect.DeepEqual(got, wantFlows) {
			t.Fatalf("flows differ:\n got %+v\nwant %+v", got, wantFlows)
		}
	})
}
