package capture_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// summarizeFrames is a capture of several of Summarize's batches: the
// synthetic flows with the sample's frames (bad ICRC, not RoCE, RoCE v1,
// CNP, QinQ), RoCE frames cut short inside their headers (malformed) and
// the RC connections of the loss tests (as their responder received them:
// PSN gaps, retransmission rounds, reordering, NAKs), spread over the whole
// capture so that their PSN sequences cross the chunks' ends, mixed in.
func summarizeFrames() []rocegen.Frame {
	frames := rocegen.Synthetic(5000)
	sample := rocegen.Sample()
	var rc []rocegen.Frame
	for i, tc := range rcCases() {
		tc.conn.QPA, tc.conn.QPB = 0x300+uint32(i), 0x400+uint32(i)
		rc = append(rc, tc.conn.Simulate().After...)
	}
	var out []rocegen.Frame
	for i, f := range frames {
		out = append(out, rc[i*len(rc)/len(frames):(i+1)*len(rc)/len(frames)]...)
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
func sequential(t *testing.T, capt []byte) ([]capture.FlowSummary, capture.Stats, []string, error) {
	t.Helper()
	cr, err := capture.NewReader(bytes.NewReader(capt))
	if err != nil {
		t.Fatal(err)
	}
	dec, sum := roce.NewDecoder(), capture.NewSummary()
	var st capture.Stats
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
	for _, mode := range []struct {
		name            string
		split           bool
		minChunk        int64
		wantChunksPerOK int64
	}{
		{"sequence", false, 0, 0},
		{"one chunk per core", true, 1 << 40, int64(runtime.GOMAXPROCS(0))},
		{"chunks", true, 1, 8 * int64(runtime.GOMAXPROCS(0))},
	} {
		split := mode.split
		restore := func() {}
		if split {
			restore = capture.SetSplit(0, mode.minChunk)
		}
		splits, chunks, mapped := capture.SplitCount(), capture.ChunkCount(), capture.MappedCount()
		for _, tc := range []struct {
			name    string
			capt    []byte
			wantErr bool
		}{
			{"pcap", pcap.Bytes(), false},
			{"pcapng", pcapng.Bytes(), false},
			{"pcap truncated", pcap.Bytes()[:pcap.Len()-7], true},
			{"pcapng truncated", pcapng.Bytes()[:pcapng.Len()-100], true},
			{"pcap header only", pcap.Bytes()[:24], false},
		} {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				wantFlows, wantStats, wantBad, wantErr := sequential(t, tc.capt)
				if tc.name != "pcap header only" && (wantStats.Malformed == 0 || wantStats.NonRoCE == 0 || wantStats.BadICRC == 0 || len(wantFlows) < 8) {
					t.Fatalf("the test capture lacks malformed, non-RoCE or bad-ICRC frames or flows: %+v, %d flows", wantStats, len(wantFlows))
				}
				if tc.name == "pcap" {
					var l capture.Loss
					for _, f := range wantFlows {
						l.Retransmitted += f.Loss.Retransmitted
						l.Missing += f.Loss.Missing
						l.LostResent += f.Loss.LostResent
						l.OutOfOrder += f.Loss.OutOfOrder
						l.NAKs.PSNSequenceError += f.Loss.NAKs.PSNSequenceError
					}
					if l.Retransmitted == 0 || l.Missing == 0 || l.LostResent == 0 || l.OutOfOrder == 0 || l.NAKs.PSNSequenceError == 0 {
						t.Fatalf("the test capture lacks some loss: %+v", l)
					}
				}
				if (wantErr != nil) != tc.wantErr {
					t.Fatalf("sequential read error %v, want error %v", wantErr, tc.wantErr)
				}
				// from memory; and from a file, mapped (pcap) and read
				path := filepath.Join(t.TempDir(), "capture")
				if err := os.WriteFile(path, tc.capt, 0o644); err != nil {
					t.Fatal(err)
				}
				for _, src := range []string{"bytes", "file mapped", "file read"} {
					var in io.Reader = bytes.NewReader(tc.capt)
					if src != "bytes" {
						f, err := os.Open(path)
						if err != nil {
							t.Fatal(err)
						}
						defer f.Close()
						in = f
						defer capture.SetMapFiles(src == "file mapped")()
					}
					cr, err := capture.NewReader(in)
					if err != nil {
						t.Fatal(err)
					}
					var bad []string
					sum, st, err := cr.Summarize(func(e capture.FrameError) { bad = append(bad, fmt.Sprintf("frame %d: %v", e.Frame, e.Err)) })
					if fmt.Sprint(err) != fmt.Sprint(wantErr) {
						t.Errorf("%s: error %v, want %v", src, err, wantErr)
					}
					if st != wantStats {
						t.Errorf("%s: stats %+v, want %+v", src, st, wantStats)
					}
					if !reflect.DeepEqual(bad, wantBad) {
						t.Errorf("%s: malformed frames %q, want %q", src, bad, wantBad)
					}
					if got := sum.Flows(); !reflect.DeepEqual(got, wantFlows) {
						t.Errorf("%s: flows differ:\n got %+v\nwant %+v", src, got, wantFlows)
					}
				}
			})
		}
		// the whole captures, and the truncated pcap, are cut into chunks
		// (a damaged pcapng is read again in one sequence)
		if runtime.GOMAXPROCS(0) > 1 {
			got, gotChunks := capture.SplitCount()-splits, capture.ChunkCount()-chunks
			if split && (got < 9 || gotChunks < 9*mode.wantChunksPerOK) {
				t.Errorf("%s: Summarize cut %d of the captures into %d chunks, want at least 9 (3 captures, 3 ways) into %d each", mode.name, got, gotChunks, mode.wantChunksPerOK)
			}
			// the whole pcap and the truncated one, from a mapped file
			if m := capture.MappedCount() - mapped; split && mapFilesWork && m != 2 {
				t.Errorf("%s: Summarize mapped %d captures, want 2", mode.name, m)
			}
			if !split && got != 0 {
				t.Errorf("%s: Summarize cut %d captures", mode.name, got)
			}
		}
		restore()
	}
}

