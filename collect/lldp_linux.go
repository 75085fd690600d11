package collect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/bound"
	"github.com/roce-probe/roce-probe/topology"
)

// LLDPListener receives the LLDP frames a switch sends to one netdev:
// a raw socket (AF_PACKET, EtherType 0x88cc) bound to the netdev and
// joined to the nearest-bridge group 01:80:c2:00:00:0e, which a NIC
// filters out otherwise.
type LLDPListener struct {
	netdev string
	f      *os.File
	rc     interface {
		Read(func(fd uintptr) bool) error
	}
	mu  sync.Mutex // one Next at a time
	buf []byte
}

// ListenLLDP opens an LLDP listener on netdev, in the caller's network
// namespace. It needs CAP_NET_RAW: without it the error wraps
// ErrPermission and says so.
func ListenLLDP(netdev string) (*LLDPListener, error) {
	ifi, err := net.InterfaceByName(netdev)
	if err != nil {
		return nil, fmt.Errorf("LLDP on %s: no such netdev", netdev)
	}
	proto := htons(topology.EtherTypeLLDP)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, int(proto))
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("LLDP on %s: a raw socket needs CAP_NET_RAW (run as root or grant the capability): %w", netdev, ErrPermission)
		}
		return nil, fmt.Errorf("LLDP on %s: opening a raw socket: %w", netdev, err)
	}
	fail := func(what string, err error) (*LLDPListener, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("LLDP on %s: %s: %w", netdev, what, err)
	}
	// Our own lldpd's frames are not the switch's.
	unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		return fail("binding the raw socket", err)
	}
	mr := unix.PacketMreq{Ifindex: int32(ifi.Index), Type: unix.PACKET_MR_MULTICAST, Alen: 6}
	copy(mr.Address[:], topology.NearestBridge)
	if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, &mr); err != nil {
		return fail("joining 01:80:c2:00:00:0e (PACKET_ADD_MEMBERSHIP)", err)
	}
	f := os.NewFile(uintptr(fd), "lldp:"+netdev)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("LLDP on %s: %w", netdev, err)
	}
	return &LLDPListener{netdev: netdev, f: f, rc: rc, buf: make([]byte, 9216)}, nil
}

// htons is v in network byte order, as the kernel takes sll_protocol.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// Next waits until deadline for an LLDP frame the netdev received and
// returns what it says and when it came. Frames that do not decode are
// skipped (the last one's error is returned if nothing valid came); no
// frame is ErrNoLLDP; a closed listener is os.ErrClosed.
func (l *LLDPListener) Next(deadline time.Time) (topology.Heard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.f.SetReadDeadline(deadline); err != nil {
		return topology.Heard{}, err
	}
	var bad error
	for {
		var n int
		var rerr error
		err := l.rc.Read(func(fd uintptr) bool {
			n, _, rerr = unix.Recvfrom(int(fd), l.buf, unix.MSG_DONTWAIT)
			return rerr != unix.EAGAIN && rerr != unix.EINTR
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if bad != nil {
				return topology.Heard{}, bad
			}
			return topology.Heard{}, ErrNoLLDP
		case err != nil:
			return topology.Heard{}, err
		case rerr != nil:
			return topology.Heard{}, fmt.Errorf("LLDP on %s: %w", l.netdev, rerr)
		}
		nb, err := topology.DecodeLLDP(l.buf[:min(n, len(l.buf))])
		if err != nil {
			bad = fmt.Errorf("LLDP on %s: %w", l.netdev, err)
			continue
		}
		return topology.Heard{Neighbor: nb, At: time.Now()}, nil
	}
}

// Close releases the socket; a Next waiting on it returns.
func (l *LLDPListener) Close() error { return l.f.Close() }

// lldpcliTimeout bounds one run of lldpcli (2 s was too short for the
// lab's TCG VM on a loaded machine: a fork, an exec and a JSON dump).
const lldpcliTimeout = 5 * time.Second

// readTopology decides the attachment of each of netdevs (the RoCE
// netdevs of the view namespace h): the configured switches, the LLDP
// frames opt brings and those heard within opt.LLDPWait, lldpd's table
// (the collector's own namespace only: lldpcli talks to the lldpd of the
// filesystem's socket, whatever the namespace).
func readTopology(h *nsHandle, netdevs []string, opt Options) *host.Topology {
	o := topology.Observations{Config: opt.Switches, LLDP: map[string]topology.Heard{}, LLDPWhy: map[string]string{}}
	for nd, hd := range opt.LLDPHeard {
		o.LLDP[nd] = hd
	}
	var wg sync.WaitGroup
	if h.name == "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.LLDPD, o.LLDPDWhy = lldpdTable(opt.LLDPDMaxAge)
		}()
	} else {
		o.LLDPDWhy = "not asked: lldpcli reads the lldpd of the collector's own network namespace"
	}
	if opt.LLDPWait > 0 {
		var mu sync.Mutex
		deadline := time.Now().Add(opt.LLDPWait)
		for _, nd := range netdevs {
			var l *LLDPListener
			err := h.inNetns(func() {
				var e error
				l, e = ListenLLDP(nd)
				if e != nil {
					l = nil
					o.LLDPWhy[nd] = e.Error()
				}
			})
			if err != nil {
				o.LLDPWhy[nd] = err.Error()
			}
			if l == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer l.Close()
				hd, err := l.Next(deadline)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					if old, ok := o.LLDP[nd]; !ok || hd.At.After(old.At) {
						o.LLDP[nd] = hd
					}
				case errors.Is(err, ErrNoLLDP):
					o.LLDPWhy[nd] = fmt.Sprintf("no frame within %v (switches send one every 30 s by default: listen longer, collect --lldp-wait 31s)", opt.LLDPWait)
				default:
					o.LLDPWhy[nd] = err.Error()
				}
			}()
		}
	} else if len(opt.LLDPHeard) == 0 {
		o.LLDPWhy[""] = "not listened for (collect --lldp-wait DURATION listens on each RoCE netdev)"
	}
	wg.Wait()
	o.Now = time.Now()
	return &host.Topology{Attachments: topology.Attach(netdevs, o)}
}

