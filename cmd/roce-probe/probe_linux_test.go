//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
)

// These tests run `roce-probe send` and `roce-probe listen` in-process, each
// inside its own network namespace, joined by a veth pair (and a middle
// namespace where a test needs a misbehaving switch). They need root.

const (
	macS = "02:00:00:78:00:01"
	macL = "02:00:00:78:00:02"
)

// twoHosts builds sender and listener namespaces on one subnet and returns
// their names. With middle set, the veth pairs meet in a third namespace that
// forwards every frame with nftables after applying the rules in middle on the
// way to the listener.
func twoHosts(t *testing.T, middle string) (nsS, nsL string) {
	t.Helper()
	nsS, nsL = netnstest.New(t, "s"), netnstest.New(t, "l")
	if middle == "" {
		netnstest.Veth(t, nsS, "s0", macS, nsL, "l0", macL)
	} else {
		nsM := netnstest.New(t, "m")
		netnstest.Veth(t, nsS, "s0", macS, nsM, "m0", "02:00:00:78:00:0a")
		netnstest.Veth(t, nsM, "m1", "02:00:00:78:00:0b", nsL, "l0", macL)
		netnstest.RunStdin(t, `table netdev sw {
  chain to_l {
    type filter hook ingress device "m0" priority 0;
    `+middle+`
    fwd to "m1"
  }
  chain to_s {
    type filter hook ingress device "m1" priority 0;
    fwd to "m0"
  }
}
`, "ip", "netns", "exec", nsM, "nft", "-f", "-")
	}
	netnstest.Run(t, "ip", "-n", nsS, "addr", "add", "10.78.0.1/24", "dev", "s0")
	netnstest.Run(t, "ip", "-n", nsL, "addr", "add", "10.78.0.2/24", "dev", "l0")
	return nsS, nsL
}

type cliResult struct {
	stdout, stderr string
	code           int
}

// runIn runs the CLI in-process inside namespace ns.
func runIn(t *testing.T, ns string, args ...string) cliResult {
	var out, errb bytes.Buffer
	var code int
	if err := netnstest.Do(ns, func() error {
		code = run(args, strings.NewReader(""), &out, &errb)
		return nil
	}); err != nil {
		t.Errorf("entering %s: %v", ns, err)
	}
	return cliResult{out.String(), errb.String(), code}
}

// startListener runs `roce-probe listen` in ns for at most d. It returns
// once the listener captures (see waitCapturing); wait stops the listener
// (as an interrupt would) and returns its result, so d only bounds a test
// that never calls wait and can be generous.
func startListener(t *testing.T, ns string, d time.Duration, args ...string) (wait func() cliResult) {
	t.Helper()
	packets := func() ([]byte, error) {
		var b []byte
		err := netnstest.Do(ns, func() (err error) { b, err = os.ReadFile("/proc/thread-self/net/packet"); return })
		return b, err
	}
	before := packetSockets(t, "self", packets)
	ctx, cancel := context.WithCancel(context.Background())
	var res cliResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		var out, errb bytes.Buffer
		var code int
		if err := netnstest.Do(ns, func() error {
			code = runContext(ctx, append([]string{"listen", "--duration", d.String()}, args...), strings.NewReader(""), &out, &errb)
			return nil
		}); err != nil {
			t.Errorf("entering %s: %v", ns, err)
		}
		res = cliResult{out.String(), errb.String(), code}
	}()
	var once sync.Once
	wait = func() cliResult { once.Do(func() { cancel(); <-done }); return res }
	t.Cleanup(func() { wait() })
	if err := waitCapturing(t, "self", packets, before, done, 30*time.Second); err != nil {
		r := wait()
		t.Fatalf("listener in %s: %v\n%s%s", ns, err, r.stdout, r.stderr)
	}
	return wait
}

