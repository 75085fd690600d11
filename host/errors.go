package host

import "errors"

// ErrNoNetns is wrapped when a named network namespace does not exist:
// in a snapshot (Snapshot.Namespace, Snapshot.View) or, for the
// collector, on the live host.
var ErrNoNetns = errors.New("no such network namespace")
