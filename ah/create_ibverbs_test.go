//go:build ibverbs && cgo

package ah

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// A device that does not exist (or a kernel without RDMA) is named in the error.
func TestCreateMissingDevice(t *testing.T) {
	_, err := Create("roce-probe-no-such-device", goodAttr(), CreateOptions{})
	switch {
	case err == nil:
		t.Fatal("Create on a missing device succeeded")
	case errors.Is(err, syscall.ENOSYS):
		if !strings.Contains(err.Error(), "ibv_get_device_list") {
			t.Fatalf("Create: %v", err)
		}
	case !strings.Contains(err.Error(), `"roce-probe-no-such-device"`):
		t.Fatalf("Create: %v does not name the device", err)
	}
}
