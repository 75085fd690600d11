package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

// TestMain lets the test binary run as roce-probe itself (for the shell
// that completes through it in TestCompletionBash).
func TestMain(m *testing.M) {
	if os.Getenv("ROCE_PROBE_TEST_AS_CLI") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestCompletionLive: the commands that read only the live host (send,
// listen) complete its devices, ports, GID indexes and netdevs: here
// the sysfs tree of mlx5_0 as the live sysfs, and this machine's netdevs.
func TestCompletionLive(t *testing.T) {
	defer func(old string) { liveSysfs = old }(liveSysfs)
	tree := sysfsTestdata + "mlx5/sys"
	liveSysfs = tree
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var netdevs []string
	for _, i := range ifs {
		netdevs = append(netdevs, i.Name)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"send", "--dev", ""}, treeDevices(t, tree)},
		{[]string{"send", "--dev", "mlx5_0", "--port", ""}, treePorts(t, tree, "mlx5_0")},
		{[]string{"send", "--dev", "mlx5_0", "--gid-index", ""}, treeGIDIndexes(t, tree, "mlx5_0", "1")},
		{[]string{"send", "--dev", "mlx5_0", "--port", "2", "--gid-index", ""}, treeGIDIndexes(t, tree, "mlx5_0", "2")},
		{[]string{"send", "--netdev", ""}, netdevs},
		{[]string{"listen", "--netdev", ""}, netdevs},
	} {
		got, _ := complete(t, tc.args...)
		if !sameSet(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// cliOnPath returns a directory holding a roce-probe that is this test
// binary running as the CLI (TestMain), for shells to call.
func cliOnPath(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := "#!/bin/sh\nROCE_PROBE_TEST_AS_CLI=1 exec " + self + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "roce-probe"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompletionFish completes through fish (complete -C, what fish asks
// on TAB) and the script `completion fish` writes.
func TestCompletionFish(t *testing.T) {
	fish := testenv.Tool(t, "fish")
	dir := cliOnPath(t)
	from, err := filepath.Abs(fixture("mlx5"))
	if err != nil {
		t.Fatal(err)
	}
	tree := sysfsTestdata + "mlx5/sys"
	for _, tc := range []struct {
		line string
		want []string
		all  bool
	}{
		{"roce-probe check --from " + from + " --dev mlx5_0 --gid-index ", treeGIDIndexes(t, tree, "mlx5_0", "1"), true},
		{"roce-probe check --from " + from + " --dev ", []string{"mlx5_0"}, true},
		{"roce-probe check --dev mlx5_0 --", []string{"--gid-index", "--port", "--from", "--output"}, false},
		{"roce-probe send --sweep ", []string{"dscp", "pcp"}, true},
	} {
		cmd := exec.Command(fish, "--no-config", "-c", "roce-probe completion fish | source; complete -C '"+tc.line+"'")
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("fish %q: %v", tc.line, err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			w, _, _ := strings.Cut(l, "\t")
			got = append(got, w)
		}
		if tc.all && !sameSet(got, tc.want) {
			t.Errorf("fish %q: %q, want %q", tc.line, got, tc.want)
		}
		for _, w := range tc.want {
			if !tc.all && !slices.Contains(got, w) {
				t.Errorf("fish %q: %q, want %s among them", tc.line, got, w)
			}
		}
	}
}

// TestCompletionZsh loads the script `completion zsh` writes as zsh's
// completion system does (compinit, then the file on $fpath), checks it
// binds _roce-probe to roce-probe, and calls _roce-probe with the words
// typed so far: zsh's _describe, which would show its completions, is
// replaced by a function that prints them ("value:description").
func TestCompletionZsh(t *testing.T) {
	zsh := testenv.Tool(t, "zsh")
	dir := cliOnPath(t)
	fpath := t.TempDir()
	out, _, code := runCLI(t, "", "completion", "zsh")
	if code != exitOK {
		t.Fatal("completion zsh failed")
	}
	if err := os.WriteFile(filepath.Join(fpath, "_roce-probe"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	from, err := filepath.Abs(fixture("mlx5"))
	if err != nil {
		t.Fatal(err)
	}
	tree := sysfsTestdata + "mlx5/sys"
	bind := exec.Command(zsh, "-f", "-c", `fpath=(`+fpath+` $fpath); autoload -U compinit; compinit -u -D; print -r -- "${_comps[roce-probe]}"`)
	if b, err := bind.Output(); err != nil || strings.TrimSpace(string(b)) != "_roce-probe" {
		t.Fatalf("zsh: compinit did not bind _roce-probe to roce-probe: %q, %v", b, err)
	}
	// The completions, without compinit again (slow): compdef as a no-op.
	script := `fpath=(` + fpath + ` $fpath); compdef() { : }; autoload -U +X _roce-probe
_describe() { print -l -- "${completions[@]}"; return 0 }
compadd() { print -r -- "compadd $*" }
words=("$@"); CURRENT=$#
_roce-probe`
	for _, tc := range []struct {
		words []string
		want  []string
		all   bool
	}{
		{[]string{"roce-probe", "check", "--from", from, "--dev", "mlx5_0", "--gid-index", ""}, treeGIDIndexes(t, tree, "mlx5_0", "1"), true},
		{[]string{"roce-probe", "check", "--from", from, "--dev", ""}, []string{"mlx5_0"}, true},
		{[]string{"roce-probe", "check", "--dev", "mlx5_0", "--"}, []string{"--gid-index", "--port", "--from", "--output"}, false},
		{[]string{"roce-probe", "select", "-o", ""}, []string{"table", "json", "env"}, true},
	} {
		cmd := exec.Command(zsh, append([]string{"-f", "-c", script, "zsh"}, tc.words...)...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("zsh %q: %v\n%s", tc.words, err, b)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			w, _, _ := strings.Cut(l, ":")
			got = append(got, w)
		}
		if tc.all && !sameSet(got, tc.want) {
			t.Errorf("zsh %q: %q, want %q", tc.words, got, tc.want)
		}
		for _, w := range tc.want {
			if !tc.all && !slices.Contains(got, w) {
				t.Errorf("zsh %q: %q, want %s among them", tc.words, got, w)
			}
		}
	}
}

// TestCompletionBash completes through bash and the script `completion
// bash` writes, with the test binary as roce-probe. The script needs
// bash-completion's _get_comp_words_by_ref; a minimal one stands in for
// it (the words and the index of the one being completed).
func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := cliOnPath(t)
	script := `_get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
source <(roce-probe completion bash)
COMP_WORDS=("$@")
COMP_CWORD=$(($#-1))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
__start_roce-probe
printf '%s\n' "${COMPREPLY[@]}"
`
	from, err := filepath.Abs(fixture("mlx5"))
	if err != nil {
		t.Fatal(err)
	}
	tree := sysfsTestdata + "mlx5/sys"
	for _, tc := range []struct {
		words []string
		want  []string // all of them, or (contains) among others
		all   bool
	}{
		{[]string{"roce-probe", "check", "--from", from, "--dev", "mlx5_0", "--gid-index", ""}, treeGIDIndexes(t, tree, "mlx5_0", "1"), true},
		{[]string{"roce-probe", "check", "--from", from, "--dev", ""}, []string{"mlx5_0"}, true},
		{[]string{"roce-probe", "check", "--dev", "mlx5_0", "--"}, []string{"--gid-index", "--port", "--from", "--output"}, false},
		{[]string{"roce-probe", "select", "-o", ""}, []string{"table", "json", "env"}, true},
	} {
		cmd := exec.Command(bash, append([]string{"-c", script, "complete"}, tc.words...)...)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		got := strings.Fields(string(out))
		if tc.all && !sameSet(got, tc.want) {
			t.Errorf("bash %q: %q, want %q", tc.words, got, tc.want)
		}
		for _, w := range tc.want {
			if !tc.all && !slices.Contains(got, w) {
				t.Errorf("bash %q: %q, want %s among them", tc.words, got, w)
			}
		}
	}
}
