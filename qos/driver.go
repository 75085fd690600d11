package qos

import (
	"encoding/json"
	"fmt"
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
	DriverIONIC   Driver = "ionic"   // AMD Pensando (ionic_rdma over the ionic Ethernet driver)
	DriverHIROCE3 Driver = "hiroce3" // Huawei hinic3 NICs (hiroce3 over hinic3; openEuler's kernel)
)

// Drivers lists the drivers that have a wire profile (see Predict), in the
// order the CLI names them.
var Drivers = []Driver{DriverRXE, DriverMLX5, DriverIRDMA, DriverBNXTRE, DriverHNS, DriverERDMA, DriverIONIC, DriverHIROCE3}

// String returns the driver's name, "unknown" for DriverUnknown: a
// message never names an empty driver.
func (d Driver) String() string {
	if d == DriverUnknown {
		return "unknown"
	}
	return string(d)
}

// MarshalJSON writes the driver's name, or null for DriverUnknown: in
// roce-probe's JSON what is not known is null, never "".
func (d Driver) MarshalJSON() ([]byte, error) {
	if d == DriverUnknown {
		return []byte("null"), nil
	}
	return json.Marshal(string(d))
}

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
	Evidence string `json:"evidence"`      // what in sysfs decided it
	Kernel   string `json:"kernel_driver"` // the Linux driver name found, e.g. "mlx5_core"; null in JSON when none
}

// MarshalJSON writes {driver, evidence, kernel_driver}, kernel_driver
// null when no Linux driver was found.
func (i DriverInfo) MarshalJSON() ([]byte, error) {
	w := struct {
		Driver   Driver  `json:"driver"`
		Evidence string  `json:"evidence"`
		Kernel   *string `json:"kernel_driver"`
	}{Driver: i.Driver, Evidence: i.Evidence}
	if i.Kernel != "" {
		w.Kernel = &i.Kernel
	}
	return json.Marshal(w)
}

// pciDrivers maps the driver bound to an RDMA device's parent device
// (/sys/class/infiniband/<dev>/device/driver) to the RDMA driver. The
// parent is the PCI function or auxiliary device each driver passes as
// ib_device.dev.parent: mlx5_ib uses mdev->device (the mlx5_core PCI
// function), bnxt_re the bnxt_en PCI function, irdma the ice/i40e PCI
// function or (newer kernels) its own auxiliary device, hns the hns3 PCI
// function, erdma its PCI function, ionic_rdma the ionic PCI function
// (ionic_ibdev.c: ibdev->dev.parent = lif_cfg.hwdev, which
// ionic_lif_cfg.c ionic_fill_lif_cfg sets to the ionic pdev's device),
// hiroce3 the hinic3 PCI function (mainline's hinic3 has no RDMA driver:
// an RDMA device on a hinic3 function is openEuler's hiroce3).
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
	"ionic":          DriverIONIC,
	"ionic_rdma":     DriverIONIC,
	"hinic3":         DriverHIROCE3,
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
	{"ionic_", DriverIONIC},
}

// IdentifyDriver names the RDMA driver of device dev from what sysfs shows
// (roce-probe's collector reads it): bound is the name of the driver bound
// to the device's parent (/sys/class/infiniband/<dev>/device/driver, ""
// when there is no device link), rxeParent the content of the parent
// attribute ("" when there is none).
//
// Soft-RoCE has no device/ link (it is not bound to a bus device) but has
// a "parent" attribute naming its netdev (rxe_verbs.c, parent_show);
// hardware devices are recognised by the driver bound to their parent
// device. Only when neither works is the device name's prefix used.
func IdentifyDriver(dev, bound, rxeParent string) DriverInfo {
	if bound != "" {
		if d, ok := pciDrivers[bound]; ok {
			return DriverInfo{Driver: d, Kernel: bound, Evidence: fmt.Sprintf("device/driver is %s", bound)}
		}
		return DriverInfo{Driver: Driver(bound), Kernel: bound,
			Evidence: fmt.Sprintf("device/driver is %s, a driver roce-probe has no profile for", bound)}
	}
	if rxeParent != "" {
		return DriverInfo{Driver: DriverRXE, Kernel: "rdma_rxe",
			Evidence: fmt.Sprintf("no device/ link and a parent attribute (%s): Soft-RoCE", rxeParent)}
	}
	for _, p := range namePrefixes {
		if strings.HasPrefix(dev, p.prefix) {
			return DriverInfo{Driver: p.driver,
				Evidence: fmt.Sprintf("only the device name: it starts with %q (devices can be renamed)", p.prefix)}
		}
	}
	return DriverInfo{Driver: DriverUnknown, Evidence: "no device/driver link, no parent attribute, unknown name"}
}