// A pcapng capture is summarised in chunks also when some goroutines find
// no chunk left to take (more goroutines than cores, small chunks taken
// quickly): their readers have seen no interfaces, which must not count as
// a mismatch that makes Summarize read the capture again.
func TestSummarizeIdleWorkers(t *testing.T) {
	var pcapng bytes.Buffer
	if err := rocegen.WritePcapNG(&pcapng, rocegen.Synthetic(2000)); err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(16))
	defer capture.SetSplit(0, 1<<40)() // one chunk per goroutine: 16 chunks
	want, _, _, _ := sequential(t, pcapng.Bytes())
	for i := 0; i < 20; i++ {
		splits := capture.SplitCount()
		cr, err := capture.NewReader(bytes.NewReader(pcapng.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := cr.Summarize(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Flows(); !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: flows differ:\n got %+v\nwant %+v", i, got, want)
		}
		if capture.SplitCount() == splits {
			t.Fatalf("run %d: the capture was read again in one sequence", i)
		}
	}
}

// Merging the Summaries of consecutive pieces of a packet sequence gives
// the Summary of the whole sequence, wherever it is cut.
func TestSummaryMerge(t *testing.T) {
	frames := append(rocegen.Sample(), rocegen.Synthetic(40)...)
	frames = append(frames, rocegen.Sample()...)
	for _, tc := range rcCases() {
		if tc.name == "mixed, READs lost" || tc.name == "UC: lost for good" {
			frames = append(frames, tc.conn.Simulate().After...)
		}
	}
	dec := roce.NewDecoder()
	var pkts []roce.Packet
	var lens []int
	for _, f := range frames {
		var p roce.Packet
		if dec.Decode(f.Data, &p) == nil {
			pkts, lens = append(pkts, p), append(lens, len(f.Data))
		}
	}
	whole := capture.NewSummary()
	for i := range pkts {
		whole.Add(&pkts[i], lens[i])
	}
	want := whole.Flows()
	part := capture.NewSummary()
	for cut1 := 0; cut1 <= len(pkts); cut1 += 3 {
		for cut2 := cut1; cut2 <= len(pkts); cut2 += 5 {
			total := capture.NewSummary()
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

// addCaptureSeeds adds small pcap and pcapng captures (the sample frames,
// eight synthetic ones) as fuzz seeds.
func addCaptureSeeds(f *testing.F) {
	for _, frames := range [][]rocegen.Frame{rocegen.Sample(), rocegen.Synthetic(8)} {
		var pcap, pcapng bytes.Buffer
		if rocegen.WritePcap(&pcap, frames) != nil || rocegen.WritePcapNG(&pcapng, frames) != nil {
			f.Fatal("writing the seed captures")
		}
		f.Add(pcap.Bytes())
		f.Add(pcapng.Bytes())
	}
	// Linux cooked captures (tcpdump -i any), pcap and pcapng.
	for _, lt := range []layers.LinkType{layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2} {
		f.Add(writeCooked(f, rocegen.Sample(), lt, 6, false))
		f.Add(writeCooked(f, rocegen.Sample(), lt, 6, true))
	}
}

// FuzzSummarize: whatever the capture, Summarize cutting it into chunks
// gives what reading it frame by frame gives, from memory and from a
// mapped file.
func FuzzSummarize(f *testing.F) {
	addCaptureSeeds(f)
	defer capture.SetSplit(0, 64)()
	path := filepath.Join(f.TempDir(), "capture")
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := capture.NewReader(bytes.NewReader(data)); err != nil {
			return
		}
		wantFlows, wantStats, wantBad, wantErr := sequential(t, data)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		for _, in := range []io.Reader{bytes.NewReader(data), file} {
			cr, err := capture.NewReader(in)
			if err != nil {
				t.Fatal(err)
			}
			var bad []string
			sum, st, err := cr.Summarize(func(e capture.FrameError) { bad = append(bad, fmt.Sprintf("frame %d: %v", e.Frame, e.Err)) })
			if fmt.Sprint(err) != fmt.Sprint(wantErr) || st != wantStats || !reflect.DeepEqual(bad, wantBad) {
				t.Fatalf("Summarize (%T): %v %+v %q, frame by frame: %v %+v %q", in, err, st, bad, wantErr, wantStats, wantBad)
			}
			if got := sum.Flows(); !reflect.DeepEqual(got, wantFlows) {
				t.Fatalf("%T: flows differ:\n got %+v\nwant %+v", in, got, wantFlows)
			}
		}
	})
}

// key is TestSummaryKeepsFlowsApart's flow key, made from a packet's
// fields by the test itself.
type key struct {
	version      int
	src, dst     netip.Addr
	sport, dport uint16
	qp, srcQP    uint32
	hasSrcQP     bool
}

func (k key) String() string {
	return fmt.Sprintf("v%d %s:%d→%s:%d QP %#x source QP %#x (known %v)", k.version, k.src, k.sport, k.dst, k.dport, k.qp, k.srcQP, k.hasSrcQP)
}

// TestSummaryKeepsFlowsApart: packets that differ from a base packet in
// one field of their flow key only (RoCE version, addresses, UDP ports,
// QPs, whether a source QP is known) are counted as flows of their own, in
// the order they first appear, also when they meet in the same slot of
// Summary's recently-used-flows cache: each variant is fed between base
// packets (base, v, base, v), and every field has a variant in base's slot.
// The expected counts come from a map keyed by the packets' own field
// values.
func TestSummaryKeepsFlowsApart(t *testing.T) {
	a4, b4 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	a6 := netip.MustParseAddr("2001:db8::1")
	base := roce.Packet{Src: a4, Dst: b4, SrcPort: 0xC000, DstPort: uint16(roce.UDPPort)}
	base.Version, base.IPVersion = 2, 4
	base.BTH.DestQP = 0x11
	// The cache slot is (DestQP ^ SrcQP ^ SrcPort ^ SrcPort>>6) & 63: 0x11
	// for base (0xC000 and 0xC000>>6 have no low bits) and for every variant
	// but the two in slot 0x00, (DestQP 0x11, SrcQP 0x51) and (DestQP 0x51,
	// SrcQP 0x11), which meet there.
	variants := []func(p *roce.Packet){
		func(p *roce.Packet) {},
		func(p *roce.Packet) { p.Version, p.IPVersion = 1, 0 }, // only the version differs (a real v1 packet has no ports)
		func(p *roce.Packet) { p.Src = a6 },
		func(p *roce.Packet) { p.Dst = a4 },
		func(p *roce.Packet) { p.Src = netip.AddrFrom16(a4.As16()) }, // ::ffff:192.0.2.1 is another address
		func(p *roce.Packet) { p.SrcPort = 0xD000 },                  // 0xD000>>6 = 0x340: no low bits either
		func(p *roce.Packet) { p.DstPort = 4792 },
		func(p *roce.Packet) { p.BTH.DestQP = 0x51 }, // 0x51 & 63 = 0x11
		func(p *roce.Packet) { p.HasDETH = true },    // source QP 0, known
		func(p *roce.Packet) { p.HasDETH, p.SrcQP = true, 0x40 },
		func(p *roce.Packet) { p.HasDETH, p.SrcQP = true, 0x51 },
		func(p *roce.Packet) { p.BTH.DestQP, p.HasDETH, p.SrcQP = 0x51, true, 0x11 },
		func(p *roce.Packet) { p.SrcQP = 0x51 }, // no DETH: not part of the key, base's flow
	}
	keyOf := func(p *roce.Packet) key {
		k := key{p.Version, p.Src, p.Dst, p.SrcPort, p.DstPort, p.BTH.DestQP, 0, p.HasDETH}
		if p.HasDETH {
			k.srcQP = p.SrcQP
		}
		return k
	}
	var pkts []roce.Packet
	for seq, v := range variants {
		for range 2 {
			b, p := base, base
			v(&p)
			b.BTH.PSN, p.BTH.PSN = uint32(seq), uint32(seq)
			pkts = append(pkts, b, p)
		}
	}
	// and all of them in turn, twice
	for range 2 {
		for _, v := range variants {
			p := base
			v(&p)
			pkts = append(pkts, p)
		}
	}
	want := map[key]uint64{}
	var order []key
	for i := range pkts {
		k := keyOf(&pkts[i])
		if want[k] == 0 {
			order = append(order, k)
		}
		want[k]++
	}
	s := capture.NewSummary()
	for i := range pkts {
		s.Add(&pkts[i], 100)
	}
	flows := s.Flows()
	if len(flows) != len(order) {
		t.Fatalf("%d flows, want %d", len(flows), len(order))
	}
	for i, f := range flows {
		p := roce.Packet{Src: f.Src, Dst: f.Dst, SrcPort: f.SrcPort, DstPort: f.DstPort, HasDETH: f.HasSrcQP, SrcQP: f.SrcQP}
		p.Version, p.BTH.DestQP = f.Version, f.DestQP
		if k := keyOf(&p); k != order[i] {
			t.Errorf("flow %d is %v, want %v", i, k, order[i])
		} else if f.Packets != want[k] || f.Bytes != 100*want[k] {
			t.Errorf("flow %d (%v): %d packets, %d bytes; want %d, %d", i, k, f.Packets, f.Bytes, want[k], 100*want[k])
		}
	}
}
