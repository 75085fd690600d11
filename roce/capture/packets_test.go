package capture_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// TestNextPacketCounts: rocegen.Sample's ten frames (eight RoCE packets
// with a valid ICRC, one with a flipped payload bit, one DNS query) and
// one RoCE frame cut inside its headers, counted by hand: 11 frames, 9
// RoCE of which 1 with a bad ICRC, 1 not RoCE, 1 malformed (frame 11).
// NextPacket returns the nine packets in order, the malformed one as a
// FrameError, then io.EOF.
func TestNextPacketCounts(t *testing.T) {
	frames := rocegen.Sample()
	cut := frames[0]
	// UDP to 4791 but cut inside the DETH: RoCE, malformed
	cut.Data = cut.Data[:len(cut.Data)-9-roce.ICRCLen-len("roce-probe sample")]
	frames = append(frames, cut)
	var pcap bytes.Buffer
	if err := rocegen.WritePcap(&pcap, frames); err != nil {
		t.Fatal(err)
	}
	cr, err := capture.NewReader(bytes.NewReader(pcap.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	var bad []capture.FrameError
	var p roce.Packet
	for {
		_, err := cr.NextPacket(&p)
		var fe capture.FrameError
		if errors.As(err, &fe) {
			bad = append(bad, fe)
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, cr.Frame())
	}
	if want := []int{1, 2, 3, 4, 5, 6, 7, 8, 9}; !reflect.DeepEqual(got, want) {
		t.Errorf("packets in frames %v, want %v", got, want)
	}
	if len(bad) != 1 || bad[0].Frame != 11 {
		t.Errorf("malformed %v, want frame 11", bad)
	}
	want := capture.Stats{Frames: 11, RoCE: 9, NonRoCE: 1, Malformed: 1, BadICRC: 1}
	if st := cr.Stats(); st != want {
		t.Errorf("Stats() = %+v, want %+v", st, want)
	}
}

// TestNextPacketMatchesSummarize: on the large mixed capture of the
// Summarize tests, NextPacket counts what Summarize and the frame-by-frame
// reference (sequential) count, and reports the same malformed frames.
func TestNextPacketMatchesSummarize(t *testing.T) {
	var pcap bytes.Buffer
	if err := rocegen.WritePcap(&pcap, summarizeFrames()); err != nil {
		t.Fatal(err)
	}
	_, wantStats, wantBad, _ := sequential(t, pcap.Bytes())
	cr, err := capture.NewReader(bytes.NewReader(pcap.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	var p roce.Packet
	for {
		_, err := cr.NextPacket(&p)
		var fe capture.FrameError
		if errors.As(err, &fe) {
			bad = append(bad, fmt.Sprintf("frame %d: %v", fe.Frame, fe.Err))
			continue
		}
		if err != nil {
			break
		}
	}
	if cr.Stats() != wantStats || !reflect.DeepEqual(bad, wantBad) {
		t.Errorf("NextPacket: %+v, %d malformed; sequential: %+v, %d", cr.Stats(), len(bad), wantStats, len(wantBad))
	}
}
