package qos

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSysfs builds /sys/class/infiniband/<dev> the way the kernel does:
// hardware devices have device -> PCI function with driver -> the bound
// driver; rxe has no device link but a parent attribute.
func fakeSysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p string) string {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		return full
	}
	hw := func(dev, pci, driver string) {
		mk("bus/pci/drivers/" + driver)
		pciDir := mk("devices/pci0000:00/" + pci)
		if err := os.Symlink(filepath.Join(root, "bus/pci/drivers", driver), filepath.Join(pciDir, "driver")); err != nil {
			t.Fatal(err)
		}
		ib := mk("class/infiniband/" + dev)
		if err := os.Symlink(pciDir, filepath.Join(ib, "device")); err != nil {
			t.Fatal(err)
		}
	}
	hw("mlx5_0", "0000:03:00.0", "mlx5_core")
	hw("bnxt_re0", "0000:04:00.0", "bnxt_en")
	hw("irdma0", "0000:05:00.0", "ice")
	hw("hns_0", "0000:7d:00.0", "hns3")
	hw("erdma_0", "0000:06:00.0", "erdma")
	hw("qedr0", "0000:07:00.0", "qede")
	hw("renamed", "0000:08:00.0", "mlx5_core")
	rxe := mk("class/infiniband/rxe0")
	if err := os.WriteFile(filepath.Join(rxe, "parent"), []byte("veth0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mk("class/infiniband/mlx5_9")   // no device link, no parent: only the name
	mk("class/infiniband/mystery0") // nothing at all
	return root
}

func TestDetectDriver(t *testing.T) {
	root := fakeSysfs(t)
	for _, c := range []struct {
		dev    string
		driver Driver
		kernel string
	}{
		{"mlx5_0", DriverMLX5, "mlx5_core"},
		{"renamed", DriverMLX5, "mlx5_core"},
		{"bnxt_re0", DriverBNXTRE, "bnxt_en"},
		{"irdma0", DriverIRDMA, "ice"},
		{"hns_0", DriverHNS, "hns3"},
		{"erdma_0", DriverERDMA, "erdma"},
		{"qedr0", Driver("qede"), "qede"},
		{"rxe0", DriverRXE, "rdma_rxe"},
		{"mlx5_9", DriverMLX5, ""},
		{"mystery0", DriverUnknown, ""},
	} {
		info, err := DetectDriver(root, c.dev)
		if err != nil {
			t.Errorf("%s: %v", c.dev, err)
			continue
		}
		if info.Driver != c.driver || info.Kernel != c.kernel || info.Evidence == "" {
			t.Errorf("%s: %+v, want driver %q kernel %q with evidence", c.dev, info, c.driver, c.kernel)
		}
	}
	if _, err := DetectDriver(root, "nope0"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("missing device: %v, want ErrNoDevice", err)
	}
	for _, bad := range []string{"", "..", "a/b"} {
		if _, err := DetectDriver(root, bad); err == nil {
			t.Errorf("DetectDriver(%q) accepted", bad)
		}
	}
}

func TestParseDriver(t *testing.T) {
	// The names are the ones the docs and `ah --help` promise (docs/ah.md),
	// which are the kernel's drivers/infiniband/hw/<dir> and sw/rxe names.
	for _, name := range []string{"rxe", "mlx5", "irdma", "bnxt_re", "hns", "erdma"} {
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
