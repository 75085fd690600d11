//go:build !linux

package collect

import (
	"fmt"
	"runtime"
	"time"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/topology"
)

// errNotLinux is the error of collect's live reads off Linux: it wraps
// ErrNotLinux and says what to do instead.
var errNotLinux = fmt.Errorf("reading the live host %w (this is %s): take a snapshot on the host with 'roce-probe collect --out FILE' and analyse it here with --from FILE", ErrNotLinux, runtime.GOOS)

func collect(Options) (*host.Snapshot, error) { return nil, errNotLinux }

func readCensus(CensusOptions) (*census.Census, error) { return nil, errNotLinux }

func newSampler(*host.Snapshot, Options) (Sampler, error) { return nil, errNotLinux }

// LLDPListener receives LLDP frames on Linux; elsewhere ListenLLDP returns
// ErrNotLinux.
type LLDPListener struct{}

// ListenLLDP returns ErrNotLinux off Linux.
func ListenLLDP(string) (*LLDPListener, error) { return nil, errNotLinux }

// Next returns ErrNotLinux off Linux.
func (*LLDPListener) Next(time.Time) (topology.Heard, error) { return topology.Heard{}, errNotLinux }

// Close does nothing off Linux.
func (*LLDPListener) Close() error { return nil }
