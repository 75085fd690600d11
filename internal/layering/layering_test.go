package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/roce-probe/roce-probe"

// platform is one build configuration the module is listed for: GOOS,
// GOARCH, build tags and cgo.
type platform struct {
	goos, goarch, tags string
	cgo                bool
}

func (p platform) String() string {
	s := p.goos + "/" + p.goarch
	if p.tags != "" {
		s += " -tags " + p.tags
	}
	if p.cgo {
		s += " (cgo)"
	}
	return s
}

func (p platform) env() []string {
	cgo := "0"
	if p.cgo {
		cgo = "1"
	}
	return append(os.Environ(), "GOOS="+p.goos, "GOARCH="+p.goarch, "CGO_ENABLED="+cgo)
}

// platforms are the configurations the layering is checked on: the Linux
// build with and without the optional tags (ibverbs adds the cgo verbs
// binding, lab the lab's files), and the systems a snapshot is analysed on.
var platforms = []platform{
	{goos: "linux", goarch: "amd64"},
	{goos: "linux", goarch: "amd64", tags: "ibverbs,lab", cgo: true},
	{goos: "darwin", goarch: "arm64"},
	{goos: "windows", goarch: "amd64"},
}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Standard   bool
}

// list runs `go list -e -deps` on the patterns for platform p and returns
// every package of the patterns and of their dependencies, by import path,
// and the import paths the patterns matched. -e keeps packages a platform
// cannot build (internal/lab on darwin with the lab tag imports the
// Linux-only afpacket): their imports are still listed.
func list(t *testing.T, p platform, patterns ...string) (all map[string]*pkg, roots []string) {
	t.Helper()
	roots = goList(t, p, append([]string{"-f", "{{.ImportPath}}"}, patterns...)...)
	out := goRun(t, p, append([]string{"list", "-e", "-deps", "-json=ImportPath,Imports,Deps,Standard"}, patterns...)...)
	all = map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var q pkg
		if err := dec.Decode(&q); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s: go list -json: %v", p, err)
		}
		all[q.ImportPath] = &q
	}
	return all, roots
}

func goList(t *testing.T, p platform, args ...string) []string {
	t.Helper()
	return strings.Fields(string(goRun(t, p, append([]string{"list", "-e"}, args...)...)))
}

func goRun(t *testing.T, p platform, args ...string) []byte {
	t.Helper()
	out, err := goOutput(p, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goOutput runs the go command for platform p; the error carries its
// standard error.
func goOutput(p platform, args ...string) ([]byte, error) {
	if p.tags != "" {
		args = append([]string{args[0], "-tags", p.tags}, args[1:]...)
	}
	cmd := exec.Command("go", args...)
	cmd.Env = p.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: go %s: %v\n%s", p, short(strings.Join(args, " ")), err, stderr.Bytes())
	}
	return out, nil
}

// chain returns the import chain from one package to another (from → ... →
// to), for the error message; all holds every package between them.
func chain(all map[string]*pkg, from, to string) string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for x := to; x != ""; x = prev[x] {
				path = append([]string{x}, path...)
			}
			return strings.Join(path, " → ")
		}
		if q := all[cur]; q != nil {
			for _, imp := range q.Imports {
				if _, seen := prev[imp]; !seen {
					prev[imp] = cur
					queue = append(queue, imp)
				}
			}
		}
	}
	return from + " → … → " + to
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// public reports whether path is an importable package of this module:
// in the module and not under an internal directory.
func public(path string) bool {
	if !under(path, module) {
		return false
	}
	for _, elem := range strings.Split(strings.TrimPrefix(path, module), "/") {
		if elem == "internal" {
			return false
		}
	}
	return true
}

// applications are the packages under internal/ that may import public
// packages: the applications built on them, the test-frame generator
// (which builds frames with roce.SerializeFrame), the fleet simulation
// (which runs the fleet package's planning and aggregation) and the reader
// of iproute2's `rdma -j resource` output (the census's independent
// reference in tests, compared with census types).
var applications = []string{
	module + "/internal/agent",
	module + "/internal/fleetsim",
	module + "/internal/lab",
	module + "/internal/cmd",
	module + "/internal/rdmatool",
	module + "/internal/rocegen",
}

// TestInternalIsMachinery fails when a package under internal/, other than
// the applications, depends on a public package of the module — directly
// or through another package, in its non-test files.
func TestInternalIsMachinery(t *testing.T) {
	for _, p := range platforms {
		all, roots := list(t, p, module+"/internal/...")
		if len(roots) < 5 {
			t.Fatalf("%s: go list ./internal/... listed %d packages: %v", p, len(roots), roots)
		}
		for _, r := range roots {
			if r == module+"/internal/layering" || isApplication(r) {
				continue
			}
			if all[r] == nil {
				t.Fatalf("%s: %s missing from go list -deps", p, r)
			}
			if entries := publicEntries(all, r); len(entries) > 0 {
				var why []string
				for _, e := range entries {
					why = append(why, short(chain(all, r, e)))
				}
				t.Errorf("%s: %s is machinery and must not depend on a public package: %s",
					p, short(r), strings.Join(why, "; "))
			}
		}
	}
}

