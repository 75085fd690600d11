//go:build lab

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/roce"
)

// How rxe counts, from its source (drivers/infiniband/sw/rxe, read in
// Debian's linux-source-6.1 6.1.192 and linux-source-7.3 7.3.4; the same
// rules in both unless said):
//
//   - sent_pkts: rxe_net.c rxe_xmit_packet adds 1 once rxe_send
//     (ip_local_out) or rxe_loopback took the packet: every request,
//     retransmission, ACK and READ response, once each; a packet dropped
//     because the QP is not ready, or refused by the IP stack (send_err),
//     is not counted.
//   - rcvd_pkts: rxe_recv.c rxe_rcv adds 1 after the packet passed every
//     check: BTH length, a destination GID of the device (rxe_chk_dgid), a
//     known opcode and length, hdr_check (transport version, an existing QP
//     of the opcode's type and state, the addresses of an RC/UC QP, P_Key,
//     the Q_Key of a UD QP) and the ICRC; before the responder or
//     completer sees it, so duplicates and out-of-sequence requests count.
//   - sent_bytes (7.x only): rxe_xmit_packet adds skb->len taken on entry,
//     when rxe_prepare has pushed the IP and UDP headers and the Ethernet
//     header is not there yet: the IP datagram, IP header included (IPv4
//     total length; 40 + IPv6 payload length).
//   - rcvd_bytes (7.x only): rxe_rcv adds skb->len - skb_network_offset(skb)
//     with skb->data at the BTH (rxe_udp_encap_recv pulled the UDP
//     header): again the IP datagram, counted with rcvd_pkts.
//   - counters/ (7.x only): rxe_mad.c rxe_get_pma_counters_ext answers
//     port_xmit_packets = sent_pkts, port_rcv_packets = rcvd_pkts,
//     port_xmit_data = sent_bytes >> 2, port_rcv_data = rcvd_bytes >> 2 and
//     zero for every other field of the group.
//
// rxePMACounted are the counters/ files rxe fills (rxe_mad.c).
var rxePMACounted = map[string]bool{"port_xmit_data": true, "port_rcv_data": true, "port_xmit_packets": true, "port_rcv_packets": true}

// countersReport is one report of `roce-probe counters -o json`
// (docs/json.md, counters_report), read into the package's own JSON type
// (its values come from the kernel, sysfs and the captures, not from it).
type countersReport struct{ counters.Report }

func (r countersReport) port(t *testing.T, dev string) counters.PortReport {
	t.Helper()
	for _, p := range r.Ports {
		if p.Device == dev && p.Port == 1 {
			return p
		}
	}
	t.Fatalf("counters report of %s has no port %s/1: %+v", r.Time, dev, r.Ports)
	return counters.PortReport{}
}

// value returns a counter of dev's port 1 and whether it is there.
func (r countersReport) value(dev, name string) (uint64, bool) {
	for _, p := range r.Ports {
		if p.Device == dev && p.Port == 1 {
			c, ok := p.Counters[name]
			return c.Value, ok
		}
	}
	return 0, false
}

// must returns a counter of dev's port 1, failing t when it is absent.
func (r countersReport) must(t *testing.T, dev, name string) uint64 {
	t.Helper()
	c, ok := r.port(t, dev).Counters[name]
	if !ok {
		t.Fatalf("%s has no counter %s", dev, name)
	}
	return c.Value
}

// readCounters runs `roce-probe counters --dev DEV --interval 0 -o json`
// (one sample) in the initial namespace, with --netns NS when ns is set.
func readCounters(t *testing.T, ns, dev string) countersReport {
	t.Helper()
	args := []string{"counters", "--dev", dev, "--interval", "0", "-o", "json"}
	if ns != "" {
		args = append(args, "--netns", ns)
	}
	out, stderr, code := runCLI(t, "", args...)
	if code != exitOK {
		t.Fatalf("%s: exit %d: %s\n%s", strings.Join(args, " "), code, stderr, out)
	}
	var r countersReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return r
}