// waitCapturing polls until process pid ("self" for this one) has an
// AF_PACKET socket that was not in before and is bound to a netdev (in the
// packet table read by packets, /proc/net/packet of the listener's
// namespace): probe.Open binds its socket last, once the filter is
// attached, so from then on every frame the netdev receives is kept for
// the listener. It fails when exited is closed or timeout passes first.
// Sleeping a guessed time instead is not enough under TCG, where starting
// a listener can take seconds.
func waitCapturing(t *testing.T, pid string, packets func() ([]byte, error), before map[string]bool, exited <-chan struct{}, timeout time.Duration) error {
	t.Helper()
	start := time.Now()
	for {
		for ino := range packetSockets(t, pid, packets) {
			if !before[ino] {
				t.Logf("listener capturing after %v (socket:[%s])", time.Since(start).Round(time.Millisecond), ino)
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before it captured")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Since(start) > timeout {
			return fmt.Errorf("no AF_PACKET socket bound to a netdev after %v", timeout)
		}
	}
}

// packetSockets returns the inodes of process pid's AF_PACKET sockets that
// are bound to a netdev (Iface ≠ 0 in the packet table; the process holds
// "socket:[inode]" among its /proc/<pid>/fd).
func packetSockets(t *testing.T, pid string, packets func() ([]byte, error)) map[string]bool {
	t.Helper()
	tab, err := packets()
	if err != nil {
		t.Fatalf("packet sockets: %v", err)
	}
	bound := map[string]bool{}
	for _, line := range strings.Split(string(tab), "\n")[1:] {
		// sk RefCnt Type Proto Iface R Rmem User Inode
		if f := strings.Fields(line); len(f) >= 9 && f[4] != "0" {
			bound[f[8]] = true
		}
	}
	dir := "/proc/" + pid + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return nil // the process is gone
	}
	out := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil || !strings.HasPrefix(l, "socket:[") {
			continue
		}
		if ino := strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"); bound[ino] {
			out[ino] = true
		}
	}
	return out
}

type jsonMarkings struct {
	VLAN      *int              `json:"vlan"`
	PCP       *int              `json:"pcp"`
	VLANChain []json.RawMessage `json:"vlan_chain"`
	DSCP      int               `json:"dscp"`
	ECN       int               `json:"ecn"`
	ECNName   string            `json:"ecn_name"`
	TTL       int               `json:"ttl"`
	UDPSport  int               `json:"udp_sport"`
}

type jsonFinding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type jsonProbe struct {
	Summary  bool           `json:"summary"`
	Seq      *int           `json:"seq"`
	Sent     *jsonMarkings  `json:"sent"`
	Received *jsonMarkings  `json:"received"`
	Egress   *jsonMarkings  `json:"egress"`
	Findings []jsonFinding  `json:"findings"`
	Answered int            `json:"answered"`
	Lost     int            `json:"lost"`
	Nothing  bool           `json:"nothing_answered"`
	Egressok bool           `json:"egress_as_intended"`
	Counts   map[string]int `json:"-"`
	Sweep    *struct {
		Map []struct {
			Value          int    `json:"value"`
			ReceivedValues []int  `json:"received_values"`
			Status         string `json:"status"`
		} `json:"map"`
	} `json:"sweep"`
}

// documentLines is a send or listen -o json document ({list: [...],
// "totals": {...}}) as the lines -o ndjson prints for the same run: the
// list's elements, then the totals. It fails t unless the output is one
// JSON document with exactly these two keys.
func documentLines(t *testing.T, s, list string) string {
	t.Helper()
	var doc map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&doc); err != nil || dec.More() {
		t.Fatalf("not one JSON document (%v):\n%s", err, s)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(doc[list], &items); err != nil || len(doc) != 2 || doc["totals"] == nil {
		t.Fatalf("want {%q: [...], \"totals\": {...}} (%v):\n%s", list, err, s)
	}
	var b strings.Builder
	for _, it := range append(items, doc["totals"]) {
		var c bytes.Buffer
		if err := json.Compact(&c, it); err != nil {
			t.Fatal(err)
		}
		b.Write(c.Bytes())
		b.WriteByte('\n')
	}
	return b.String()
}

func decodeLines(t *testing.T, s string) []jsonProbe {
	t.Helper()
	var out []jsonProbe
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var p jsonProbe
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		out = append(out, p)
	}
	return out
}

