package main

import (
	"os"
	"path/filepath"
)

// The sum of every 64th byte of a 256-byte file of 1s: 4 bytes read.
func Example() {
	dir, _ := os.MkdirTemp("", "capfloor")
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "ones")
	b := make([]byte, 256)
	for i := range b {
		b[i] = 1
	}
	os.WriteFile(name, b, 0o644)
	os.Args = []string{"capfloor", name}
	main()
	// Output: 4
}
