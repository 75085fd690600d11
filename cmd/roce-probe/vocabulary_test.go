package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// The JSON vocabulary (docs/json.md): every command's JSON is checked
// against the dictionary. docs/json.md defines object types (a section
// "### `name`" with a table | key | type | unit | meaning |) and maps each
// command to the type it prints (the table | command | prints |). A value
// follows its type when every object has exactly the keys its type lists
// (no key missing, no key extra), every value has the type written there,
// null only where "or null" says so, and map values and array elements
// follow theirs.

const dictionaryPath = "../../docs/json.md"

// jsonType is one parsed type expression of docs/json.md.
type jsonType struct {
	kind     string // "string", "number", "boolean", "object" (a named type), "array", "map"
	name     string // the object type's name
	elem     *jsonType
	nullable bool
}

func (t *jsonType) String() string {
	var s string
	switch t.kind {
	case "object":
		s = "`" + t.name + "`"
	case "array", "map":
		e := t.elem.String()
		if t.elem.nullable {
			e = "(" + e + ")"
		}
		s = t.kind + " of " + e
	default:
		s = t.kind
	}
	if t.nullable {
		s += " or null"
	}
	return s
}

// base is the type a key must have wherever it appears: without "or
// null", a list of X counts as X (a key may name one thing in one object
// and a list of them in another: dcb, netdevs) and every object, named or
// a map, as "object".
func (t *jsonType) base() string {
	for t.kind == "array" {
		t = t.elem
	}
	if t.kind == "map" {
		return "object"
	}
	return t.kind
}

// parseType parses "X", "X or null", "array of X", "map of X", "`name`",
// with parentheses for an element that may be null: "array of (boolean or
// null)".
func parseType(s string) (*jsonType, error) {
	s = strings.TrimSpace(s)
	t := &jsonType{}
	if strings.HasSuffix(s, " or null") && !strings.HasSuffix(s, ")") || strings.HasSuffix(s, ") or null") && !strings.HasPrefix(s, "(") {
		t.nullable = true
		s = strings.TrimSpace(strings.TrimSuffix(s, " or null"))
	}
	switch {
	case strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")"):
		inner, err := parseType(s[1 : len(s)-1])
		if err != nil {
			return nil, err
		}
		if t.nullable {
			return nil, fmt.Errorf("%q: (X) or null: write X or null", s)
		}
		return inner, nil
	case s == "string", s == "number", s == "boolean":
		t.kind = s
	case strings.HasPrefix(s, "array of "), strings.HasPrefix(s, "map of "):
		kind, rest, _ := strings.Cut(s, " of ")
		e, err := parseType(rest)
		if err != nil {
			return nil, err
		}
		t.kind, t.elem = kind, e
	case len(s) > 2 && strings.HasPrefix(s, "`") && strings.HasSuffix(s, "`") && !strings.Contains(s[1:len(s)-1], "`"):
		t.kind, t.name = "object", s[1:len(s)-1]
	default:
		return nil, fmt.Errorf("type %q: want string, number, boolean, `name`, array of X, map of X, X or null", s)
	}
	return t, nil
}

// dictKey is one row of a type's table.
type dictKey struct {
	name string
	typ  *jsonType
	unit string
	line int
}

// dictType is one "### `name`" section.
type dictType struct {
	name string
	keys []dictKey
	line int
}

func (d *dictType) key(name string) *dictKey {
	for i := range d.keys {
		if d.keys[i].name == name {
			return &d.keys[i]
		}
	}
	return nil
}

// dictOutput is what one command prints: one value of typ, or lines of
// typ, the last one of last when last is set.
type dictOutput struct {
	command string
	lines   bool
	typ     *jsonType
	last    *jsonType
	line    int
}

type dictionary struct {
	types    map[string]*dictType
	order    []string
	commands map[string]*dictOutput
	cmdOrder []string
}

var (
	dictOnce sync.Once
	dict     *dictionary
	dictErr  error
)

// loadDictionary parses docs/json.md once.
func loadDictionary(t testing.TB) *dictionary {
	t.Helper()
	dictOnce.Do(func() { dict, dictErr = parseDictionary(dictionaryPath) })
	if dictErr != nil {
		t.Fatalf("docs/json.md: %v", dictErr)
	}
	return dict
}

var (
	typeHeading = regexp.MustCompile("^### `([a-z0-9_]+)`\\s*$")
	codeCell    = regexp.MustCompile("^`([^`]+)`$")
)

// cells splits a Markdown table row; `|` inside backticks and \| do not
// split.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var out []string
	var cur strings.Builder
	code, escaped := false, false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\':
			escaped = true
			cur.WriteRune(r)
		case r == '`':
			code = !code
			cur.WriteRune(r)
		case r == '|' && !code:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

