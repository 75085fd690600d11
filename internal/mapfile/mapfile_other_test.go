//go:build !unix

package mapfile_test

import (
	"os"
	"testing"

	"github.com/roce-probe/roce-probe/internal/mapfile"
)

// TestMapNotMapped: where the system cannot map, Map returns nil (callers
// then read the file).
func TestMapNotMapped(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("RoCE v2")
	if b := mapfile.Map(f, 7); b != nil {
		t.Errorf("Map = %q, want nil", b)
	}
}