// lldpdLast is lldpd's table as this process last read it (lldpdTable).
var lldpdLast struct {
	mu  sync.Mutex
	at  time.Time
	ns  []topology.LLDPDNeighbor
	why string
}

// lldpdTable is lldpd's table: the last one read if younger than maxAge,
// otherwise a new run of lldpcli.
func lldpdTable(maxAge time.Duration) ([]topology.LLDPDNeighbor, string) {
	l := &lldpdLast
	l.mu.Lock()
	defer l.mu.Unlock()
	if maxAge > 0 && !l.at.IsZero() && time.Since(l.at) < maxAge {
		return l.ns, l.why
	}
	l.ns, l.why = runLLDPCli()
	l.at = time.Now()
	return l.ns, l.why
}

// runLLDPCli runs `lldpcli -f json show neighbors` (bounded in time and
// output) and parses its table; without a table it says why.
func runLLDPCli() ([]topology.LLDPDNeighbor, string) {
	path, err := lookPath("lldpcli")
	if err != nil {
		return nil, "lldpcli is not installed (Debian package lldpd)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), lldpcliTimeout)
	defer cancel()
	out, errText, err := runBounded(ctx, path, topology.MaxLLDPCliBytes, "-f", "json", "show", "neighbors")
	if ctx.Err() != nil {
		return nil, fmt.Sprintf("lldpcli did not answer within %v", lldpcliTimeout)
	}
	if err != nil {
		if errText != "" {
			return nil, fmt.Sprintf("lldpcli: %s (is lldpd running?)", untimed(errText))
		}
		return nil, fmt.Sprintf("lldpcli: %v", err)
	}
	ns, err := topology.ParseLLDPCli(out)
	if err != nil {
		return nil, err.Error()
	}
	return ns, ""
}

// untimed drops the time lldpd's log lines start with ("2026-11-27T12:19:08
// [WARN/control] unable to connect to socket /run/lldpd.socket: ..."), so
// that a reason says the same at every read.
func untimed(line string) string {
	first, rest, ok := strings.Cut(line, " ")
	if _, err := time.Parse("2006-01-02T15:04:05", first); ok && err == nil {
		return rest
	}
	return line
}

// lookPath finds a command (exec.LookPath; a variable for tests).
var lookPath = exec.LookPath

// runBounded runs path with args until ctx ends, reading at most max bytes
// of its standard output (more is an error and ends the command); errText
// is the first line of its standard error.
func runBounded(ctx context.Context, path string, max int64, args ...string) (out []byte, errText string, err error) {
	cmd := exec.CommandContext(ctx, path, args...)
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4096}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	out, rerr := bound.ReadAll(pipe, max, "the output")
	if rerr != nil {
		cmd.Process.Kill()
	}
	werr := cmd.Wait()
	errText, _, _ = strings.Cut(strings.TrimSpace(stderr.String()), "\n")
	if rerr != nil {
		return nil, errText, rerr
	}
	return out, errText, werr
}

// limitedWriter keeps the first n bytes written to it.
type limitedWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if k := min(len(p), l.n); k > 0 {
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
