package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// version -o json and --version of a binary built with `go build` in a
// git checkout carry what git says of the checkout: the revision `git
// rev-parse HEAD` prints, its commit time (`git log -1 --format=%cI`),
// whether `git status --porcelain` lists changes, and the -tags given.
// The go command records VCS settings only where .git is a directory, so
// in a git worktree the test builds in a clone of HEAD (unmodified).
func TestVersionFromBuildInfo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI: not in -short")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: the test needs a git checkout and git")
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not a git checkout: go build records no VCS settings here")
	}
	root := strings.TrimSpace(string(top))
	dir := root
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		dir = filepath.Join(t.TempDir(), "roce-probe")
		gitOut(t, root, "clone", "--quiet", "--shared", "--no-checkout", root, dir)
		gitOut(t, dir, "checkout", "--quiet", gitOut(t, root, "rev-parse", "HEAD"))
	}
	wantRev := gitOut(t, dir, "rev-parse", "HEAD")
	commit, err := time.Parse(time.RFC3339, gitOut(t, dir, "log", "-1", "--format=%cI"))
	if err != nil {
		t.Fatal(err)
	}
	wantModified := gitOut(t, dir, "status", "--porcelain") != ""

	bin := filepath.Join(t.TempDir(), "roce-probe")
	build := exec.Command("go", "build", "-buildvcs=true", "-tags", "roceprobe_versiontest", "-o", bin, "./cmd/roce-probe")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("version -o json: %v", err)
	}
	var v struct {
		Version     string   `json:"roce_probe_version"`
		Module      *string  `json:"module"`
		VCSRevision *string  `json:"vcs_revision"`
		VCSTime     *string  `json:"vcs_time"`
		VCSModified *bool    `json:"vcs_modified"`
		Go          string   `json:"go"`
		BuildTags   []string `json:"build_tags"`
		OS          string   `json:"os"`
		Arch        string   `json:"arch"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("version -o json: %v: %s", err, out)
	}
	if v.VCSRevision == nil || *v.VCSRevision != wantRev {
		t.Errorf("vcs_revision %v, want %s (git rev-parse HEAD)", v.VCSRevision, wantRev)
	}
	if v.VCSTime == nil {
		t.Errorf("vcs_time null, want %v", commit)
	} else if got, err := time.Parse(time.RFC3339, *v.VCSTime); err != nil || !got.Equal(commit) {
		t.Errorf("vcs_time %q, want %v (git log -1 --format=%%cI)", *v.VCSTime, commit)
	}
	if v.VCSModified == nil || *v.VCSModified != wantModified {
		t.Errorf("vcs_modified %v, want %v (git status --porcelain)", v.VCSModified, wantModified)
	}
	if v.Module == nil || *v.Module != "github.com/roce-probe/roce-probe" {
		t.Errorf("module %v, want github.com/roce-probe/roce-probe (go.mod)", v.Module)
	}
	if !slices.Equal(v.BuildTags, []string{"roceprobe_versiontest"}) {
		t.Errorf("build_tags %q, want [roceprobe_versiontest]", v.BuildTags)
	}
	goVer, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	if v.Go != strings.TrimSpace(string(goVer)) || v.OS != runtime.GOOS || v.Arch != runtime.GOARCH {
		t.Errorf("go %q os %q arch %q, want %q %q %q", v.Go, v.OS, v.Arch, strings.TrimSpace(string(goVer)), runtime.GOOS, runtime.GOARCH)
	}
	// A build from a checkout is not a tagged module version.
	if v.Version == "" {
		t.Errorf("roce_probe_version empty")
	}

	table, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	for _, want := range []string{"roce-probe " + v.Version + "\n", "vcs revision  " + wantRev + "\n", "build tags    roceprobe_versiontest\n", "os/arch       " + runtime.GOOS + "/" + runtime.GOARCH + "\n"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("--version does not say %q:\n%s", want, table)
		}
	}
	if sub, err := exec.Command(bin, "version").Output(); err != nil || string(sub) != string(table) {
		t.Errorf("version (%v) differs from --version:\n%s\n%s", err, sub, table)
	}
}

// version -o json has the keys docs/json.md lists, and --version works
// in-process too.
func TestVersionKeys(t *testing.T) {
	stdout, _, code := runCLI(t, "", "version", "-o", "json")
	var v map[string]any
	if code != exitOK || json.Unmarshal([]byte(stdout), &v) != nil {
		t.Fatalf("version -o json: exit %d, %q", code, stdout)
	}
	for _, k := range []string{"roce_probe_version", "module", "vcs_revision", "vcs_time", "vcs_modified", "go", "build_tags", "os", "arch"} {
		if _, ok := v[k]; !ok {
			t.Errorf("version -o json has no %q: %s", k, stdout)
		}
	}
	if len(v) != 9 {
		t.Errorf("version -o json has %d keys, want 9: %s", len(v), stdout)
	}
	stdout, _, code = runCLI(t, "", "--version")
	if code != exitOK || !strings.HasPrefix(stdout, "roce-probe ") || !strings.Contains(stdout, "  go            "+runtime.Version()+"\n") {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
}
