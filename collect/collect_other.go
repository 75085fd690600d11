//go:build !linux

package collect

func collect(Options) (*host.Snapshot, error) { return nil, ErrNotLinux }

func newSampler(*host.Snapshot, Options) (Sampler, error) { return nil, ErrNotLinux }
