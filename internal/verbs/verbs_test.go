//go:build ibverbs && cgo

package verbs

import (
	"errors"
	"strings"
	"testing"
)

// On a machine with or without RDMA devices, opening a name no device has
// must fail with ErrNoDevice (or, without kernel RDMA support at all, with
// the *Error of ibv_get_device_list), never succeed or panic.
func TestOpenMissingDevice(t *testing.T) {
	const name = "roce-probe-no-such-device"
	c, err := Open(name)
	if err == nil {
		c.Close()
		t.Fatalf("Open(%q) succeeded", name)
	}
	var ve *Error
	switch {
	case errors.Is(err, ErrNoDevice):
		if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "devices present") {
			t.Errorf("message %q does not name the device and the devices present", err)
		}
	case errors.As(err, &ve):
		if ve.Op != "ibv_get_device_list" {
			t.Errorf("Open failed in %s, want ibv_get_device_list: %v", ve.Op, err)
		}
	default:
		t.Fatalf("Open(%q): unexpected error %v", name, err)
	}
	t.Logf("Open(%q): %v", name, err)
}

func TestDevicesDoesNotFailWithoutDevices(t *testing.T) {
	names, err := Devices()
	var ve *Error
	if err != nil && !errors.As(err, &ve) {
		t.Fatalf("Devices: %v is not an *Error", err)
	}
	t.Logf("devices %v, err %v", names, err)
}
