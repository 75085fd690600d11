package testenv

import (
	"fmt"
	"testing"
)

func TestParseTsharkFields(t *testing.T) {
	for _, c := range []struct {
		out    string
		fields []string
		want   string // fmt of the rows, or of the error
	}{
		{"", []string{"a", "b"}, "[]"},
		{"\n", []string{"a"}, "[map[a:]]"}, // one frame without the field
		{"1\t\n\t2\n", []string{"a", "b"}, "[map[a:1 b:] map[a: b:2]]"},
		{"1,2\t3", []string{"a", "b"}, "[map[a:1,2 b:3]]"}, // no newline at the end; aggregated occurrences stay one value
		{"1\t2\t3\n", []string{"a", "b"}, `error: line 1 has 3 values for the 2 fields [a b]: "1\t2\t3"`},
		{"1\t2\n3\n", []string{"a", "b"}, `error: line 2 has 1 values for the 2 fields [a b]: "3"`},
	} {
		rows, err := ParseTsharkFields(c.out, c.fields...)
		got := fmt.Sprint(rows)
		if rows == nil {
			got = "[]"
		}
		if err != nil {
			got = "error: " + err.Error()
		}
		if got != c.want {
			t.Errorf("ParseTsharkFields(%q, %q) = %s, want %s", c.out, c.fields, got, c.want)
		}
	}
}
