//go:build !linux

package agent

import (
	"errors"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
)

// ErrNotLinux: the agent reads the live host and sends raw frames, which
// it does on Linux only.
var ErrNotLinux = errors.New("the agent runs on Linux only (this is " + runtime.GOOS + "): it reads the live host and sends raw RoCE v2 frames")

// DefaultDeps on other systems: every live read fails with
// collect.ErrNotLinux, and CheckRaw with ErrNotLinux, so Run stops at once.
func DefaultDeps(version string, log *slog.Logger) Deps {
	return Deps{
		Version:  version,
		Log:      log,
		Collect:  collect.Collect,
		Open:     func(string, probe.Selection) (Port, error) { return nil, ErrNotLinux },
		CheckRaw: func() error { return ErrNotLinux },
		Resolver: net.DefaultResolver,
		Now:      time.Now,
	}
}
