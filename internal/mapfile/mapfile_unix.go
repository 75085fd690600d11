//go:build unix

package mapfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// Map maps the first size bytes of f read-only, or returns nil.
func Map(f *os.File, size int64) []byte {
	if size <= 0 || int64(int(size)) != size {
		return nil
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	return b
}

// Unmap undoes Map.
func Unmap(b []byte) { unix.Munmap(b) }