// sysfsCounters reads every file of an RDMA port's hw_counters or
// counters directory (initial namespace sysfs); nil when there is none.
func sysfsCounters(t *testing.T, dev, dir string) map[string]uint64 {
	t.Helper()
	d := filepath.Join("/sys/class/infiniband", dev, "ports/1", dir)
	ents, err := os.ReadDir(d)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(d, e.Name()))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatalf("%s/%s: %v", d, e.Name(), err)
		}
		m[e.Name()] = v
	}
	return m
}

// checkCounterSet checks a report's port of an rxe device against sysfs
// read just after it (nothing moves in between): the source is RDMA
// netlink; every hw_counters file but lifespan (the cache lifetime in ms,
// not a counter: docs/counters.md) is there with sysfs's value, and the
// kernel's names (KernelFacts) are all there is: 6.1 has no sent_bytes or
// rcvd_bytes, and they are absent, not 0; of counters/ (7.x), the four
// files rxe fills, with sysfs's values, and none of the 17 it answers with
// 0. On 7.x the PMA counters are rxe's own counters in other units.
func checkCounterSet(t *testing.T, r countersReport, dev string) {
	t.Helper()
	f, err := lab.Facts()
	if err != nil {
		t.Fatal(err)
	}
	p := r.port(t, dev)
	hw, pma := sysfsCounters(t, dev, "hw_counters"), sysfsCounters(t, dev, "counters")
	if p.Source != "netlink" {
		t.Errorf("%s: source %q, want netlink (RDMA_NLDEV_CMD_STAT_GET answers for rxe)", dev, p.Source)
	}
	want := map[string]uint64{}
	for _, n := range f.HWCounters {
		if n != "lifespan" {
			want[n] = hw[n]
		}
	}
	for _, n := range f.PMACounters {
		if rxePMACounted[n] {
			want[n] = pma[n]
		}
	}
	if _, ok := hw["lifespan"]; !ok {
		t.Errorf("%s: sysfs has no hw_counters/lifespan (KernelFacts lists it)", dev)
	}
	got := map[string]uint64{}
	for n, c := range p.Counters {
		got[n] = c.Value
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Linux %s: %s counters\n got %v\nwant %v (sysfs hw_counters without lifespan, and the counters/ files rxe fills)", lab.KernelRelease(), dev, got, want)
	}
	for n, m := range map[string]string{"sent_pkts": "tx_packets", "rcvd_pkts": "rx_packets", "sent_bytes": "tx_bytes", "rcvd_bytes": "rx_bytes", "out_of_seq_request": "out_of_sequence"} {
		if c, ok := p.Counters[n]; ok && (c.Meaning == nil || *c.Meaning != m) {
			t.Errorf("%s %s: meaning %v, want %s (docs/counters.md)", dev, n, c.Meaning, m)
		}
	}
	_, hasBytes := p.Counters["sent_bytes"]
	if hasBytes != slices.Contains(f.HWCounters, "sent_bytes") {
		t.Errorf("Linux %s: sent_bytes present %v; the kernel's names %v (absent, never 0, where it has none)", lab.KernelRelease(), hasBytes, f.HWCounters)
	}
	if len(f.PMACounters) > 0 {
		for _, rel := range []struct{ pma, hw string }{{"port_xmit_packets", "sent_pkts"}, {"port_rcv_packets", "rcvd_pkts"}} {
			if got[rel.pma] != got[rel.hw] {
				t.Errorf("%s: %s %d, %s %d: rxe_mad.c answers one with the other", dev, rel.pma, got[rel.pma], rel.hw, got[rel.hw])
			}
		}
		for _, rel := range []struct{ pma, hw string }{{"port_xmit_data", "sent_bytes"}, {"port_rcv_data", "rcvd_bytes"}} {
			if got[rel.pma] != got[rel.hw]>>2 {
				t.Errorf("%s: %s %d, %s %d: rxe_mad.c answers %s >> 2 (units of 4 octets)", dev, rel.pma, got[rel.pma], rel.hw, got[rel.hw], rel.hw)
			}
		}
	}
}

