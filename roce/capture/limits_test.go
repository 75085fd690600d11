package capture

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"testing"
)

// pcapHeader is a little-endian pcap file header: microseconds, version
// 2.4, the snap length, Ethernet.
func pcapHeader(snaplen uint32) []byte {
	le := binary.LittleEndian
	h := le.AppendUint32(nil, 0xa1b2c3d4)
	h = le.AppendUint16(h, 2)
	h = le.AppendUint16(h, 4)
	h = le.AppendUint32(h, 0)
	h = le.AppendUint32(h, 0)
	h = le.AppendUint32(h, snaplen)
	return le.AppendUint32(h, 1)
}

// pcapRecord is a record header of a frame of n bytes.
func pcapRecord(n uint32) []byte {
	le := binary.LittleEndian
	return le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 1), 0), n), n)
}

// gzipped compresses head and then n zero bytes.
func gzipped(head []byte, n int) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(head)
	zero := make([]byte, 1<<20)
	for ; n > 0; n -= len(zero) {
		zw.Write(zero[:min(n, len(zero))])
	}
	zw.Close()
	return b.Bytes()
}

// A record as long as MaxFrameBytes is a frame; a longer one, of a capture
// whose snap length allows it, is refused before it is read: a small gzip
// capture that decompresses to a 64 MiB record costs the reader's buffers
// (two of 1 MiB), not the record.
func TestFrameLimit(t *testing.T) {
	ok := append(append(pcapHeader(0xffffffff), pcapRecord(MaxFrameBytes)...), make([]byte, MaxFrameBytes)...)
	r, err := NewReader(bytes.NewReader(ok))
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := r.Next(); err != nil || len(data) != MaxFrameBytes {
		t.Fatalf("a %d-byte record: %d bytes, %v", MaxFrameBytes, len(data), err)
	}
	bomb := gzipped(append(pcapHeader(0xffffffff), pcapRecord(64<<20)...), 64<<20)
	alloc := allocated(func() {
		r, err = NewReader(bytes.NewReader(bomb))
		if err == nil {
			_, _, err = r.Next()
		}
	})
	want := "capture: frame 1: a record of 67108864 bytes is larger than 256 KiB (262144 bytes), the most roce-probe reads"
	if !errors.Is(err, ErrTooLarge) || err == nil || err.Error() != want {
		t.Fatalf("Next = %v, want %q", err, want)
	}
	if alloc > 8<<20 {
		t.Errorf("allocated %d bytes, want at most 8 MiB", alloc)
	}
}

// allocated returns the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// pcapng: a packet block longer than MaxFrameBytes and its slack is
// refused before pcapgo reads it.
func TestFrameLimitPcapNG(t *testing.T) {
	le := binary.LittleEndian
	shb := le.AppendUint32(nil, 0x0a0d0d0a)
	shb = le.AppendUint32(shb, 28)
	shb = le.AppendUint32(shb, 0x1a2b3c4d)
	shb = le.AppendUint16(le.AppendUint16(shb, 1), 0)
	shb = le.AppendUint64(shb, 0xffffffffffffffff)
	shb = le.AppendUint32(shb, 28)
	idb := le.AppendUint32(nil, 1)
	idb = le.AppendUint32(idb, 20)
	idb = le.AppendUint16(le.AppendUint16(idb, 1), 0)
	idb = le.AppendUint32(idb, 0)
	idb = le.AppendUint32(idb, 20)
	const n = 64 << 20
	epb := le.AppendUint32(nil, 6)
	epb = le.AppendUint32(epb, n+32)
	epb = le.AppendUint32(epb, 0)
	epb = le.AppendUint32(le.AppendUint32(epb, 0), 0)
	epb = le.AppendUint32(le.AppendUint32(epb, n), n)
	head := append(append(shb, idb...), epb...)
	bomb := gzipped(head, n)
	var err error
	alloc := allocated(func() {
		var r *Reader
		if r, err = NewReader(bytes.NewReader(bomb)); err == nil {
			_, _, err = r.Next()
		}
	})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "capture: frame 1: a pcapng block of 67108896 bytes is larger than 320 KiB (327680 bytes)") {
		t.Fatalf("Next = %v, want a pcapng block larger than 320 KiB", err)
	}
	if alloc > 8<<20 {
		t.Errorf("allocated %d bytes, want at most 8 MiB", alloc)
	}
}

// The reader survives any input, plain or gzip-compressed: an error or
// frames, none longer than MaxFrameBytes.
func FuzzReader(f *testing.F) {
	f.Add(append(pcapHeader(0xffffffff), pcapRecord(70000)...))
	f.Add(append(append(pcapHeader(65535), pcapRecord(4)...), 1, 2, 3, 4))
	f.Add(gzipped(append(pcapHeader(0xffffffff), pcapRecord(MaxFrameBytes+1)...), 1000))
	le := binary.LittleEndian
	ng := le.AppendUint32(nil, 0x0a0d0d0a)
	ng = le.AppendUint32(ng, 28)
	ng = le.AppendUint32(ng, 0x1a2b3c4d)
	ng = le.AppendUint16(le.AppendUint16(ng, 1), 0)
	ng = le.AppendUint64(ng, 0xffffffffffffffff)
	ng = le.AppendUint32(ng, 28)
	f.Add(append(ng, le.AppendUint32(le.AppendUint32(nil, 6), 0x7ffffffc)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i := 0; i < 1000; i++ {
			data, _, err := r.Next()
			if err != nil {
				return
			}
			if len(data) > MaxFrameBytes {
				t.Fatalf("frame %d: %d bytes, more than MaxFrameBytes", i+1, len(data))
			}
		}
	})
}
