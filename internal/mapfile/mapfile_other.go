//go:build !unix

package mapfile

import "os"

// Map maps nothing (nil) where the system cannot map files this way: the
// caller reads the file instead.
func Map(f *os.File, size int64) []byte { return nil }

// Unmap undoes Map.
func Unmap(b []byte) {}
