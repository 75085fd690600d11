package probe

import (
	"errors"
	"fmt"
	"net/netip"
)

// ErrNotUnicast is wrapped by CheckDestination's error.
var ErrNotUnicast = errors.New("not a unicast address")

// CheckDestination says why address a cannot be a probe's peer, or nil: a
// probe is sent to one other host and answered back to its sender, so
// both are a valid unicast address that is not the host itself: not the
// unspecified address, not a loopback address (frames to the host itself
// never reach the wire), not a multicast address nor IPv4's limited
// broadcast 255.255.255.255 (a reply to a group would reflect traffic at
// every member). An IPv4-mapped IPv6 address is judged as its IPv4 one.
// `roce-probe send --dst`, the agent's peers and the responder (of a
// probe's source) use it. The error wraps ErrNotUnicast and reads
// "not a unicast address (multicast)".
func CheckDestination(a netip.Addr) error {
	a = a.Unmap()
	what := ""
	switch {
	case !a.IsValid():
		what = "invalid"
	case a.IsUnspecified():
		what = "unspecified"
	case a.IsLoopback():
		what = "loopback"
	case a.IsMulticast():
		what = "multicast"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		what = "limited broadcast"
	default:
		return nil
	}
	return fmt.Errorf("%w (%s)", ErrNotUnicast, what)
}
