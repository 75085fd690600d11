//go:build !linux

package collect

import "github.com/roce-probe/roce-probe/host"

func collect(Options) (*host.Snapshot, error) { return nil, ErrNotLinux }

func newSampler(*host.Snapshot, Options) (Sampler, error) { return nil, ErrNotLinux }
