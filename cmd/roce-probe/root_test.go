package main

import (
	"bytes"
	"strings"
	"testing"
)

// runCLI runs roce-probe in-process and returns its stdout, stderr and exit code.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

func TestUnknownCommandExits2(t *testing.T) {
	_, stderr, code := runCLI(t, "", "no-such-command")
	if code != exitUsage {
		t.Fatalf("exit code = %d, want %d", code, exitUsage)
	}
	if !strings.Contains(stderr, "no-such-command") {
		t.Errorf("stderr %q does not name the unknown command", stderr)
	}
}

func TestUnknownFlagExits2(t *testing.T) {
	_, _, code := runCLI(t, "", "version", "--bogus")
	if code != exitUsage {
		t.Fatalf("exit code = %d, want %d", code, exitUsage)
	}
}
