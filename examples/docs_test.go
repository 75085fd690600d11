package roceapp_test

import (
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBlock is a fenced Go block of a Markdown file.
var goBlock = regexp.MustCompile("(?s)```go\n(.*?)```")

// normalize drops blank lines and collapses the spaces of every line, so
// that gofmt's alignment of comments does not matter.
func normalize(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

// gofmted returns snippet as gofmt writes it in a function body (a one-line
// block with a comment becomes two lines, as in snippets_test.go), or as
// it is when it does not parse.
func gofmted(snippet string) string {
	const head, tail = "package p\n\nfunc _() {\n", "\n}\n"
	b, err := format.Source([]byte(head + snippet + tail))
	if err != nil {
		return snippet
	}
	return strings.TrimSuffix(strings.TrimPrefix(string(b), head), tail)
}

func contains(hay, needle []string) bool {
	for i := 0; i+len(needle) <= len(hay); i++ {
		if strings.Join(hay[i:i+len(needle)], "\n") == strings.Join(needle, "\n") {
			return true
		}
	}
	return false
}

// TestDocSnippetsCompile fails when a Go snippet of README.md or docs/ is
// not, line for line, in snippets_test.go, where it compiles in a module
// outside roce-probe's import path. docs/lab.md is left out: its snippets
// are lab tests inside roce-probe's module, which may use internal/lab.
func TestDocSnippetsCompile(t *testing.T) {
	src, err := os.ReadFile("snippets_test.go")
	if err != nil {
		t.Fatal(err)
	}
	compiled := normalize(string(src))
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range append([]string{"../README.md"}, docs...) {
		if filepath.Base(path) == "lab.md" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range goBlock.FindAllStringSubmatch(string(b), -1) {
			n++
			if !contains(compiled, normalize(gofmted(m[1]))) {
				t.Errorf("%s: this Go snippet is not in examples/snippets_test.go (add it there as a function body, so that it compiles):\n%s", path, m[1])
			}
		}
	}
	if n < 12 {
		t.Errorf("found %d Go snippets in README.md and docs/, want at least 12 (docs/library.md alone has 10)", n)
	}
}
