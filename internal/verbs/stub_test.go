//go:build !ibverbs || !cgo

package verbs

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStubSaysBuiltWithoutIbverbs(t *testing.T) {
	_, err := Open("rxe0")
	if !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Open: %v, want ErrNotBuilt", err)
	}
	for _, w := range []string{"rxe0", "built without ibverbs", "-tags ibverbs", "libibverbs-dev"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q lacks %q", err, w)
		}
	}
	var c *Context
	if _, err := c.NewUD(1, 0x11111111); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("NewUD: %v, want ErrNotBuilt", err)
	}
	var u *UD
	if _, err := u.CreateAH(AHAttr{IsGlobal: true, Port: 1}); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("CreateAH: %v, want ErrNotBuilt", err)
	}
	if err := u.Send(nil, 1, 1, nil, time.Second); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Send: %v, want ErrNotBuilt", err)
	}
	if _, err := u.Recv(time.Second); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Recv: %v, want ErrNotBuilt", err)
	}
	if _, err := Devices(); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Devices: %v, want ErrNotBuilt", err)
	}
}
