//go:build !linux

package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/roce-probe/roce-probe/roce"
)

// needsLinux names the operation and the system in an error wrapping
// ErrNeedsLinux.
func needsLinux(what string) error {
	return fmt.Errorf("probe: %s on %s: %w", what, runtime.GOOS, ErrNeedsLinux)
}

// Conn is an AF_PACKET socket on Linux; elsewhere Open returns an error.
type Conn struct{}

// Open returns an error wrapping ErrNeedsLinux.
func Open(netdev string, dir Direction) (*Conn, error) {
	return nil, needsLinux("opening a raw socket on " + netdev)
}

// Read returns an error wrapping ErrNeedsLinux.
func (c *Conn) Read() ([]byte, time.Time, error) {
	return nil, time.Time{}, needsLinux("reading a raw socket")
}

// Write returns an error wrapping ErrNeedsLinux.
func (c *Conn) Write(frame []byte) error { return needsLinux("writing a raw socket") }

// Close does nothing.
func (c *Conn) Close() error { return nil }

// CheckRawSocket returns an error wrapping ErrNeedsLinux.
func CheckRawSocket(netdev string) error { return needsLinux("opening a raw socket on " + netdev) }

// WireDevice returns an error wrapping ErrNeedsLinux.
func WireDevice(netdev string) (string, []roce.VLANTag, error) {
	return "", nil, needsLinux("reading netdev " + netdev)
}

// ResolveEndpoint returns an error wrapping ErrNeedsLinux.
func ResolveEndpoint(netdev string, src, dst netip.Addr, wait time.Duration) (Endpoint, error) {
	return Endpoint{Netdev: netdev, Dst: dst}, needsLinux("resolving the path to " + dst.String())
}

// LocalAddresses returns an error wrapping ErrNeedsLinux.
func LocalAddresses() ([]netip.Addr, []net.HardwareAddr, error) {
	return nil, nil, needsLinux("listing local addresses")
}

// WireDevices returns an error wrapping ErrNeedsLinux.
func WireDevices() ([]string, error) { return nil, needsLinux("listing netdevs") }

// Listen returns an error wrapping ErrNeedsLinux.
func Listen(ctx context.Context, cfg ListenConfig, onEvent func(Event)) (*Responder, error) {
	return nil, needsLinux("listening for probes")
}

// Send returns an error wrapping ErrNeedsLinux.
func Send(ctx context.Context, cfg SendConfig, emit func(Result)) (Summary, error) {
	return Summary{}, needsLinux("sending probes")
}
