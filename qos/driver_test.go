package qos

import (
	"fmt"
	"strings"
	"testing"
)

// The cases are what sysfs shows for each driver
// (/sys/class/infiniband/<dev>/device/driver and the parent attribute):
// hardware devices are bound, through their parent PCI function, to the
// Linux driver that registers them (mlx5_core, bnxt_en, ice, hns3, erdma,
// qede); Soft-RoCE has no device link but a parent attribute naming its
// netdev (rxe_verbs.c, parent_show). A device renamed from its default
// name is still recognised by its bound driver; only without either is
// the name's prefix used.
func TestIdentifyDriver(t *testing.T) {
	for _, c := range []struct {
		dev, bound, rxeParent string
		driver                Driver
		kernel                string
		evidence              string // a part of the evidence naming what decided
	}{
		{"mlx5_0", "mlx5_core", "", DriverMLX5, "mlx5_core", "mlx5_core"},
		{"renamed", "mlx5_core", "", DriverMLX5, "mlx5_core", "mlx5_core"},
		{"bnxt_re0", "bnxt_en", "", DriverBNXTRE, "bnxt_en", "bnxt_en"},
		{"irdma0", "ice", "", DriverIRDMA, "ice", "ice"},
		{"hns_0", "hns3", "", DriverHNS, "hns3", "hns3"},
		{"erdma_0", "erdma", "", DriverERDMA, "erdma", "erdma"},
		{"qedr0", "qede", "", Driver("qede"), "qede", "no profile"},
		// ionic_rdma's ib_device parent is the ionic PCI function.
		{"ionic_0", "ionic", "", DriverIONIC, "ionic", "ionic"},
		{"ionic_1", "", "", DriverIONIC, "", "only the device name"},
		// hiroce3 (openEuler) registers on the hinic3 PCI function.
		{"renamed", "hinic3", "", DriverHIROCE3, "hinic3", "hinic3"},
		{"rxe0", "", "veth0", DriverRXE, "rdma_rxe", "veth0"},
		// The bound driver decides before the parent attribute.
		{"mlx5_1", "mlx5_core", "eth0", DriverMLX5, "mlx5_core", "mlx5_core"},
		{"mlx5_9", "", "", DriverMLX5, "", "only the device name"},
		{"mystery0", "", "", DriverUnknown, "", "unknown name"},
	} {
		info := IdentifyDriver(c.dev, c.bound, c.rxeParent)
		if info.Driver != c.driver || info.Kernel != c.kernel || !strings.Contains(info.Evidence, c.evidence) {
			t.Errorf("IdentifyDriver(%q, %q, %q) = %+v, want driver %q kernel %q with evidence naming %q", c.dev, c.bound, c.rxeParent, info, c.driver, c.kernel, c.evidence)
		}
	}
}

func TestParseDriver(t *testing.T) {
	// The names are the ones the docs and `ah --help` promise (docs/ah.md),
	// which are the kernel's drivers/infiniband/hw/<dir> and sw/rxe names.
	for _, name := range []string{"rxe", "mlx5", "irdma", "bnxt_re", "hns", "erdma", "ionic", "hiroce3"} {
		d, err := ParseDriver(name)
		if err != nil || string(d) != name {
			t.Errorf("ParseDriver(%q) = %q, %v; want %q", name, d, err, name)
		}
	}
	for _, bad := range []string{"", "mxl5", "MLX5", "mlx4", "rxe0"} {
		_, err := ParseDriver(bad)
		if err == nil {
			t.Errorf("ParseDriver(%q) accepted a driver without a profile", bad)
			continue
		}
		if want := fmt.Sprintf("%q", bad); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "erdma") {
			t.Errorf("ParseDriver(%q): error %q does not name the value and the allowed drivers", bad, err)
		}
	}
}

// No message names an empty driver: the unknown driver prints as
// "unknown" wherever a Driver is formatted.
func TestDriverString(t *testing.T) {
	if got := fmt.Sprintf("driver %s", DriverUnknown); got != "driver unknown" {
		t.Errorf("DriverUnknown formats as %q", got)
	}
	if got := fmt.Sprintf("%s/%v", DriverMLX5, Driver("qede")); got != "mlx5/qede" {
		t.Errorf("named drivers format as %q", got)
	}
	w := Predict(DriverUnknown, WireInput{Path: PathUserAH})
	for _, s := range w.Steps {
		if strings.Contains(s.Why+s.Value, "driver  ") || s.Value == "" {
			t.Errorf("step %+v names an empty driver", s)
		}
	}
}
