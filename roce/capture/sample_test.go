package capture_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

var update = flag.Bool("update", false, "rewrite roce/testdata/sample.pcapng and the fuzz seed corpus")

const samplePath = "../testdata/sample.pcapng"

// TestSampleCapture checks that roce/testdata/sample.pcapng is what
// internal/rocegen generates (go test ./roce/capture -run SampleCapture -update
// rewrites it and the fuzz seeds), and what it contains.
func TestSampleCapture(t *testing.T) {
	frames := rocegen.Sample()
	var buf bytes.Buffer
	if err := rocegen.WritePcapNG(&buf, frames); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(samplePath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		writeSeeds(t, frames, buf.Bytes())
	}
	got, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s is stale: regenerate it with go test ./roce/capture -run SampleCapture -update", samplePath)
	}

	cr, err := capture.NewReader(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if cr.Format() != capture.FormatPcapNG {
		t.Errorf("format %q", cr.Format())
	}
	dec := roce.NewDecoder()
	var v1, v2, ip4, ip6, tagged, qinq, cnp, bad, notRoCE int
	for {
		data, ci, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !ci.Timestamp.Equal(frames[cr.Frame()-1].Time) {
			t.Errorf("frame %d: timestamp %v, want %v", cr.Frame(), ci.Timestamp, frames[cr.Frame()-1].Time)
		}
		var p roce.Packet
		if err := dec.Decode(data, &p); errors.Is(err, roce.ErrNotRoCE) {
			notRoCE++
			continue
		} else if err != nil {
			t.Fatalf("frame %d: %v", cr.Frame(), err)
		}
		switch {
		case p.Version == 1:
			v1++
		case p.IPVersion == 4:
			v2++
			ip4++
		default:
			v2++
			ip6++
		}
		if p.NumVLANs == 1 {
			tagged++
		}
		if p.NumVLANs == 2 && p.VLANs[0].TPID == 0x88a8 {
			qinq++
		}
		if p.BTH.Opcode == roce.OpcodeCNP {
			cnp++
		}
		if p.ICRCStatus == roce.ICRCInvalid {
			bad++
		}
	}
	if v1 < 2 || ip4 < 2 || ip6 < 2 || tagged < 2 || qinq != 1 || cnp != 1 || bad != 1 || notRoCE != 1 {
		t.Errorf("sample has v1 %d, v2 %d (IPv4 %d, IPv6 %d), tagged %d, QinQ %d, CNP %d, bad ICRC %d, not RoCE %d",
			v1, v2, ip4, ip6, tagged, qinq, cnp, bad, notRoCE)
	}
}

// writeSeeds writes the sample's frames as fuzz seeds: the frame targets'
// into roce/testdata/fuzz, the capture targets' into this package's.
func writeSeeds(t *testing.T, frames []rocegen.Frame, capt []byte) {
	seed := func(target string, data []byte) {
		dir := filepath.Join("..", "testdata", "fuzz", target)
		if target == "FuzzCaptureReader" {
			dir = filepath.Join("testdata", "fuzz", target)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("sample-%x", sha256.Sum256(data))[:23]
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range frames {
		for _, target := range []string{"FuzzDecoder", "FuzzNewPacket", "FuzzICRC"} {
			seed(target, f.Data)
		}
	}
	// FuzzLayers: a layer selector byte, then the bytes after the UDP header
	// of the first (untagged IPv4) frame.
	for i := 0; i < 14; i++ {
		seed("FuzzLayers", append([]byte{byte(i)}, frames[0].Data[42:]...))
	}
	seed("FuzzCaptureReader", capt)
	seed("FuzzCaptureReader", capt[:len(capt)-7])
}

// FuzzCaptureReader: reading and decoding any capture file never panics.
func FuzzCaptureReader(f *testing.F) {
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a})
	dec := roce.NewDecoder()
	f.Fuzz(func(t *testing.T, data []byte) {
		cr, err := capture.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := 0; i < 1000; i++ {
			frame, ci, err := cr.Next()
			if err != nil {
				return
			}
			var p roce.Packet
			_ = dec.DecodeCaptured(frame, ci, &p)
		}
	})
}

// BenchmarkDecodeSynthetic decodes and checks the frames of the
// 100,000-frame benchmark capture (256-byte payloads; UD and RC; IPv4 and
// IPv6; untagged and VLAN 100) and adds them to a Summary, as
// `roce-probe decode --summary` does, without the file reading.
func BenchmarkDecodeSynthetic(b *testing.B) {
	frames := rocegen.Synthetic(1024)
	dec := roce.NewDecoder()
	sum := capture.NewSummary()
	var p roce.Packet
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f := frames[i%len(frames)].Data
		i++
		if err := dec.Decode(f, &p); err != nil || p.ICRCStatus != roce.ICRCValid {
			b.Fatal(err, p.ICRCStatus)
		}
		sum.Add(&p, len(f))
	}
}

// Read-ahead returns the same frames as direct reading, and Close stops it
// part-way through.
func TestReadAhead(t *testing.T) {
	var buf bytes.Buffer
	frames := rocegen.Synthetic(3000) // several batches
	if err := rocegen.WritePcapNG(&buf, frames); err != nil {
		t.Fatal(err)
	}
	cr, err := capture.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	cr.ReadAhead()
	for i := 0; ; i++ {
		data, ci, err := cr.Next()
		if errors.Is(err, io.EOF) {
			if i != len(frames) {
				t.Fatalf("EOF after %d frames, want %d", i, len(frames))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, frames[i].Data) || !ci.Timestamp.Equal(frames[i].Time) || cr.Frame() != i+1 {
			t.Fatalf("frame %d differs (ts %v want %v)", i+1, ci.Timestamp, frames[i].Time)
		}
	}
	cr.Close()

	cr, _ = capture.NewReader(bytes.NewReader(buf.Bytes()))
	cr.ReadAhead()
	cr.Next()
	cr.Close() // must not hang with the goroutine blocked on a full queue
	cr.Close()
}