// delta returns after - before for a counter of dev.
func delta(t *testing.T, before, after countersReport, dev, name string) uint64 {
	t.Helper()
	return after.must(t, dev, name) - before.must(t, dev, name)
}

// wireCount is what a capture shows of the RoCE packets matching a
// filter: how many, and their lengths as rxe could count them.
type wireCount struct {
	pkts       uint64
	ipBytes    uint64 // the IP datagrams: IPv4 total length, 40 + IPv6 payload length
	frameBytes uint64 // whole Ethernet frames, VLAN tags included
	ibBytes    uint64 // the InfiniBand packets (BTH to ICRC)
	payload    uint64 // the application data
	opcodes    map[roce.Opcode]int
}

func (w wireCount) String() string {
	var ops []string
	for op, n := range w.opcodes {
		ops = append(ops, fmt.Sprintf("%#02x×%d", uint8(op), n))
	}
	sort.Strings(ops)
	return fmt.Sprintf("%d packets, %d bytes of IP datagrams (frames %d, IB packets %d, payload %d; opcodes %s)",
		w.pkts, w.ipBytes, w.frameBytes, w.ibBytes, w.payload, strings.Join(ops, " "))
}

// countRoCE counts the RoCE v2 frames of a capture for which match is
// true, reading the IP length from the frame's own IP header.
func countRoCE(frames []lab.Frame, match func(p *roce.Packet) bool) wireCount {
	w := wireCount{opcodes: map[roce.Opcode]int{}}
	d := roce.NewDecoder()
	for _, f := range frames {
		var p roce.Packet
		if d.Decode(f.Data, &p) != nil || p.Version != 2 || !match(&p) {
			continue
		}
		w.pkts++
		ip := f.Data[p.Net:]
		if p.IPVersion == 4 {
			w.ipBytes += uint64(binary.BigEndian.Uint16(ip[2:4]))
		} else {
			w.ipBytes += 40 + uint64(binary.BigEndian.Uint16(ip[4:6]))
		}
		w.frameBytes += uint64(len(f.Data))
		w.ibBytes += uint64(p.End - p.Transport)
		w.payload += uint64(p.PayloadLen)
		w.opcodes[p.BTH.Opcode]++
	}
	return w
}

func fromAddr(a netip.Addr) func(p *roce.Packet) bool {
	return func(p *roce.Packet) bool { return p.Src == a }
}

func toAddr(a netip.Addr) func(p *roce.Packet) bool {
	return func(p *roce.Packet) bool { return p.Dst == a }
}

// checkCounted compares what rxe device dev counted between two reports
// with what the capture shows it sent (tx) and received (rx): packets on
// both kernels, bytes where the kernel counts them (7.x), as the IP
// datagrams' lengths.
func checkCounted(t *testing.T, before, after countersReport, dev string, tx, rx wireCount) {
	t.Helper()
	sent, rcvd := delta(t, before, after, dev, "sent_pkts"), delta(t, before, after, dev, "rcvd_pkts")
	t.Logf("%s: sent_pkts +%d, rcvd_pkts +%d; the capture: sent %v; received %v", dev, sent, rcvd, tx, rx)
	if sent != tx.pkts || rcvd != rx.pkts {
		t.Errorf("%s: sent_pkts +%d rcvd_pkts +%d, the capture shows %d sent and %d received", dev, sent, rcvd, tx.pkts, rx.pkts)
	}
	if _, ok := after.port(t, dev).Counters["sent_bytes"]; !ok {
		return
	}
	sb, rb := delta(t, before, after, dev, "sent_bytes"), delta(t, before, after, dev, "rcvd_bytes")
	t.Logf("%s: sent_bytes +%d, rcvd_bytes +%d", dev, sb, rb)
	if sb != tx.ipBytes || rb != rx.ipBytes {
		t.Errorf("%s: sent_bytes +%d rcvd_bytes +%d; the IP datagrams of the capture: %d sent, %d received (frames %d/%d, IB packets %d/%d, payload %d/%d)",
			dev, sb, rb, tx.ipBytes, rx.ipBytes, tx.frameBytes, rx.frameBytes, tx.ibBytes, rx.ibBytes, tx.payload, rx.payload)
	}
}

