//go:build linux

package lab

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// TB is the part of testing.TB the fabric helpers use (so this package
// does not import testing).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
}

// Switch drives the fabric's switch for one test: faults on its ports
// (remarking, tag stripping, ECN marking, drops, netem) and captures. Every
// fault lasts until the test ends: UseFabric registers a cleanup that
// removes them all, so the next test starts with a clean switch.
//
//	sw := lab.UseFabric(t)               // hosts h1..h4 (lab.Hosts)
//	sw.Port("h3").RemarkDSCP(26, 0)      // h3's port remarks DSCP 26 → 0
//	sw.Link("h1", "h2").Loss(1)          // 1 % loss h1 → h2
//	c := sw.CaptureHost("h2")            // what h2's NIC receives
//
// A port's faults act on what the port sends to its host (the switch's
// egress towards the host): a capture on the port (Capture) or on the
// host's NIC (CaptureHost) sees them; a capture on the sender's port sees
// the frame as the sender sent it.
type Switch struct {
	*faults
}

// faults is the one home of the tc rules (and router sysctls) the lab's
// fault helpers add for one test, on any port of any namespace: the
// bridged fabric's switch ports and the leaf-spine's router ports. reset
// removes them all.
type faults struct {
	t TB

	mu      sync.Mutex
	clsact  map[portKey]bool // ports with a clsact qdisc
	prio    map[portKey]bool // ports with the prio root qdisc for Link netem
	netem   map[portKey]bool // ports with a netem root qdisc (Port.Netem)
	nextPri map[portKey]int  // next filter preference per port
	undo    []func() error   // sysctls to restore, in order
}

// portKey names a netdev in a network namespace.
type portKey struct{ ns, dev string }

func newFaults(t TB) *faults {
	f := &faults{t: t}
	f.clear()
	t.Cleanup(f.reset)
	return f
}

func (f *faults) clear() {
	f.clsact, f.prio, f.netem, f.nextPri, f.undo = map[portKey]bool{}, map[portKey]bool{}, map[portKey]bool{}, map[portKey]int{}, nil
}

// reset removes every fault added through f.
func (f *faults) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.clsact {
		_ = tc(k.ns, "qdisc", "del", "dev", k.dev, "clsact")
	}
	for k := range f.prio {
		_ = tc(k.ns, "qdisc", "del", "dev", k.dev, "root")
	}
	for k := range f.netem {
		_ = tc(k.ns, "qdisc", "del", "dev", k.dev, "root")
	}
	for i := len(f.undo) - 1; i >= 0; i-- {
		_ = f.undo[i]()
	}
	f.clear()
}

// UseFabric returns the fabric's switch for test t, failing t when the
// fabric is not up (roce-probe lab up --fabric; scripts/lab.sh builds it
// for the tests of *_fabric_lab_test.go files).
func UseFabric(t TB) *Switch {
	t.Helper()
	if !FabricIsUp() {
		t.Fatalf("the fabric is not up (namespaces %v, rxe1..rxe%d ACTIVE): run fabric tests with scripts/lab.sh (they live in *_fabric_lab_test.go) or roce-probe lab up --fabric", fabricNamespaces(), len(Hosts))
	}
	return &Switch{newFaults(t)}
}

// Host returns the fabric host named name, failing the test if there is
// none.
func (s *Switch) Host(name string) Host {
	s.t.Helper()
	h, err := HostByName(name)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	return h
}

// Reset removes every fault this Switch added.
func (s *Switch) Reset() { s.reset() }

