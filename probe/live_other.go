//go:build !linux

package probe

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/roce-probe/roce-probe/collect"
)

// needsLinux names the operation and the system in an error wrapping
// collect.ErrNotLinux.
func needsLinux(what string) error {
	return fmt.Errorf("probe: %s on %s: live sending and listening %w (AF_PACKET raw sockets and netlink)", what, runtime.GOOS, collect.ErrNotLinux)
}

// Conn is an AF_PACKET socket on Linux; elsewhere Open returns an error.
type Conn struct{}

// Open returns an error wrapping collect.ErrNotLinux.
func Open(netdev string, dir Direction) (*Conn, error) {
	return nil, needsLinux("opening a raw socket on " + netdev)
}

// OpenWith returns an error wrapping collect.ErrNotLinux.
func OpenWith(netdev string, dir Direction, o OpenOptions) (*Conn, error) {
	return nil, needsLinux("opening a raw socket on " + netdev)
}

// SetReadTimeout does nothing.
func (c *Conn) SetReadTimeout(d time.Duration) {}

// Read returns an error wrapping collect.ErrNotLinux.
func (c *Conn) Read() ([]byte, time.Time, error) {
	return nil, time.Time{}, needsLinux("reading a raw socket")
}

// ReadZeroCopy returns an error wrapping collect.ErrNotLinux.
func (c *Conn) ReadZeroCopy() ([]byte, time.Time, error) {
	return nil, time.Time{}, needsLinux("reading a raw socket")
}

// Drain returns an error wrapping collect.ErrNotLinux.
func (c *Conn) Drain(max int, fn func(frame []byte, at time.Time)) (int, error) {
	return 0, needsLinux("reading a raw socket")
}

// Write returns an error wrapping collect.ErrNotLinux.
func (c *Conn) Write(frame []byte) error { return needsLinux("writing a raw socket") }

// Close does nothing.
func (c *Conn) Close() error { return nil }

// CheckRawSocket returns an error wrapping collect.ErrNotLinux.
func CheckRawSocket(netdev string) error { return needsLinux("opening a raw socket on " + netdev) }

// Listen returns an error wrapping collect.ErrNotLinux.
func Listen(ctx context.Context, cfg ListenConfig, onEvent func(Event)) (*Responder, error) {
	return nil, needsLinux("listening for probes")
}

// Send returns an error wrapping collect.ErrNotLinux.
func Send(ctx context.Context, cfg SendConfig, emit func(Result)) (Summary, error) {
	return Summary{}, needsLinux("sending probes")
}
