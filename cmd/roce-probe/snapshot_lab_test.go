//go:build lab

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/lab"
)

// The macvlan this test adds on the lab's VLAN 100 device (a pod's
// interface on a tagged host network): the kernel gives its addresses GIDs
// on rxe0 (is_eth_port_of_netdev_filter: an upper device of the RDMA
// netdev), tagged with VLAN 100 through its lower device.
const (
	snapMacvlan   = "mv100"
	snapMacvlanV4 = "10.0.100.50/24"
	snapMacvlanV6 = "fd00:100::50/64"
)

// addMacvlanOnVLAN creates mv100 on veth0.100 with two addresses and waits
// until rxe0's table has their GIDs; the cleanup removes it and waits until
// the GIDs are gone.
func addMacvlanOnVLAN(t *testing.T) {
	t.Helper()
	ip := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	ip("link", "add", snapMacvlan, "link", "veth0.100", "address", "02:00:00:00:01:00", "type", "macvlan", "mode", "bridge")
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", snapMacvlan).Run()
		waitGIDs(t, false)
	})
	ip("addr", "add", snapMacvlanV4, "dev", snapMacvlan)
	ip("addr", "add", snapMacvlanV6, "dev", snapMacvlan, "nodad")
	// No duplicate address detection for its link-local address: its GID
	// and its local route come at once instead of a second or two later,
	// in the middle of a round of TestLabLiveEqualsSnapshot.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+snapMacvlan+"/accept_dad", []byte("0"), 0o644); err != nil {
		t.Fatal(err)
	}
	ip("link", "set", snapMacvlan, "up")
	waitGIDs(t, true)
}

// freezeNeighbours resolves every lab peer's IPv4 and IPv6 address and then
// makes each resolved neighbour entry of the initial namespace permanent, so
// that no entry moves between REACHABLE, DELAY and STALE on its own while a
// test compares two reads of the host (ah prints the entry's state). The
// cleanup turns them back into STALE entries, with their MACs kept.
func freezeNeighbours(t *testing.T) {
	t.Helper()
	for _, n := range lab.Nets {
		for _, a := range []netip.Prefix{n.PeerIPv4, n.PeerIPv6} {
			exec.Command("ping", "-c", "1", "-W", "1", a.Addr().String()).Run() // resolves the neighbour; a lost reply is fine
		}
	}
	out, err := exec.Command("ip", "-j", "neigh", "show").Output()
	if err != nil {
		t.Fatalf("ip -j neigh show: %v", err)
	}
	var entries []struct {
		Dst    string   `json:"dst"`
		Dev    string   `json:"dev"`
		LLAddr string   `json:"lladdr"`
		State  []string `json:"state"`
	}
	if err := json.Unmarshal(out, &entries); err != nil {
		t.Fatalf("ip -j neigh show: %v: %s", err, out)
	}
	for _, e := range entries {
		if e.LLAddr == "" || len(e.State) == 0 {
			continue
		}
		switch e.State[0] {
		case "REACHABLE", "STALE", "DELAY", "PROBE":
		default: // PERMANENT, NOARP: stay as they are; FAILED, INCOMPLETE: no MAC
			continue
		}
		if out, err := exec.Command("ip", "neigh", "replace", e.Dst, "lladdr", e.LLAddr, "dev", e.Dev, "nud", "permanent").CombinedOutput(); err != nil {
			t.Fatalf("ip neigh replace %s dev %s permanent: %v: %s", e.Dst, e.Dev, err, out)
		}
		t.Cleanup(func() {
			exec.Command("ip", "neigh", "replace", e.Dst, "lladdr", e.LLAddr, "dev", e.Dev, "nud", "stale").Run()
		})
	}
}

