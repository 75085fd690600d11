//go:build lab

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/probe"
)

// Lab tests of send and listen: the listener runs in the lab's peer
// namespace on veth1, the sender on the host side (the initial namespace,
// where rxe0 runs on veth0), over every lab network. Further namespaces a
// test needs (a misbehaving switch) are built and removed by the test.

// labListener runs `roce-probe listen` in-process in the peer namespace for
// at most d and returns once it captures; the function it returns stops it
// and returns its result (see startListener). Probes get a --timeout of
// 10 s: send returns as soon as every reply is in, so a long timeout costs
// nothing when replies come, and guest code under TCG can be slow.
func labListener(t *testing.T, d time.Duration, args ...string) func() cliResult {
	t.Helper()
	return startListener(t, lab.PeerNetns, d, append([]string{"--netdev", lab.PeerNetdev}, args...)...)
}

// sendHere runs `roce-probe send` in-process in the initial namespace.
func sendHere(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"send"}, args...), strings.NewReader(""), &out, &errb)
	return cliResult{out.String(), errb.String(), code}
}

// The markings a sender puts on probes arrive unchanged at the listener on
// every lab network (untagged, 802.1Q 100 and 200, QinQ 802.1ad 1000 +
// 802.1Q 10), IPv4 and IPv6: VLAN = the network's outer tag, PCP = --sl,
// DSCP/ECN = --tclass, TTL = 64. vlan_chain lists the network's tags,
// each with PCP --sl (send gives every tag it writes the same PCP), as
// sent, as left the host and as arrived at the listener; the markings a
// reply's payload reports know only the outermost tag (vlan_chain null
// when tagged). Every line follows docs/json.md.
func TestLabProbeMarkingsArriveUnchanged(t *testing.T) {
	wait := labListener(t, 120*time.Second, "-o", "ndjson")
	for _, n := range lab.Nets {
		for _, dst := range []netip.Prefix{n.PeerIPv4, n.PeerIPv6} {
			name := fmt.Sprintf("%s/%s", n.Name, dst.Addr())
			r := sendHere(t, "--netdev", n.HostNetdev, "--dst", dst.Addr().String(), "--tclass", "106", "--sl", "5",
				"--count", "2", "--interval", "20ms", "--timeout", "10s", "-o", "ndjson")
			if r.code != exitOK {
				t.Errorf("%s: exit %d\n%s%s", name, r.code, r.stdout, r.stderr)
				continue
			}
			checkOutput(t, "send -o ndjson", r.stdout)
			lines := decodeLines(t, r.stdout)
			for _, p := range lines[:len(lines)-1] {
				for what, m := range map[string]*jsonMarkings{"sent": p.Sent, "egress": p.Egress, "received": p.Received} {
					if m == nil {
						t.Errorf("%s: %s is null", name, what)
						continue
					}
					tagged := len(n.VLANs) > 0
					if (m.VLAN != nil) != tagged || (tagged && (*m.VLAN != int(n.VLANs[0].ID) || m.PCP == nil || *m.PCP != 5)) ||
						m.DSCP != 26 || m.ECN != 2 || m.TTL != 64 {
						t.Errorf("%s: %s = %s, want VLAN %v PCP 5 (if tagged) DSCP 26 ECN 2 TTL 64", name, what, fmtMarkings(m), n.VLANs)
					}
					want := labChain(n, 5)
					if what == "received" && tagged {
						want = "null" // from the reply's payload: the outermost tag only
					}
					if got := rawChain(m.VLANChain); !jsonIs(got, want) {
						t.Errorf("%s: %s.vlan_chain = %v, want %s", name, what, got, want)
					}
				}
				if len(p.Findings) != 0 {
					t.Errorf("%s: findings %v", name, p.Findings)
				}
			}
		}
	}
	l := wait()
	if l.code != exitOK {
		t.Errorf("listener exit %d: %s", l.code, l.stderr)
	}
	if want := fmt.Sprintf(`"answered":%d`, 2*2*len(lab.Nets)); !strings.Contains(l.stdout, want) {
		t.Errorf("listener summary lacks %s:\n%s", want, lastLine(l.stdout))
	}
	checkOutput(t, "listen -o ndjson", l.stdout)
	// What arrived at the listener has every tag of a network: the events
	// of the QinQ network have both, outermost first.
	events := decodeLines(t, l.stdout)
	qinq, _ := lab.NetByName("qinq1000.10")
	want, seen := labChain(qinq, 5), 0
	for _, ev := range events[:len(events)-1] {
		if ev.Received != nil && ev.Received.VLAN != nil && *ev.Received.VLAN == int(qinq.VLANs[0].ID) {
			seen++
			if got := rawChain(ev.Received.VLANChain); !jsonIs(got, want) {
				t.Errorf("listener: received.vlan_chain %v, want %s", got, want)
			}
		}
	}
	if seen != 4 {
		t.Errorf("listener: %d events of the QinQ network, want 4 (2 probes, IPv4 and IPv6)", seen)
	}
}