func TestSendListenJSON(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := twoHosts(t, "")
	wait := startListener(t, nsL, 3*time.Second, "--netdev", "l0", "-o", "json")
	r := runIn(t, nsS, "send", "--netdev", "s0", "--dst", "10.78.0.2", "--tclass", "106", "--count", "3",
		"--interval", "10ms", "--timeout", "1s", "-o", "json")
	if r.code != exitOK {
		t.Fatalf("send exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	checkOutput(t, "send -o json", r.stdout) // docs/json.md
	lines := decodeLines(t, documentLines(t, r.stdout, "results"))
	if len(lines) != 4 || !lines[3].Summary {
		t.Fatalf("want 3 probe objects and a summary, got:\n%s", r.stdout)
	}
	for i, p := range lines[:3] {
		if p.Seq == nil || *p.Seq != i || p.Sent == nil || p.Received == nil {
			t.Fatalf("probe %d: %+v", i, p)
		}
		// --tclass 106 = DSCP 26, ECN 2 (ECT(0)); untagged: vlan and pcp
		// null, the chain empty (not null: untagged is known).
		want := jsonMarkings{DSCP: 26, ECN: 2, ECNName: "ECT(0)", TTL: 64}
		for name, m := range map[string]*jsonMarkings{"sent": p.Sent, "received": p.Received, "egress": p.Egress} {
			if m == nil || m.VLAN != nil || m.PCP != nil || m.VLANChain == nil || len(m.VLANChain) != 0 || m.DSCP != want.DSCP || m.ECN != want.ECN ||
				m.ECNName != want.ECNName || m.TTL != want.TTL || m.UDPSport != p.Sent.UDPSport || m.UDPSport < 0xc000 {
				t.Errorf("probe %d %s = %+v, want untagged DSCP 26 ECN 2 (ECT(0)) TTL 64, the sent UDP source port 0xc000..0xffff", i, name, m)
			}
		}
		if len(p.Findings) != 0 {
			t.Errorf("probe %d findings %v", i, p.Findings)
		}
	}
	if s := lines[3]; s.Answered != 3 || s.Lost != 0 || !s.Egressok || s.Nothing {
		t.Errorf("summary %+v", s)
	}
	l := wait()
	if l.code != exitOK {
		t.Fatalf("listen exit %d: %s", l.code, l.stderr)
	}
	checkOutput(t, "listen -o json", l.stdout) // docs/json.md
	ll := decodeLines(t, documentLines(t, l.stdout, "events"))
	if len(ll) != 4 || !ll[3].Summary {
		t.Fatalf("listener: want 3 event lines and a summary:\n%s", l.stdout)
	}
	if ll[0].Received == nil || ll[0].Received.DSCP != 26 || ll[0].Received.TTL != 64 {
		t.Errorf("listener event %+v", ll[0])
	}
	if !strings.Contains(documentLines(t, l.stdout, "events"), `"answered":3`) {
		t.Errorf("listener summary does not count 3 answered:\n%s", l.stdout)
	}
}

// With nothing listening, send still reports that the probes left with the
// intended markings, says nothing answered, and exits 1.
func TestSendNoListener(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, _ := twoHosts(t, "")
	r := runIn(t, nsS, "send", "--netdev", "s0", "--dst", "10.78.0.2", "--tclass", "104", "--count", "2",
		"--interval", "5ms", "--timeout", "200ms")
	if r.code != exitFinding {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, exitFinding, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"egress: all 2 probes left s0 with the intended markings",
		"nothing answered: no reply from 10.78.0.2",
		"untagged dscp 26 Not-ECT ttl 64",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "nothing answered") {
		t.Errorf("stderr %q", r.stderr)
	}
}

// A DSCP sweep through a switch that remarks DSCP 26 and 46 to 0 prints
// exactly that map.
func TestSendSweepThroughRemarkingSwitch(t *testing.T) {
	netnstest.RequireNFTables(t)
	nsS, nsL := twoHosts(t, "ip dscp { 26, 46 } ip dscp set 0")
	wait := startListener(t, nsL, 3*time.Second, "--netdev", "l0")
	r := runIn(t, nsS, "send", "--netdev", "s0", "--dst", "10.78.0.2", "--sweep", "dscp", "--count", "1",
		"--interval", "11ms", "--timeout", "1s") // 11ms: under the listener's default 100 replies/s per sender
	if r.code != exitFinding {
		t.Fatalf("exit %d, want 1 (remarking found)\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"DSCP 26 → 0\n",
		"DSCP 46 → 0\n",
		"DSCP map over 64 values: 62 unchanged, 2 remarked, 0 mixed, 0 untagged, 0 lost",
		"findings: dscp-remarked ×2",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	wait()
}

// The same sweep with -o ndjson (and the listener's): every line follows docs/json.md, the
// summary's sweep map has DSCP 26 and 46 remarked to 0 and the probes
// for them carry a dscp-remarked finding.
func TestSendSweepJSON(t *testing.T) {
	netnstest.RequireNFTables(t)
	nsS, nsL := twoHosts(t, "ip dscp { 26, 46 } ip dscp set 0")
	// --rate 1000: the rate limit is not what is tested, and probes that
	// bunch up on a loaded machine must not be refused.
	wait := startListener(t, nsL, 3*time.Second, "--netdev", "l0", "--rate", "1000", "-o", "ndjson")
	r := runIn(t, nsS, "send", "--netdev", "s0", "--dst", "10.78.0.2", "--sweep", "dscp", "--count", "1",
		"--interval", "11ms", "--timeout", "1s", "-o", "ndjson")
	l := wait()
	if r.code != exitFinding {
		t.Fatalf("exit %d, want 1 (remarking found)\n%s%s", r.code, r.stdout, r.stderr)
	}
	checkOutput(t, "send -o ndjson", r.stdout)
	checkOutput(t, "listen -o ndjson", l.stdout)
	if ll := decodeLines(t, l.stdout); len(ll) != 65 || !ll[64].Summary {
		t.Errorf("listener: %d lines, want 64 events and the summary", len(ll))
	}
	lines := decodeLines(t, r.stdout)
	if len(lines) != 65 || !lines[64].Summary || lines[64].Sweep == nil || len(lines[64].Sweep.Map) != 64 {
		t.Fatalf("want 64 probe lines and a summary with a 64-value map:\n%s", lastLine(r.stdout))
	}
	remarked := 0
	for _, p := range lines[:64] {
		for _, f := range p.Findings {
			if f.Code == "dscp-remarked" && strings.HasPrefix(f.Message, "DSCP remarked") {
				remarked++
			}
		}
	}
	for _, e := range lines[64].Sweep.Map {
		switch e.Value {
		case 26, 46:
			if e.Status != "remarked" || len(e.ReceivedValues) != 1 || e.ReceivedValues[0] != 0 {
				t.Errorf("DSCP %d: %+v, want remarked to [0]", e.Value, e)
			}
		default:
			if e.Status != "unchanged" || len(e.ReceivedValues) != 1 || e.ReceivedValues[0] != e.Value {
				t.Errorf("DSCP %d: %+v, want unchanged", e.Value, e)
			}
		}
	}
	if remarked != 2 {
		t.Errorf("%d probes with a dscp-remarked finding, want 2", remarked)
	}
}

// A QinQ probe (802.1ad 1000 PCP 5 outside 802.1Q 10 PCP 2, written raw
// on the sender's veth: this kernel needs no VLAN devices for it) arrives
// at listen with both tags: received.vlan_chain lists them outermost first
// as the frame carried them, vlan and pcp are the outer tag's; sent, from
// the probe's payload, knows only the outer tag (vlan_chain null).
func TestListenQinQJSON(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := twoHosts(t, "")
	wait := startListener(t, nsL, 3*time.Second, "--netdev", "l0", "-o", "json")
	mac := func(s string) net.HardwareAddr { m, _ := net.ParseMAC(s); return m }
	tags := []roce.VLANTag{{TPID: 0x88a8, ID: 1000, PCP: 5}, {TPID: 0x8100, ID: 10, PCP: 2}}
	if err := netnstest.Do(nsS, func() error {
		p, err := probe.NewProber(probe.Frame{SrcMAC: mac(macS), DstMAC: mac(macL), Tags: tags,
			Src: netip.MustParseAddr("10.78.0.1"), Dst: netip.MustParseAddr("10.78.0.2")})
		if err != nil {
			return err
		}
		frame, _, err := p.Next(probe.Markings{Tagged: true, VLAN: 1000, PCP: 5, DSCP: 26, ECN: 2, TTL: 64, Sport: 0xc001}, time.Now())
		if err != nil {
			return err
		}
		c, err := probe.Open("s0", probe.Incoming)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.Write(frame); err != nil {
			return err
		}
		// The listener's reply says it has seen (and printed) the probe.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
			f, _, err := c.Read()
			if err != nil {
				return err
			}
			if _, ok := p.Match(f, time.Now()); ok && p.Result(0).Received != nil {
				return nil
			}
		}
		return fmt.Errorf("no reply from the listener within 5 s")
	}); err != nil {
		t.Fatal(err)
	}
	l := wait()
	if l.code != exitOK {
		t.Fatalf("listen exit %d: %s", l.code, l.stderr)
	}
	checkOutput(t, "listen -o json", l.stdout)
	lines := decodeLines(t, documentLines(t, l.stdout, "events"))
	if len(lines) != 2 || !lines[1].Summary {
		t.Fatalf("want one event and the summary:\n%s", l.stdout)
	}
	ev := lines[0]
	if ev.Received == nil || ev.Received.VLAN == nil || *ev.Received.VLAN != 1000 || *ev.Received.PCP != 5 ||
		!jsonIs(rawChain(ev.Received.VLANChain), `[{"id":1000,"tpid":34984,"pcp":5,"netdev":null},{"id":10,"tpid":33024,"pcp":2,"netdev":null}]`) {
		t.Errorf("received %+v, want 802.1ad 1000 PCP 5 then 802.1Q 10 PCP 2", ev.Received)
	}
	if ev.Sent == nil || ev.Sent.VLAN == nil || *ev.Sent.VLAN != 1000 || *ev.Sent.PCP != 5 || ev.Sent.VLANChain != nil || !strings.Contains(documentLines(t, l.stdout, "events"), `"vlan_chain":null`) {
		t.Errorf("sent %+v, want VLAN 1000 PCP 5 and vlan_chain null (the payload has the outer tag only)", ev.Sent)
	}
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestSendUsageErrors(t *testing.T) {
	// A sysfs without RDMA devices, whatever this machine has.
	defer func(old string) { liveSysfs = old }(liveSysfs)
	liveSysfs = t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"send", "--netdev", "lo"}, "--dst is required"},
		{[]string{"send", "--dst", "10.0.0.1"}, "one of --netdev or --dev is required"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "x", "--dev", "rxe0", "--gid-index", "1"}, "cannot be used together: give at most one of --netdev or --dev"},
		{[]string{"send", "--dst", "10.0.0.1", "--dev", "rxe0"}, "--dev and --gid-index go together: --gid-index is missing"},
		{[]string{"send", "--dst", "nonsense", "--netdev", "lo"}, `--dst "nonsense"`},
		{[]string{"send", "--dst", "224.0.0.1", "--netdev", "lo"}, "not a unicast address"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--tclass", "256"}, "--tclass 256 is out of range: want 0..255"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--sl", "16"}, "--sl 16 is out of range: want 0..15"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--hop-limit", "0"}, "--hop-limit 0 is out of range: want 1..255"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--count", "0"}, "--count 0 is out of range: want 1..100000"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--timeout", "0s"}, "--timeout 0s is out of range"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--interval", "-1s"}, "--interval -1s is out of range"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--sweep", "ecn"}, `--sweep "ecn" is not known: want dscp or pcp`},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "-o", "yaml"}, `-o "yaml"`},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "no-such-netdev0"}, `--netdev "no-such-netdev0": no such network device`},
		// send probes from a real device: the predicted Soft-RoCE tables
		// other commands fall back to cannot send.
		{[]string{"send", "--dst", "10.0.0.1", "--dev", "no-such-rdma0", "--gid-index", "0"}, `--dev "no-such-rdma0": this host has no RDMA device: give --netdev N`},
		{[]string{"send", "--dst", "::1", "--netdev", "lo"}, `--dst "::1" is a loopback address`},
		{[]string{"listen", "--rate", "0"}, "--rate 0 is out of range"},
		{[]string{"listen", "--rate", "NaN"}, "--rate NaN is out of range"},
		{[]string{"listen", "--rate", "+Inf"}, "--rate +Inf is out of range"},
		{[]string{"listen", "--duration", "-1s"}, "--duration -1s is out of range: want 0s or more"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--gid-index", "-2"}, "--gid-index -2 is out of range: want 0..255"},
		{[]string{"send", "--dst", "10.0.0.1", "--dev", "rxe0", "--gid-index", "256"}, "--gid-index 256 is out of range: want 0..255"},
		{[]string{"send", "--dst", "10.0.0.1", "--dev", "rxe0", "--gid-index", "1", "--port", "0"}, "--port 0 is out of range: want 1..255"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--sport", "65536"}, "--sport 65536 is out of range: want 0..65535"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--resolve-timeout", "0s"}, "--resolve-timeout 0s is out of range"},
		{[]string{"send", "--dst", "10.0.0.1", "--netdev", "lo", "--dev", "rxe0", "--gid-index", "1"}, "cannot be used together"},
		{[]string{"send", "--dst", "10.0.0.1", "--gid-index", "1"}, "--dev and --gid-index go together: --dev is missing"},
		{[]string{"send", "--dst", "10.0.0.1"}, "one of --netdev or --dev is required"},
		{[]string{"listen", "--netdev", "no-such-netdev0"}, `--netdev "no-such-netdev0": no such network device`},
		{[]string{"listen", "-o", "xml"}, `-o "xml"`},
	} {
		_, stderr, code := runCLI(t, "", tc.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, code, exitUsage, stderr)
		}
		if !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("%v: stderr %q, want one line containing %q", tc.args, stderr, tc.want)
		}
	}
}

