package collect

import (
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// watchBuffer is how many changes wait for the watcher's reader; more are
// dropped, which loses nothing a reader needs: one pending change already
// makes it read the snapshot again.
const watchBuffer = 16

// Watch subscribes to the rtnetlink link and address notifications
// (RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR) of network
// namespace netns ("" for the caller's own; another one needs
// CAP_SYS_ADMIN) until done is closed. Needs no privileges otherwise.
//
// Changes are delivered on the Watcher's C, at most watchBuffer of them
// waiting: a reader that falls behind misses changes, never blocks the
// subscriptions. When done is closed, both sockets are closed and C is
// closed once their goroutines have ended; when one subscription fails,
// both end, C is closed and Err says why (the caller subscribes again and
// reads everything, since changes may have been lost).
func Watch(netnsName string, done <-chan struct{}) (*Watcher, error) {
	ns := netns.None()
	if netnsName != "" {
		h, err := netns.GetFromName(netnsName)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return nil, fmt.Errorf("%w %q: want a name from `ip netns list` (a file in /run/netns)", host.ErrNoNetns, netnsName)
			}
			return nil, fmt.Errorf("network namespace %q: %w", netnsName, err)
		}
		defer h.Close() // the subscriptions keep their own sockets, not the handle
		ns = h
	}
	out := make(chan Change, watchBuffer)
	w := &Watcher{C: out}
	stop := make(chan struct{}) // ends both subscriptions
	var stopOnce sync.Once
	stopAll := func() { stopOnce.Do(func() { close(stop) }) }

	links := make(chan netlink.LinkUpdate, watchBuffer)
	addrs := make(chan netlink.AddrUpdate, watchBuffer)
	var cbMu sync.Mutex
	var lastErr error
	onErr := func(err error) {
		cbMu.Lock()
		lastErr = err
		cbMu.Unlock()
	}
	if err := netlink.LinkSubscribeWithOptions(links, stop, netlink.LinkSubscribeOptions{Namespace: &ns, ErrorCallback: onErr}); err != nil {
		stopAll()
		return nil, fmt.Errorf("subscribing to link changes: %w", err)
	}
	if err := netlink.AddrSubscribeWithOptions(addrs, stop, netlink.AddrSubscribeOptions{Namespace: &ns, ErrorCallback: onErr}); err != nil {
		stopAll()
		for range links { // the link subscription's goroutine ends when its socket closes
		}
		return nil, fmt.Errorf("subscribing to address changes: %w", err)
	}
	go func() {
		select {
		case <-done:
		case <-stop:
		}
		stopAll()
	}()
	go func() {
		defer close(out)
		send := func(c Change) {
			select {
			case out <- c:
			default: // full: the reader has changes to act on already
			}
		}
		for links != nil || addrs != nil {
			select {
			case u, ok := <-links:
				if !ok {
					links = nil
					break
				}
				c := Change{Kind: ChangeLink, Ifindex: int(u.Index), Deleted: u.Header.Type == unix.RTM_DELLINK}
				if u.Link != nil {
					c.Netdev = u.Link.Attrs().Name
				}
				send(c)
				continue
			case u, ok := <-addrs:
				if !ok {
					addrs = nil
					break
				}
				send(Change{Kind: ChangeAddr, Ifindex: u.LinkIndex, Deleted: !u.NewAddr})
				continue
			}
			// A subscription ended: stop the other one too.
			select {
			case <-done:
			default:
				cbMu.Lock()
				err := lastErr
				cbMu.Unlock()
				if err == nil {
					err = errors.New("the kernel closed the subscription")
				}
				w.setErr(fmt.Errorf("watching links and addresses: %w", err))
			}
			stopAll()
		}
	}()
	return w, nil
}
