package trace

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/roce-probe/roce-probe/probe"
)

// Config configures Run. Zero fields take the defaults named.
type Config struct {
	// Endpoint is where probes leave from and go to
	// (probe.ResolveEndpoint): every probe is addressed to Endpoint.Dst.
	Endpoint probe.Endpoint
	// Base holds the markings of every probe: DSCP, ECN and PCP (Tagged
	// and VLAN come from the endpoint; TTL and Sport are set per probe).
	Base probe.Markings
	// Sports are the UDP source ports to trace first, in order (none:
	// one random port, probe.RandomSport; for a path search, none: the
	// ports of flow labels 1, 2, ...).
	Sports []uint16
	// Paths > 1 searches for up to that many distinct paths: after
	// Sports, the ports of flow labels 1, 2, ... (Ports) are traced
	// until Paths paths are found, PortsWithoutNewPath ports in a row
	// found none, or MaxPorts were tried. 0 or 1: only Sports.
	Paths int
	// MaxPorts bounds the ports a path search tries (default 8 per path
	// asked for, at most 256, and at least MinPorts).
	MaxPorts int
	// MinPorts is how many ports a path search traces before it may stop
	// for finding no new path (default 0): a floor for fabrics whose hash
	// is uneven, and for tests that must see every path.
	MinPorts int
	// MaxHops is the highest TTL / hop limit tried (default 16).
	MaxHops int
	// Tries is how many probes a hop gets at most (default 3): a hop
	// that does not answer is tried again, each try waiting twice as
	// long as the one before (Timeout, 2×Timeout, 4×Timeout), so that a
	// router's ICMP rate limit refills.
	Tries int
	// Timeout is how long the first try of a hop waits (default 500ms).
	Timeout time.Duration
	// Rate is the most probes sent per second over the whole run
	// (default 50).
	Rate float64
	// Window is how many TTLs of one port are in flight at once
	// (default 4), and Parallel how many ports are traced at once
	// (default 2).
	Window, Parallel int
	// SilentLimit ends a port's trace after that many silent hops in a
	// row past the last answer (default 4).
	SilentLimit int
}

// Limits of Config.
const (
	MaxMaxHops  = 64
	MaxTries    = 10
	MaxPaths    = 64
	MaxMaxPorts = 1024
	MaxRate     = 1000
)

// withDefaults fills in the defaults and checks every field.
func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Paths < 0 || c.Paths > MaxPaths {
		return c, fmt.Errorf("trace: paths %d is out of range: want 0..%d", c.Paths, MaxPaths)
	}
	if c.MinPorts < 0 || c.MinPorts > MaxMaxPorts {
		return c, fmt.Errorf("trace: min ports %d is out of range: want 0..%d", c.MinPorts, MaxMaxPorts)
	}
	def(&c.MaxPorts, max(min(8*max(c.Paths, 1), 256), c.MinPorts))
	def(&c.MaxHops, 16)
	def(&c.Tries, 3)
	def(&c.Window, 4)
	def(&c.Parallel, 2)
	def(&c.SilentLimit, 4)
	if c.Timeout == 0 {
		c.Timeout = 500 * time.Millisecond
	}
	if c.Rate == 0 {
		c.Rate = 50
	}
	for _, x := range []struct {
		name   string
		v, max int
	}{{"max ports", c.MaxPorts, MaxMaxPorts}, {"max hops", c.MaxHops, MaxMaxHops}, {"tries", c.Tries, MaxTries},
		{"window", c.Window, MaxMaxHops}, {"parallel", c.Parallel, 64}, {"silent limit", c.SilentLimit, MaxMaxHops}} {
		if x.v < 1 || x.v > x.max {
			return c, fmt.Errorf("trace: %s %d is out of range: want 1..%d", x.name, x.v, x.max)
		}
	}
	if !(c.Rate > 0 && c.Rate <= MaxRate) {
		return c, fmt.Errorf("trace: rate %g is out of range: want more than 0 and at most %d probes per second", c.Rate, MaxRate)
	}
	if c.Timeout < time.Millisecond || c.Timeout > time.Minute {
		return c, fmt.Errorf("trace: timeout %v is out of range: want 1ms..1m", c.Timeout)
	}
	if err := probe.CheckDestination(c.Endpoint.Dst); err != nil {
		return c, fmt.Errorf("trace: destination %s: %w", c.Endpoint.Dst, err)
	}
	if err := c.Base.Validate(); err != nil {
		return c, err
	}
	return c, nil
}

// Result is what Run found.
type Result struct {
	Src, Dst netip.Addr
	// Sent are the markings every probe left with; each has its own TTL
	// and path's UDP source port: Sent.TTL is the highest TTL tried,
	// Sent.Sport the first port.
	Sent  probe.Markings
	Paths []Path // distinct paths, in the order found
	// Traces are every port's own trace, in the order they finished
	// (Paths holds the first trace of each path).
	Traces []Trace
	// PortsTried is how many UDP source ports were traced; Stop says
	// why the search ended.
	PortsTried int
	Stop       string
	Probes     int // probes sent
	// Unmatched counts ICMP errors about traffic to the destination that
	// no probe could be matched to (a quote too short to tell probes
	// apart, or another sender's).
	Unmatched int
}

// PathChanges is Changes for path p of the result.
func (r Result) PathChanges(p Path) []Change { return Changes(r.Sent, r.Src, p.Hops) }

// Trace is the trace of one UDP source port.
type Trace struct {
	Sport uint16
	Hops  []Hop
}
