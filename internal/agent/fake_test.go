package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/vlan"
)

// The in-process tests run the agent against a fake host (a snapshot
// built here: one veth-like netdev eth0 with 10.9.0.1/24, no RDMA device,
// so the view predicts Soft-RoCE's table) and a fake fabric: simulated
// peers, each with its own probe.Responder and MAC, that answer the
// agent's probes through the real frame builder and parser, and can
// probe the agent. Faults: a peer that stops answering, a path that
// rewrites DSCP, a netdev that disappears, a Collect that fails.

const (
	agentMAC = "02:00:00:09:00:01"
	agentIP  = "10.9.0.1"
)

func mac(s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

// peerAddr is the address of simulated peer i (1-based): 10.9.x.y.
func peerAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 9, byte((i + 1) >> 8), byte((i + 1) & 0xff)})
}

func peerMAC(i int) net.HardwareAddr {
	return net.HardwareAddr{0x02, 0, 0, 0x0a, byte(i >> 8), byte(i)}
}

// fakeHost builds the snapshots Collect returns.
type fakeHost struct {
	mu        sync.Mutex
	peers     int  // neighbours 1..peers are in the table
	netdevOff bool // eth0 removed
	failNext  int  // Collect fails this many more times
	collects  atomic.Int64
	prefix    int // the /prefix of eth0's address
	extra     []vlan.Neighbor
	ip        netip.Addr       // eth0's address; invalid: agentIP
	hwaddr    net.HardwareAddr // eth0's MAC; nil: agentMAC
	hostname  string           // "": agent-test
}