// Without CAP_NET_RAW, send, listen, trace and agent print one line naming the
// capability and exit 2. The binary runs as user nobody (setpriv).
func TestMissingCapNetRaw(t *testing.T) {
	netnstest.RequireRoot(t, "setpriv", "go")
	nsS, _ := twoHosts(t, "")
	bin := filepath.Join(t.TempDir(), "roce-probe")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"send", "--netdev", "s0", "--dst", "10.78.0.2", "--count", "1", "--resolve-timeout", "300ms"},
		{"listen", "--netdev", "s0", "--duration", "1s"},
		{"trace", "--netdev", "s0", "--dst", "10.78.0.2", "--resolve-timeout", "300ms"},
		{"agent", "--listen", "127.0.0.1:0", "--serve-only"}, // it opens sockets on netdevs as they come: none named yet
	} {
		// bounded: an agent that did not refuse would run until stopped
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nsS, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin}, args...)...)
		c.WaitDelay = 5 * time.Second
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Errorf("%s as nobody did not exit within 30 s (%v): stderr %q", args[0], err, errb.String())
			continue
		}
		code := c.ProcessState.ExitCode()
		on := "s0"
		if args[0] == "agent" {
			on = "any netdev"
		}
		want := "roce-probe: " + args[0] + " needs CAP_NET_RAW to open a raw socket on " + on + ": run as root or `setcap cap_net_raw+ep`\n"
		if code != exitUsage || errb.String() != want || out.Len() != 0 {
			t.Errorf("%s as nobody: exit %d (%v)\nstdout %q\nstderr %q\nwant stderr %q", args[0], code, err, out.String(), errb.String(), want)
		}
	}
}

