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
	t TB

	mu      sync.Mutex
	clsact  map[string]bool // ports with a clsact qdisc
	prio    map[string]bool // ports with the prio root qdisc for netem
	nextPri map[string]int  // next filter preference per port
}

// UseFabric returns the fabric's switch for test t, failing t when the
// fabric is not up (roce-probe lab up --fabric; scripts/lab.sh builds it
// for the tests of *_fabric_lab_test.go files).
func UseFabric(t TB) *Switch {
	t.Helper()
	if !FabricIsUp() {
		t.Fatalf("the fabric is not up (namespaces %v, rxe1..rxe%d ACTIVE): run fabric tests with scripts/lab.sh (they live in *_fabric_lab_test.go) or roce-probe lab up --fabric", fabricNamespaces(), len(Hosts))
	}
	s := &Switch{t: t, clsact: map[string]bool{}, prio: map[string]bool{}, nextPri: map[string]int{}}
	t.Cleanup(s.Reset)
	return s
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
func (s *Switch) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for port := range s.clsact {
		_ = tc("qdisc", "del", "dev", port, "clsact")
	}
	for port := range s.prio {
		_ = tc("qdisc", "del", "dev", port, "root")
	}
	s.clsact, s.prio, s.nextPri = map[string]bool{}, map[string]bool{}, map[string]int{}
}

