package fabric

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the benchmarks' snapshot fleet.
func TestMain(m *testing.M) {
	code := m.Run()
	if len(benchPaths) > 0 {
		os.RemoveAll(filepath.Dir(benchPaths[0]))
	}
	os.Exit(code)
}
