//go:build linux

package audit

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/roce-probe/roce-probe/probe"
)

// Capture takes a wire sample: the RoCE v2 frames leaving the host on
// netdevs (probe.Conn in the Outgoing direction: after tc and the qdisc,
// what the wire gets) whose source is one of local, until lim.Frames
// frames were taken, lim.Duration passed or ctx ends. It needs
// CAP_NET_RAW: without it the error is a *probe.PermissionError, and
// nothing was captured. A netdev that cannot be opened fails the capture.
//
// Only frames the kernel sends are seen: rxe's, and on an mlx5 port the
// netdev's own; the RDMA traffic of a NIC that offloads it (mlx5,
// bnxt_re, irdma) never reaches the kernel (docs/audit.md, "The wire").
func Capture(ctx context.Context, netdevs []string, local []netip.Addr, lim Limits) (*Wire, error) {
	if lim.Duration <= 0 {
		lim.Duration = DefaultLimits.Duration
	}
	w := NewWire(local, lim)
	w.Netdevs = append(w.Netdevs, netdevs...)
	var conns []*probe.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for _, nd := range netdevs {
		c, err := probe.OpenWith(nd, probe.Outgoing, probe.OpenOptions{})
		if err != nil {
			closeAll()
			return nil, err
		}
		c.SetReadTimeout(20 * time.Millisecond)
		conns = append(conns, c)
	}
	defer closeAll()
	ctx, cancel := context.WithTimeout(ctx, lim.Duration)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				f, at, err := c.ReadZeroCopy()
				if err != nil {
					if !errors.Is(err, probe.ErrClosed) {
						errs[i] = err
					}
					cancel()
					return
				}
				if f == nil {
					continue
				}
				mu.Lock()
				more := w.Add(netdevs[i], f, at)
				mu.Unlock()
				if !more {
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return w, nil
}