func (h *fakeHost) collect(collect.Options) (*host.Snapshot, error) {
	h.collects.Add(1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failNext > 0 {
		h.failNext--
		return nil, errors.New("injected: reading sysfs failed")
	}
	prefix := h.prefix
	if prefix == 0 {
		prefix = 16
	}
	ttl := 64
	ns := &vlan.Namespace{Sysctls: vlan.Sysctls{IPv4DefaultTTL: &ttl}}
	ns.Links = append(ns.Links, vlan.Link{Name: "lo", Index: 1, Kind: vlan.KindLoopback, MTU: 65536, OperState: "unknown",
		Addrs: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/8")}})
	local, hw := netip.MustParseAddr(agentIP), mac(agentMAC)
	if h.ip.IsValid() {
		local = h.ip
	}
	if h.hwaddr != nil {
		hw = h.hwaddr
	}
	ns.Routes = append(ns.Routes, vlan.Route{Table: vlan.TableLocal, Type: vlan.RouteLocal, Dst: netip.MustParsePrefix("127.0.0.1/32"), Dev: "lo", Ifindex: 1})
	if !h.netdevOff {
		ns.Links = append(ns.Links, vlan.Link{Name: "eth0", Index: 2, Kind: vlan.KindVeth, MAC: vlan.MAC(hw), MTU: 1500,
			OperState: "up", Ether: true, Addrs: []netip.Prefix{netip.PrefixFrom(local, prefix)}})
		ns.Routes = append(ns.Routes,
			vlan.Route{Table: vlan.TableLocal, Type: vlan.RouteLocal, Dst: netip.PrefixFrom(local, 32), Dev: "eth0", Ifindex: 2, PrefSrc: local},
			vlan.Route{Table: vlan.TableMain, Type: vlan.RouteUnicast, Dst: netip.PrefixFrom(local, prefix).Masked(), Dev: "eth0", Ifindex: 2, PrefSrc: local})
		for i := 1; i <= h.peers; i++ {
			ns.Neighbors = append(ns.Neighbors, vlan.Neighbor{IP: peerAddr(i), Dev: "eth0", Ifindex: 2, MAC: vlan.MAC(peerMAC(i)), State: vlan.NUDReachable})
		}
		ns.Neighbors = append(ns.Neighbors, h.extra...)
	}
	ns.Freeze()
	name := h.hostname
	if name == "" {
		name = "agent-test"
	}
	return &host.Snapshot{Tool: "test", Hostname: name, Kernel: "test", Time: time.Now().UTC(),
		RDMA: &host.RDMA{Devices: []host.Device{}}, Namespaces: []*vlan.Namespace{ns}, DCB: []host.DCB{}}, nil
}

func (h *fakeHost) set(f func(h *fakeHost)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// simPeer is one simulated peer: a listener, and what its path does.
type simPeer struct {
	addr netip.Addr
	mac  net.HardwareAddr
	resp *probe.Responder
	down atomic.Bool   // answers nothing
	dscp atomic.Int32  // >= 0: the path rewrites DSCP to this value
	ecn  atomic.Int32  // >= 0: the path sets ECN to this value (3: CE, a congested queue's mark)
	got  atomic.Int64  // probes it received
	prob *probe.Prober // its own probes to the agent (probeAgent)
	pmu  sync.Mutex
	tor  string                 // its ToR, told to probes that ask ("": a listener without one)
	ask  bool                   // its probes ask the agent for its ToR (set before probeAgent)
	told atomic.Pointer[string] // the ToR the agent's last reply told it
}

// fakeNet is the fabric behind the agent's one netdev, eth0.
type fakeNet struct {
	mu    sync.Mutex
	peers map[netip.Addr]*simPeer
	ports map[*fakePort]bool
	opens atomic.Int64
	fail  atomic.Bool // Open fails
	// lazy, when set, makes the simulated peer of an address at its
	// first probe (nil: nobody there).
	lazy func(netip.Addr) *simPeer
	// path, when set, is what the fabric does to a probe the agent sends
	// (by its addresses and UDP source port): drop it, or rewrite its
	// DSCP (dscp >= 0).
	path func(src, dst netip.Addr, sport uint16) (drop bool, dscp int)
}

func newFakeNet() *fakeNet {
	return &fakeNet{peers: map[netip.Addr]*simPeer{}, ports: map[*fakePort]bool{}}
}

func (n *fakeNet) addPeers(t testing.TB, count int) []*simPeer {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*simPeer
	for i := 1; i <= count; i++ {
		a := peerAddr(i)
		if p := n.peers[a]; p != nil {
			out = append(out, p)
			continue
		}
		r, err := probe.NewResponder(probe.ResponderConfig{LocalMACs: []net.HardwareAddr{peerMAC(i)}, LocalAddrs: []netip.Addr{a},
			Rate: probe.RateConfig{Rate: 1000, Burst: 100, GlobalRate: 100000, GlobalBurst: 10000}})
		if err != nil {
			t.Fatal(err)
		}
		p := &simPeer{addr: a, mac: peerMAC(i), resp: r}
		p.dscp.Store(-1)
		p.ecn.Store(-1)
		n.peers[a] = p
		out = append(out, p)
	}
	return out
}

func (n *fakeNet) open(netdev string, sel probe.Selection) (Port, error) {
	if n.fail.Load() {
		return nil, errors.New("injected: socket() failed")
	}
	n.opens.Add(1)
	p := &fakePort{name: netdev, sel: sel, net: n, in: make(chan fakeFrame, 4096), closed: make(chan struct{})}
	n.mu.Lock()
	n.ports[p] = true
	n.mu.Unlock()
	return p, nil
}

// takes says whether a port of selection sel captures frame: a reply (by
// its parsed payload) goes to the Replies ports, anything else to the
// NoReplies ones (probe.Conn's kernel filter tests the payload's kind byte).
func takes(sel probe.Selection, frame []byte) bool {
	reply := false
	if f, err := probe.ParseFrame(frame); err == nil {
		if pl, err := probe.ParsePayload(f.Payload); err == nil {
			reply = pl.Kind == probe.KindReply
		}
	}
	return sel == probe.AllFrames || (sel == probe.Replies) == reply
}

// deliver puts a frame on every open port of the agent (its one wire)
// whose selection takes it, stamped with the time it arrived; a full ring
// drops it, as the kernel's does.
func (n *fakeNet) deliver(frame []byte) { n.offer(frame) }

// offer is deliver reporting whether every port that takes the frame had
// room for it.
func (n *fakeNet) offer(frame []byte) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	all := true
	for p := range n.ports {
		if !takes(p.sel, frame) {
			continue
		}
		select {
		case p.in <- fakeFrame{frame, time.Now()}:
		default:
			all = false
		}
	}
	return all
}

// breakPorts makes every open port's next Read fail, as a socket on a
// netdev that went away does.
func (n *fakeNet) breakPorts() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for p := range n.ports {
		p.broken.Store(true)
	}
}

// breakReplyPorts makes only the mesh's sockets (probe.Replies) fail.
func (n *fakeNet) breakReplyPorts() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for p := range n.ports {
		if p.sel == probe.Replies {
			p.broken.Store(true)
		}
	}
}

// openPorts is the number of open sockets: two per netdev captured on.
func (n *fakeNet) openPorts() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ports)
}

