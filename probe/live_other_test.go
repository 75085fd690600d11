//go:build !linux

package probe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
)

// Off Linux every live operation says it needs Linux.
func TestLiveNeedsLinux(t *testing.T) {
	_, err1 := Open("eth0", Incoming)
	_, err2 := OpenWith("eth0", Incoming, OpenOptions{Select: Replies, DrainOnly: true})
	_, err3 := (&Conn{}).Drain(1, func([]byte, time.Time) {})
	_, err4 := Listen(context.Background(), ListenConfig{}, nil)
	_, err5 := Send(context.Background(), SendConfig{}, nil)
	for i, err := range []error{err1, err2, err3, err4, err5, CheckRawSocket("eth0")} {
		if !errors.Is(err, collect.ErrNotLinux) || !strings.Contains(err.Error(), "needs Linux") {
			t.Errorf("operation %d: %v, want an error wrapping collect.ErrNotLinux", i+1, err)
		}
	}
}
