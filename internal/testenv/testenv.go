package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the tests run under scripts/test.sh (ROCE_PROBE_CI=1),
// where a test must not skip for a missing tool.
func CI() bool { return os.Getenv("ROCE_PROBE_CI") == "1" }

// Lookup finds an external tool on PATH; the error names the Debian
// package to install, which has the tool's name for the tools the tests
// use (tshark).
func Lookup(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is not installed (Debian package %s; scripts/deps.sh installs it)", name, name)
	}
	return p, nil
}

// Tool returns the path of an external tool. Without it the test (or
// benchmark) is skipped, or fails when CI reports true.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := Lookup(name)
	if err != nil {
		if CI() {
			t.Fatalf("%v: required with ROCE_PROBE_CI=1", err)
		}
		t.Skipf("%v: skipped (set ROCE_PROBE_CI=1 to make this a failure)", err)
	}
	return p
}
