package qos

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Driver names the kernel RDMA driver of a device. Its wire behaviour
// (how an AH's sl and traffic_class become PCP, DSCP and ECN) is in
// Profile.
type Driver string

// Drivers roce-probe knows. Anything else is reported by its Linux driver
// name with an unknown wire behaviour.
const (
	DriverUnknown Driver = ""
	DriverMLX5    Driver = "mlx5"    // NVIDIA/Mellanox ConnectX-4 and later (mlx5_ib)
	DriverRXE     Driver = "rxe"     // Soft-RoCE (rdma_rxe)
	DriverBNXTRE  Driver = "bnxt_re" // Broadcom NetXtreme-E
	DriverIRDMA   Driver = "irdma"   // Intel E810 / X722 (irdma)
	DriverHNS     Driver = "hns"     // HiSilicon (hns_roce_hw_v2)
	DriverERDMA   Driver = "erdma"   // Alibaba Elastic RDMA
)

// Drivers lists the drivers that have a wire profile (see Predict), in the
// order the CLI names them.
var Drivers = []Driver{DriverRXE, DriverMLX5, DriverIRDMA, DriverBNXTRE, DriverHNS, DriverERDMA}

// ParseDriver returns the Driver named s, which must be one of Drivers. The
// error names the value and the allowed names, so that a typo (mxl5) is not
// silently taken for a driver without a profile.
func ParseDriver(s string) (Driver, error) {
	names := make([]string, len(Drivers))
	for i, d := range Drivers {
		if string(d) == s {
			return d, nil
		}
		names[i] = string(d)
	}
	return DriverUnknown, fmt.Errorf("qos: driver %q has no wire profile: want one of %s", s, strings.Join(names, ", "))
}

// DriverInfo is the result of driver detection and the evidence it rests on.
type DriverInfo struct {
	Driver   Driver `json:"driver"`
	Evidence string `json:"evidence"`         // what in sysfs decided it
	Kernel   string `json:"kernel,omitempty"` // the Linux driver name found, e.g. "mlx5_core"
}

// pciDrivers maps the driver bound to an RDMA device's parent device
// (/sys/class/infiniband/<dev>/device/driver) to the RDMA driver. The
// parent is the PCI function or auxiliary device each driver passes as
// ib_device.dev.parent: mlx5_ib uses mdev->device (the mlx5_core PCI
// function), bnxt_re the bnxt_en PCI function, irdma the ice/i40e PCI
// function or (newer kernels) its own auxiliary device, hns the hns3 PCI
// function, erdma its PCI function.
var pciDrivers = map[string]Driver{
	"mlx5_core":      DriverMLX5,
	"bnxt_en":        DriverBNXTRE,
	"bnxt_re":        DriverBNXTRE,
	"ice":            DriverIRDMA,
	"i40e":           DriverIRDMA,
	"irdma":          DriverIRDMA,
	"hns3":           DriverHNS,
	"hns_roce_hw_v2": DriverHNS,
	"erdma":          DriverERDMA,
}

// namePrefixes are the default device names the drivers register
// (ib_register_device name templates); users can rename devices, so this is
// the last resort.
var namePrefixes = []struct {
	prefix string
	driver Driver
}{
	{"mlx5_", DriverMLX5},
	{"rxe", DriverRXE},
	{"bnxt_re", DriverBNXTRE},
	{"irdma", DriverIRDMA},
	{"hns_", DriverHNS},
	{"hns", DriverHNS},
	{"erdma_", DriverERDMA},
}

// ErrNoDevice is returned (wrapped) when an RDMA device does not exist.
var ErrNoDevice = errors.New("no such RDMA device")

// DetectDriver finds the driver of RDMA device dev from sysfs under
// sysfsRoot (normally "/sys"; tests pass a fixture directory). It needs
// no privileges.
//
// Soft-RoCE has no device/ link (it is not bound to a bus device) but has
// a "parent" attribute naming its netdev (rxe_verbs.c, parent_show);
// hardware devices are recognised by the driver bound to their parent
// device. Only when neither works is the device name's prefix used.
func DetectDriver(sysfsRoot, dev string) (DriverInfo, error) {
	if dev == "" || strings.ContainsAny(dev, "/\x00") || dev == "." || dev == ".." {
		return DriverInfo{}, fmt.Errorf("qos: RDMA device name %q is not valid", dev)
	}
	base := filepath.Join(sysfsRoot, "class", "infiniband", dev)
	if _, err := os.Stat(base); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return DriverInfo{}, fmt.Errorf("qos: %w: %s (no %s)", ErrNoDevice, dev, base)
		}
		return DriverInfo{}, fmt.Errorf("qos: %v", err)
	}
	if link, err := os.Readlink(filepath.Join(base, "device", "driver")); err == nil {
		name := filepath.Base(link)
		if d, ok := pciDrivers[name]; ok {
			return DriverInfo{Driver: d, Kernel: name,
				Evidence: fmt.Sprintf("device/driver is %s", name)}, nil
		}
		return DriverInfo{Driver: Driver(name), Kernel: name,
			Evidence: fmt.Sprintf("device/driver is %s, a driver roce-probe has no profile for", name)}, nil
	}
	if parent, err := os.ReadFile(filepath.Join(base, "parent")); err == nil {
		return DriverInfo{Driver: DriverRXE, Kernel: "rdma_rxe",
			Evidence: fmt.Sprintf("no device/ link and a parent attribute (%s): Soft-RoCE", strings.TrimSpace(string(parent)))}, nil
	}
	for _, p := range namePrefixes {
		if strings.HasPrefix(dev, p.prefix) {
			return DriverInfo{Driver: p.driver,
				Evidence: fmt.Sprintf("only the device name: it starts with %q (devices can be renamed)", p.prefix)}, nil
		}
	}
	return DriverInfo{Driver: DriverUnknown, Evidence: "no device/driver link, no parent attribute, unknown name"}, nil
}
