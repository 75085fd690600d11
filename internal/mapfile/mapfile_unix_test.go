//go:build unix

package mapfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/internal/mapfile"
)

// TestMap: a file of three pages and a bit maps to exactly its bytes; the
// first size bytes when size is smaller; and a size Map cannot map (0,
// negative) gives nil, which callers take as "read the file".
func TestMap(t *testing.T) {
	want := make([]byte, 3*os.Getpagesize()+17)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, want, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := mapfile.Map(f, int64(len(want)))
	if !bytes.Equal(b, want) {
		t.Fatalf("Map gave %d bytes, not the file's %d", len(b), len(want))
	}
	mapfile.Unmap(b)
	if b := mapfile.Map(f, 100); !bytes.Equal(b, want[:100]) {
		t.Errorf("Map(f, 100) gave %d bytes, not the file's first 100", len(b))
	} else {
		mapfile.Unmap(b)
	}
	for _, size := range []int64{0, -1} {
		if b := mapfile.Map(f, size); b != nil {
			t.Errorf("Map(f, %d) = %d bytes, want nil", size, len(b))
		}
	}
}
