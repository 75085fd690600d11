//go:build !unix

package capture

import "os"

// mapFile maps nothing where the system cannot map files this way: the
// capture is read with ReadAt.
func mapFile(f *os.File, size int64) []byte { return nil }

// unmapFile undoes mapFile.
func unmapFile(b []byte) {}
