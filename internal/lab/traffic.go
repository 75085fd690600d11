//go:build linux

package lab

import (
	"bufio"
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
	"time"

	"golang.org/x/sys/unix"
)

// Proc is a command running in a network namespace (a server or client of
// an RDMA tool), with its combined output.
type Proc struct {
	Namespace string
	cmd       *exec.Cmd
	out       syncBuffer
	done      chan struct{}
	err       error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Start starts a command in a network namespace for test t; it is killed
// when the test ends if it is still running then.
func Start(t TB, namespace, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Namespace: namespace, done: make(chan struct{})}
	p.cmd = exec.Command(name, args...)
	p.cmd.Stdout = &p.out
	p.cmd.Stderr = &p.out
	if err := StartIn(namespace, p.cmd); err != nil {
		t.Fatalf("lab: start %s %s in %s: %v", name, strings.Join(args, " "), namespace, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// String names the command and its namespace.
func (p *Proc) String() string {
	ns := p.Namespace
	if ns == "" {
		ns = "the initial namespace"
	}
	return fmt.Sprintf("%s (in %s)", strings.Join(p.cmd.Args, " "), ns)
}

// Output returns what the command has written so far.
func (p *Proc) Output() string { return p.out.String() }

// Wait waits until the command exits or ctx ends; the error of a failed
// command includes its output.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.done:
	case <-ctx.Done():
		return fmt.Errorf("lab: %s still running: %w\n%s", p, ctx.Err(), p.Output())
	}
	if p.err != nil {
		return fmt.Errorf("lab: %s: %w\n%s", p, p.err, p.Output())
	}
	return nil
}

// Exited reports whether the command has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// poll calls ready every 20 ms until it returns true, p (if not nil) exits,
// or ctx ends.
func poll(ctx context.Context, p *Proc, what string, ready func() (bool, error)) error {
	for {
		ok, err := ready()
		if ok {
			return nil
		}
		if p != nil && p.Exited() {
			return fmt.Errorf("lab: %s exited before %s: %v\n%s", p, what, p.err, p.Output())
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("lab: %s: %w (last error: %v)", what, ctx.Err(), err)
			}
			return fmt.Errorf("lab: %s: %w", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitTCPListen waits until a TCP socket listens on port in the namespace
// (/proc/thread-self/net/tcp and tcp6 read there), or p exits. The
// out-of-band exchange of ibv_rc_pingpong and perftest (without -R) uses
// such a socket.
func WaitTCPListen(ctx context.Context, p *Proc, namespace string, port int) error {
	return poll(ctx, p, fmt.Sprintf("a TCP listener on port %d in %s", port, namespace), func() (bool, error) {
		found := false
		err := InNetns(namespace, func() error {
			for _, f := range []string{"/proc/thread-self/net/tcp", "/proc/thread-self/net/tcp6"} {
				ok, err := tcpListening(f, port)
				if err != nil {
					return err
				}
				found = found || ok
			}
			return nil
		})
		return found, err
	})
}

func tcpListening(path string, port int) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st ...: "0: 00000000:4853 00000000:0000 0A ..."
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || fs[3] != "0A" {
			continue
		}
		_, hexPort, ok := strings.Cut(fs[1], ":")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(hexPort, 16, 16); err == nil && int(v) == port {
			return true, nil
		}
	}
	return false, sc.Err()
}

// CMID is one rdma_cm ID as `rdma -j resource show cm_id` lists it.
type CMID struct {
	Dev     string `json:"ifname"`
	State   string `json:"state"`
	PS      string `json:"ps"`
	SrcAddr string `json:"src-addr"` // ADDRESS:PORT
	Comm    string `json:"comm"`
}

// SrcPort is the port of SrcAddr (-1 if it has none).
func (c CMID) SrcPort() int {
	i := strings.LastIndexByte(c.SrcAddr, ':')
	if i < 0 {
		return -1
	}
	p, err := strconv.Atoi(c.SrcAddr[i+1:])
	if err != nil {
		return -1
	}
	return p
}

// CMIDs lists the rdma_cm IDs bound to RDMA devices (rdma -j resource show
// cm_id, in the caller's namespace; it lists every device's in shared
// netns mode).
func CMIDs(ctx context.Context) ([]CMID, error) {
	out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show", "cm_id").Output()
	if err != nil {
		return nil, fmt.Errorf("lab: rdma -j resource show cm_id: %w", err)
	}
	var ids []CMID
	if len(bytes.TrimSpace(out)) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(out, &ids); err != nil {
		return nil, fmt.Errorf("lab: rdma -j resource show cm_id: %w: %s", err, out)
	}
	return ids, nil
}

// WaitCMListen waits until an rdma_cm ID of RDMA device dev listens on
// port (rdma_listen done: a server such as ucmatose, rping -s or perftest
// -R is ready to accept), or p exits. In shared netns mode a listener on
// the wildcard address is listed once per RDMA device of the kernel.
func WaitCMListen(ctx context.Context, p *Proc, dev string, port int) error {
	return poll(ctx, p, fmt.Sprintf("an rdma_cm listener on %s port %d", dev, port), func() (bool, error) {
		ids, err := CMIDs(ctx)
		for _, id := range ids {
			if id.Dev == dev && id.State == "LISTEN" && id.SrcPort() == port {
				return true, nil
			}
		}
		return false, err
	})
}

// RoceProbe returns the path of the roce-probe binary built for this lab
// run: $LAB_ROCE_PROBE, which scripts/lab.sh sets.
func RoceProbe() (string, error) {
	p := os.Getenv("LAB_ROCE_PROBE")
	if p == "" {
		return "", fmt.Errorf("lab: LAB_ROCE_PROBE is not set: run lab tests with scripts/lab.sh, or set it to a roce-probe binary")
	}
	return p, nil
}

// Tool is an RDMA program run between two fabric hosts: a server, ready
// when its TCP listener (out-of-band exchange) or its rdma_cm listener is
// bound, and a client that runs to completion. The constructors below
// build the usual ones; Run runs it.
type Tool struct {
	Name           string
	Server, Client Host
	ServerArgs     []string // argv, run in Server's namespace
	ClientArgs     []string // argv, run in Client's namespace
	RDMACM         bool     // the server listens with rdma_cm (else on TCP Port)
	Port           int
}

// oobAddr is where the TCP exchanges of ibv_rc_pingpong and perftest go:
// the server's untagged IPv4 address (perftest's takes only IPv4 there),
// a leaf-spine host's IPv4 address; the GID indexes, not this address,
// choose the network of the RDMA traffic.
func oobAddr(s Host) netip.Addr {
	if s.oob.IsValid() {
		return s.oob
	}
	return s.IPv4(FabricNets[0]).Addr()
}

// RCPingpong is ibv_rc_pingpong (libibverbs' example: RC SENDs both ways,
// QP attributes exchanged over TCP) with the given GID indexes.
func RCPingpong(c, s Host, cGID, sGID int, port, iters int) Tool {
	return RCPingpongVia(c, s, oobAddr(s), cGID, sGID, port, iters)
}

// RCPingpongVia is RCPingpong with the client reaching the server's TCP
// exchange at saddr: for RDMA devices outside the fabric, such as a pair
// of rxe devices in the initial namespace (Hosts whose Name is "" and
// whose RDMADevice is theirs).
func RCPingpongVia(c, s Host, saddr netip.Addr, cGID, sGID int, port, iters int) Tool {
	a := []string{"-n", fmt.Sprint(iters), "-p", fmt.Sprint(port)}
	return Tool{Name: "ibv_rc_pingpong", Server: s, Client: c, Port: port,
		ServerArgs: append([]string{"ibv_rc_pingpong", "-d", s.RDMADevice, "-g", fmt.Sprint(sGID)}, a...),
		ClientArgs: append(append([]string{"ibv_rc_pingpong", "-d", c.RDMADevice, "-g", fmt.Sprint(cGID)}, a...), saddr.String())}
}

// Perftest is one of perftest's RC programs (ib_send_bw, ib_write_bw,
// ib_read_bw, ...) with the given GID indexes, iterations and message size;
// the QP attributes are exchanged over TCP.
func Perftest(prog string, c, s Host, cGID, sGID int, port, iters, size int, extra ...string) Tool {
	saddr := oobAddr(s)
	a := append([]string{"-n", fmt.Sprint(iters), "-s", fmt.Sprint(size), "-F", "-p", fmt.Sprint(port)}, extra...)
	return Tool{Name: prog, Server: s, Client: c, Port: port,
		ServerArgs: append(append([]string{prog}, a...), "-d", s.RDMADevice, "-x", fmt.Sprint(sGID)),
		ClientArgs: append(append([]string{prog}, a...), "-d", c.RDMADevice, "-x", fmt.Sprint(cGID), saddr.String())}
}

// PerftestCM is a perftest program connecting with rdma_cm (-R).
func PerftestCM(prog string, c, s Host, saddr netip.Addr, port, iters, size int) Tool {
	a := []string{"-R", "-n", fmt.Sprint(iters), "-s", fmt.Sprint(size), "-F", "-p", fmt.Sprint(port)}
	return Tool{Name: prog + " -R", Server: s, Client: c, Port: port, RDMACM: true,
		ServerArgs: append(append([]string{prog}, a...), "-d", s.RDMADevice),
		ClientArgs: append(append([]string{prog}, a...), "-d", c.RDMADevice, saddr.String())}
}

// Ucmatose is rdma-core's ucmatose (rdma_cm connection, RC SENDs): the
// server binds saddr; the client sets ToS tos with rdma_set_option when tos
// is 0..255 and sets none when it is negative.
func Ucmatose(c, s Host, saddr netip.Addr, port, count, tos int) Tool {
	a := []string{"-p", fmt.Sprint(port), "-C", fmt.Sprint(count)}
	cl := append([]string{"ucmatose", "-s", saddr.String()}, a...)
	if tos >= 0 {
		cl = append(cl, "-t", fmt.Sprint(tos))
	}
	return Tool{Name: "ucmatose", Server: s, Client: c, Port: port, RDMACM: true,
		ServerArgs: append([]string{"ucmatose", "-b", saddr.String()}, a...), ClientArgs: cl}
}

// Rping is rdma-core's rping (rdma_cm, RDMA READ/WRITE and SENDs).
func Rping(c, s Host, saddr netip.Addr, port, count int) Tool {
	a := []string{"-a", saddr.String(), "-p", fmt.Sprint(port), "-C", fmt.Sprint(count)}
	return Tool{Name: "rping", Server: s, Client: c, Port: port, RDMACM: true,
		ServerArgs: append([]string{"rping", "-s"}, a...), ClientArgs: append([]string{"rping", "-c"}, a...)}
}

// Run starts the server, waits until it is ready (its listener bound),
// runs the client and waits for both to exit 0; anything else fails t,
// with both outputs.
func (tl Tool) Run(t TB, ctx context.Context) (srv, cli *Proc) {
	t.Helper()
	srv = Start(t, tl.Server.Name, tl.ServerArgs[0], tl.ServerArgs[1:]...)
	var err error
	if tl.RDMACM {
		err = WaitCMListen(ctx, srv, tl.Server.RDMADevice, tl.Port)
	} else {
		err = WaitTCPListen(ctx, srv, tl.Server.Name, tl.Port)
	}
	if err != nil {
		t.Fatalf("%s: server not ready: %v", tl.Name, err)
	}
	cli = Start(t, tl.Client.Name, tl.ClientArgs[0], tl.ClientArgs[1:]...)
	err = cli.Wait(ctx)
	if err != nil && tl.RDMACM && strings.Contains(cli.Output(), "RDMA_CM_EVENT_REJECTED") && !srv.Exited() {
		// The connection was rejected while the server still waits for
		// one: its listener was not matched yet (a CM REJ for an unknown
		// service ID, seen once on Linux 7.3.4 right after the listener
		// showed in rdma res; perftest's client then crashed on its error
		// path). One more client, a second later; the server's own
		// failures are not retried.
		t.Logf("%s client: rejected while its server waits (%v); once more:\n%s", tl.Name, err, cli.Output())
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		cli = Start(t, tl.Client.Name, tl.ClientArgs[0], tl.ClientArgs[1:]...)
		err = cli.Wait(ctx)
	}
	if err != nil {
		t.Fatalf("%s client: %v\nserver output:\n%s", tl.Name, err, srv.Output())
	}
	if err := srv.Wait(ctx); err != nil {
		t.Fatalf("%s server: %v\nclient output:\n%s", tl.Name, err, cli.Output())
	}
	return srv, cli
}

// GIDIndex returns the index of the GID of addr owned by netdev in port 1
// of RDMA device dev (sysfs; IPv4 addresses as IPv4-mapped GIDs).
func GIDIndex(dev string, addr netip.Addr, netdev string) (int, error) {
	pdir := filepath.Join(sysfsRoot, "class/infiniband", dev, "ports/1")
	ents, err := os.ReadDir(filepath.Join(pdir, "gids"))
	if err != nil {
		return -1, fmt.Errorf("lab: GID table of %s: %w", dev, err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(pdir, "gids", e.Name()))
		if err != nil {
			continue
		}
		a, err := netip.ParseAddr(strings.TrimSpace(string(b)))
		if err != nil || a.Unmap() != addr.Unmap() {
			continue
		}
		nd, err := os.ReadFile(filepath.Join(pdir, "gid_attrs/ndevs", e.Name()))
		if err == nil && strings.TrimSpace(string(nd)) == netdev {
			return strconv.Atoi(e.Name())
		}
	}
	return -1, fmt.Errorf("lab: %s port 1 has no GID %s on %s", dev, addr, netdev)
}

// SendUDP sends one UDP datagram of payload from from to to, from a socket
// opened in the named network namespace ("" for the caller's), with the
// IPv4 TOS or IPv6 traffic class tos and the TTL or hop limit ttl (0: the
// route's default). from's port is the UDP source port (0: any).
func SendUDP(namespace string, from, to netip.AddrPort, tos, ttl uint8, payload []byte) error {
	if from.Addr().Is4() != to.Addr().Is4() {
		return fmt.Errorf("lab: send UDP %s → %s: the addresses' families differ", from, to)
	}
	var conn *net.UDPConn
	err := InNetns(namespace, func() error {
		var err error
		conn, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(from))
		return err
	})
	if err != nil {
		return fmt.Errorf("lab: UDP socket on %s in %s: %w", from, namespace, err)
	}
	defer conn.Close()
	rc, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		if to.Addr().Is4() {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TOS, int(tos))
			if serr == nil && ttl > 0 {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, int(ttl))
			}
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int(tos))
		if serr == nil && ttl > 0 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, int(ttl))
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("lab: UDP socket on %s: TOS %#x, TTL %d: %w", from, tos, ttl, err)
	}
	if _, err := conn.WriteToUDPAddrPort(payload, to); err != nil {
		return fmt.Errorf("lab: send UDP %s → %s in %s: %w", from, to, namespace, err)
	}
	return nil
}
