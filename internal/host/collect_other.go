//go:build !linux

package host

func collect(Options) (*Snapshot, error) { return nil, ErrNotLinux }

func newSampler(*Snapshot, Options) (Sampler, error) { return nil, ErrNotLinux }