// listen without --netdev captures on the netdevs probe.WireDevices lists
// (here the one veth) and answers there.
func TestListenAllNetdevs(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := twoHosts(t, "")
	wait := startListener(t, nsL, 2*time.Second)
	r := runIn(t, nsS, "send", "--netdev", "s0", "--dst", "10.78.0.2", "--count", "1", "--timeout", "1s")
	l := wait()
	if r.code != exitOK {
		t.Errorf("send exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.HasPrefix(l.stdout, "listening on l0 for") || !strings.Contains(l.stdout, "1 frames: 1 answered") {
		t.Errorf("listener output:\n%s%s", l.stdout, l.stderr)
	}
}

// --dev/--gid-index with a Soft-RoCE sysfs fixture (collect/testdata/rxe,
// the lab's table, read as the live sysfs) in a namespace whose veth0 has
// GID index 1's address: the probe leaves from veth0 with 10.0.0.1 and
// with rxe's markings as ah/ predicts them: the traffic class byte as is
// (drivers/infiniband/sw/rxe/rxe_net.c prepare_ipv4_hdr; the real capture
// roce/testdata/rxe-ud-send.pcapng carries traffic_class 0x6a as DSCP 26
// ECN 2), and the route's hop limit (64) instead of the AH's 8
// (drivers/infiniband/core/verbs.c ib_resolve_unicast_gid_dmac; the lab
// kernel does it: TestLabAHCommand).
func TestSendFromGIDFixture(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, nsL := netnstest.New(t, "s"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "veth0", "02:00:00:00:00:01", nsL, "veth1", "02:00:00:00:00:02")
	netnstest.Run(t, "ip", "-n", nsS, "addr", "add", "10.0.0.1/24", "dev", "veth0")
	netnstest.Run(t, "ip", "-n", nsL, "addr", "add", "10.0.0.2/24", "dev", "veth1")
	sysfs, err := filepath.Abs(sysfsTestdata + "rxe/sys")
	if err != nil {
		t.Fatal(err)
	}
	defer func(old string) { liveSysfs = old }(liveSysfs)
	liveSysfs = sysfs
	wait := startListener(t, nsL, 3*time.Second, "--netdev", "veth1")
	r := runIn(t, nsS, "send", "--dev", "rxe0", "--gid-index", "1", "--dst", "10.0.0.2",
		"--tclass", "106", "--hop-limit", "8", "--count", "1", "--timeout", "1s")
	wait()
	t.Logf("\n%s%s", r.stdout, r.stderr)
	if r.code != exitOK {
		t.Fatalf("exit %d", r.code)
	}
	for _, want := range []string{
		"probing 10.0.0.1 → 10.0.0.2 from veth0 (untagged)",
		"driver rxe",
		"untagged dscp 26 ECT(0) ttl 64          untagged dscp 26 ECT(0) ttl 64",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// A GID index that is empty in the table is a usage error.
	r = runIn(t, nsS, "send", "--dev", "rxe0", "--gid-index", "14", "--dst", "10.0.0.2")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--gid-index 14") {
		t.Errorf("empty GID index: exit %d, stderr %q", r.code, r.stderr)
	}
}

// With the veth's peer down, x0 is up but the kernel's operstate is
// lowerlayerdown: send and listen on it exit 2 saying so, without advice
// to bring x0 up (it is up); with x0 itself down, they say it is down and
// how to bring it up. (Both ends in one namespace: across namespaces the
// kernel reports "down" when the two ends have the same ifindex,
// default_operstate in net/core/link_watch.c, Linux 6.1.)
func TestSendListenNetdevNotUp(t *testing.T) {
	netnstest.RequireRoot(t)
	ns := netnstest.New(t, "s")
	netnstest.Run(t, "ip", "-n", ns, "link", "add", "name", "x0", "type", "veth", "peer", "name", "x1")
	netnstest.Run(t, "ip", "-n", ns, "addr", "add", "10.79.0.1/24", "dev", "x0")
	netnstest.Run(t, "ip", "-n", ns, "link", "set", "x0", "up") // x1 stays down
	netnstest.WaitOperState(t, ns, "x0", "lowerlayerdown")
	below := "x0\" is down below (operstate lowerlayerdown: the device it is stacked on, or a veth's peer, is down)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"listen", "--netdev", "x0", "--duration", "1s"}, "--netdev \"" + below + ": want a netdev that is up\n"},
		{[]string{"send", "--netdev", "x0", "--dst", "10.79.0.2", "--count", "1"}, `--netdev "x0": is down below (operstate lowerlayerdown`},
	} {
		r := runIn(t, ns, tc.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) || strings.Contains(r.stderr, "ip link set") {
			t.Errorf("%s, peer down: exit %d\nstderr %q\nwant exit 2 and %q", tc.args[0], r.code, r.stderr, tc.want)
		}
	}
	netnstest.Run(t, "ip", "-n", ns, "link", "set", "x0", "down")
	netnstest.WaitOperState(t, ns, "x0", "down")
	r := runIn(t, ns, "listen", "--netdev", "x0", "--duration", "1s")
	if want := `--netdev "x0" is down: want a netdev that is up (ip link set x0 up)`; r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("listen, x0 down: exit %d, stderr %q: want exit 2 and %q", r.code, r.stderr, want)
	}
}
