//go:build !linux

package host

func collect(Options) (*Snapshot, error) { return nil, ErrNotLinux }
