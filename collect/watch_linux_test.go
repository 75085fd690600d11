package collect

import (
	"errors"
	"github.com/roce-probe/roce-probe/host"
	"runtime"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// next waits up to 5 s for a change matching want.
func next(t *testing.T, w *Watcher, what string, want func(Change) bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case c, ok := <-w.C:
			if !ok {
				t.Fatalf("%s: the watch ended (%v)", what, w.Err())
			}
			if want(c) {
				return
			}
		case <-deadline:
			t.Fatalf("%s: no such change within 5s", what)
		}
	}
}

// The watch of a namespace sees a netdev appear, get an address, lose it
// and go away; closing done ends it without leaving goroutines behind.
func TestWatchNamespace(t *testing.T) {
	netnstest.RequireRoot(t)
	ns := netnstest.New(t, "w")
	before := runtime.NumGoroutine()
	done := make(chan struct{})
	w, err := Watch(ns, done)
	if err != nil {
		t.Fatal(err)
	}
	netnstest.Run(t, "ip", "-n", ns, "link", "add", "wd0", "type", "veth", "peer", "name", "wd1")
	next(t, w, "link added", func(c Change) bool { return c.Kind == ChangeLink && c.Netdev == "wd0" && !c.Deleted })
	netnstest.Run(t, "ip", "-n", ns, "link", "set", "wd0", "up")
	netnstest.Run(t, "ip", "-n", ns, "addr", "add", "192.0.2.9/24", "dev", "wd0")
	next(t, w, "address added", func(c Change) bool { return c.Kind == ChangeAddr && !c.Deleted })
	netnstest.Run(t, "ip", "-n", ns, "addr", "del", "192.0.2.9/24", "dev", "wd0")
	next(t, w, "address removed", func(c Change) bool { return c.Kind == ChangeAddr && c.Deleted })
	netnstest.Run(t, "ip", "-n", ns, "link", "del", "wd0")
	next(t, w, "link removed", func(c Change) bool { return c.Kind == ChangeLink && c.Deleted && c.Netdev == "wd0" })

	close(done)
	waitEnded(t, w)
	if err := w.Err(); err != nil {
		t.Errorf("Err after done: %v", err)
	}
	for i := 0; runtime.NumGoroutine() > before && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the watch ended, %d before", n, before)
	}
}

// A reader that does not read misses changes but never blocks the
// kernel's side: the buffer holds at most watchBuffer, and the watch still
// ends promptly.
func TestWatchSlowReader(t *testing.T) {
	netnstest.RequireRoot(t)
	ns := netnstest.New(t, "w")
	done := make(chan struct{})
	w, err := Watch(ns, done)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		netnstest.Run(t, "ip", "-n", ns, "link", "add", "wd0", "type", "veth", "peer", "name", "wd1")
		netnstest.Run(t, "ip", "-n", ns, "link", "del", "wd0")
	}
	time.Sleep(100 * time.Millisecond)
	if n := len(w.C); n == 0 || n > watchBuffer {
		t.Errorf("%d changes waiting: want 1..%d", n, watchBuffer)
	}
	close(done)
	waitEnded(t, w)
}

func TestWatchMissingNamespace(t *testing.T) {
	if _, err := Watch("roce-probe-no-such-netns", make(chan struct{})); !errors.Is(err, host.ErrNoNetns) {
		t.Errorf("err %v, want ErrNoNetns", err)
	}
}

// waitEnded waits up to 5 s for the watch to close its channel.
func waitEnded(t *testing.T, w *Watcher) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-w.C:
		case <-deadline:
			t.Fatal("the watch did not end within 5s of done")
		}
	}
}