// sentinel sends one UDP datagram with a unique payload to port 9 of dst,
// from namespace ns (the source address the route gives), and waits until
// every capture holds it. A capture's socket queues frames in the order
// the kernel handed them over, so once the sentinel is read, so is every
// frame sent or received before it: the RoCE frames of a program that has
// exited.
func sentinel(t *testing.T, ns string, dst netip.Addr, capts ...*lab.Capture) {
	t.Helper()
	payload := []byte(fmt.Sprintf("roce-probe counters sentinel %d", time.Now().UnixNano()))
	err := lab.InNetns(ns, func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, 9)))
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(payload)
		return err
	})
	if err != nil {
		t.Fatalf("sentinel to %s: %v", dst, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range capts {
		if _, err := c.Wait(ctx, func(f lab.Frame) bool { return bytes.Contains(f.Data, payload) }); err != nil {
			t.Fatalf("sentinel to %s: %v", dst, err)
		}
	}
}

// countersWatch is `roce-probe counters --watch -o ndjson` running (the
// lab's binary) in the initial namespace, its reports read as they come.
type countersWatch struct {
	cmd     *exec.Cmd
	args    []string
	stderr  bytes.Buffer
	reports chan countersReport
	bad     chan string // lines that are not one whole report
}

// startCountersWatch starts `roce-probe counters --watch -o ndjson ARGS...`;
// it is killed when the test ends if still running.
func startCountersWatch(t *testing.T, args ...string) *countersWatch {
	t.Helper()
	rp, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	w := &countersWatch{args: append([]string{"counters", "--watch", "-o", "ndjson"}, args...),
		reports: make(chan countersReport, 1000), bad: make(chan string, 1)}
	w.cmd = exec.Command(rp, w.args...)
	w.cmd.Stderr = &w.stderr
	out, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(w.reports)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var r countersReport
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				select {
				case w.bad <- fmt.Sprintf("%v: %.300s", err, sc.Text()):
				default:
				}
				continue
			}
			w.reports <- r
		}
	}()
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
	})
	return w
}

// checkLines fails t if the watch wrote a line that is not one whole
// report.
func (w *countersWatch) checkLines(t *testing.T) {
	t.Helper()
	select {
	case l := <-w.bad:
		t.Errorf("roce-probe %s: a line that is not one report: %s", strings.Join(w.args, " "), l)
	default:
	}
}

// after returns the reports up to the first whose sample was read after
// tm, waiting for it (the zero tm: the next report).
func (w *countersWatch) after(t *testing.T, ctx context.Context, tm time.Time) []countersReport {
	t.Helper()
	var rs []countersReport
	for {
		select {
		case r, ok := <-w.reports:
			if !ok {
				t.Fatalf("roce-probe %s ended: %s", strings.Join(w.args, " "), w.stderr.String())
			}
			rs = append(rs, r)
			if r.Time.After(tm) {
				w.checkLines(t)
				return rs
			}
		case <-ctx.Done():
			t.Fatalf("roce-probe %s: no report after %v: %v (stderr: %s)", strings.Join(w.args, " "), tm, ctx.Err(), w.stderr.String())
		}
	}
}

