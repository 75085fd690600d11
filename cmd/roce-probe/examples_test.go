package main

import (
	"io"
	"regexp"
	"strings"
	"testing"
)

// exampleCall finds the roce-probe command lines in an example: from
// "roce-probe" up to a pipe, a redirection, a closing parenthesis or a
// comment.
var exampleCall = regexp.MustCompile(`roce-probe( [^|>)#]*)?`)

// Every command's help has examples (cobra prints them under
// "Examples:"), and every roce-probe command line in them is one the
// command takes: the command exists, every flag is known and its value
// allowed, the flag groups hold, and the arguments are what it wants.
// Nothing is run.
func TestEveryCommandHasExamples(t *testing.T) {
	for _, path := range commandPaths() {
		name := strings.Join(path, " ")
		c := findCommand(t, path)
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s --help has no examples", name)
			continue
		}
		calls := 0
		for _, line := range strings.Split(c.Example, "\n") {
			for _, m := range exampleCall.FindAllString(line, -1) {
				words := strings.Fields(m)[1:]
				for i, w := range words {
					words[i] = strings.Trim(w, `"'`)
				}
				calls++
				root := newRoot(nil, io.Discard, io.Discard)
				cmd, args, err := root.Find(words)
				if err != nil {
					t.Errorf("%s example %q: %v", name, m, err)
					continue
				}
				if err := cmd.ParseFlags(args); err != nil {
					t.Errorf("%s example %q: %v", name, m, err)
					continue
				}
				if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
					t.Errorf("%s example %q: %v", name, m, err)
				}
				if err := cmd.ValidateRequiredFlags(); err != nil {
					t.Errorf("%s example %q: %v", name, m, err)
				}
				if err := cmd.ValidateFlagGroups(); err != nil {
					t.Errorf("%s example %q: %v", name, m, err)
				}
			}
		}
		if calls == 0 {
			t.Errorf("%s: no roce-probe command line in its examples:\n%s", name, c.Example)
		}
	}
}
