package main

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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

// TestFlagGroupsDeclared: every flag group cobra knows of (the
// annotations its MarkFlags* functions put on a flag) was declared
// through flagsExclusive, flagsTogether, flagsOneRequired or flagRequired,
// so that checkFlagGroups refuses a broken group before cobra does and
// cobra's English message never reaches the user. A command that calls
// c.MarkFlagsMutuallyExclusive directly fails here.
func TestFlagGroupsDeclared(t *testing.T) {
	cobraKinds := map[string]string{ // cobra's annotation keys (flag_groups.go, completions.go)
		"cobra_annotation_mutually_exclusive":                groupExclusive,
		"cobra_annotation_required_if_others_set":            groupTogether,
		"cobra_annotation_one_required":                      groupOneOf,
		"cobra_annotation_bash_completion_one_required_flag": groupRequired,
	}
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		ours := map[string]bool{}
		for _, g := range flagGroups(c) {
			ours[g.kind+" "+strings.Join(g.names, " ")] = true
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			for key, vals := range f.Annotations {
				kind, ok := cobraKinds[key]
				if !ok {
					continue
				}
				for _, v := range vals {
					group := v
					if kind == groupRequired {
						group = f.Name // its value is "true"
					}
					n++
					if !ours[kind+" "+group] {
						t.Errorf("%s: flag group %s [%s] was given to cobra directly: declare it with the helpers of flags.go", c.CommandPath(), kind, group)
					}
				}
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRoot(strings.NewReader(""), io.Discard, io.Discard))
	if n == 0 {
		t.Fatal("no flag group found: cobra's annotation keys changed, and this test checks nothing")
	}
}

// TestFlagGroupMessages: each kind of group, broken, exits 2 with the
// message of checkFlagGroups (not cobra's), and of two broken groups the
// same is reported.
func TestFlagGroupMessages(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fabric", "--from", "x", "--agents", "y", "--prometheus", "z"}, "roce-probe: --agents, --from and --prometheus cannot be used together: give at most one of --from, --agents or --prometheus\n"},
		{[]string{"check", "--dev", "x", "--tclass", "106", "--sl", "3"}, "roce-probe: --gid-index is required (see --help)\n"},
		{[]string{"send", "--dst", "192.0.2.2", "--gid-index", "3"}, "roce-probe: --dev and --gid-index go together: --dev is missing\n"},
		{[]string{"fabric"}, "roce-probe: one of --from, --agents or --prometheus is required\n"},
		{[]string{"fabric", "--prometheus", "http://x", "--from", "y"}, "roce-probe: --from and --prometheus cannot be used together: give at most one of --from, --agents or --prometheus\n"},
		{[]string{"check", "--dev", "x", "--gid-index", "1", "--tclass", "106", "--sl", "3", "--tos", "1", "--rdma-cm"}, "roce-probe: --rdma-cm and --sl cannot be used together: give at most one of --rdma-cm or --sl\n"},
	} {
		_, stderr, code := runCLI(t, "", c.args...)
		if code != exitUsage || stderr != c.want {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", c.args, code, stderr, c.want)
		}
	}
}

// TestPflagErrors: pflag's errors, told apart by type, become messages
// that name the flag and the command's help.
func TestPflagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"gids", "--bogus"}, "roce-probe: unknown flag --bogus: see 'roce-probe gids --help' for the flags it takes\n"},
		{[]string{"gids", "-q"}, "roce-probe: unknown flag -q (in -q): see 'roce-probe gids --help' for the flags it takes\n"},
		{[]string{"gids", "---x"}, "roce-probe: \"---x\" is not a flag: want --name value, --name=value or -x value (see 'roce-probe gids --help')\n"},
		{[]string{"gids", "-o"}, "roce-probe: -o/--output needs a value: want table or json\n"},
		{[]string{"ah", "--create=maybe"}, "roce-probe: --create \"maybe\" is not valid: want true or false (or the flag alone for true)\n"},
		{[]string{"versoin"}, "roce-probe: unknown command \"versoin\" for \"roce-probe\" (did you mean version?): want one of "},
	} {
		_, stderr, code := runCLI(t, "", c.args...)
		if code != exitUsage || !strings.HasPrefix(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2, %q", c.args, code, stderr, c.want)
		}
	}
}
