//go:build !linux

package audit

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/roce-probe/roce-probe/collect"
)

// Capture takes a wire sample; it needs Linux (raw sockets) and returns
// an error wrapping collect.ErrNotLinux elsewhere.
func Capture(ctx context.Context, netdevs []string, local []netip.Addr, lim Limits) (*Wire, error) {
	return nil, fmt.Errorf("audit: capturing RoCE frames %w: take the wire sample with tcpdump on the host and pass the file", collect.ErrNotLinux)
}
