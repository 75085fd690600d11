//go:build unix

package ah

import (
	"syscall"
	"time"
)

// cpuTime is the user+system CPU time of the process so far (getrusage
// RUSAGE_SELF); false when it cannot be read.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
