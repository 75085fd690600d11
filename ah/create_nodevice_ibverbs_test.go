//go:build ibverbs && cgo

package ah_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
)

// "No such RDMA device" is one condition: ah.Create's error for a device
// the live host does not have wraps host.ErrNoDevice, the snapshot's.
func TestCreateMissingDeviceIsHostErrNoDevice(t *testing.T) {
	a := ah.Attr{IsGlobal: true, PortNum: 1, GRH: ah.GlobalRoute{DGID: gid.MustParse("10.0.0.2"), HopLimit: 64}}
	_, err := ah.Create("roce-probe-no-such-device", a, ah.CreateOptions{})
	if errors.Is(err, syscall.ENOSYS) {
		t.Skipf("this kernel has no RDMA (ibv_get_device_list: %v): no device list to look the name up in", err)
	}
	if !errors.Is(err, host.ErrNoDevice) {
		t.Errorf("Create on a missing device: %v, want an error wrapping host.ErrNoDevice", err)
	}
}
