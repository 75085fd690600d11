package collect

import "sync"

// ChangeKind says what a Change is about.
type ChangeKind string

// Kinds of Change.
const (
	ChangeLink ChangeKind = "link" // a netdev appeared, went away, or changed (state, name, master, ...)
	ChangeAddr ChangeKind = "addr" // an IP address was added or removed
)

// Change is one rtnetlink notification about the links or addresses of a
// network namespace. It only says that something changed: the snapshot
// is the one account of what there is, so a watcher reads it again.
type Change struct {
	Kind    ChangeKind
	Ifindex int
	Netdev  string // the link's name; "" for an address change
	Deleted bool   // RTM_DELLINK or RTM_DELADDR
}

// Watcher delivers the link and address changes of one network namespace
// (Watch). C is closed once the watch has ended: after done was closed, or
// when the kernel stopped delivering (Err says why).
type Watcher struct {
	C <-chan Change

	mu  sync.Mutex
	err error
}

// Err returns why C was closed before done was: the subscription's socket
// failed (ENOBUFS when the kernel dropped notifications, for instance).
// It is nil while C is open and after a watch that done ended.
func (w *Watcher) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *Watcher) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}
