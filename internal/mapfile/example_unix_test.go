//go:build unix

package mapfile_test

import (
	"fmt"
	"os"

	"github.com/roce-probe/roce-probe/internal/mapfile"
)

// Mapping a file: on Unix, Map gives the file's bytes in place (it used
// to fall back to reading the file here, so the example printed the same
// whether or not mapping worked).
func Example() {
	f, err := os.CreateTemp("", "mapfile")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	f.WriteString("RoCE v2")
	b := mapfile.Map(f, 7)
	if b == nil {
		fmt.Println("not mapped")
		return
	}
	defer mapfile.Unmap(b)
	fmt.Println(string(b))
	// Output: RoCE v2
}
