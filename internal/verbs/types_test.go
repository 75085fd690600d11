package verbs

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestErrorDecodesCreateAHErrno(t *testing.T) {
	cases := []struct {
		errno syscall.Errno
		want  []string
	}{
		{syscall.EINVAL, []string{"EINVAL", "is_global = 0", "static_rate", "sgid_index"}},
		{syscall.ETIMEDOUT, []string{"ETIMEDOUT", "neighbour", "ip neigh"}},
		{syscall.ENODATA, []string{"ENODATA", "empty GID table entry"}},
		{syscall.ENETUNREACH, []string{"ENETUNREACH", "no route"}},
	}
	for _, c := range cases {
		err := error(&Error{Op: "ibv_create_ah", Errno: c.errno, Detail: "rxe0 port 1"})
		if !errors.Is(err, c.errno) {
			t.Errorf("errors.Is(%v, %v) = false", err, c.errno)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: message %q lacks %q", c.errno, err, w)
			}
		}
		if !strings.HasPrefix(err.Error(), "ibv_create_ah: ") || !strings.Contains(err.Error(), "rxe0 port 1") {
			t.Errorf("message %q does not name the call and its detail", err)
		}
	}
	if h := Hint("ibv_create_ah", syscall.EXDEV); h != "" {
		t.Errorf("Hint for an errno without advice = %q, want empty", h)
	}
}

func TestMTUBytes(t *testing.T) {
	// enum ibv_mtu: IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5.
	want := map[int]int{0: 0, 1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096, 6: 0, -1: 0}
	for in, w := range want {
		if got := MTUBytes(in); got != w {
			t.Errorf("MTUBytes(%d) = %d, want %d", in, got, w)
		}
	}
}
