package main

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParseInt(t *testing.T) {
	for _, c := range []struct {
		s      string
		lo, hi int64
		want   int64
		err    string // "" when s is valid
	}{
		{"15", 0, 15, 15, ""},
		{"0xf", 0, 15, 15, ""},
		{"0XF", 0, 15, 15, ""},
		{" 7 ", 0, 15, 7, ""},
		{"+3", 0, 15, 3, ""},
		{"-0", 0, 15, 0, ""},
		{"010", 0, 15, 10, ""}, // decimal, not octal
		{"0xfffff", 0, 0xFFFFF, 0xFFFFF, ""},
		{"16", 0, 15, 0, "is out of range"},
		{"0x10", 0, 15, 0, "is out of range"},
		{"-1", 0, 15, 0, "is out of range"},
		{"18446744073709551616", 0, 15, 0, "is out of range"}, // 2^64
		{"9223372036854775808", 0, 15, 0, "is out of range"},  // 2^63
		{"-9223372036854775809", 0, 15, 0, "is out of range"},
		{"", 0, 15, 0, "is not an integer"},
		{"0x", 0, 15, 0, "is not an integer"},
		{"1_0", 0, 15, 0, "is not an integer"},
		{"0b1", 0, 15, 0, "is not an integer"},
		{"1.0", 0, 15, 0, "is not an integer"},
		{"--1", 0, 15, 0, "is not an integer"},
		{"+-1", 0, 15, 0, "is not an integer"},
	} {
		v, err := parseInt("--x", c.s, c.lo, c.hi, false, "")
		switch {
		case c.err == "" && (err != nil || v != c.want):
			t.Errorf("parseInt(%q) = %d, %v; want %d", c.s, v, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("parseInt(%q) = %d, %v; want an error saying %q", c.s, v, err, c.err)
		}
	}
}

// FuzzParseInt: any input either parses to a value in range that reads
// back the same in decimal, or is a usage error naming the flag and the
// range; never a panic.
func FuzzParseInt(f *testing.F) {
	for _, s := range []string{"0", "15", "0x10", "-1", "", " 3 ", "99999999999999999999", "-0x8000000000000000"} {
		f.Add(s, int64(0), int64(15))
	}
	f.Fuzz(func(t *testing.T, s string, lo, hi int64) {
		if lo > hi {
			lo, hi = hi, lo
		}
		v, err := parseInt("--x", s, lo, hi, false, "")
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), "--x ") || !strings.Contains(err.Error(), rangeText(lo, hi, false)) {
				t.Fatalf("parseInt(%q, %d, %d): error %q is not a usage error naming --x and the range", s, lo, hi, err)
			}
			return
		}
		if v < lo || v > hi {
			t.Fatalf("parseInt(%q, %d, %d) = %d, outside the range", s, lo, hi, v)
		}
		if w, err := parseInt("--x", strconv.FormatInt(v, 10), lo, hi, false, ""); err != nil || w != v {
			t.Fatalf("parseInt(%q) = %d, but its decimal form gives %d, %v", s, v, w, err)
		}
	})
}
