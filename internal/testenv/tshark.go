package testenv

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TsharkFields runs tshark (the path Tool or Lookup returned) on a capture
// file, `tshark -r FILE OPTS... -T fields -E separator=/t -e FIELD...`,
// and returns its lines as ParseTsharkFields reads them. opts must not set
// the separator. tshark failing, or a line ParseTsharkFields refuses,
// fails t. This is the one place the tests run tshark for fields.
func TsharkFields(t testing.TB, tshark, file string, opts []string, fields ...string) []map[string]string {
	t.Helper()
	args := append(append([]string{"-r", file}, opts...), "-T", "fields", "-E", "separator=/t")
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	rows, err := ParseTsharkFields(string(out), fields...)
	if err != nil {
		t.Fatalf("tshark %s: %v", strings.Join(args, " "), err)
	}
	return rows
}

// ParseTsharkFields reads what `tshark -T fields -E separator=/t -e
// FIELD...` printed: one row per line, in order, each mapping every field
// to tshark's text for it ("" where the frame has none). A line with
// another number of values than fields is an error.
func ParseTsharkFields(out string, fields ...string) ([]map[string]string, error) {
	if out == "" {
		return nil, nil
	}
	var rows []map[string]string
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		vals := strings.Split(line, "\t")
		if len(vals) != len(fields) {
			return nil, fmt.Errorf("line %d has %d values for the %d fields %v: %q", i+1, len(vals), len(fields), fields, line)
		}
		row := make(map[string]string, len(fields))
		for j, f := range fields {
			row[f] = vals[j]
		}
		rows = append(rows, row)
	}
	return rows, nil
}