func isSeparator(c []string) bool {
	for _, x := range c {
		if strings.Trim(x, ":-") != "" {
			return false
		}
	}
	return true
}

func parseDictionary(path string) (*dictionary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readDictionary(f)
}

// readDictionary parses a dictionary in docs/json.md's format.
func readDictionary(r io.Reader) (*dictionary, error) {
	d := &dictionary{types: map[string]*dictType{}, commands: map[string]*dictOutput{}}
	var cur *dictType
	table := "" // "keys", "commands" or "" (another table or none)
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			cur, table = nil, ""
			if m := typeHeading.FindStringSubmatch(line); m != nil {
				if _, dup := d.types[m[1]]; dup {
					return nil, fmt.Errorf("line %d: type `%s` defined twice", n, m[1])
				}
				cur = &dictType{name: m[1], line: n}
				d.types[m[1]] = cur
				d.order = append(d.order, m[1])
			} else if strings.HasPrefix(line, "### ") {
				return nil, fmt.Errorf("line %d: %q: a ### heading names a type: ### `name` (lower case, digits, _)", n, line)
			}
			continue
		}
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			if table != "" && strings.TrimSpace(line) != "" {
				table = ""
			}
			continue
		}
		c := cells(line)
		switch {
		case len(c) == 4 && c[0] == "key" && c[1] == "type" && c[2] == "unit" && c[3] == "meaning":
			if cur == nil {
				return nil, fmt.Errorf("line %d: a key table outside a ### `type` section", n)
			}
			if len(cur.keys) > 0 {
				return nil, fmt.Errorf("line %d: type `%s` has a second key table", n, cur.name)
			}
			table = "keys"
			continue
		case len(c) == 2 && c[0] == "command" && c[1] == "prints":
			table = "commands"
			continue
		case isSeparator(c):
			continue
		}
		switch table {
		case "keys":
			if len(c) != 4 {
				return nil, fmt.Errorf("line %d: type `%s`: %d cells, want | key | type | unit | meaning |", n, cur.name, len(c))
			}
			m := codeCell.FindStringSubmatch(c[0])
			if m == nil {
				return nil, fmt.Errorf("line %d: type `%s`: key cell %q: want `key`", n, cur.name, c[0])
			}
			typ, err := parseType(c[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: `%s`.%s: %v", n, cur.name, m[1], err)
			}
			if cur.key(m[1]) != nil {
				return nil, fmt.Errorf("line %d: `%s`.%s is listed twice", n, cur.name, m[1])
			}
			if strings.TrimSpace(c[3]) == "" {
				return nil, fmt.Errorf("line %d: `%s`.%s has no meaning", n, cur.name, m[1])
			}
			cur.keys = append(cur.keys, dictKey{name: m[1], typ: typ, unit: c[2], line: n})
		case "commands":
			if len(c) != 2 {
				return nil, fmt.Errorf("line %d: %d cells, want | command | prints |", n, len(c))
			}
			m := codeCell.FindStringSubmatch(c[0])
			if m == nil {
				return nil, fmt.Errorf("line %d: command cell %q: want `command`", n, c[0])
			}
			o, err := parsePrints(c[1])
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", n, m[1], err)
			}
			o.command, o.line = m[1], n
			if _, dup := d.commands[m[1]]; dup {
				return nil, fmt.Errorf("line %d: command %q listed twice", n, m[1])
			}
			d.commands[m[1]] = o
			d.cmdOrder = append(d.cmdOrder, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(d.commands) == 0 {
		return nil, fmt.Errorf("no | command | prints | table")
	}
	// Every type referenced is defined and has keys.
	var undefined []string
	check := func(where string, t *jsonType) {
		for ; t != nil; t = t.elem {
			if t.kind == "object" && d.types[t.name] == nil {
				undefined = append(undefined, fmt.Sprintf("%s refers to `%s`", where, t.name))
			}
		}
	}
	for _, name := range d.order {
		dt := d.types[name]
		if len(dt.keys) == 0 {
			return nil, fmt.Errorf("line %d: type `%s` has no | key | type | unit | meaning | table", dt.line, name)
		}
		for _, k := range dt.keys {
			check(fmt.Sprintf("`%s`.%s", name, k.name), k.typ)
		}
	}
	for _, c := range d.cmdOrder {
		check(c, d.commands[c].typ)
		check(c, d.commands[c].last)
	}
	if len(undefined) > 0 {
		return nil, fmt.Errorf("undefined types: %s", strings.Join(undefined, "; "))
	}
	return d, nil
}

// parsePrints parses the prints cell: a type ("`gids`", "array of
// `qos_report`"), "lines of X", or "lines of X, then one Y".
func parsePrints(s string) (*dictOutput, error) {
	o := &dictOutput{}
	if rest, ok := strings.CutPrefix(s, "lines of "); ok {
		o.lines = true
		s = rest
		if a, b, ok := strings.Cut(s, ", then one "); ok {
			last, err := parseType(b)
			if err != nil {
				return nil, err
			}
			o.last, s = last, a
		}
	}
	t, err := parseType(s)
	if err != nil {
		return nil, err
	}
	o.typ = t
	return o, nil
}

// vocabularyChecker validates JSON values against the dictionary and
// records which types it has seen.
type vocabularyChecker struct {
	d       *dictionary
	mu      sync.Mutex
	reached map[string]bool
	// notRunnable are command rows and types this system cannot produce,
	// with why (the lab command exists on Linux only).
	notRunnable map[string]string
}

var (
	checkerOnce sync.Once
	checker     *vocabularyChecker
)

func vocabulary(t testing.TB) *vocabularyChecker {
	t.Helper()
	d := loadDictionary(t)
	checkerOnce.Do(func() {
		checker = &vocabularyChecker{d: d, reached: map[string]bool{}, notRunnable: map[string]string{}}
	})
	return checker
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// check validates v against t at path; def names where t was written
// (for the message).
func (c *vocabularyChecker) check(path string, v any, t *jsonType, def string) []string {
	if v == nil {
		if t.nullable {
			return nil
		}
		return []string{fmt.Sprintf("%s: null, but %s says %s", path, def, t)}
	}
	bad := func() []string {
		return []string{fmt.Sprintf("%s: %s %s, but %s says %s", path, jsonKind(v), short(v), def, t)}
	}
	switch t.kind {
	case "string", "number", "boolean":
		if jsonKind(v) != t.kind {
			return bad()
		}
		return nil
	case "array":
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		var errs []string
		for i, e := range a {
			errs = append(errs, c.check(fmt.Sprintf("%s[%d]", path, i), e, t.elem, def)...)
		}
		return errs
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		var errs []string
		for _, k := range sortedKeys(m) {
			errs = append(errs, c.check(fmt.Sprintf("%s[%q]", path, k), m[k], t.elem, def)...)
		}
		return errs
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		dt := c.d.types[t.name]
		c.mu.Lock()
		c.reached[t.name] = true
		c.mu.Unlock()
		var errs []string
		for _, k := range dt.keys {
			kv, ok := m[k.name]
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: no key %q, which `%s` lists (docs/json.md line %d)", path, k.name, t.name, k.line))
				continue
			}
			errs = append(errs, c.check(path+"."+k.name, kv, k.typ, fmt.Sprintf("`%s`.%s (docs/json.md line %d)", t.name, k.name, k.line))...)
		}
		for _, k := range sortedKeys(m) {
			if dt.key(k) == nil {
				errs = append(errs, fmt.Sprintf("%s.%s: key not in `%s` (docs/json.md line %d): value %s", path, k, t.name, dt.line, short(m[k])))
			}
		}
		return errs
	}
	return []string{fmt.Sprintf("%s: type %s cannot be checked", path, t)}
}

// checkOutput checks the standard output of command (a key of the
// | command | prints | table) and fails t with every path that does not
// follow the dictionary.
func checkOutput(t testing.TB, command, stdout string) {
	t.Helper()
	c := vocabulary(t)
	o := c.d.commands[command]
	if o == nil {
		t.Fatalf("docs/json.md has no row for command %q", command)
	}
	c.mu.Lock()
	c.reached["command:"+command] = true
	c.mu.Unlock()
	decode := func(s string) (any, error) {
		dec := json.NewDecoder(strings.NewReader(s))
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if dec.More() {
			return nil, fmt.Errorf("more than one JSON value")
		}
		return v, nil
	}
	name := strings.Fields(command)[0]
	var errs []string
	if !o.lines {
		v, err := decode(stdout)
		if err != nil {
			t.Fatalf("%s: output is not one JSON value: %v\n%.500s", command, err, stdout)
		}
		errs = c.check(name, v, o.typ, fmt.Sprintf("%q (docs/json.md line %d)", command, o.line))
	} else {
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if stdout == "" {
			lines = nil
		}
		if o.last != nil && len(lines) == 0 {
			t.Fatalf("%s: no output, want at least the last line", command)
		}
		for i, l := range lines {
			v, err := decode(l)
			if err != nil {
				t.Fatalf("%s: line %d is not one JSON value: %v\n%s", command, i+1, err, l)
			}
			typ := o.typ
			if o.last != nil && i == len(lines)-1 {
				typ = o.last
			}
			errs = append(errs, c.check(fmt.Sprintf("%s(line %d)", name, i+1), v, typ, fmt.Sprintf("%q (docs/json.md line %d)", command, o.line))...)
		}
	}
	for _, e := range errs {
		t.Error(e)
	}
}

// checkValue checks a value the CLI would print as type name (the send
// and listen lines built from probe results without sockets).
func checkValue(t testing.TB, name string, v any) {
	t.Helper()
	c := vocabulary(t)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	for _, e := range c.check(name, x, &jsonType{kind: "object", name: name}, "docs/json.md") {
		t.Error(e)
	}
}

// vocabRun is one command run of TestVocabulary.
type vocabRun struct {
	command string   // the row of docs/json.md's | command | prints | table
	args    []string // the arguments
	code    int      // the exit status it must have
}

// TestVocabulary runs every command with -o json on the fixtures and
// checks its output against docs/json.md. Then: every command row of the
// dictionary was run here (send and listen, which need raw sockets in
// namespaces, are also checked by the namespace tests that run them:
// TestSendListenJSON, TestSendSweepJSON), and every type it defines was
// reached by some output.
func TestVocabulary(t *testing.T) {
	c := vocabulary(t)
	dir := t.TempDir()
	// Captures: the repository's sample and real rxe capture, and
	// rocegen's edge cases (every walk decision: QinQ, TPID 0x9100, IPv4
	// options, ...) after the sample.
	edges := filepath.Join(dir, "edges.pcap")
	var frames []rocegen.Frame
	frames = append(frames, rocegen.Sample()...)
	for i, e := range rocegen.Edges() {
		frames = append(frames, rocegen.Frame{Data: e.Data, Time: rocegen.Base.Add(time.Duration(100+i) * time.Millisecond)})
	}
	var buf bytes.Buffer
	if err := rocegen.WritePcap(&buf, frames); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edges, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := "6b81234500201140fd00" + "00000000000000000000"
	auditPcap := auditCapture(t, dir)
	from := func(name string, args ...string) []string { return append(args, fromArgs(name)...) }
	noRDMA := withoutRDMADevices(t, "rxe")
	neigh := rxeWithNeighbours(t)
	runs := []vocabRun{
		{"collect", []string{"collect"}, exitOK},
		{"collect", []string{"collect", "-o", "json", "--lldp-wait", "0"}, exitOK},
		{"version -o json", []string{"version", "-o", "json"}, exitOK},
		{"gids -o json", from("rxe", "gids", "-o", "json"), exitOK},
		{"gids -o json", from("rxe-churned", "gids", "--all", "-o", "json"), exitOK},
		{"gids -o json", from("mlx5", "gids", "-o", "json"), exitOK},
		{"gids -o json", []string{"gids", "--from", noRDMA, "-o", "json"}, exitOK},
		{"select -o json", from("rxe", "select", "--dst", "10.0.100.2", "-o", "json"), exitOK},
		{"select -o json", from("rxe", "select", "--dst", "10.10.10.2", "-o", "json"), exitOK},
		{"select -o json", from("rxe", "select", "--dst", "fd00:1010::2", "--family", "ipv6", "-o", "json"), exitOK},
		{"select -o json", from("rxe", "select", "--dst", "10.0.100.2", "--vlan", "999", "-o", "json"), exitFinding},
		{"select -o json", []string{"select", "--from", noRDMA, "--dst", "10.0.100.2", "-o", "json"}, exitOK},
		{"qos -o json", from("mlx5-dscp", "qos", "-o", "json"), exitOK},
		{"qos -o json", from("mlx5-counters", "qos", "--netdev", "enp1s0f0.100", "-o", "json"), exitOK},
		{"qos -o json", from("rxe", "qos", "--dev", "rxe0", "-o", "json"), exitOK},
		{"qos -o json", from("mlx5", "qos", "-o", "json"), exitOK},
		{"qos -o json", from("mlx5-lag", "qos", "-o", "json"), exitOK},
		{"qos -o json", from("mlx5-pod", "qos", "--netdev", "net1", "-o", "json"), exitOK},
		{"check -o json", from("mlx5-pod", "check", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "-o", "json"), exitFinding},
		{"gids -o json", from("mlx5-pod", "gids", "-o", "json"), exitOK},
		{"check -o json", from("mlx5-lag-differ", "check", "--dev", "mlx5_bond_0", "--gid-index", "3", "--tclass", "106", "--sl", "3", "-o", "json"), exitFinding},
		{"check -o json", from("mlx5-dscp", "check", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "-o", "json"), exitOK},
		{"check -o json", from("mlx5-pcp", "check", "--dev", "mlx5_0", "--gid-index", "3", "--tclass", "104", "--sl", "3", "-o", "json"), exitFinding},
		{"check -o json", from("rxe", "check", "--dev", "rxe0", "--gid-index", "10", "--rdma-cm", "-o", "json"), exitFinding},
		{"check -o json", from("mlx5-counters", "check", "--dev", "mlx5_0", "--gid-index", "5", "--rdma-cm", "-o", "json"), exitOK},
		{"check -o json", from("mlx5-tcoverride", "check", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--path", "connected-qp", "-o", "json"), exitFinding},
		// ah: resolving (with the neighbour), QinQ without the neighbour
		// (unresolved: error, errno), an invalid AH (problems), RoCE v1
		// (mlx5), a predicted table, and --pcap.
		{"ah -o json", []string{"ah", "--dev", "rxe0", "--from", neigh, "--gid-index", "3", "--dst", "10.0.100.2", "--sl", "5", "--tclass", "0x6a", "--src-qpn", "17", "-o", "json"}, exitOK},
		{"ah -o json", from("rxe", "ah", "--dev", "rxe0", "--gid-index", "10", "--dst", "10.10.10.2", "-o", "json"), exitFinding},
		{"ah -o json", from("mlx5-pod", "ah", "--dev", "mlx5_0", "--gid-index", "5", "--dst", "192.168.50.20", "--sl", "3", "--tclass", "106", "-o", "json"), exitFinding},
		{"ah -o json", from("rxe", "ah", "--dev", "rxe0", "--gid-index", "14", "--dst", "10.0.0.2", "-o", "json"), exitFinding},
		{"ah -o json", from("rxe", "ah", "--dev", "rxe0", "--gid-index", "0", "--dst", "10.0.0.2", "-o", "json"), exitFinding},
		{"ah -o json", from("mlx5", "ah", "--dev", "mlx5_0", "--gid-index", "2", "--dst", "fe80::2", "--flow-label", "0x12345", "-o", "json"), exitFinding},
		{"ah -o json", []string{"ah", "--dev", "rxe_veth0", "--from", noRDMA, "--gid-index", "auto", "--dst", "10.0.100.2", "-o", "json"}, exitFinding},
		{"ah -o json", []string{"ah", "--dev", "rxe0", "--from", neigh, "--gid-index", "2", "--dst", "fd00::2", "--src-qpn", "17", "--pcap", filepath.Join(dir, "ah.pcap"), "-o", "json"}, exitOK},
		{"ah --from-wc HEX -o json", from("rxe", "ah", "--dev", "rxe0", "--from-wc", stale+"4568003c12344000401114130a0000020a000001", "-o", "json"), exitOK},
		{"ah --from-wc HEX -o json", from("rxe", "ah", "--dev", "rxe0", "--from-wc", stale+"4568003cb9fb40004011feffc0a8fffec0a8fffd", "-o", "json"), exitFinding},
		{"ah --from-wc HEX -o json", from("rxe", "ah", "--dev", "rxe0", "--from-wc", stale+"4568003c12344000401114130a0000020a000001", "--wc", "", "--behaviour", "rdma-core", "-o", "json"), exitOK},
		{"counters -o json", []string{"counters", "--from", countersFixture, "-o", "json"}, exitOK},
		{"counters -o json", []string{"counters", "--from", "../../host/testdata/mlx5-tcoverride.json", "-o", "json"}, exitOK},
		{"audit -o json", []string{"audit", "--from", "../../audit/testdata/mlx5-prio0-before.json", "--then", "../../audit/testdata/mlx5-prio0-after.json", "-o", "json"}, exitFinding},
		{"audit -o json", []string{"audit", "--from", "../../audit/testdata/bnxt-prio0-before.json", "-o", "json"}, exitOK},
		{"audit -o json", from("rxe", "audit", "--tclass", "106", "--pcap", auditPcap, "-o", "json"), exitFinding},
		{"audit -o json", from("mlx5-pcp", "audit", "--pcap", auditPcap, "-o", "json"), exitOK},
		{"decode -o json", []string{"decode", "-o", "json", sampleCapture}, exitOK},
		{"decode -o json", []string{"decode", "-o", "json", "../../roce/testdata/rxe-ud-send.pcapng"}, exitOK},
		{"decode -o json", []string{"decode", "-o", "json", edges}, exitOK},
		{"decode -o ndjson", []string{"decode", "-o", "ndjson", edges}, exitOK},
		{"decode --summary -o json", []string{"decode", "--summary", "-o", "json", sampleCapture}, exitOK},
		{"decode --summary -o json", []string{"decode", "--summary", "-o", "json", edges}, exitOK},
	}
	for _, r := range runs {
		out, stderr, code := runCLI(t, "", r.args...)
		if code != r.code {
			t.Errorf("%v: exit %d, want %d: %s", r.args, code, r.code, stderr)
			continue
		}
		checkOutput(t, r.command, out)
	}
	// collect --out FILE writes the same document.
	snap := filepath.Join(dir, "snap.json")
	if _, stderr, code := runCLI(t, "", "collect", "--lldp-wait", "0", "--out", snap); code != exitOK {
		t.Errorf("collect --out: exit %d: %s", code, stderr)
	} else if b, err := os.ReadFile(snap); err != nil {
		t.Error(err)
	} else {
		checkOutput(t, "collect", string(b))
	}
	// The snapshot fixtures are what collect writes on the hosts they
	// describe (package host checks they re-encode to themselves), and
	// two variants re-encoded as collect writes them: a traffic class
	// override with an address rule, and a source that could not be read.
	for _, name := range []string{"rxe", "rxe-churned", "mlx5", "mlx5-dscp", "mlx5-pcp", "mlx5-counters", "mlx5-tcoverride", "mlx5-lag", "mlx5-lag-differ", "mlx5-pod"} {
		b, err := os.ReadFile(fixture(name))
		if err != nil {
			t.Fatal(err)
		}
		checkOutput(t, "collect", string(b))
	}
	variant := snapshotVariant(t, "mlx5-tcoverride", func(doc map[string]any) {
		o := doc["settings"].(map[string]any)["traffic_class_overrides"].([]any)[0].(map[string]any)
		o["rules"] = []any{map[string]any{"src": "10.100.0.10", "dst": "10.200.0.0/16", "traffic_class": 104},
			map[string]any{"src": nil, "dst": nil, "traffic_class": 96}}
		doc["errors"] = []any{map[string]any{"source": "dcb enp1s0f1", "error": "operation not permitted"}}
	})
	s, err := host.Load(variant)
	if err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, "collect", buf.String())
	// A topology section: heard by LLDP, configured, and unknown.
	variant = snapshotVariant(t, "mlx5", func(doc map[string]any) {
		doc["topology"] = map[string]any{"attachments": []any{
			map[string]any{"netdev": "enp1s0f0", "switch": "leaf-07", "switch_port": "Ethernet12", "source": "lldp", "age_s": 3.5, "reason": nil,
				"lldp": map[string]any{"chassis_id": "d2:31:68:05:c7:9b", "chassis_id_type": "mac", "port_id": "Ethernet12", "port_id_type": "ifname",
					"system_name": "leaf-07", "port_description": nil, "management_address": "10.0.0.7", "ttl_s": 120}},
			map[string]any{"netdev": "enp1s0f1", "switch": "leaf-08", "switch_port": nil, "source": "config", "age_s": nil, "lldp": nil, "reason": nil},
			map[string]any{"netdev": "enp1s0f2", "switch": nil, "switch_port": nil, "source": nil, "age_s": nil, "lldp": nil, "reason": "LLDP: no frame heard"},
		}}
	})
	if s, err = host.Load(variant); err != nil {
		t.Fatal(err)
	}
	buf.Reset()
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	checkOutput(t, "collect", buf.String())
	// counters --watch, live: one report per line (this host's counters,
	// whatever it has).
	for _, f := range []string{"json", "ndjson"} {
		out, stderr, code := runCLI(t, "", "counters", "--watch", "--count", "2", "--interval", "10ms", "-o", f)
		if code != exitOK && code != exitFinding {
			t.Errorf("counters --watch -o %s: exit %d: %s", f, code, stderr)
		} else {
			checkOutput(t, "counters --watch -o "+f, out)
		}
	}
	// audit --watch, live: this host's counters, no wire sample.
	for _, f := range []string{"json", "ndjson"} {
		out, stderr, code := runCLI(t, "", "audit", "--watch", "--count", "2", "--interval", "100ms", "--no-wire", "-o", f)
		if code != exitOK {
			t.Errorf("audit --watch -o %s: exit %d: %s", f, code, stderr)
		} else {
			checkOutput(t, "audit --watch -o "+f, out)
		}
	}
	vocabularyLab(t)
	vocabularyProbe(t)
	vocabularyTrace(t)
	vocabularyFabric(t)
	vocabularyAgent(t)
	vocabularyQPs(t)
	// ah --create needs a binary built with -tags ibverbs and a device,
	// --resolve-neighbour the live host: their objects as ah builds them.
	checkValue(t, "ah_create", createJSON(0x11, nil))
	checkValue(t, "ah_create", createJSON(0, fmt.Errorf("ah: ibv_create_ah: %w", syscall.ETIMEDOUT)))
	rr := vlan.RouteResult{NextHop: netip.MustParseAddr("10.0.100.2"), Dev: "veth0.100"}
	checkValue(t, "neighbor_probe", neighborProbeJSON(rr, vlan.Neighbor{State: vlan.NUDReachable}, nil))
	checkValue(t, "neighbor_probe", neighborProbeJSON(rr, vlan.Neighbor{State: vlan.NUDFailed}, fmt.Errorf("no answer from 10.0.100.2 within 1s")))
	for _, cmd := range []string{"send -o json", "listen -o json", "send -o ndjson", "listen -o ndjson"} {
		c.notRunnable["command:"+cmd] = "raw sockets in network namespaces: run by TestSendListenJSON and TestSendSweepJSON (root), which check their output against docs/json.md; their objects are checked above"
	}
	c.notRunnable["command:trace -o json"] = "raw sockets in a routed fabric of namespaces: run by TestTraceJSON (root), which checks its output against docs/json.md; its objects are checked above"

	// Every command row was run, every type reached.
	var missing []string
	for _, cmd := range c.d.cmdOrder {
		if why := c.notRunnable["command:"+cmd]; why != "" {
			t.Logf("%q not run: %s", cmd, why)
			continue
		}
		if !c.reached["command:"+cmd] {
			missing = append(missing, fmt.Sprintf("%q (line %d)", cmd, c.d.commands[cmd].line))
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/json.md lists commands no test here ran: %s", strings.Join(missing, ", "))
	}
	missing = nil
	for _, name := range c.d.order {
		if why := c.notRunnable[name]; why != "" {
			t.Logf("`%s` not reached: %s", name, why)
			continue
		}
		if !c.reached[name] {
			missing = append(missing, fmt.Sprintf("`%s` (line %d)", name, c.d.types[name].line))
		}
	}
	if len(missing) > 0 {
		t.Errorf("docs/json.md defines types no output reached (dead entries): %s", strings.Join(missing, ", "))
	}
}

// vocabularyProbe checks the JSON send and listen print, built from probe
// results and events without sockets by the functions the commands use:
// a QinQ probe that came back (the reply payload carries only the
// outermost tag), one lost without an egress copy, a sweep summary; an
// event of a listener. The commands themselves run in
// TestSendListenJSON and TestSendSweepJSON (root, namespaces).
func vocabularyProbe(t *testing.T) {
	t.Helper()
	tags := []roce.VLANTag{{TPID: 0x88a8, ID: 1000, PCP: 5}, {TPID: 0x8100, ID: 10, PCP: 5}}
	sent := probe.Markings{Tagged: true, VLAN: 1000, PCP: 5, DSCP: 26, ECN: 2, TTL: 64, Sport: 0xc000}
	got := sent
	got.PCP, got.TTL = 0, 63
	answered := probe.Result{Seq: 0, Sent: sent, SentTags: tags, Egress: &sent, EgressTags: tags, Received: &got, RTT: 1500 * time.Microsecond}
	lost := probe.Result{Seq: 1, Sent: sent, SentTags: tags}
	checkValue(t, "send_probe", probeLineJSON(answered))
	checkValue(t, "send_probe", probeLineJSON(lost))
	sw := probe.NewSweep(probe.SweepDSCP)
	sw.Add(26, &got)
	sw.Add(46, nil)
	ep := probe.Endpoint{Netdev: "veth0.q1000.10", Wire: "veth0", Tags: tags, Src: netip.MustParseAddr("10.10.10.1"), Dst: netip.MustParseAddr("10.10.10.2")}
	sum := probe.Summary{Sent: 2, Answered: 1, Lost: 1, EgressSeen: 1, RTTMin: time.Millisecond, RTTAvg: time.Millisecond, RTTMax: time.Millisecond,
		Findings: map[probe.FindingKind]int{probe.FindingPCPRemarked: 1}, Sweep: sw}
	checkValue(t, "send_summary", summaryJSON(sum, ep))
	checkValue(t, "send_summary", summaryJSON(probe.Summary{Sent: 1, Lost: 1}, ep))
	ev := probe.Event{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), From: ep.Src, FromMAC: "02:00:00:00:00:01", To: ep.Dst, Session: 42,
		Sent: sent, Received: got, ReceivedTags: tags, Findings: probe.Compare(sent, &got), Action: probe.ActionAnswered}
	checkValue(t, "listen_event", listenEventLine(ev))
	checkValue(t, "listen_summary", listenSummaryJSON{true, probe.CounterSnapshot{Frames: 3, Answered: 1}, 1, 1000})
	// The -o json documents, written by the code the commands use: with
	// items, and empty.
	var b bytes.Buffer
	run := newJSONRun(&b, "results")
	run.add(probeLineJSON(answered))
	run.add(probeLineJSON(lost))
	run.end(summaryJSON(sum, ep))
	checkValue(t, "send", json.RawMessage(b.Bytes()))
	b.Reset()
	run = newJSONRun(&b, "events")
	run.end(listenSummaryJSON{true, probe.CounterSnapshot{}, 0, 1000})
	checkValue(t, "listen", json.RawMessage(b.Bytes()))
	b.Reset()
	run = newJSONRun(&b, "events")
	run.add(listenEventLine(ev))
	run.end(listenSummaryJSON{true, probe.CounterSnapshot{Frames: 3, Answered: 1}, 1, 1000})
	checkValue(t, "listen", json.RawMessage(b.Bytes()))
}

// One word, one type: a key has the same base type (without "or null",
// a list of X as X, every object as an object) in every type it appears
// in; every object with ecn has ecn_name; every object with vlan has
// vlan_chain, and every vlan_chain is a list of chain_tag.
func TestVocabularyKeysConsistent(t *testing.T) {
	d := loadDictionary(t)
	type use struct {
		typ, base string
		line      int
	}
	uses := map[string][]use{}
	for _, name := range d.order {
		dt := d.types[name]
		for _, k := range dt.keys {
			uses[k.name] = append(uses[k.name], use{name, k.typ.base(), k.line})
		}
		if dt.key("ecn") != nil {
			if k := dt.key("ecn_name"); k == nil || k.typ.kind != "string" {
				t.Errorf("`%s` (docs/json.md line %d) has ecn but no ecn_name string", name, dt.line)
			}
		}
		if dt.key("vlan") != nil && dt.key("vlan_chain") == nil {
			t.Errorf("`%s` (docs/json.md line %d) has vlan (the outermost tag) but no vlan_chain", name, dt.line)
		}
		if k := dt.key("vlan_chain"); k != nil && (k.typ.kind != "array" || k.typ.elem.kind != "object" || k.typ.elem.name != "chain_tag" || k.typ.elem.nullable) {
			t.Errorf("`%s`.vlan_chain (docs/json.md line %d) is %s, want array of `chain_tag` (or null)", name, k.line, k.typ)
		}
	}
	keys := make([]string, 0, len(uses))
	for k := range uses {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		u := uses[k]
		for _, x := range u[1:] {
			if x.base != u[0].base {
				t.Errorf("key %q is %s in `%s` (line %d) but %s in `%s` (line %d)", k, u[0].base, u[0].typ, u[0].line, x.base, x.typ, x.line)
			}
		}
	}
}

// The checker finds what it is for: a missing key, an extra key, a wrong
// type, a null where none is allowed, and recurses into arrays and maps;
// the dictionary parser refuses what it cannot read.
func TestVocabularyChecker(t *testing.T) {
	d, err := readDictionary(strings.NewReader("## Commands\n\n| command | prints |\n|---|---|\n| `x -o json` | lines of `a`, then one `b` |\n\n" +
		"### `a`\n\n| key | type | unit | meaning |\n|---|---|---|---|\n| `n` | number | | n |\n| `s` | string or null | | s |\n" +
		"| `l` | array of `b` | | l |\n| `m` | map of (boolean or null) | | m |\n\n" +
		"### `b`\n\n| key | type | unit | meaning |\n|---|---|---|---|\n| `n` | number or null | | n \\| x |\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := &vocabularyChecker{d: d, reached: map[string]bool{}}
	a := &jsonType{kind: "object", name: "a"}
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`{"n":1,"s":null,"l":[{"n":null}],"m":{"x":true,"y":null}}`, nil},
		{`{"n":1,"s":"x","l":[],"m":{}}`, nil},
		{`{"s":null,"l":[],"m":{}}`, []string{`a: no key "n"`}},
		{`{"n":1,"s":null,"l":[],"m":{},"z":0}`, []string{"a.z: key not in `a`"}},
		{`{"n":"1","s":null,"l":[],"m":{}}`, []string{"a.n: string \"1\", but `a`.n"}},
		{`{"n":null,"s":null,"l":[],"m":{}}`, []string{"a.n: null, but `a`.n"}},
		{`{"n":1,"s":null,"l":[{"n":1,"q":2}],"m":{}}`, []string{"a.l[0].q: key not in `b`"}},
		{`{"n":1,"s":null,"l":null,"m":{"k":1}}`, []string{"a.l: null", `a.m["k"]: number 1`}},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.in), &v); err != nil {
			t.Fatal(err)
		}
		errs := c.check("a", v, a, "test")
		if len(errs) != len(tc.want) {
			t.Errorf("%s: %q, want %d errors %q", tc.in, errs, len(tc.want), tc.want)
			continue
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(errs[i], w) {
				t.Errorf("%s: error %q, want %q...", tc.in, errs[i], w)
			}
		}
	}
	if o := d.commands["x -o json"]; o == nil || !o.lines || o.typ.name != "a" || o.last.name != "b" {
		t.Errorf("prints: %+v", o)
	}
	for _, bad := range []string{
		"### `a`\n\n| key | type | unit | meaning |\n|---|---|---|---|\n| `n` | integer | | n |\n",
		"### `a`\n\n| key | type | unit | meaning |\n|---|---|---|---|\n| `n` | `c` | | n |\n\n| command | prints |\n|---|---|\n| `x` | `a` |\n",
		"### `a`\n\n| key | type | unit | meaning |\n|---|---|---|---|\n| `n` | number | | n |\n| `n` | number | | n |\n",
		"### `a`\n\n| key | type | unit | meaning |\n|---|---|---|---|\n| `n` | number | | |\n",
		"### A type\n",
	} {
		if _, err := readDictionary(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