// labChain is the vlan_chain of lab network n's tags, each with PCP pcp
// and no netdev (the probe knows the tags, not the devices): [] untagged.
func labChain(n lab.Net, pcp int) string {
	var tags []string
	for _, v := range n.VLANs {
		tags = append(tags, fmt.Sprintf(`{"id":%d,"tpid":%d,"pcp":%d,"netdev":null}`, v.ID, v.Proto, pcp))
	}
	return "[" + strings.Join(tags, ",") + "]"
}

// --dev rxe0 --gid-index I probes with what the address handle puts on the
// wire (ah.Resolve): GID index I's netdev, address and VLAN, and rxe's
// markings. For the GID of 10.0.100.1 on veth0.100 that is VLAN 100 with
// PCP 3, the egress-qos-map entry of skb priority 0, whatever --sl says
// (rxe ignores the SL), and the traffic class byte as is (104: DSCP 26,
// Not-ECT).
func TestLabProbeFromGID(t *testing.T) {
	n, _ := lab.NetByName("vlan100")
	idx := gidIndexOf(t, n.HostIPv4.Addr(), n.HostNetdev)
	wait := labListener(t, 60*time.Second, "-o", "ndjson")
	r := sendHere(t, "--dev", lab.RDMADevice, "--gid-index", strconv.Itoa(idx), "--dst", n.PeerIPv4.Addr().String(),
		"--tclass", "104", "--sl", "5", "--count", "1", "--timeout", "10s", "-o", "ndjson")
	wait()
	if r.code != exitOK {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p := decodeLines(t, r.stdout)[0]
	if p.Sent == nil || p.Sent.PCP == nil || *p.Sent.PCP != 3 {
		t.Errorf("sent %s, want PCP 3 (rxe: egress-qos-map of priority 0), not --sl 5", fmtMarkings(p.Sent))
	}
	if p.Received == nil || p.Received.VLAN == nil || *p.Received.VLAN != 100 || *p.Received.PCP != 3 || p.Received.DSCP != 26 || p.Received.ECN != 0 {
		t.Errorf("received %s, want VLAN 100 PCP 3 DSCP 26 ECN 0", fmtMarkings(p.Received))
	}
	if !strings.Contains(r.stdout, `"src":"10.0.100.1"`) || !strings.Contains(r.stdout, `"netdev":"veth0.100"`) || !strings.Contains(r.stdout, `"real_netdev":"veth0"`) {
		t.Errorf("summary does not name GID %d's address and netdev:\n%s", idx, lastLine(r.stdout))
	}
}

// gidIndexOf finds the GID index of addr on netdev in rxe0 port 1 (sysfs).
func gidIndexOf(t *testing.T, addr netip.Addr, netdev string) int {
	t.Helper()
	dir := filepath.Join("/sys/class/infiniband", lab.RDMADevice, "ports/1")
	for i := 0; i < 256; i++ {
		nd, err := os.ReadFile(filepath.Join(dir, "gid_attrs/ndevs", strconv.Itoa(i)))
		if err != nil || strings.TrimSpace(string(nd)) != netdev {
			continue
		}
		ty, _ := os.ReadFile(filepath.Join(dir, "gid_attrs/types", strconv.Itoa(i)))
		gs, _ := os.ReadFile(filepath.Join(dir, "gids", strconv.Itoa(i)))
		a, err := netip.ParseAddr(strings.TrimSpace(string(gs)))
		if err == nil && a.Unmap() == addr && strings.TrimSpace(string(ty)) == "RoCE v2" {
			return i
		}
	}
	t.Fatalf("no RoCE v2 GID for %s on %s in %s", addr, netdev, dir)
	return -1
}

// A middle namespace acting as a misconfigured layer-3 switch: it routes
// between VLAN 101 (towards the sender) and VLAN 102 (towards the
// listener), and its VLAN 102 device maps every priority to PCP 6 with
// egress-qos-map, so PCP 3 leaves as 6. The probe must report the PCP
// remarked 3→6, the VLAN changed 101→102 and one routed hop (TTL 64→63).
// Only veth and 8021q are needed, which the lab kernel has.
func TestLabProbeRemarkingRouter(t *testing.T) {
	nsS, nsM, nsL := netnstest.New(t, "s"), netnstest.New(t, "m"), netnstest.New(t, "l")
	netnstest.Veth(t, nsS, "s0", "02:00:00:79:00:01", nsM, "m0", "02:00:00:79:00:0a")
	netnstest.Veth(t, nsM, "m1", "02:00:00:79:00:0b", nsL, "l0", "02:00:00:79:00:02")
	ipn := func(ns string, args ...string) { netnstest.Run(t, append([]string{"ip", "-n", ns}, args...)...) }
	ipn(nsS, "link", "add", "link", "s0", "name", "s0.101", "type", "vlan", "id", "101")
	ipn(nsM, "link", "add", "link", "m0", "name", "m0.101", "type", "vlan", "id", "101")
	ipn(nsM, "link", "add", "link", "m1", "name", "m1.102", "type", "vlan", "id", "102",
		"egress-qos-map", "0:6", "1:6", "2:6", "3:6", "4:6", "5:6", "6:6", "7:6")
	ipn(nsL, "link", "add", "link", "l0", "name", "l0.102", "type", "vlan", "id", "102")
	for _, d := range [][2]string{{nsS, "s0.101"}, {nsM, "m0.101"}, {nsM, "m1.102"}, {nsL, "l0.102"}} {
		ipn(d[0], "link", "set", d[1], "up")
	}
	ipn(nsS, "addr", "add", "10.79.1.1/24", "dev", "s0.101")
	ipn(nsM, "addr", "add", "10.79.1.254/24", "dev", "m0.101")
	ipn(nsM, "addr", "add", "10.79.2.254/24", "dev", "m1.102")
	ipn(nsL, "addr", "add", "10.79.2.2/24", "dev", "l0.102")
	ipn(nsS, "route", "add", "10.79.2.0/24", "via", "10.79.1.254")
	netnstest.Run(t, "ip", "netns", "exec", nsM, "sysctl", "-qw", "net.ipv4.ip_forward=1")

	wait := startListener(t, nsL, 60*time.Second, "--netdev", "l0")
	r := runIn(t, nsS, "send", "--netdev", "s0.101", "--dst", "10.79.2.2", "--sl", "3", "--tclass", "106",
		"--count", "2", "--interval", "20ms", "--timeout", "10s")
	l := wait()
	t.Logf("sender:\n%s%s\nlistener:\n%s", r.stdout, r.stderr, l.stdout)
	if r.code != exitFinding {
		t.Fatalf("exit %d, want 1 (findings)", r.code)
	}
	for _, want := range []string{"VLAN changed 101→102", "PCP remarked 3→6", "TTL 64→63: 1 routed hop",
		"findings: pcp-remarked ×2, routed-hops ×2, vlan-changed ×2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("sender output lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "DSCP remarked") {
		t.Errorf("DSCP reported remarked, but the router keeps it")
	}

	// A PCP sweep prints the router's map: every PCP arrives as 6.
	wait = startListener(t, nsL, 60*time.Second, "--netdev", "l0")
	r = runIn(t, nsS, "send", "--netdev", "s0.101", "--dst", "10.79.2.2", "--sweep", "pcp", "--count", "1",
		"--interval", "20ms", "--timeout", "10s")
	wait()
	t.Logf("PCP sweep:\n%s%s", r.stdout, r.stderr)
	want := ""
	for v := 0; v < 8; v++ {
		if v != 6 {
			want += fmt.Sprintf("PCP %2d → 6\n", v)
		}
	}
	want += "PCP map over 8 values: 1 unchanged, 7 remarked, 0 mixed, 0 untagged, 0 lost\n"
	if !strings.Contains(r.stdout, want) {
		t.Errorf("PCP sweep output lacks\n%s", want)
	}
}

// A listener in a namespace that holds only a stacked device whose lower
// device stays in another namespace, as a container on a macvlan or VLAN
// network has (the macvlan or VLAN device created on the host's h0, then
// moved into the container's namespace), captures on it without --netdev
// (probe.WireDevices) and answers probes sent from the other side of h0.
// In the container's namespace that device is the only one the frames
// reach. A VLAN device hands its frames over untagged (the kernel's
// vlan_do_receive, net/8021q/vlan_core.c, clears the tag with REORDER_HDR
// on, the default), so the probe is reported as arrived untagged: a
// tag-stripped finding although the wire carried the tag up to h0. (The
// logged `ip link` shows c0's operstate: UNKNOWN on Linux 6.1, UP on 7.3;
// both are up to probe.WireDevices.)
func TestLabListenStackedOnOtherNetns(t *testing.T) {
	for _, c := range []struct {
		name string
		add  []string // what creates c0 on h0 in the host's namespace
		vlan bool
	}{
		{"macvlan", []string{"type", "macvlan", "mode", "bridge"}, false},
		{"vlan", []string{"type", "vlan", "id", "100"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			nsS, nsH, nsC := netnstest.New(t, "s"), netnstest.New(t, "h"), netnstest.New(t, "c")
			netnstest.Veth(t, nsS, "s0", "02:00:00:76:00:01", nsH, "h0", "02:00:00:76:00:0a")
			ipn := func(ns string, args ...string) { netnstest.Run(t, append([]string{"ip", "-n", ns}, args...)...) }
			ipn(nsH, append([]string{"link", "add", "link", "h0", "name", "c0"}, c.add...)...)
			ipn(nsH, "link", "set", "c0", "netns", nsC)
			ipn(nsC, "link", "set", "c0", "up")
			ipn(nsC, "addr", "add", "10.76.0.2/24", "dev", "c0")
			sdev, sl := "s0", []string{}
			if c.vlan {
				sdev, sl = "s0.100", []string{"--sl", "3"}
				ipn(nsS, "link", "add", "link", "s0", "name", sdev, "type", "vlan", "id", "100")
				ipn(nsS, "link", "set", sdev, "up")
			}
			ipn(nsS, "addr", "add", "10.76.0.1/24", "dev", sdev)
			t.Logf("container namespace:\n%s", netnstest.Run(t, "ip", "-n", nsC, "-d", "link", "show", "c0"))

			wait := startListener(t, nsC, 60*time.Second) // no --netdev
			r := runIn(t, nsS, append([]string{"send", "--netdev", sdev, "--dst", "10.76.0.2", "--count", "2",
				"--interval", "20ms", "--timeout", "10s"}, sl...)...)
			l := wait()
			t.Logf("sender:\n%s%s\nlistener:\n%s%s", r.stdout, r.stderr, l.stdout, l.stderr)
			if l.code != exitOK || !strings.HasPrefix(l.stdout, "listening on c0 for") || !strings.Contains(l.stdout, "2 frames: 2 answered") {
				t.Errorf("listener: exit %d, want 0, listening on c0, 2 frames: 2 answered", l.code)
			}
			wantCode, want := exitOK, "2 sent, 2 answered, 0 lost"
			if c.vlan {
				wantCode = exitFinding
			}
			if r.code != wantCode || !strings.Contains(r.stdout, want) {
				t.Errorf("sender: exit %d, want %d and %q", r.code, wantCode, want)
			}
			if c.vlan && !strings.Contains(r.stdout, "findings: tag-stripped ×2") {
				t.Errorf("sender: no tag-stripped finding for the probes the VLAN device handed over untagged")
			}
		})
	}
}

// A flood of malformed and foreign frames at a listener (a roce-probe
// process in the peer namespace) gets no reply, leaves it answering valid
// probes and keeps its memory bounded (resident set size before and after).
// The listener must be capturing before the flood (waitCapturing) and answer
// a probe before and after it; its counters must show that the flood
// reached it, so "no reply" means it refused, not that it was not there yet.
func TestLabListenerFlood(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(self), "roce-probe") // scripts/lab.sh builds it next to the test binaries
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("LAB") != "" { // scripts/lab/guest.sh: the binary must be there
			t.Fatalf("no roce-probe binary next to the test binary in the lab (%v): scripts/lab.sh builds it", err)
		}
		t.Skipf("no roce-probe binary next to the test binary (%v): run through scripts/lab.sh", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "listen", "--netdev", lab.PeerNetdev, "--duration", "70s", "-o", "ndjson")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := lab.StartInPeer(cmd); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { cmd.Process.Signal(os.Interrupt); <-exited }) }
	defer stop()
	pid := strconv.Itoa(cmd.Process.Pid)
	packets := func() ([]byte, error) { return os.ReadFile("/proc/" + pid + "/net/packet") } // the listener's namespace
	if err := waitCapturing(t, pid, packets, nil, exited, 60*time.Second); err != nil {
		stop()
		t.Fatalf("listener: %v\n%s", err, out.String())
	}
	if a, err := os.Readlink("/proc/" + pid + "/ns/net"); err == nil {
		var st1, st2 syscall.Stat_t
		syscall.Stat("/run/netns/"+lab.PeerNetns, &st1)
		syscall.Stat("/proc/"+pid+"/ns/net", &st2)
		t.Logf("listener pid %s in %s (peer namespace inode %d, listener's %d)", pid, a, st1.Ino, st2.Ino)
	}

	// A valid probe before the flood is answered (the listener is up, and
	// its answering code is paged in before the RSS is measured). A
	// generous --timeout costs nothing when the reply comes: send returns
	// as soon as it has it.
	n := lab.Nets[0]
	probeArgs := []string{"--netdev", n.HostNetdev, "--dst", n.PeerIPv4.Addr().String(), "--count", "1", "--timeout", "10s"}
	if r := sendHere(t, probeArgs...); r.code != exitOK {
		stop()
		t.Fatalf("probe before the flood: exit %d\n%s%s\nlistener output:\n%s", r.code, r.stdout, r.stderr, out.String())
	}
	rssBefore := rssKiB(t, cmd.Process.Pid)

	// Raw sockets on veth0: one to write the flood, one to see what comes back.
	tx, err := probe.Open(lab.HostNetdev, probe.Incoming)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	var back int
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			f, _, err := tx.Read()
			if err != nil {
				return
			}
			if f != nil {
				mu.Lock()
				back++
				mu.Unlock()
			}
		}
	}()
	frames := labFloodFrames(t)
	start := time.Now()
	sent := 0
	for time.Since(start) < 5*time.Second {
		for _, f := range frames {
			if err := tx.Write(f); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	time.Sleep(500 * time.Millisecond) // a late reply to the flood would still be counted below (listener summary)
	mu.Lock()
	gotBack := back
	mu.Unlock()
	rssAfter := rssKiB(t, cmd.Process.Pid)
	t.Logf("flood: %d frames in 5 s; listener RSS %d KiB before, %d KiB after; %d frames came back", sent, rssBefore, rssAfter, gotBack)
	if gotBack != 0 {
		t.Errorf("%d frames came back to the flood's sender: want none", gotBack)
	}
	if rssAfter > rssBefore+16*1024 {
		t.Errorf("listener RSS grew from %d to %d KiB under the flood", rssBefore, rssAfter)
	}
	tx.Close()
	<-done

	// Still answering a real probe.
	if r := sendHere(t, probeArgs...); r.code != exitOK {
		t.Errorf("probe after the flood: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	stop()
	t.Logf("listener output:\n%s", out.String())
	summary := lastLine(out.String())
	t.Logf("listener summary: %s", summary)
	var sum struct {
		Summary  bool           `json:"summary"`
		Counters map[string]int `json:"counters"`
	}
	if err := json.Unmarshal([]byte(summary), &sum); err != nil || !sum.Summary {
		t.Fatalf("listener's last line is not its JSON summary (%v): %s", err, summary)
	}
	// Every kind of flood frame the RoCE v2 socket filter lets through
	// reached the listener and was refused.
	for _, k := range []string{"bad_icrc", "foreign", "malformed", "replies_ignored", "not_for_us"} {
		if sum.Counters[k] == 0 {
			t.Errorf("listener counted no %s frame: the flood did not reach it", k)
		}
	}
	if got := sum.Counters["answered"]; got != 2 {
		t.Errorf("listener answered %d frames, want 2 (the real probes before and after the flood): %s", got, summary)
	}
}

// labFloodFrames: garbage, RoCE v2 frames with a bad ICRC, without the
// signature, with a malformed payload, replies, and probes to another
// address, all addressed to the peer's MAC.
func labFloodFrames(t *testing.T) [][]byte {
	t.Helper()
	n := lab.Nets[0]
	hostMAC, _ := net.ParseMAC(lab.HostMAC)
	peerMAC, _ := net.ParseMAC(lab.PeerMAC)
	base := probe.Frame{SrcMAC: hostMAC, DstMAC: peerMAC, Src: n.HostIPv4.Addr(), Dst: n.PeerIPv4.Addr(),
		TTL: 64, Sport: 0xc000, PKey: 0xffff, DestQP: probe.DefaultDestQP, SrcQP: probe.DefaultSrcQP, QKey: probe.DefaultQKey}
	m := probe.Markings{TTL: 64, Sport: 0xc000}
	build := func(f probe.Frame, pl []byte) []byte {
		f.Payload = pl
		b, err := f.Build()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pl := func(k probe.Kind) []byte {
		p := probe.Payload{Kind: k, Session: 1, Seq: 1, Sent: m}
		if k == probe.KindReply {
			p.Received = m
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var out [][]byte
	garbage := append(append(append([]byte{}, peerMAC...), hostMAC...), bytes.Repeat([]byte{0x08, 0x00, 0x45}, 30)...)
	out = append(out, garbage)
	bad := build(base, pl(probe.KindProbe))
	bad[len(bad)-1] ^= 1
	out = append(out, bad)
	out = append(out, build(base, bytes.Repeat([]byte{0x5a}, 64)))
	malformed := pl(probe.KindProbe)
	malformed[36] = 99 // DSCP 99
	out = append(out, build(base, malformed))
	out = append(out, build(base, pl(probe.KindReply)))
	other := base
	other.Dst = netip.MustParseAddr("10.0.0.99")
	out = append(out, build(other, pl(probe.KindProbe)))
	return out
}

func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.Atoi(f[1])
			return v
		}
	}
	t.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

func fmtMarkings(m *jsonMarkings) string {
	if m == nil {
		return "null"
	}
	v, p := "null", "null"
	if m.VLAN != nil {
		v = strconv.Itoa(*m.VLAN)
	}
	if m.PCP != nil {
		p = strconv.Itoa(*m.PCP)
	}
	return fmt.Sprintf("{vlan %s pcp %s dscp %d ecn %d ttl %d}", v, p, m.DSCP, m.ECN, m.TTL)
}