// fakeFrame is a frame on a fake socket and the time it arrived.
type fakeFrame struct {
	b  []byte
	at time.Time
}

type fakePort struct {
	name   string
	sel    probe.Selection
	net    *fakeNet
	in     chan fakeFrame
	closed chan struct{}
	once   sync.Once
	broken atomic.Bool
}

var errFakeClosed = errors.New("fake port closed")

func (p *fakePort) Read() ([]byte, time.Time, error) {
	if p.broken.Load() {
		return nil, time.Time{}, errors.New("injected: recvfrom: no such device")
	}
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case f := <-p.in:
		return f.b, f.at, nil
	case <-p.closed:
		return nil, time.Time{}, errFakeClosed
	case <-t.C:
		return nil, time.Time{}, nil
	}
}

func (p *fakePort) Drain(max int, fn func([]byte, time.Time)) (int, error) {
	for n := 0; ; n++ {
		if n == max {
			return n, nil
		}
		if p.broken.Load() {
			return n, errors.New("injected: recvmsg: no such device")
		}
		select {
		case f := <-p.in:
			fn(f.b, f.at)
		case <-p.closed:
			return n, errFakeClosed
		default:
			return n, nil
		}
	}
}

// Write takes a frame the agent sends: a probe to a simulated peer (its
// path may rewrite it, its listener answers), or the agent's reply to a
// simulated peer's probe.
func (p *fakePort) Write(frame []byte) error {
	select {
	case <-p.closed:
		return errFakeClosed
	default:
	}
	f, err := probe.ParseFrame(frame)
	if err != nil {
		return fmt.Errorf("fake wire: the agent sent a frame that does not parse: %v", err)
	}
	p.net.mu.Lock()
	peer := p.net.peers[f.Dst]
	if peer == nil && p.net.lazy != nil {
		if peer = p.net.lazy(f.Dst); peer != nil {
			p.net.peers[f.Dst] = peer
		}
	}
	p.net.mu.Unlock()
	if peer == nil {
		return nil // nobody there
	}
	pl, err := probe.ParsePayload(f.Payload)
	if err != nil {
		return fmt.Errorf("fake wire: bad payload: %v", err)
	}
	if pl.Kind == probe.KindReply {
		tor := pl.ToR
		peer.told.Store(&tor)
		peer.pmu.Lock()
		if peer.prob != nil {
			peer.prob.Match(frame, time.Now())
		}
		peer.pmu.Unlock()
		return nil
	}
	peer.got.Add(1)
	if peer.down.Load() {
		return nil
	}
	if p.net.path != nil {
		drop, dscp := p.net.path(f.Src, f.Dst, f.Sport)
		if drop {
			return nil
		}
		if dscp >= 0 {
			f.DSCP = uint8(dscp)
			if frame, err = f.Build(); err != nil {
				return err
			}
		}
	}
	if d, e := peer.dscp.Load(), peer.ecn.Load(); d >= 0 || e >= 0 {
		if d >= 0 {
			f.DSCP = uint8(d)
		}
		if e >= 0 {
			f.ECN = uint8(e)
		}
		if frame, err = f.Build(); err != nil {
			return err
		}
	}
	reply := peer.resp.HandleReplyToR(frame, peer.tor)
	if reply != nil {
		p.net.deliver(reply)
	}
	return nil
}

func (p *fakePort) Close() error {
	p.once.Do(func() {
		close(p.closed)
		p.net.mu.Lock()
		delete(p.net.ports, p)
		p.net.mu.Unlock()
	})
	return nil
}

// probeAgent makes peer send one probe to the agent.
func (n *fakeNet) probeAgent(t testing.TB, peer *simPeer) {
	peer.pmu.Lock()
	if peer.prob == nil {
		pr, err := probe.NewProber(probe.Frame{SrcMAC: peer.mac, DstMAC: mac(agentMAC), Src: peer.addr, Dst: netip.MustParseAddr(agentIP)})
		if err != nil {
			t.Fatal(err)
		}
		if peer.ask {
			pr.PayloadLen = probe.TopologyPayloadLen
		}
		peer.prob = pr
	}
	frame, seq, err := peer.prob.Next(probe.Markings{DSCP: 26, ECN: probe.ECNECT0, TTL: 64, Sport: 0xc000}, time.Now())
	peer.prob.Release(seq) // the tests count the agent's answers, not these
	peer.pmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	n.deliver(frame)
}

