package capture

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// blockWatch walks the same block chain however the bytes arrive (whole,
// a byte at a time, in halves), sees a second section header block, and
// does not call a chunk clean that ends inside a block.
func TestBlockWatch(t *testing.T) {
	var one bytes.Buffer
	w, err := pcapgo.NewNgWriter(&one, layers.LinkTypeEthernet)
	if err != nil {
		t.Fatal(err)
	}
	for n := 60; n < 110; n++ { // frame lengths with every padding
		data := bytes.Repeat([]byte{byte(n)}, n)
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(1, 0), CaptureLength: n, Length: n}
		if err := w.WritePacket(ci, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	capture := one.Bytes()
	two := append(append([]byte(nil), capture...), capture...)        // cat a.pcapng a.pcapng
	last := int(binary.LittleEndian.Uint32(capture[len(capture)-4:])) // the last block's length
	for _, tc := range []struct {
		name      string
		data      []byte
		first     bool
		wantClean bool
	}{
		{"one section, from the file header", capture, true, true},
		{"two sections", two, true, false},
		{"a chunk starting at a section header", capture, false, false},
		{"cut inside the last block", capture[:len(capture)-4], true, false},
		{"cut inside the last block's header", capture[:len(capture)-last+3], true, false},
		{"cut before the last block", capture[:len(capture)-last], true, true},
	} {
		for _, mode := range []struct {
			name string
			r    func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"bytes", iotest.OneByteReader},
			{"halves", iotest.HalfReader},
		} {
			bw := &blockWatch{r: mode.r(bytes.NewReader(tc.data)), order: binary.LittleEndian, first: tc.first}
			if _, err := io.Copy(io.Discard, struct{ io.Reader }{bw}); err != nil {
				t.Fatal(err)
			}
			if got := bw.clean(); got != tc.wantClean {
				t.Errorf("%s, read %s: clean %v, want %v (next %d, read %d, bad %v)", tc.name, mode.name, got, tc.wantClean, bw.next, bw.off, bw.bad)
			}
		}
	}
}
