package bound

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stream of exactly the limit is read whole; one byte more is an
// *Error naming the input and the limit.
func TestReader(t *testing.T) {
	b, err := ReadAll(strings.NewReader("12345"), 5, "the file")
	if err != nil || string(b) != "12345" {
		t.Errorf("5 bytes, limit 5: %q, %v", b, err)
	}
	_, err = ReadAll(strings.NewReader("123456"), 5, "the file")
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrTooLarge) || err.Error() != "the file is larger than 5 bytes, the most roce-probe reads" {
		t.Errorf("6 bytes, limit 5: %v", err)
	}
	if err := (&Error{What: "it", Limit: 64 << 20, Unit: "bytes", Hint: "raise it with --max"}).Error(); err != "it is larger than 64 MiB (67108864 bytes), the most roce-probe reads; raise it with --max" {
		t.Errorf("Error() = %q", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("123456"), 0o644)
	if _, err := ReadFile(p, 5, "the peers file"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile of 6 bytes, limit 5: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 5, "x"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

// PathAt and FindValue name values in the document's own keys.
func TestPaths(t *testing.T) {
	doc := []byte(`{"a": [{"b": 1}, {"b": "x", "c": {"d": [true, null]}}], "e": "f\"}"}`)
	// The offset just after each marker.
	for marker, want := range map[string]string{
		`{`:         "",
		`1`:         "a[0].b",
		`"x"`:       "a[1].b",
		`true, nul`: "a[1].c.d[1]",
		`"f\"}`:     "e",
	} {
		off := strings.Index(string(doc), marker) + len(marker)
		if got := PathAt(doc, int64(off)); got != want {
			t.Errorf("PathAt(%d) (at %q) = %q, want %q", off, doc[:off], got, want)
		}
	}
	for _, c := range []struct {
		keys          []string
		kind, literal string
		want          string
		ok            bool
	}{
		{[]string{"a", "b"}, "string", "", "a[1].b", true},
		{[]string{"b"}, "number", "1", "a[0].b", true},
		{[]string{"d"}, "null", "", "a[1].c.d[1]", true},
		{nil, "bool", "true", "a[1].c.d[0]", true},
		{[]string{"b"}, "array", "", "", false},
	} {
		got, ok := FindValue(doc, c.keys, c.kind, c.literal)
		if got != c.want || ok != c.ok {
			t.Errorf("FindValue(%v, %s %s) = %q, %v, want %q, %v", c.keys, c.kind, c.literal, got, ok, c.want, c.ok)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	l := JSONLimits{Depth: 3, Containers: 4}
	for doc, want := range map[string]string{
		`{"a":[[1]]}`:           "",
		`{"a":[[["x"]]]}`:       "it has more than 3 levels of nesting (at a[0][0]), the most roce-probe reads",
		`[{},{},{}]`:            "",
		`[{},{},{},{}]`:         "it has more than 4 objects and arrays (at [3]), the most roce-probe reads",
		`{"s":"[[[[[[[[[[[[["}`: "", // brackets in strings are text
		`]]]}}}[`:               "", // not JSON: the decoder says so
	} {
		err := CheckJSON([]byte(doc), l, "it")
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("CheckJSON(%s) = %q, want %q", doc, got, want)
		}
	}
}

// The scanners never panic or loop on any input.
func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"a": [{"b": 1}, {"b": "x\\"}]}`), int64(10))
	f.Add([]byte(`"\`), int64(2))
	f.Fuzz(func(t *testing.T, b []byte, off int64) {
		CheckJSON(b, JSONLimits{Depth: 4, Containers: 8}, "it")
		if off >= 0 {
			PathAt(b, off)
		}
		FindValue(b, []string{"b"}, "string", "")
		FindValue(b, nil, "number", "1")
		io.ReadAll(NewReader(strings.NewReader(string(b)), 3, "it"))
	})
}
