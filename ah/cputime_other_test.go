//go:build !unix

package ah

import "time"

// cpuTime is not measured outside Unix: the benchmark reports wall time
// only.
func cpuTime() (time.Duration, bool) { return 0, false }
