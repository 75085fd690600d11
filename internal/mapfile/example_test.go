package mapfile_test

import (
	"fmt"
	"os"

	"github.com/roce-probe/roce-probe/internal/mapfile"
)

// Mapping a file, or reading it where the system cannot map it.
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
		b, _ = os.ReadFile(f.Name())
	} else {
		defer mapfile.Unmap(b)
	}
	fmt.Println(string(b))
	// Output: RoCE v2
}
