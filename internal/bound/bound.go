// Package bound reads untrusted input within limits: a reader that stops
// after a number of bytes, and a pre-scan of a JSON document that stops at
// a nesting depth or a number of objects, each returning an *Error that
// names the input, the limit and where it was passed. The limits
// themselves belong to the public packages that own the input
// (host.MaxSnapshotBytes, capture.MaxFrameBytes, ...); this package is
// the one mechanism they share.
package bound

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is wrapped by every *Error, for errors.Is.
var ErrTooLarge = errors.New("input over its limit")

// Error is input that passed a limit.
type Error struct {
	// What names the input: "the snapshot", "the decompressed snapshot",
	// "the peers file", ...
	What string
	// Limit is the limit passed, in Unit ("bytes", "objects", "levels
	// of nesting").
	Limit int64
	Unit  string
	// Where is the JSON path at which a JSON limit was passed ("" for
	// a byte limit).
	Where string
	// Hint says how to raise the limit, where the user can ("" when
	// nothing can).
	Hint string
}

// Error says what passed which limit, e.g. "the decompressed snapshot is
// larger than 64 MiB (67108864 bytes), the most roce-probe reads".
func (e *Error) Error() string {
	var s string
	switch e.Unit {
	case "bytes":
		s = fmt.Sprintf("%s is larger than %s, the most roce-probe reads", e.What, Size(e.Limit))
	default:
		s = fmt.Sprintf("%s has more than %d %s", e.What, e.Limit, e.Unit)
		if e.Where != "" {
			s += " (at " + e.Where + ")"
		}
		s += ", the most roce-probe reads"
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Is reports whether target is ErrTooLarge.
func (e *Error) Is(target error) bool { return target == ErrTooLarge }

// Size writes a byte count as "64 MiB (67108864 bytes)", or "100 bytes".
func Size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n>>20, n)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n>>10, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Reader reads at most N bytes of R. Reading past them returns an *Error
// (What, N) after reading at most one byte more than N from R.
type Reader struct {
	R    io.Reader
	N    int64  // the limit in bytes
	What string // names the input in the error
	Hint string // how to raise the limit, if the user can
	n    int64  // bytes read so far
	err  error
}

// NewReader returns a Reader of r limited to n bytes.
func NewReader(r io.Reader, n int64, what string) *Reader {
	return &Reader{R: r, N: n, What: what}
}

// Read reads from R; past N bytes it returns an *Error, and keeps
// returning it.
func (l *Reader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if l.n >= l.N {
		// One byte more tells a stream of exactly N bytes from a
		// longer one.
		var one [1]byte
		k, err := l.R.Read(one[:])
		for k == 0 && err == nil {
			k, err = l.R.Read(one[:])
		}
		if k > 0 {
			l.err = &Error{What: l.What, Limit: l.N, Unit: "bytes", Hint: l.Hint}
			return 0, l.err
		}
		return 0, err
	}
	if rest := l.N - l.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := l.R.Read(p)
	l.n += int64(k)
	return k, err
}

// Count returns the bytes read so far.
func (l *Reader) Count() int64 { return l.n }

// ReadAll reads r to its end, at most n bytes; more is an *Error naming
// what.
func ReadAll(r io.Reader, n int64, what string) ([]byte, error) {
	return io.ReadAll(NewReader(r, n, what))
}

// ReadFile reads the file at path, at most n bytes; a larger file is an
// *Error naming what, returned without reading it when its size is known.
// An error opening or reading the file is os's (an *fs.PathError).
func ReadFile(path string, n int64, what string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > n {
		return nil, &Error{What: what, Limit: n, Unit: "bytes"}
	}
	return ReadAll(f, n, what)
}
