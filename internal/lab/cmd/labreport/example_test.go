package main

import (
	"os"
	"path/filepath"
)

// A run directory with one package whose only lab test passed: the plan
// names the package, out/ holds its go test -json stream, exit status and
// duration, as scripts/lab.sh leaves them.
func Example_report() {
	run, _ := os.MkdirTemp("", "labreport")
	defer os.RemoveAll(run)
	os.MkdirAll(filepath.Join(run, "out"), 0o755)
	os.WriteFile(filepath.Join(run, "plan"), []byte("gid\t/src/gid\texample.com/gid\tTestLabGIDTable\n"), 0o644)
	os.WriteFile(filepath.Join(run, "out", "gid.json"), []byte(`{"Action":"run","Test":"TestLabGIDTable"}
{"Action":"pass","Test":"TestLabGIDTable"}
`), 0o644)
	os.WriteFile(filepath.Join(run, "out", "gid.rc"), []byte("0\n"), 0o644)
	os.WriteFile(filepath.Join(run, "out", "gid.seconds"), []byte("2.5\n"), 0o644)
	report(os.Stdout, run)
	// Output:
	// ok   example.com/gid                                      1 passed   0 failed   0 skipped  2.5s
	//
	// lab: 1 passed, 0 failed, 0 skipped
}
