//go:build !linux

package agent

import (
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
)

// errNotLinux: the agent reads the live host and sends raw frames, which
// it does on Linux only.
var errNotLinux = fmt.Errorf("the agent %w (this is %s): it reads the live host and sends raw RoCE v2 frames", collect.ErrNotLinux, runtime.GOOS)

// DefaultDeps on other systems: every live read, Open and CheckRaw fail
// with an error wrapping collect.ErrNotLinux, so Run stops at once.
func DefaultDeps(version string, log *slog.Logger) Deps {
	return Deps{
		Version:  version,
		Log:      log,
		Collect:  collect.Collect,
		Open:     func(string, probe.Selection) (Port, error) { return nil, errNotLinux },
		CheckRaw: func() error { return errNotLinux },
		Resolver: net.DefaultResolver,
		Now:      time.Now,
	}
}
