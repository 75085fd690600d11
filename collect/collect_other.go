//go:build !linux

package collect

import (
	"fmt"
	"runtime"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/host"
)

// errNotLinux is the error of collect's live reads off Linux: it wraps
// ErrNotLinux and says what to do instead.
var errNotLinux = fmt.Errorf("reading the live host %w (this is %s): take a snapshot on the host with 'roce-probe collect --out FILE' and analyse it here with --from FILE", ErrNotLinux, runtime.GOOS)

func collect(Options) (*host.Snapshot, error) { return nil, errNotLinux }

func readCensus(CensusOptions) (*census.Census, error) { return nil, errNotLinux }

func newSampler(*host.Snapshot, Options) (Sampler, error) { return nil, errNotLinux }
