package host

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n += int64(k)
	return k, err
}

// spaces is an endless stream of JSON whitespace.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// A decompression bomb: 4 × MaxSnapshotBytes of JSON (an object that
// never ends) in some 260 KB of gzip. Decode must refuse it as too large
// having read about a quarter of the compressed stream — no more than the
// limit decompressed — and allocated about the limit, not the expansion.
func TestDecodeBomb(t *testing.T) {
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write([]byte(`{"format":"roce-probe-snapshot","version":1,"hostname":"`))
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	for i := 0; i < 4*MaxSnapshotBytes>>20; i++ {
		zw.Write(chunk)
	}
	zw.Write([]byte(`"}`))
	zw.Close()
	in := &countingReader{r: bytes.NewReader(gz.Bytes())}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := Decode(in)
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the decompressed snapshot is larger than 64 MiB (67108864 bytes)") {
		t.Fatalf("Decode(bomb) = %v, want the decompressed snapshot larger than 64 MiB", err)
	}
	// The stream is uniform: a quarter of it is the limit; 5 % more
	// covers the buffers between the reader and the limit.
	if max := int64(gz.Len()) * 30 / 100; in.n > max {
		t.Errorf("read %d of the bomb's %d compressed bytes, want at most %d (30 %%)", in.n, gz.Len(), max)
	}
	// The race detector's build reads the stream with other allocations
	// (measured: 330 MB where the plain build stays under 3 × the limit),
	// so the bound is checked in the plain build only; the bytes read
	// above are checked in both.
	if alloc := m1.TotalAlloc - m0.TotalAlloc; !raceBuild && alloc > 3*MaxSnapshotBytes {
		t.Errorf("allocated %d bytes, want at most 3 × the limit", alloc)
	}
}

// An endless plain stream (standard input) stops one byte past the limit.
func TestDecodeEndlessStream(t *testing.T) {
	in := &countingReader{r: io.MultiReader(strings.NewReader("{"), spaces{})}
	_, err := Decode(in)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the snapshot is larger than 64 MiB") {
		t.Fatalf("Decode(endless) = %v, want the snapshot larger than 64 MiB", err)
	}
	// bufio's 4 KiB buffer reads ahead of the limit reader, not past it.
	if in.n > MaxSnapshotBytes+1 {
		t.Errorf("read %d bytes, want at most the limit and one", in.n)
	}
	_, err = DecodeWith(strings.NewReader(`{"format":"roce-probe-snapshot","version":1}`+strings.Repeat(" ", 100)), DecodeOptions{MaxBytes: 100})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 100 bytes") {
		t.Errorf("MaxBytes 100: %v, want larger than 100 bytes", err)
	}
}

// Nesting and the count of objects and arrays are bounded before the
// decoder allocates, and the error says where the limit was passed.
func TestDecodeShapeLimits(t *testing.T) {
	head := `{"format":"roce-probe-snapshot","version":1,`
	deep := head + `"errors":` + strings.Repeat("[", MaxSnapshotDepth) + strings.Repeat("]", MaxSnapshotDepth) + "}"
	if _, err := Decode(strings.NewReader(deep)); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 32 levels of nesting (at errors[0][0]") {
		t.Errorf("%d levels: %v, want more than 32 levels at errors[0][0]...", MaxSnapshotDepth+1, err)
	}
	// MaxSnapshotObjects empty links: 3 bytes each, 1.5 MB, which
	// would decode to over 100 MB of netdevs.
	links := head + `"namespaces":[{"links":[` + strings.Repeat("{},", MaxSnapshotObjects) + "{}]}]}"
	_, err := Decode(strings.NewReader(links))
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the snapshot has more than 524288 objects and arrays (at namespaces[0].links[524284])") {
		// the document, namespaces, its first namespace and links are
		// the first 4: link 524284 is the 524289th.
		t.Errorf("%d links: %v, want more than 524288 objects and arrays at namespaces[0].links[524284]", MaxSnapshotObjects+1, err)
	}
}

// The decoder's errors are in the snapshot's terms: the key path with its
// indices, JSON's kinds of values, the device, port and index of a GID;
// never the Go types the document is decoded into.
func TestDecodeErrorsSpeakJSON(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join("testdata", "rxe.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(old, new string) string {
		if !bytes.Contains(valid, []byte(old)) {
			t.Fatalf("fixture has no %q", old)
		}
		return strings.Replace(string(valid), old, new, 1)
	}
	for _, c := range []struct{ in, want string }{
		{`[]`, "not a roce-probe snapshot: the document is an array, want an object"},
		{`"rxe"`, "not a roce-probe snapshot: the document is a string, want an object"},
		{edit(`"ifindex": 1,`, `"ifindex": "1",`), `namespaces[0].links[0].ifindex: string: want an integer`},
		{edit(`"mtu": 65536,`, `"mtu": [65536],`), `namespaces[0].links[0].mtu: array: want an integer`},
		{edit(`"gid_table_len": 16`, `"gid_table_len": "16"`), `rdma.devices[0].ports[0].gid_table_len: string: want an integer`},
		{edit(`"gid": "fd00::1"`, `"gid": "fd00::zz"`), `rxe0 port 1: GID index 2 (rdma.devices[0].ports[0].gids[2]): gid: "fd00::zz" is not a GID`},
		{edit(`"gid": "fd00::1"`, `"gid": 7`), `rdma.devices[0].ports[0].gids[2].gid: number: want a string`},
		{edit(`"type": "RoCE v2"`, `"type": "RoCE v3"`), `rxe0 port 1: GID index 0 (rdma.devices[0].ports[0].gids[0]): gid: unknown GID type "RoCE v3"`},
		{edit(`"hostname": "fixture-rxe"`, `"hostname": "fixture-rxe", "color": "blue"`), `the top level: unknown key "color"`},
		{edit(`"format"`, `"format" x`), `not JSON (invalid character 'x' after object key at byte 14, in format)`},
	} {
		_, err := Decode(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%.50q…) = %v, want an error containing %q", c.in, err, c.want)
			continue
		}
		noGoNames(t, err)
	}
}

// noGoNames fails when an error message names Go types or fields.
func noGoNames(t *testing.T, err error) {
	t.Helper()
	for _, bad := range []string{"Go value", "Go struct", "decodeBase", "json: ", "*string", "struct {", "[]uint8", "vlan.", "host."} {
		if strings.Contains(err.Error(), bad) {
			t.Errorf("%q names Go's %q", err, bad)
		}
	}
}
