//go:build !linux

package agent

import (
	"errors"
	"testing"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
)

// Off Linux the agent's live dependencies fail with the one "needs Linux"
// condition, as collect's and probe's do.
func TestDefaultDepsNeedLinux(t *testing.T) {
	d := DefaultDeps("test", nil)
	_, err1 := d.Collect(collect.Options{})
	_, err2 := d.Open("eth0", probe.AllFrames)
	for i, err := range []error{err1, err2, d.CheckRaw()} {
		if !errors.Is(err, collect.ErrNotLinux) {
			t.Errorf("dependency %d: %v, want an error wrapping collect.ErrNotLinux", i+1, err)
		}
	}
}
