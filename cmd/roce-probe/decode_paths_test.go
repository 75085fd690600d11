package main

// decode on the paths other than a capture file cut into chunks: the
// frame-by-frame path with read-ahead, standard input, gzip (from a review
// of those paths; the first three tests failed before their fixes).

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/rocegen"
)

func tempFile(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A pcap that ends right after frame 3's record header: exit 2 and an
// error naming frame 3, with and without --summary.
func TestDecodeTruncatedAfterRecordHeader(t *testing.T) {
	frames := rocegen.Sample()[:3]
	var buf bytes.Buffer
	if err := rocegen.WritePcap(&buf, frames); err != nil {
		t.Fatal(err)
	}
	path := tempFile(t, "cut.pcap", buf.Bytes()[:24+16+len(frames[0].Data)+16+len(frames[1].Data)+16])
	for _, args := range [][]string{{"decode", path}, {"decode", "--summary", path}} {
		_, stderr, code := runCLI(t, "", args...)
		if code != exitUsage || !strings.Contains(stderr, "frame 3") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and an error naming frame 3", args, code, stderr)
		}
	}
}

// -o json prints a packet dated after 2262 with its own date.
func TestDecodeJSONTimeAfter2262(t *testing.T) {
	le := binary.LittleEndian
	block := func(typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(12 + len(body))
		return le.AppendUint32(append(le.AppendUint32(le.AppendUint32(nil, typ), n), body...), n)
	}
	shb := le.AppendUint64(le.AppendUint16(le.AppendUint16(le.AppendUint32(nil, 0x1A2B3C4D), 1), 0), ^uint64(0))
	idb := le.AppendUint32(le.AppendUint32(nil, 1), 0) // Ethernet, snap length 0, microseconds
	f := rocegen.Sample()[0].Data
	ts := uint64(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
	epb := le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 0), uint32(ts>>32)), uint32(ts))
	epb = le.AppendUint32(le.AppendUint32(epb, uint32(len(f))), uint32(len(f)))
	capture := append(append(block(0x0A0D0D0A, shb), block(1, idb)...), block(6, append(epb, f...))...)
	out, stderr, code := runCLI(t, "", "decode", "-o", "ndjson", tempFile(t, "y2300.pcapng", capture))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var j struct{ Time string }
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err, out)
	}
	if want := "2300-01-01T00:00:00.000000000Z"; j.Time != want {
		t.Errorf("time %q, want %q", j.Time, want)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// `tcpdump -U -w - ... | roce-probe decode -`: the packets that have
// arrived are printed while the stream stays open.
func TestDecodeStdinStreams(t *testing.T) {
	pr, pw := io.Pipe()
	var capture bytes.Buffer
	if err := rocegen.WritePcap(&capture, rocegen.Sample()[:5]); err != nil {
		t.Fatal(err)
	}
	go pw.Write(capture.Bytes())
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run([]string{"decode", "-"}, pr, &out, &errb) }()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && strings.Count(out.String(), "\n") < 4 {
		time.Sleep(20 * time.Millisecond)
	}
	got := out.String()
	pw.Close()
	if code := <-done; code != exitOK {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(got, "\n"); n < 4 {
		t.Errorf("%d packets printed 5 s after 5 frames (4 RoCE) arrived on an open standard input, want 4:\n%s", n, got)
	}
}

// gzip: a gzip of a pcapng and a capture in two gzip members (split inside
// a frame) decode as the plain file does; a truncated gzip, a gzip of
// something that is not a capture and a bad gzip checksum exit 2.
func TestDecodeGzip(t *testing.T) {
	frames := rocegen.Sample()
	var ng, pc bytes.Buffer
	if rocegen.WritePcapNG(&ng, frames) != nil || rocegen.WritePcap(&pc, frames) != nil {
		t.Fatal("writing captures")
	}
	plainPath := tempFile(t, "s.pcapng", ng.Bytes())
	plainOut, _, code := runCLI(t, "", "decode", plainPath)
	if code != exitOK {
		t.Fatal(code)
	}
	plainSum, _, _ := runCLI(t, "", "decode", "--summary", plainPath)
	split := 24 + 16 + len(frames[0].Data) + 5
	members := append(rocegen.Gzip(pc.Bytes()[:split]), rocegen.Gzip(pc.Bytes()[split:])...)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"pcapng.gz", rocegen.Gzip(ng.Bytes())}, {"two-members.pcap.gz", members}} {
		p := tempFile(t, tc.name, tc.data)
		if out, stderr, code := runCLI(t, "", "decode", p); code != exitOK || out != plainOut {
			t.Errorf("%s: exit %d %s\n%s", tc.name, code, stderr, out)
		}
		if out, _, code := runCLI(t, "", "decode", "--summary", p); code != exitOK || out != plainSum {
			t.Errorf("%s --summary: exit %d\n%s", tc.name, code, out)
		}
	}
	gz := rocegen.Gzip(pc.Bytes())
	badCRC := append([]byte(nil), gz...)
	badCRC[len(badCRC)-6] ^= 1 // the CRC-32 in the gzip trailer
	for _, args := range [][]string{{"decode"}, {"decode", "--summary"}} {
		for _, bad := range []struct {
			name, want string
			data       []byte
		}{
			{"truncated.pcap.gz", "frame ", gz[:len(gz)-300]},
			{"not-a-capture.gz", "magic number", rocegen.Gzip([]byte("hello, not a capture at all"))},
			{"bad-crc.pcap.gz", "frame ", badCRC},
		} {
			_, stderr, code := runCLI(t, "", append(args, tempFile(t, bad.name, bad.data))...)
			if code != exitUsage || !strings.Contains(stderr, bad.want) {
				t.Errorf("%v %s: exit %d, %q; want exit 2 and %q", args, bad.name, code, stderr, bad.want)
			}
		}
	}
}

// Ctrl-C in `tcpdump -U -w - | roce-probe decode --summary -` reaches both
// programs: decode keeps reading until tcpdump, ending, closes the stream,
// and prints the summary of what it sent.
func TestDecodeStdinInterrupt(t *testing.T) {
	pr, pw := io.Pipe()
	var capture bytes.Buffer
	if err := rocegen.WritePcap(&capture, rocegen.Sample()[:5]); err != nil {
		t.Fatal(err)
	}
	var out, errb syncBuffer
	done := make(chan int)
	go func() { done <- run([]string{"decode", "--summary", "-"}, pr, &out, &errb) }()
	if _, err := pw.Write(capture.Bytes()); err != nil { // returns once decode has read it
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(errb.String(), "interrupt") {
		time.Sleep(10 * time.Millisecond)
	}
	pw.Close() // the capture program ends the stream
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "interrupt: reading standard input to its end") || !strings.Contains(errb.String(), "5 frames") {
		t.Errorf("stderr %q, want the interrupt note and the counts of the 5 frames", errb.String())
	}
	if strings.Count(out.String(), "\n") < 3 {
		t.Errorf("summary %q, want the flows of the 5 frames", out.String())
	}
}