// stop ends the watch with SIGTERM, as a service manager does, and
// returns the reports it still wrote: it must exit 0 with every line one
// whole report (docs/counters.md).
func (w *countersWatch) stop(t *testing.T, ctx context.Context) []countersReport {
	t.Helper()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rs []countersReport
	for {
		select {
		case r, ok := <-w.reports:
			if !ok {
				if err := w.cmd.Wait(); err != nil {
					t.Errorf("roce-probe %s after SIGTERM: %v: %s", strings.Join(w.args, " "), err, w.stderr.String())
				}
				w.checkLines(t)
				return rs
			}
			rs = append(rs, r)
		case <-ctx.Done():
			t.Fatalf("roce-probe %s: still running after SIGTERM: %v", strings.Join(w.args, " "), ctx.Err())
		}
	}
}

// checkRates checks every watch report of dev against the one before it
// (the first against base, the values before the watch started, with no
// traffic in between): each counter's rate is its change divided by the
// report's interval_s, to the three decimals both are rounded to
// (rate = round(change/dt, 3), interval_s = round(dt, 3)); and returns the
// change of each counter over the whole watch.
func checkRates(t *testing.T, dev string, base countersReport, reps []countersReport) map[string]uint64 {
	t.Helper()
	prev := base.port(t, dev).Counters
	total := map[string]uint64{}
	for i, r := range reps {
		if r.Interval == nil || *r.Interval <= 0.001 {
			t.Errorf("report %d: interval_s %v", i+1, r.Interval)
			continue
		}
		iv := *r.Interval
		cur := r.port(t, dev).Counters
		for n, c := range cur {
			p, ok := prev[n]
			if !ok || c.Rate == nil || c.Value < p.Value {
				t.Errorf("report %d: %s %s: value %d (before %d, present %v), rate %v", i+1, dev, n, c.Value, p.Value, ok, c.Rate)
				continue
			}
			d := float64(c.Value - p.Value)
			lo, hi := d/(iv+0.0005)-0.0005-1e-9, d/(iv-0.0005)+0.0005+1e-9
			if *c.Rate < lo || *c.Rate > hi {
				t.Errorf("report %d: %s %s rose by %.0f in %.3fs: rate %v, want %.3f", i+1, dev, n, d, iv, *c.Rate, d/iv)
			}
			total[n] += c.Value - p.Value
		}
		prev = cur
	}
	return total
}

// Names of the two rxe devices TestLabCountersRC makes in the initial
// namespace, their veth pair and addresses.
const (
	rcDevA, rcDevB = "rxerca", "rxercb"
	rcNetA, rcNetB = "rcva", "rcvb"
	rcTable        = "177"
)

var rcAddrA, rcAddrB = netip.MustParseAddr("10.77.0.1"), netip.MustParseAddr("10.77.0.2")