// publicEntries returns the public packages through which package r
// reaches the public API: those imported by r itself or by a non-public
// package r depends on. (What a public package imports in turn is not
// listed: one entry is enough to name the import to remove.)
func publicEntries(all map[string]*pkg, r string) []string {
	var entries []string
	seen := map[string]bool{}
	for _, q := range append([]string{r}, all[r].Deps...) {
		if public(q) || all[q] == nil {
			continue
		}
		for _, imp := range all[q].Imports {
			if public(imp) && !seen[imp] {
				seen[imp] = true
				entries = append(entries, imp)
			}
		}
	}
	sort.Strings(entries)
	return entries
}

// short drops the module path from the import paths in s.
func short(s string) string { return strings.ReplaceAll(s, module+"/", "") }

func isApplication(path string) bool {
	for _, a := range applications {
		if under(path, a) {
			return true
		}
	}
	return false
}

// forbiddenInHost are the packages the pure snapshot (package host) must
// not link, with why. Each is matched with its subpackages.
//
// The standard library's syscall and net are not on the list: os, net and
// gopacket import syscall on every system, and vlan, ah and internal/errno
// use its Errno values; a raw socket opened directly through
// syscall.Socket would not be caught here (nothing in the module does:
// probe and collect go through golang.org/x/sys/unix).
var forbiddenInHost = []struct{ path, why string }{
	{"github.com/vishvananda/netlink", "rtnetlink and RDMA netlink sockets: collect's kernel reads"},
	{"github.com/vishvananda/netns", "setns(2) into other network namespaces: collect --netns, the agent"},
	{"golang.org/x/net/bpf", "classic BPF programs attached to sockets: probe's listener filter"},
	{"golang.org/x/net/ipv4", "raw IPv4 sockets (ipv4.RawConn) and socket BPF"},
	{"golang.org/x/net/ipv6", "raw IPv6 sockets and socket BPF"},
	{"golang.org/x/sys/unix", "system calls beyond package os: AF_PACKET sockets, setsockopt, ioctls (probe's sockets, collect's ethtool and netlink reads)"},
	{"github.com/gopacket/gopacket/afpacket", "AF_PACKET TPACKET_V3 capture rings"},
	{"github.com/gopacket/gopacket/pcap", "libpcap through cgo: live capture"},
	{"github.com/gopacket/gopacket/pcapgo", "its EthernetHandle is an AF_PACKET socket on Linux (captures are read by roce/capture, not by the snapshot)"},
	{module + "/collect", "the Linux collector: the kernel reads that fill a snapshot"},
	{module + "/probe", "active probes: raw sockets, the responder"},
}

// TestHostIsPure fails when package host links, on any platform, a package
// of forbiddenInHost.
func TestHostIsPure(t *testing.T) {
	for _, p := range platforms {
		all, _ := list(t, p, module+"/host")
		q := all[module+"/host"]
		if q == nil || len(q.Deps) == 0 {
			t.Fatalf("%s: go list -deps host listed no dependencies", p)
		}
		for _, d := range q.Deps {
			for _, f := range forbiddenInHost {
				if under(d, f.path) {
					t.Errorf("%s: host must not link %s (%s): %s", p, d, f.why, short(chain(all, q.ImportPath, d)))
				}
			}
		}
	}
}

// analysis are the packages that analyse a snapshot or a capture; they
// build wherever a snapshot is analysed.
var analysis = []string{"roce/...", "gid", "vlan", "qos", "ah", "counters", "fabric/...", "host", "census", "topology"}

// TestAnalysisBuildsEverywhere builds the analysis packages for darwin and
// windows without cgo (a type error in a file only those systems compile
// is caught here, not by go list).
func TestAnalysisBuildsEverywhere(t *testing.T) {
	pkgs := make([]string, len(analysis))
	for i, a := range analysis {
		pkgs[i] = module + "/" + a
	}
	for _, p := range []platform{{goos: "darwin", goarch: "arm64"}, {goos: "windows", goarch: "amd64"}} {
		// go build of several packages compiles them and discards the
		// results.
		if _, err := goOutput(p, append([]string{"build"}, pkgs...)...); err != nil {
			t.Error(err)
			continue
		}
		if got := goList(t, p, pkgs...); len(got) < len(analysis) {
			t.Errorf("%s: built %d packages, want at least %d: %v", p, len(got), len(analysis), got)
		}
	}
}

func TestPublic(t *testing.T) {
	for path, want := range map[string]bool{
		module + "/host":                  true,
		module + "/fabric/fabrictest":     true,
		module + "/internal/null":         false,
		module + "/internal/lab/cmd/x":    false,
		module + "/cmd/roce-probe":        true,
		module + "x/host":                 false,
		"github.com/vishvananda/netlink":  false,
		module + "/roce/capture/internal": false,
	} {
		if got := public(path); got != want {
			t.Errorf("public(%q) = %v, want %v", path, got, want)
		}
	}
	if got := fmt.Sprint(isApplication(module+"/internal/agentx"), isApplication(module+"/internal/lab/cmd/labreport")); got != "false true" {
		t.Errorf("isApplication(internal/agentx, internal/lab/cmd/labreport) = %s, want false true", got)
	}
}
