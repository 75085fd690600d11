package agent

import (
	"log/slog"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
	"github.com/roce-probe/roce-probe/vlan"
)

// DefaultDeps are the live host's: collect.Collect and collect.Watch of the
// agent's own network namespace, probe.OpenWith sockets (CAP_NET_RAW),
// collect.SolicitNeighbor, trace.Run for the automatic traces, the
// system's DNS resolver.
func DefaultDeps(version string, log *slog.Logger) Deps {
	return Deps{
		Version: version,
		Log:     log,
		Collect: collect.Collect,
		Watch:   func(done <-chan struct{}) (*collect.Watcher, error) { return collect.Watch("", done) },
		Open: func(netdev string, sel probe.Selection) (Port, error) {
			// The mesh's socket is drained when the sender wakes, never
			// waited on: out of the poller, a reply wakes nothing.
			c, err := probe.OpenWith(netdev, probe.Incoming, probe.OpenOptions{Select: sel, DrainOnly: sel == probe.Replies})
			if err != nil {
				return nil, err
			}
			c.SetReadTimeout(0) // the listener's reader waits until a frame comes or the socket is closed
			return livePort{c}, nil
		},
		CheckRaw: func() error { return probe.CheckRawSocket("any netdev") },
		Kick: func(src, dst netip.Addr, rr vlan.RouteResult) {
			collect.SolicitNeighbor(src, dst, rr) // the next read sees the answer
		},
		ListenLLDP: func(netdev string) (LLDPReader, error) {
			l, err := collect.ListenLLDP(netdev)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		Trace:    trace.Run,
		Resolver: net.DefaultResolver,
		Now:      time.Now,
		CPU:      processCPU,
	}
}

// processCPU is the CPU time the process has used (getrusage(2)
// RUSAGE_SELF: user + system, every thread).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// livePort is a probe.Conn as a Port: Read is its ReadZeroCopy (the
// capture reader is done with a frame before it reads the next).
type livePort struct{ *probe.Conn }

func (p livePort) Read() ([]byte, time.Time, error) { return p.ReadZeroCopy() }
