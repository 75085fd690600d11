package main

import (
	"os"
	"path/filepath"
)

// A run directory with one package whose only lab test passed on one
// kernel: the plan names the package, kernels names the kernel's results
// directory, which holds its go test -json stream, exit status and
// duration, as scripts/lab.sh leaves them.
func Example_report() {
	run, _ := os.MkdirTemp("", "labreport")
	defer os.RemoveAll(run)
	out := filepath.Join(run, "out-6.1")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(run, "plan"), []byte("gid\t/src/gid\texample.com/gid\tTestLabGIDTable\t\n"), 0o644)
	os.WriteFile(filepath.Join(run, "kernels"), []byte("6.1\t"+out+"\n"), 0o644)
	os.WriteFile(filepath.Join(out, "release"), []byte("6.1.0-56-amd64\n"), 0o644)
	os.WriteFile(filepath.Join(out, "done"), nil, 0o644)
	os.WriteFile(filepath.Join(out, "gid.json"), []byte(`{"Action":"run","Test":"TestLabGIDTable"}
{"Action":"pass","Test":"TestLabGIDTable"}
`), 0o644)
	os.WriteFile(filepath.Join(out, "gid.rc"), []byte("0\n"), 0o644)
	os.WriteFile(filepath.Join(out, "gid.seconds"), []byte("2.5\n"), 0o644)
	report(os.Stdout, run)
	// Output:
	// kernel 6.1.0-56-amd64:
	// ok   example.com/gid                                      1 passed   0 failed   0 skipped  2.5s
	//
	// lab: 6.1.0-56-amd64: 1 passed, 0 failed, 0 skipped
	// lab: 1 passed, 0 failed, 0 skipped
}