// tc runs tc in the switch's namespace.
func tc(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "tc", append([]string{"-n", SwitchNetns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: tc %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Port is one switch port, named by its host.
type Port struct {
	s    *Switch
	host Host
}

// Port returns the switch port of host name ("h1".."h4").
func (s *Switch) Port(name string) *Port { return &Port{s, s.Host(name)} }

// Name returns the port's netdev in the switch namespace (swp1..swp4).
func (p *Port) Name() string { return p.host.Port }

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
	s := p.s
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	port := p.host.Port
	if !s.clsact[port] {
		if err := tc("qdisc", "add", "dev", port, "clsact"); err != nil {
			s.t.Fatalf("%v", err)
		}
		s.clsact[port] = true
	}
	s.nextPri[port]++
	full := append([]string{"filter", "add", "dev", port, "egress", "pref", fmt.Sprint(s.nextPri[port])}, args...)
	if err := tc(full...); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// dsfield adds, for IPv4 and IPv6, untagged and 802.1Q-tagged RoCE v2
// frames whose TOS/traffic class matches tos/mask, a pedit that sets the
// bits of retain to set (IPv4: and fixes the header checksum). QinQ
// frames are not touched (tc's ip offsets do not reach past an inner tag
// in the frame).
func (p *Port) dsfield(tos, mask, set, retain uint8) {
	p.s.t.Helper()
	for _, tagged := range []bool{false, true} {
		m := roceMatch("ip", tagged)
		p.egressFilter(append(m, "ip_tos", fmt.Sprintf("%#x/%#x", tos, mask),
			"action", "pedit", "ex", "munge", "ip", "dsfield", "set", fmt.Sprintf("%#x", set), "retain", fmt.Sprintf("%#x", retain), "pipe",
			"action", "csum", "ip")...)
		m = roceMatch("ipv6", tagged)
		p.egressFilter(append(m, "ip_tos", fmt.Sprintf("%#x/%#x", tos, mask),
			"action", "pedit", "ex", "munge", "ip6", "traffic_class", "set", fmt.Sprintf("%#x", set), "retain", fmt.Sprintf("%#x", retain))...)
	}
}

// RemarkDSCP makes the port rewrite DSCP from to to in the RoCE v2 frames
// it sends to its host (untagged or one 802.1Q tag; ECN bits kept).
func (p *Port) RemarkDSCP(from, to uint8) {
	p.s.t.Helper()
	if from > 63 || to > 63 {
		p.s.t.Fatalf("lab: DSCP %d → %d: DSCP is 0..63", from, to)
	}
	p.dsfield(from<<2, 0xfc, to<<2, 0xfc)
	p.s.t.Logf("switch: %s (%s) remarks DSCP %d → %d", p.host.Port, p.host.Name, from, to)
}

// MarkCE makes the port set ECN to CE (3) in every RoCE v2 frame it sends
// to its host, as a congested switch would (whatever the frame's ECT).
func (p *Port) MarkCE() {
	p.s.t.Helper()
	p.dsfield(0, 0, 3, 3)
	p.s.t.Logf("switch: %s (%s) marks ECN CE", p.host.Port, p.host.Name)
}

// RemarkPCP makes the port rewrite the PCP of VLAN vid's tag in the frames
// it sends to its host.
func (p *Port) RemarkPCP(vid uint16, pcp uint8) {
	p.s.t.Helper()
	if pcp > 7 {
		p.s.t.Fatalf("lab: PCP %d: PCP is 0..7", pcp)
	}
	p.egressFilter("protocol", "802.1Q", "flower", "vlan_id", fmt.Sprint(vid),
		"action", "vlan", "modify", "id", fmt.Sprint(vid), "priority", fmt.Sprint(pcp))
	p.s.t.Logf("switch: %s (%s) remarks PCP of VLAN %d to %d", p.host.Port, p.host.Name, vid, pcp)
}

// StripTag makes the port remove VLAN vid's tag from the frames it sends
// to its host (they arrive untagged, on the host's NIC itself).
func (p *Port) StripTag(vid uint16) {
	p.s.t.Helper()
	p.egressFilter("protocol", "802.1Q", "flower", "vlan_id", fmt.Sprint(vid), "action", "vlan", "pop")
	p.s.t.Logf("switch: %s (%s) strips the tag of VLAN %d", p.host.Port, p.host.Name, vid)
}

// DropRoCE makes the port drop every RoCE v2 frame (untagged or one
// 802.1Q tag) it would send to its host.
func (p *Port) DropRoCE() {
	p.s.t.Helper()
	for _, tagged := range []bool{false, true} {
		for _, fam := range []string{"ip", "ipv6"} {
			p.egressFilter(append(roceMatch(fam, tagged), "action", "drop")...)
		}
	}
	p.s.t.Logf("switch: %s (%s) drops RoCE v2", p.host.Port, p.host.Name)
}

// Link is the direction from one host to another through the switch.
type Link struct {
	s        *Switch
	from, to Host
}

// Link returns the direction from host from to host to.
func (s *Switch) Link(from, to string) *Link { return &Link{s, s.Host(from), s.Host(to)} }

// Netem are netem parameters (tc-netem(8)) for a Link.
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

// Netem applies netem to the frames from → to: on the egress of to's
// port, frames with from's source MAC go through a netem qdisc of their
// own (a band of a prio root qdisc, chosen by a flower filter on the
// source MAC); other traffic to to is untouched. Calling it again for the
// same link replaces the parameters.
func (l *Link) Netem(n Netem) {
	s := l.s
	s.t.Helper()
	if n.Loss < 0 || n.Loss > 100 || n.Duplicate < 0 || n.Duplicate > 100 || n.Reorder < 0 || n.Reorder > 100 {
		s.t.Fatalf("lab: netem %+v: percentages are 0..100", n)
	}
	if n.Reorder > 0 && n.Delay == 0 {
		s.t.Fatalf("lab: netem reorder needs a delay (frames not reordered are delayed)")
	}
	args := n.args()
	if len(args) == 0 {
		s.t.Fatalf("lab: netem %+v: nothing to do", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	port := l.to.Port
	if !s.prio[port] {
		// Band 0 (class 1:1) for everything; band i (class 1:i+1) for
		// frames from host hi, whose netem qdisc is handle i+1 0:.
		prio := []string{"qdisc", "add", "dev", port, "root", "handle", "1:", "prio", "bands", fmt.Sprint(len(Hosts) + 1), "priomap"}
		for i := 0; i < 16; i++ {
			prio = append(prio, "0")
		}
		if err := tc(prio...); err != nil {
			s.t.Fatalf("%v", err)
		}
		s.prio[port] = true
	}
	class := fmt.Sprintf("1:%d", l.from.index+1)
	if err := tc(append([]string{"qdisc", "replace", "dev", port, "parent", class, "handle", fmt.Sprintf("%d0:", l.from.index+1), "netem"}, args...)...); err != nil {
		s.t.Fatalf("%v", err)
	}
	mac, _ := net.ParseMAC(l.from.MAC)
	// One filter per source; adding it twice is harmless but pointless.
	_ = tc("filter", "del", "dev", port, "parent", "1:", "pref", fmt.Sprint(10+l.from.index))
	if err := tc("filter", "add", "dev", port, "parent", "1:", "pref", fmt.Sprint(10+l.from.index), "protocol", "all",
		"flower", "src_mac", mac.String(), "classid", class); err != nil {
		s.t.Fatalf("%v", err)
	}
	s.t.Logf("switch: %s → %s (on %s): netem %s", l.from.Name, l.to.Name, port, strings.Join(args, " "))
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

func (s *Switch) capture(ns, iface string) *Capture {
	s.t.Helper()
	c, err := CaptureIn(ns, iface)
	if err != nil {
		s.t.Fatalf("%v", err)
	}
	s.t.Cleanup(func() { c.Stop() })
	return c
}
