package main

import (
	"os"
	"path/filepath"
	"runtime"
)

// The sum of every 64th byte of a 300-byte file of 1s: bytes 0, 64, 128,
// 192 and 256, however many cores read it (1, 2, 3 and 7 here).
func Example() {
	dir, _ := os.MkdirTemp("", "capfloor")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "ones")
	b := make([]byte, 300)
	for i := range b {
		b[i] = 1
	}
	os.WriteFile(name, b, 0o644)
	os.Args = []string{"capfloor", name}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, n := range []int{1, 2, 3, 7} {
		runtime.GOMAXPROCS(n)
		main()
	}
	// Output:
	// 5
	// 5
	// 5
	// 5
}