// rcPairUp builds two rxe devices in the initial namespace joined by a
// veth pair, so that RC runs between them on both kernels (6.1's rxe works
// in no other namespace). Both addresses are local, so the kernel would
// deliver their traffic through lo; instead each address's local route is
// moved from table local to a table that only packets arriving on its own
// veth look up (ip rule iif), and the other end is reached on the link
// with a permanent neighbour: frames cross the veth pair, where a capture
// sees them. Everything is removed when the test ends.
func rcPairUp(t *testing.T, ctx context.Context) (gidA, gidB int) {
	t.Helper()
	run := func(args ...string) {
		t.Helper()
		if out, err := lab.RunIn(ctx, "", args[0], args[1:]...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, a := range [][]string{
			{"rdma", "link", "delete", rcDevA}, {"rdma", "link", "delete", rcDevB},
			{"ip", "rule", "delete", "iif", rcNetA, "lookup", rcTable}, {"ip", "rule", "delete", "iif", rcNetB, "lookup", rcTable},
			{"ip", "link", "delete", rcNetA},
		} {
			_, _ = lab.RunIn(c, "", a[0], a[1:]...)
		}
	})
	run("ip", "link", "add", rcNetA, "type", "veth", "peer", "name", rcNetB)
	// Up before the addresses: a netdev going up gets the local routes of
	// its addresses again (fib_netdev_event, NETDEV_UP).
	run("ip", "link", "set", rcNetA, "up")
	run("ip", "link", "set", rcNetB, "up")
	for _, s := range []struct {
		dev, other  string
		addr, oaddr netip.Addr
	}{{rcNetA, rcNetB, rcAddrA, rcAddrB}, {rcNetB, rcNetA, rcAddrB, rcAddrA}} {
		run("ip", "addr", "add", s.addr.String()+"/32", "dev", s.dev)
		run("ip", "route", "delete", "table", "local", "local", s.addr.String(), "dev", s.dev)
		run("ip", "route", "add", "table", rcTable, "local", s.addr.String(), "dev", s.dev)
		run("ip", "rule", "add", "iif", s.dev, "lookup", rcTable)
		run("ip", "route", "add", s.oaddr.String()+"/32", "dev", s.dev)
		mac, err := os.ReadFile(filepath.Join("/sys/class/net", s.other, "address"))
		if err != nil {
			t.Fatal(err)
		}
		run("ip", "neigh", "replace", s.oaddr.String(), "lladdr", strings.TrimSpace(string(mac)), "dev", s.dev, "nud", "permanent")
	}
	run("rdma", "link", "add", rcDevA, "type", "rxe", "netdev", rcNetA)
	run("rdma", "link", "add", rcDevB, "type", "rxe", "netdev", rcNetB)
	for _, d := range []string{rcDevA, rcDevB} {
		if err := lab.WaitPortActive(d, 1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	gid := func(dev string, a netip.Addr, netdev string) int {
		for {
			i, err := lab.GIDIndex(dev, a, netdev)
			if err == nil {
				return i
			}
			select {
			case <-ctx.Done():
				t.Fatalf("no GID for %s on %s: %v", a, dev, err)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return gid(rcDevA, rcAddrA, rcNetA), gid(rcDevB, rcAddrB, rcNetB)
}

// RC counters on both kernels, between two rxe devices of the initial
// namespace (rcPairUp): ibv_rc_pingpong (10 round trips of 4096-byte
// SENDs, 4 packets each at the 1024-byte path MTU, and their ACKs) from
// rxerca to rxercb. Each device's sent_pkts and rcvd_pkts change by
// exactly the RC packets the capture on the veth pair shows it sent and
// received, and on 7.x sent_bytes and rcvd_bytes by exactly the IP
// datagrams' lengths; what one sent the other received.
func TestLabCountersRC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	ga, gb := rcPairUp(t, ctx)
	capt, err := lab.CaptureIn("", rcNetA)
	if err != nil {
		t.Fatal(err)
	}
	defer capt.Stop()
	ba, bb := readCounters(t, "", rcDevA), readCounters(t, "", rcDevB)
	// Both in the initial namespace; the TCP exchange of QP attributes
	// goes to rxercb's address (the VM's lo is down), across the pair like
	// the RDMA traffic.
	a, b := lab.Host{RDMADevice: rcDevA}, lab.Host{RDMADevice: rcDevB}
	lab.RCPingpongVia(a, b, rcAddrB, ga, gb, 21400, 10).Run(t, ctx)
	sentinel(t, "", rcAddrB, capt)
	aa, ab := readCounters(t, "", rcDevA), readCounters(t, "", rcDevB)
	checkCounterSet(t, aa, rcDevA)
	checkCounterSet(t, ab, rcDevB)
	frames := capt.Stop()
	_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), "counters-rc-pair.pcapng"), rcNetA, frames)
	aToB, bToA := countRoCE(frames, fromAddr(rcAddrA)), countRoCE(frames, fromAddr(rcAddrB))
	if aToB.pkts == 0 || bToA.pkts == 0 || aToB.opcodes[roce.Opcode(roce.OpSendFirst)] != 10 {
		t.Fatalf("the capture shows %v from %s and %v from %s: want 10 SENDs each way of 4 packets and ACKs", aToB, rcAddrA, bToA, rcAddrB)
	}
	checkCounted(t, ba, aa, rcDevA, aToB, bToA)
	checkCounted(t, bb, ab, rcDevB, bToA, aToB)
}
