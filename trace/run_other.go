//go:build !linux

package trace

import (
	"context"
	"fmt"

	"github.com/roce-probe/roce-probe/collect"
)

// Run traces the paths to cfg.Endpoint's destination; it needs Linux (raw
// sockets): elsewhere it returns an error wrapping collect.ErrNotLinux.
func Run(ctx context.Context, cfg Config) (Result, error) {
	return Result{}, fmt.Errorf("trace: %w", collect.ErrNotLinux)
}