// tc runs tc in a network namespace.
func tc(ns string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tc", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: tc -n %s %s: %v: %s", ns, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Port is one port whose egress the lab can fault: a switch port of the
// bridged fabric (Switch.Port, named by its host) or an interface of a
// leaf-spine router (Router.Port, named by its neighbour). Every method
// acts on what the port sends (its egress), for the rest of the test.
type Port struct {
	f     *faults
	ns    string // its network namespace
	dev   string // its netdev there
	label string // for logs
}

// Port returns the switch port of host name ("h1".."h4").
func (s *Switch) Port(name string) *Port {
	s.t.Helper()
	h := s.Host(name)
	return &Port{s.faults, SwitchNetns, h.Port, h.Port + " (" + h.Name + ")"}
}

// Name returns the port's netdev in its namespace (swp1..swp4 for the
// switch; the neighbour's name for a router).
func (p *Port) Name() string { return p.dev }

// Namespace returns the network namespace the port is in.
func (p *Port) Namespace() string { return p.ns }

// String names the port for logs: "swp3 (h3)", "spine1→leaf2".
func (p *Port) String() string { return p.label }

// Capture starts a capture on the port: what arrives on it, and what it
// sends after its faults (tc's egress rules act before the capture sees a
// frame; netem drops are not seen). It stops when the test ends.
func (p *Port) Capture() *Capture {
	p.f.t.Helper()
	return p.f.capture(p.ns, p.dev)
}

func (f *faults) capture(ns, iface string) *Capture {
	f.t.Helper()
	c, err := CaptureIn(ns, iface)
	if err != nil {
		f.t.Fatalf("%v", err)
	}
	f.t.Cleanup(func() { c.Stop() })
	return c
}

// roceMatch is the flower match of RoCE v2 (UDP to 4791) for an EtherType
// (ip or ipv6), inside an 802.1Q tag when tagged.
func roceMatch(family string, tagged bool) []string {
	if tagged {
		return []string{"protocol", "802.1Q", "flower", "vlan_ethtype", family, "ip_proto", "udp", "dst_port", "4791"}
	}
	return []string{"protocol", family, "flower", "ip_proto", "udp", "dst_port", "4791"}
}

// egressFilter adds one tc filter on the port's egress (clsact).
func (p *Port) egressFilter(args ...string) {
	p.egressFilters([][]string{args})
}

// egressFilters adds tc filters on the port's egress (clsact), each with
// the next preference, in one tc batch.
func (p *Port) egressFilters(filters [][]string) { p.filters("egress", filters) }

// filters adds tc filters on the port's egress or ingress (clsact), each
// with the next preference, in one tc batch.
func (p *Port) filters(dir string, filters [][]string) {
	f := p.f
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	k := portKey{p.ns, p.dev}
	var batch []string
	if !f.clsact[k] {
		batch = append(batch, "qdisc add dev "+p.dev+" clsact")
	}
	pri := f.nextPri[k]
	for _, a := range filters {
		pri++
		batch = append(batch, strings.Join(append([]string{"filter", "add", "dev", p.dev, dir, "pref", fmt.Sprint(pri)}, a...), " "))
	}
	if err := tcBatch(p.ns, batch); err != nil {
		f.t.Fatalf("%v", err)
	}
	f.clsact[k] = true
	f.nextPri[k] = pri
}

// tcBatch runs tc commands (one per line, without "tc") in a network
// namespace with one tc -batch.
func tcBatch(ns string, lines []string) error {
	if len(lines) == 1 {
		return tc(ns, strings.Fields(lines[0])...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "tc", "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: tc -n %s -batch: %v: %s (batch:\n%s)", ns, err, strings.TrimSpace(string(out)), strings.Join(lines, "\n"))
	}
	return nil
}

// dsfield adds, for IPv4 and IPv6, untagged and 802.1Q-tagged RoCE v2
// frames whose TOS/traffic class matches tos/mask, a pedit that sets the
// bits of retain to set (IPv4: and fixes the header checksum). QinQ
// frames are not touched (tc's ip offsets do not reach past an inner tag
// in the frame).
func (p *Port) dsfield(tos, mask, set, retain uint8) {
	p.f.t.Helper()
	var fs [][]string
	for _, tagged := range []bool{false, true} {
		m := roceMatch("ip", tagged)
		fs = append(fs, append(m, "ip_tos", fmt.Sprintf("%#x/%#x", tos, mask),
			"action", "pedit", "ex", "munge", "ip", "dsfield", "set", fmt.Sprintf("%#x", set), "retain", fmt.Sprintf("%#x", retain), "pipe",
			"action", "csum", "ip"))
		m = roceMatch("ipv6", tagged)
		fs = append(fs, append(m, "ip_tos", fmt.Sprintf("%#x/%#x", tos, mask),
			"action", "pedit", "ex", "munge", "ip6", "traffic_class", "set", fmt.Sprintf("%#x", set), "retain", fmt.Sprintf("%#x", retain)))
	}
	p.egressFilters(fs)
}

// RemarkDSCP makes the port rewrite DSCP from to to in the RoCE v2 frames
// it sends (untagged or one 802.1Q tag; ECN bits kept).
func (p *Port) RemarkDSCP(from, to uint8) {
	p.f.t.Helper()
	if from > 63 || to > 63 {
		p.f.t.Fatalf("lab: DSCP %d → %d: DSCP is 0..63", from, to)
	}
	p.dsfield(from<<2, 0xfc, to<<2, 0xfc)
	p.f.t.Logf("lab: %s remarks DSCP %d → %d", p, from, to)
}

// MarkCE makes the port set ECN to CE (3) in every RoCE v2 frame it sends,
// as a congested switch would (whatever the frame's ECT).
func (p *Port) MarkCE() {
	p.f.t.Helper()
	p.dsfield(0, 0, 3, 3)
	p.f.t.Logf("lab: %s marks ECN CE", p)
}

// BleachECN makes the port set ECN to 0 (Not-ECT) in every RoCE v2 frame it
// sends, as a switch that clears the ECN field does (DSCP kept).
func (p *Port) BleachECN() {
	p.f.t.Helper()
	p.dsfield(0, 0, 0, 3)
	p.f.t.Logf("lab: %s bleaches ECN (sets 0)", p)
}

// RemarkPCP makes the port rewrite the PCP of VLAN vid's tag in the frames
// it sends.
func (p *Port) RemarkPCP(vid uint16, pcp uint8) {
	p.f.t.Helper()
	if pcp > 7 {
		p.f.t.Fatalf("lab: PCP %d: PCP is 0..7", pcp)
	}
	p.egressFilter("protocol", "802.1Q", "flower", "vlan_id", fmt.Sprint(vid),
		"action", "vlan", "modify", "id", fmt.Sprint(vid), "priority", fmt.Sprint(pcp))
	p.f.t.Logf("lab: %s remarks PCP of VLAN %d to %d", p, vid, pcp)
}

// StripTag makes the port remove VLAN vid's tag from the frames it sends
// (they arrive untagged, on the receiver's NIC itself).
func (p *Port) StripTag(vid uint16) {
	p.f.t.Helper()
	p.egressFilter("protocol", "802.1Q", "flower", "vlan_id", fmt.Sprint(vid), "action", "vlan", "pop")
	p.f.t.Logf("lab: %s strips the tag of VLAN %d", p, vid)
}

// DropRoCE makes the port drop every RoCE v2 frame (untagged or one
// 802.1Q tag) it would send.
func (p *Port) DropRoCE() {
	p.f.t.Helper()
	var fs [][]string
	for _, tagged := range []bool{false, true} {
		for _, fam := range []string{"ip", "ipv6"} {
			fs = append(fs, append(roceMatch(fam, tagged), "action", "drop"))
		}
	}
	p.egressFilters(fs)
	p.f.t.Logf("lab: %s drops RoCE v2", p)
}

// Netem applies netem to everything the port sends (a netem root qdisc;
// calling it again replaces the parameters). On a switch port, Link.Netem
// is the per-source variant; a port takes one or the other.
func (p *Port) Netem(n Netem) {
	f := p.f
	f.t.Helper()
	args := n.check(f.t)
	f.mu.Lock()
	defer f.mu.Unlock()
	k := portKey{p.ns, p.dev}
	if f.prio[k] {
		f.t.Fatalf("lab: %s already has per-link netem (Link.Netem); a port takes Port.Netem or Link.Netem", p)
	}
	if err := tc(p.ns, append([]string{"qdisc", "replace", "dev", p.dev, "root", "netem"}, args...)...); err != nil {
		f.t.Fatalf("%v", err)
	}
	f.netem[k] = true
	f.t.Logf("lab: %s: netem %s", p, strings.Join(args, " "))
}

// Loss drops pct percent of the frames the port sends at random (netem).
func (p *Port) Loss(pct float64) { p.f.t.Helper(); p.Netem(Netem{Loss: pct}) }

// Link is the direction from one host to another through the switch.
type Link struct {
	s        *Switch
	from, to Host
}

// Link returns the direction from host from to host to.
func (s *Switch) Link(from, to string) *Link { return &Link{s, s.Host(from), s.Host(to)} }

// Netem are netem parameters (tc-netem(8)) for a Link or a Port.
type Netem struct {
	Loss       float64       // percent of frames dropped at random
	Delay      time.Duration // added to every frame
	Jitter     time.Duration // ± on Delay
	Duplicate  float64       // percent of frames sent twice
	Reorder    float64       // percent of frames sent at once, ahead of delayed ones (needs Delay)
	ReorderGap int           // with Reorder: every ReorderGap-th frame is sent at once instead (netem's gap)
}

func (n Netem) args() []string {
	var a []string
	if n.Delay > 0 {
		a = append(a, "delay", fmt.Sprintf("%dus", n.Delay.Microseconds()))
		if n.Jitter > 0 {
			a = append(a, fmt.Sprintf("%dus", n.Jitter.Microseconds()))
		}
	}
	if n.Loss > 0 {
		a = append(a, "loss", fmt.Sprintf("%g%%", n.Loss))
	}
	if n.Duplicate > 0 {
		a = append(a, "duplicate", fmt.Sprintf("%g%%", n.Duplicate))
	}
	if n.Reorder > 0 {
		a = append(a, "reorder", fmt.Sprintf("%g%%", n.Reorder))
		if n.ReorderGap > 0 {
			a = append(a, "gap", fmt.Sprint(n.ReorderGap))
		}
	}
	return a
}

// check fails t for parameters netem would refuse or that do nothing, and
// returns netem's arguments.
func (n Netem) check(t TB) []string {
	t.Helper()
	if n.Loss < 0 || n.Loss > 100 || n.Duplicate < 0 || n.Duplicate > 100 || n.Reorder < 0 || n.Reorder > 100 {
		t.Fatalf("lab: netem %+v: percentages are 0..100", n)
	}
	if n.Reorder > 0 && n.Delay == 0 {
		t.Fatalf("lab: netem reorder needs a delay (frames not reordered are delayed)")
	}
	args := n.args()
	if len(args) == 0 {
		t.Fatalf("lab: netem %+v: nothing to do", n)
	}
	return args
}

// Netem applies netem to the frames from → to: on the egress of to's
// port, frames with from's source MAC go through a netem qdisc of their
// own (a band of a prio root qdisc, chosen by a flower filter on the
// source MAC); other traffic to to is untouched. Calling it again for the
// same link replaces the parameters.
func (l *Link) Netem(n Netem) {
	f := l.s.faults
	f.t.Helper()
	args := n.check(f.t)
	f.mu.Lock()
	defer f.mu.Unlock()
	port := l.to.Port
	k := portKey{SwitchNetns, port}
	if f.netem[k] {
		f.t.Fatalf("lab: %s already has Port.Netem; a port takes Port.Netem or Link.Netem", port)
	}
	if !f.prio[k] {
		// Band 0 (class 1:1) for everything; band i (class 1:i+1) for
		// frames from host hi, whose netem qdisc is handle i+1 0:.
		prio := []string{"qdisc", "add", "dev", port, "root", "handle", "1:", "prio", "bands", fmt.Sprint(len(Hosts) + 1), "priomap"}
		for i := 0; i < 16; i++ {
			prio = append(prio, "0")
		}
		if err := tc(SwitchNetns, prio...); err != nil {
			f.t.Fatalf("%v", err)
		}
		f.prio[k] = true
	}
	class := fmt.Sprintf("1:%d", l.from.index+1)
	if err := tc(SwitchNetns, append([]string{"qdisc", "replace", "dev", port, "parent", class, "handle", fmt.Sprintf("%d0:", l.from.index+1), "netem"}, args...)...); err != nil {
		f.t.Fatalf("%v", err)
	}
	mac, _ := net.ParseMAC(l.from.MAC)
	// One filter per source; adding it twice is harmless but pointless.
	_ = tc(SwitchNetns, "filter", "del", "dev", port, "parent", "1:", "pref", fmt.Sprint(10+l.from.index))
	if err := tc(SwitchNetns, "filter", "add", "dev", port, "parent", "1:", "pref", fmt.Sprint(10+l.from.index), "protocol", "all",
		"flower", "src_mac", mac.String(), "classid", class); err != nil {
		f.t.Fatalf("%v", err)
	}
	f.t.Logf("switch: %s → %s (on %s): netem %s", l.from.Name, l.to.Name, port, strings.Join(args, " "))
}

// Loss drops pct percent of the frames from → to at random (netem).
func (l *Link) Loss(pct float64) { l.s.t.Helper(); l.Netem(Netem{Loss: pct}) }

// Capture starts a capture on host name's switch port (in the switch
// namespace): the frames the host sent, as they entered the switch, and
// those the port sends to the host, after the port's faults. It stops when
// the test ends.
func (s *Switch) Capture(name string) *Capture {
	s.t.Helper()
	return s.capture(SwitchNetns, s.Host(name).Port)
}

// CaptureHost starts a capture on host name's NIC (in its namespace):
// what the host sends and what it receives from the switch.
func (s *Switch) CaptureHost(name string) *Capture {
	s.t.Helper()
	return s.capture(s.Host(name).Name, HostNIC)
}
