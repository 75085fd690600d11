package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// complete runs `roce-probe __complete args...` in-process and returns
// the words offered (without descriptions) and the directive. It fails t
// when the request itself fails (an error line on stderr, a bad exit).
func complete(t *testing.T, args ...string) ([]string, cobra.ShellCompDirective) {
	t.Helper()
	out, stderr, code := runCLI(t, "", append([]string{cobra.ShellCompRequestCmd}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %q: exit %d: %s", args, code, stderr)
	}
	if strings.Contains(stderr, "[Error]") {
		t.Errorf("__complete %q: %s", args, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, ":") {
		t.Fatalf("__complete %q: no directive line: %q", args, out)
	}
	d, err := strconv.Atoi(last[1:])
	if err != nil {
		t.Fatalf("__complete %q: directive %q", args, last)
	}
	var words []string
	for _, l := range lines[:len(lines)-1] {
		w, _, _ := strings.Cut(l, "\t")
		words = append(words, w)
	}
	return words, cobra.ShellCompDirective(d)
}

// commandPaths lists every runnable command of the tree: "check",
// "lab up", "completion bash", ...
func commandPaths() [][]string {
	var out [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, s := range c.Commands() {
			if !s.IsAvailableCommand() {
				continue
			}
			p := append(slices.Clone(path), s.Name())
			out = append(out, p)
			walk(s, p)
		}
	}
	walk(newRoot(nil, io.Discard, io.Discard), nil)
	return out
}

// findCommand is the command of the tree at path.
func findCommand(t *testing.T, path []string) *cobra.Command {
	t.Helper()
	c, _, err := newRoot(nil, io.Discard, io.Discard).Find(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The sysfs tree the mlx5 fixture was read from (host/testdata/README.md):
// what completion must offer for its devices, ports and GID indexes,
// read here from the files the kernel would show.
func treeDevices(t *testing.T, tree string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(tree, "class/infiniband"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func treePorts(t *testing.T, tree, dev string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(tree, "class/infiniband", dev, "ports"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// treeGIDIndexes are the slots of a port whose GID is not zero, in index
// order.
func treeGIDIndexes(t *testing.T, tree, dev, port string) []string {
	t.Helper()
	dir := filepath.Join(tree, "class/infiniband", dev, "ports", port, "gids")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Trim(strings.TrimSpace(string(b)), "0:") == "" {
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		idx = append(idx, n)
	}
	slices.Sort(idx)
	var out []string
	for _, n := range idx {
		out = append(out, strconv.Itoa(n))
	}
	return out
}

// fixtureNetdevs are the link names of a snapshot fixture's first
// namespace, read from its JSON.
func fixtureNetdevs(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(fixture(name))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Namespaces []struct {
			Links []struct {
				Name string `json:"name"`
			} `json:"links"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range doc.Namespaces[0].Links {
		out = append(out, l.Name)
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestCompletionFlagNames: for every command, every flag's name completes
// (also after other flags, the regression where `check --dev mlx5_0 --`
// failed with "--dev given twice" because completion parses the line
// twice), and a flag already given is not offered again.
func TestCompletionFlagNames(t *testing.T) {
	for _, path := range commandPaths() {
		c := findCommand(t, path)
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				return
			}
			words, _ := complete(t, append(slices.Clone(path), "--"+f.Name)...)
			if !slices.Contains(words, "--"+f.Name) {
				t.Errorf("%s --%s<TAB>: %q, want --%s among them", strings.Join(path, " "), f.Name, words, f.Name)
			}
		})
	}
	from := fixture("mlx5")
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		// Every flag, the required ones among them.
		{[]string{"check", "--dev", "mlx5_0", "--"}, []string{"--gid-index", "--port", "--from", "--sl", "--tclass", "--rdma-cm", "--output"}, []string{"--dev"}},
		{[]string{"ah", "--from"}, []string{"--from", "--from-wc"}, nil},
		// --rdma-cm excludes --tclass and --sl (check --help).
		{[]string{"check", "--from", from, "--dev", "mlx5_0", "--gid-index", "3", "--sl", "3", "--tclass", "106", "--"},
			[]string{"--port", "--netns", "--output", "--path"}, []string{"--dev", "--from", "--gid-index", "--rdma-cm"}},
		{[]string{"gids", "--from", from, "--dev", "mlx5_0", "--"}, []string{"--port", "--all", "--output", "--netns"}, []string{"--dev", "--from"}},
		{[]string{"select", "--from", from, "--dst", "10.0.0.2", "--dev", "mlx5_0", "--"}, []string{"--port", "--netdev", "--vlan", "--roce", "--family", "--subnet", "--output"}, []string{"--dst", "--dev"}},
	} {
		words, _ := complete(t, tc.args...)
		for _, w := range tc.want {
			if !slices.Contains(words, w) {
				t.Errorf("%q: %q, want %s among them", tc.args, words, w)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(words, w) {
				t.Errorf("%q: %q offers %s again", tc.args, words, w)
			}
		}
	}
}

// TestCompletionHostValues: --dev, --port, --gid-index, --netdev and
// --vlan of every command that reads a snapshot complete to what the
// --from snapshot holds (the sysfs tree and namespace it was read from).
func TestCompletionHostValues(t *testing.T) {
	tree := sysfsTestdata + "mlx5/sys"
	from := fixture("mlx5")
	devs := treeDevices(t, tree)
	netdevs := fixtureNetdevs(t, "mlx5")
	if !slices.Contains(devs, "mlx5_0") || len(netdevs) < 5 {
		t.Fatalf("fixtures: devices %q, netdevs %q", devs, netdevs)
	}
	tested := map[string]bool{}
	for _, path := range commandPaths() {
		c := findCommand(t, path)
		if f := c.Flags().Lookup("from"); f == nil || f.Value.Type() != "string" {
			continue // live only (send, listen: completion_linux_test.go) or no host
		}
		cmd := strings.Join(path, " ")
		args := func(more ...string) []string {
			return append(append(slices.Clone(path), "--from", from), more...)
		}
		check := func(what string, got, want []string, order bool) {
			t.Helper()
			tested[cmd+" "+what] = true
			if ok := slices.Equal(got, want); !ok && (order || !sameSet(got, want)) {
				t.Errorf("%s --from mlx5 %s<TAB>: %q, want %q", cmd, what, got, want)
			}
		}
		if c.Flags().Lookup("dev") != nil {
			got, d := complete(t, args("--dev", "")...)
			check("--dev", got, devs, false)
			if d&cobra.ShellCompDirectiveNoFileComp == 0 {
				t.Errorf("%s --dev: directive %v offers files", cmd, d)
			}
			got, _ = complete(t, args("--dev", "mlx")...)
			check("--dev mlx", got, devs, false)
			got, _ = complete(t, args("--dev", "rxe")...)
			check("--dev rxe", got, nil, false)
		}
		if c.Flags().Lookup("port") != nil {
			got, _ := complete(t, args("--dev", "mlx5_0", "--port", "")...)
			check("--port", got, treePorts(t, tree, "mlx5_0"), false)
		}
		if f := c.Flags().Lookup("gid-index"); f != nil {
			var extra []string
			if f.Value.Type() == "string" {
				extra = []string{"auto"} // ah
			}
			for _, port := range treePorts(t, tree, "mlx5_0") {
				got, _ := complete(t, args("--dev", "mlx5_0", "--port", port, "--gid-index", "")...)
				check("--gid-index (port "+port+")", got, append(slices.Clone(extra), treeGIDIndexes(t, tree, "mlx5_0", port)...), true)
			}
			// The command's default port (1).
			got, _ := complete(t, args("--dev", "mlx5_0", "--gid-index", "1")...)
			want := []string{"1"}
			for _, i := range treeGIDIndexes(t, tree, "mlx5_0", "1") {
				if strings.HasPrefix(i, "1") && i != "1" {
					want = append(want, i)
				}
			}
			check("--gid-index 1", got, want, true)
		}
		if c.Flags().Lookup("netdev") != nil {
			got, _ := complete(t, args("--netdev", "")...)
			check("--netdev", got, netdevs, false)
			got, _ = complete(t, args("--netdev", "enp1s0f0")...)
			check("--netdev enp1s0f0", got, []string{"enp1s0f0", "enp1s0f0.100"}, false)
		}
		if c.Flags().Lookup("vlan") != nil {
			// rxe: VLAN 100, VLAN 200 and the QinQ outer tag 1000
			// (host/testdata/README.md), and untagged.
			got, _ := complete(t, append(slices.Clone(path), "--from", fixture("rxe"), "--vlan", "")...)
			check("--vlan", got, []string{"none", "100", "200", "1000"}, false)
		}
		if c.Flags().Lookup("netns") != nil {
			ns := snapshotVariant(t, "rxe", func(doc map[string]any) {
				nss := doc["namespaces"].([]any)
				other := map[string]any{}
				for k, v := range nss[0].(map[string]any) {
					other[k] = v
				}
				other["netns"] = "blue"
				doc["namespaces"] = append(nss, other)
			})
			got, _ := complete(t, append(slices.Clone(path), "--from", ns, "--netns", "")...)
			check("--netns", got, []string{"blue"}, false)
		}
	}
	for _, want := range []string{"gids --dev", "gids --port", "check --gid-index (port 2)", "ah --gid-index (port 1)",
		"select --netdev", "select --vlan", "qos --netdev", "counters --netdev", "counters --port", "check --netns"} {
		if !tested[want] {
			t.Errorf("%s was not tested: flags renamed or moved? (tested: %v)", want, tested)
		}
	}
}

// TestCompletionEnums: every enumeration flag completes to the names its
// parser accepts (each one, given to the command, parses), and -o of each
// command to the formats docs/json.md and --help list.
func TestCompletionEnums(t *testing.T) {
	n := 0
	for _, path := range commandPaths() {
		c := findCommand(t, path)
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if _, ok := unwrap(f.Value).(interface{ choices() []string }); !ok || f.Name == "gid-index" {
				return
			}
			n++
			words, d := complete(t, append(slices.Clone(path), "--"+f.Name, "")...)
			if len(words) < 2 || d&cobra.ShellCompDirectiveNoFileComp == 0 {
				t.Errorf("%s --%s<TAB>: %q (directive %v), want its names and no files", strings.Join(path, " "), f.Name, words, d)
			}
			for _, w := range words {
				fresh := findCommand(t, path)
				if err := fresh.Flags().Set(f.Name, w); err != nil {
					t.Errorf("%s --%s %s: offered but refused: %v", strings.Join(path, " "), f.Name, w, err)
				}
			}
		})
	}
	if n < 10 {
		t.Errorf("only %d enumeration flags found", n)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"select", "-o", ""}, []string{"table", "json", "env"}},
		{[]string{"gids", "-o", "j"}, []string{"json"}},
		{[]string{"select", "--roce", ""}, []string{"v1", "v2"}},
		{[]string{"select", "--family", ""}, []string{"ipv4", "ipv6"}},
		{[]string{"send", "--sweep", ""}, []string{"dscp", "pcp"}},
		{[]string{"check", "--path", ""}, []string{"user-ah", "kernel-ah", "connected-qp"}},
		{[]string{"ah", "--behaviour", ""}, []string{"kernel", "rdma-core", "both"}},
		{[]string{"ah", "--driver", "m"}, []string{"mlx5"}},
	} {
		words, _ := complete(t, tc.args...)
		if !sameSet(words, tc.want) {
			t.Errorf("%q: %q, want %q", tc.args, words, tc.want)
		}
	}
}

// TestCompletionFilesAndOthers: flags and arguments that name files
// complete files (of the right kind), every other value nothing.
func TestCompletionFilesAndOthers(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		words []string
		dir   cobra.ShellCompDirective
	}{
		{[]string{"decode", ""}, []string{"pcap", "pcapng", "cap"}, cobra.ShellCompDirectiveFilterFileExt},
		{[]string{"gids", "--from", ""}, []string{"json", "gz"}, cobra.ShellCompDirectiveFilterFileExt},
		{[]string{"ah", "--pcap", ""}, []string{"pcap"}, cobra.ShellCompDirectiveFilterFileExt},
		{[]string{"fabric", "--from", ""}, nil, cobra.ShellCompDirectiveDefault},
		{[]string{"agent", "--config", ""}, nil, cobra.ShellCompDirectiveDefault},
		{[]string{"check", "--sl", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"select", "--dst", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"send", "--interval", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"gids", ""}, nil, cobra.ShellCompDirectiveNoFileComp},
		{[]string{"completion", ""}, []string{"bash", "fish", "powershell", "zsh"}, cobra.ShellCompDirectiveNoFileComp},
	} {
		words, d := complete(t, tc.args...)
		if !sameSet(words, tc.words) || d != tc.dir {
			t.Errorf("%q: %q directive %d, want %q directive %d", tc.args, words, d, tc.words, tc.dir)
		}
	}
}

// TestCompletionScripts: completion writes a script for bash, zsh and
// fish that asks the binary's __complete.
func TestCompletionScripts(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish"} {
		out, stderr, code := runCLI(t, "", "completion", sh)
		if code != exitOK || !strings.Contains(out, "__complete") || !strings.Contains(out, "roce-probe") {
			t.Errorf("completion %s: exit %d, %d bytes: %s", sh, code, len(out), stderr)
		}
	}
}