// waitGIDs waits (bounded: 10 s) until rxe0's table does or does not hold
// the macvlan's two addresses: GID updates run in a kernel work queue
// after the address events.
func waitGIDs(t *testing.T, present bool) {
	t.Helper()
	want := []gid.GID{gid.FromAddr(netip.MustParsePrefix(snapMacvlanV4).Addr()), gid.FromAddr(netip.MustParsePrefix(snapMacvlanV6).Addr())}
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := collect.Collect(collect.Options{Sections: collect.SectionRDMA})
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		if d, ok := s.Device(lab.RDMADevice); ok {
			for _, g := range d.Ports[0].GIDs {
				for _, w := range want {
					if g.GID == w && g.Netdev == snapMacvlan {
						found++
					}
				}
			}
		}
		if (present && found == len(want)) || (!present && found == 0) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s rxe0 has %d of the macvlan's %d GIDs, want %v", found, len(want), present)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// snapshotCase is one command run live in the lab, with what it printed:
// the artifact the offline test replays with --from on a machine without
// RDMA devices.
type snapshotCase struct {
	Args   []string `json:"args"`
	Stdout string   `json:"stdout"`
	Exit   int      `json:"exit"`
}

// stableState is the snapshot without its collection time and its
// counters sample (packet counters move all the time, and none of the
// commands compared here reads them): two collections with equal
// stableState saw the same host for these commands.
func stableState(t *testing.T, s *host.Snapshot) string {
	t.Helper()
	c := *s
	c.Time = time.Time{}
	c.Counters = nil
	var b bytes.Buffer
	if err := c.Encode(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// For gids, select, qos, check and ah — on untagged, VLAN, QinQ and
// macvlan-on-VLAN entries, IPv4 and IPv6 — the JSON a command prints live
// equals, byte for byte, what it prints from a snapshot collected there
// (`collect` then `--from`). The host does not change between the two:
// each round collects before and after the live runs and is used only if
// both collections are equal; the peers' neighbour entries are made
// permanent first (their states would otherwise move on their own).
// The snapshot and the live outputs are kept as artifacts for
// TestLabSnapshotsOffline, which replays them on the CI machine itself.
func TestLabLiveEqualsSnapshot(t *testing.T) {
	addMacvlanOnVLAN(t)
	freezeNeighbours(t)
	s, err := collect.Collect(collect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	p, err := v.Port(lab.RDMADevice, 1)
	if err != nil {
		t.Fatal(err)
	}
	indexOf := func(addr netip.Addr, netdev string) int {
		for _, e := range p.Entries {
			if !e.Empty && e.IP == addr && e.Netdev == netdev {
				return e.Index
			}
		}
		t.Fatalf("no GID for %s on %s", addr, netdev)
		return -1
	}
	var cases [][]string
	add := func(args ...string) { cases = append(cases, append(args, "-o", "json")) }
	add("gids", "--all")
	add("gids", "--dev", lab.RDMADevice, "--port", "1")
	add("qos")
	add("qos", "--dev", lab.RDMADevice)
	for _, n := range lab.Nets {
		if n.Name == "vlan200" {
			continue
		}
		idx := map[bool]int{true: indexOf(n.HostIPv4.Addr(), n.HostNetdev), false: indexOf(n.HostIPv6.Addr(), n.HostNetdev)}
		add("qos", "--netdev", n.HostNetdev)
		for _, v4 := range []bool{true, false} {
			peer := n.PeerIPv6.Addr().String()
			if v4 {
				peer = n.PeerIPv4.Addr().String()
			}
			i := fmt.Sprint(idx[v4])
			add("select", "--dst", peer)
			add("ah", "--dev", lab.RDMADevice, "--gid-index", i, "--dst", peer, "--tclass", "106", "--sl", "3")
			add("ah", "--dev", lab.RDMADevice, "--gid-index", "auto", "--dst", peer)
			add("check", "--dev", lab.RDMADevice, "--gid-index", i, "--tclass", "106", "--sl", "3")
			add("check", "--dev", lab.RDMADevice, "--gid-index", i, "--rdma-cm", "--tos", "72")
		}
	}
	for _, a := range []string{snapMacvlanV4, snapMacvlanV6} {
		addr := netip.MustParsePrefix(a).Addr()
		i := fmt.Sprint(indexOf(addr, snapMacvlan))
		add("check", "--dev", lab.RDMADevice, "--gid-index", i, "--tclass", "106", "--sl", "3")
		add("check", "--dev", lab.RDMADevice, "--gid-index", i, "--rdma-cm", "--tos", "104")
		peer := "10.0.100.2"
		if addr.Is6() {
			peer = "fd00:100::2"
		}
		add("ah", "--dev", lab.RDMADevice, "--gid-index", i, "--dst", peer)
		add("select", "--dst", peer, "--netdev", snapMacvlan)
	}
	add("qos", "--netdev", snapMacvlan)

	dir := filepath.Join(lab.ArtifactDir(t), "fromsnap")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	snapFile := filepath.Join(dir, "snapshot.json.gz")
	var runs []snapshotCase
	for round := 1; ; round++ {
		if _, stderr, code := runCLI(t, "", "collect", "--out", snapFile); code != 0 {
			t.Fatalf("collect: exit %d: %s", code, stderr)
		}
		before, err := host.Load(snapFile)
		if err != nil {
			t.Fatal(err)
		}
		runs = runs[:0]
		for _, args := range cases {
			out, _, code := runCLI(t, "", args...)
			runs = append(runs, snapshotCase{Args: args, Stdout: out, Exit: code})
		}
		// The same collect as before (its defaults: --lldp-wait 2s among
		// them), so that only the host can differ.
		afterFile := filepath.Join(dir, "after.json.gz")
		if _, stderr, code := runCLI(t, "", "collect", "--out", afterFile); code != 0 {
			t.Fatalf("collect: exit %d: %s", code, stderr)
		}
		after, err := host.Load(afterFile)
		if err != nil {
			t.Fatal(err)
		}
		a, b := stableState(t, before), stableState(t, after)
		if a == b {
			break
		}
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		from := max(0, i-120)
		changed := fmt.Sprintf("before …%s… after …%s…", a[from:min(len(a), i+80)], b[from:min(len(b), i+80)])
		if round == 5 {
			t.Fatalf("the host changed during each of 5 rounds of live runs: cannot compare (last change: %s)", changed)
		}
		t.Logf("round %d: the host changed during the live runs: %s; again", round, changed)
	}
	for _, r := range runs {
		fromArgs := append(append([]string(nil), r.Args...), "--from", snapFile)
		out, stderr, code := runCLI(t, "", fromArgs...)
		if code != r.Exit || out != r.Stdout {
			t.Errorf("%s: live exit %d, --from exit %d (%s)\nlive:\n%s\n--from:\n%s", strings.Join(r.Args, " "), r.Exit, code, stderr, r.Stdout, out)
		}
		if r.Exit == exitUsage {
			t.Errorf("%s: exit 2 live (%s): a case of this test must be valid input", strings.Join(r.Args, " "), r.Stdout)
		}
	}
	b, err := json.MarshalIndent(runs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d commands, live = --from; snapshot and outputs in %s", len(runs), dir)
}