// fakeResolver answers peers.dns from a list the test sets, or fails.
type fakeResolver struct {
	mu    sync.Mutex
	addrs []netip.Addr
	err   error
	calls atomic.Int64
}

func (r *fakeResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return nil, r.err
	}
	return append([]netip.Addr(nil), r.addrs...), nil
}

func (r *fakeResolver) set(addrs []netip.Addr, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addrs, r.err = addrs, err
}

// fakeWatch delivers changes the test sends.
type fakeWatch struct {
	mu   sync.Mutex
	ch   chan collect.Change
	subs atomic.Int64
	fail atomic.Bool
}

func (w *fakeWatch) watch(done <-chan struct{}) (*collect.Watcher, error) {
	if w.fail.Load() {
		return nil, errors.New("injected: netlink subscription failed")
	}
	w.subs.Add(1)
	ch := make(chan collect.Change, 16)
	w.mu.Lock()
	w.ch = ch
	w.mu.Unlock()
	go func() {
		<-done
		w.mu.Lock()
		if w.ch == ch {
			w.ch = nil
		}
		close(ch)
		w.mu.Unlock()
	}()
	return &collect.Watcher{C: ch}, nil
}

// send delivers a change (dropped when the subscription's buffer is full,
// as collect.Watch drops).
func (w *fakeWatch) send(c collect.Change) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		select {
		case w.ch <- c:
		default:
		}
	}
}

// end ends the current subscription as a kernel error would.
func (w *fakeWatch) end() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

// testAgent is an agent on the fake host and fabric, serving on loopback.
type testAgent struct {
	*Agent
	host   *fakeHost
	net    *fakeNet
	res    *fakeResolver
	watch  *fakeWatch
	url    string
	cancel context.CancelFunc
	done   chan error
	logs   *syncBuf
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testConfig is a configuration for the fake host: one flow from eth0's
// predicted RoCE v2 IPv4 GID with traffic class 106, fast probes.
func testConfig() Config {
	c := Default()
	c.Listen = "127.0.0.1:0"
	c.Interval = time.Second
	c.ShutdownTimeout = 2 * time.Second
	c.Probe.Rate = 10
	c.Probe.Timeout = 300 * time.Millisecond
	tc, sl := 106, 3
	c.Flows = []FlowConfig{{Name: "rdma", Select: SelectConfig{Netdev: "eth0"}, TClass: &tc, SL: &sl}}
	return c
}

// startAgent runs an agent with cfg on fakes until the test ends.
func startAgent(t testing.TB, cfg Config, h *fakeHost, n *fakeNet, edit ...func(*Deps)) *testAgent {
	t.Helper()
	ta := &testAgent{host: h, net: n, res: &fakeResolver{}, watch: &fakeWatch{}, logs: &syncBuf{}, done: make(chan error, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := Deps{Version: "test", Log: slog.New(slog.NewTextHandler(ta.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Collect: h.collect, Watch: ta.watch.watch, Open: n.open, Resolver: ta.res, Listener: ln}
	for _, e := range edit {
		e(&d)
	}
	a, err := New(cfg, d)
	if err != nil {
		t.Fatal(err)
	}
	ta.Agent, ta.url = a, "http://"+ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ta.cancel = cancel
	go func() { ta.done <- a.Run(ctx) }()
	t.Cleanup(func() { ta.stop(t) })
	return ta
}

// stop stops the agent and waits for Run to return (at most 10 s).
func (ta *testAgent) stop(t testing.TB) {
	t.Helper()
	if ta.cancel == nil {
		return
	}
	ta.cancel()
	ta.cancel = nil
	select {
	case err := <-ta.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("Run did not return within 10s of the stop")
	}
}

// gather returns the agent's metrics by family name.
func gather(t testing.TB, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// value is the value of the series of family name whose labels include
// want (label=value pairs); ok false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// eventually polls cond every 20 ms for up to d.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ = io.Discard

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
