//go:build linux

package probe

import (
	"context"
	"errors"
	"sync"
)

// Listen answers probes on every netdev of cfg until ctx is done, calling
// onEvent for each valid probe (answered or rate-limited). It returns the
// responder, whose counters tell what else arrived. It needs CAP_NET_RAW
// (a *PermissionError says so).
func Listen(ctx context.Context, cfg ListenConfig, onEvent func(Event)) (*Responder, error) {
	if len(cfg.Netdevs) == 0 {
		return nil, errors.New("probe: no netdev to listen on")
	}
	r, err := NewResponder(cfg.Responder)
	if err != nil {
		return nil, err
	}
	var conns []*Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for _, nd := range cfg.Netdevs {
		c, err := Open(nd, Incoming)
		if err != nil {
			return nil, err
		}
		conns = append(conns, c)
	}
	var mu sync.Mutex // serializes the responder and onEvent
	var wg sync.WaitGroup
	errc := make(chan error, len(conns))
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				frame, _, err := c.Read()
				if err != nil {
					errc <- err
					return
				}
				if frame == nil {
					continue
				}
				mu.Lock()
				reply, ev := r.Handle(frame)
				if ev != nil && onEvent != nil {
					onEvent(*ev)
				}
				mu.Unlock()
				if reply != nil {
					if err := c.Write(reply); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
	}
	var firstErr error
	select {
	case <-ctx.Done():
	case firstErr = <-errc:
	}
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	return r, firstErr
}
