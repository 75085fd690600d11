package collect

import (
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/host"
)

// fixture loads the snapshot document host/testdata/<name>.json: the
// snapshot format's fixtures live with the package that owns the format.
func fixture(t testing.TB, name string) *host.Snapshot {
	t.Helper()
	s, err := host.Load(filepath.Join("..", "host", "testdata", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
