package probe

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/roce-probe/roce-probe/roce"
)

// The types of the live probing machinery (raw sockets and netlink, Linux
// only: conn_linux.go, send_linux.go, listen_linux.go; ResolveEndpoint,
// endpoint.go, has the kernel resolve a neighbour through
// collect.ProbeNeighbor).
// Elsewhere the functions that need them return an error wrapping
// collect.ErrNotLinux (live_other.go), the one "needs Linux" condition.

// Direction selects which frames a Conn captures.
type Direction int

// Directions.
const (
	// Incoming captures frames received by the netdev (every packet type
	// but PACKET_OUTGOING).
	Incoming Direction = iota
	// Outgoing captures frames the host sends out of the netdev
	// (PACKET_OUTGOING), after tc egress and the qdisc: what the wire gets.
	Outgoing
)

// OpenOptions are the options of OpenWith.
type OpenOptions struct {
	// Select narrows the frames captured (AllFrames: every RoCE v2 frame
	// of the direction).
	Select Selection
	// DrainOnly keeps the socket out of Go's network poller: frames that
	// arrive wake no thread of the process (a socket in the poller wakes
	// its poller thread for every frame, waited for or not). Such a Conn
	// is read with Drain only; Read and ReadZeroCopy return ErrDrainOnly.
	DrainOnly bool
}

// ErrDrainOnly is returned by a Read of a Conn opened with DrainOnly.
var ErrDrainOnly = errors.New("the socket is opened to be drained, not read")

// Selection narrows which of its direction's RoCE v2 frames a Conn
// captures, by the kind byte of a probe payload (payload offset 9: 1 probe,
// 2 reply), so that a sender can read its replies apart from the probes it
// answers.
type Selection int

// Selections.
const (
	// AllFrames captures every RoCE v2 frame.
	AllFrames Selection = iota
	// Replies captures only frames whose payload kind byte says reply.
	Replies
	// NoReplies captures every frame Replies does not: AllFrames is
	// exactly one of the two.
	NoReplies
)

// PermissionError reports that a raw socket could not be opened because
// the process lacks CAP_NET_RAW.
type PermissionError struct {
	Netdev string
	Err    error
}

// Error says which netdev needed CAP_NET_RAW.
func (e *PermissionError) Error() string {
	return fmt.Sprintf("opening a raw socket on %s needs CAP_NET_RAW: %v", e.Netdev, e.Err)
}

// Unwrap returns the socket error (EPERM or EACCES).
func (e *PermissionError) Unwrap() error { return e.Err }

// NetdevError reports a netdev that does not exist or is down.
type NetdevError struct {
	Netdev string
	Err    error
}

// Error names the netdev and the problem.
func (e *NetdevError) Error() string {
	return fmt.Sprintf("netdev %q: %v", e.Netdev, e.Err)
}

// Unwrap returns the underlying error.
func (e *NetdevError) Unwrap() error { return e.Err }

// ErrClosed is returned by Read and Write after Close.
var ErrClosed = errors.New("probe: connection closed")

// Endpoint is where probes leave from: the netdev the user named, the
// device frames are written to and captured on, the tags in between, and
// the addresses of both ends.
type Endpoint struct {
	Netdev  string           // the netdev the traffic belongs to (may be a VLAN device)
	Wire    string           // the lowest device under Netdev: frames are written and captured here, tags included
	Tags    []roce.VLANTag   // tags the VLAN devices between Netdev and Wire add, outermost first
	SrcMAC  net.HardwareAddr // Netdev's MAC
	Src     netip.Addr       // source address (from the GID, or Netdev's first address of the family)
	Dst     netip.Addr
	NextHop netip.Addr       // Dst on the same subnet, otherwise the gateway
	DstMAC  net.HardwareAddr // the next hop's MAC, from the neighbour table
}

// ListenConfig configures Listen.
type ListenConfig struct {
	Netdevs   []string // wire devices to capture on (probe.WireDevice, probe.WireDevices)
	Responder ResponderConfig
}

// SendConfig configures Send.
type SendConfig struct {
	Endpoint Endpoint
	// Base holds the markings of every probe (Tagged, VLAN and IPv6 are
	// taken from the endpoint); a sweep overrides DSCP or PCP.
	Base       Markings
	Count      int           // probes per value (without a sweep: probes in all); ≥ 1
	Interval   time.Duration // between two probes
	Timeout    time.Duration // how long to wait for each probe's reply
	Sweep      SweepField    // "" for no sweep
	PayloadLen int           // 0: PayloadLen
}

// Summary sums up a Send.
type Summary struct {
	Sent       int                 `json:"sent"`
	Answered   int                 `json:"answered"`
	Lost       int                 `json:"lost"`
	EgressSeen int                 `json:"egress_seen"`     // probes captured leaving the wire device
	EgressOff  int                 `json:"egress_mismatch"` // of those, how many left with other markings than intended
	RTTMin     time.Duration       `json:"rtt_min_ns"`
	RTTAvg     time.Duration       `json:"rtt_avg_ns"`
	RTTMax     time.Duration       `json:"rtt_max_ns"`
	Findings   map[FindingKind]int `json:"findings"`
	Sweep      *Sweep              `json:"-"`
}
