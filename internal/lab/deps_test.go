//go:build linux

package lab

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// labOnly are the Debian packages whose programs only the lab runs:
// qemu-system-x86_64 boots its kernels, busybox and cpio make their
// initramfs, kmod loads rdma_rxe and 8021q, rdma-core (rdma link add), the
// verbs tools, perftest and rdmacm-utils run its traffic, tcpdump captures
// it, lldpd plays a switch's LLDP. `scripts/test.sh --no-lab` must install none of them.
var labOnly = []string{"qemu-system-x86", "busybox-static", "cpio", "kmod", "xz-utils", "rdma-core",
	"ibverbs-providers", "ibverbs-utils", "perftest", "rdmacm-utils", "tcpdump", "lldpd"}

// nonLab are packages the suite without the lab runs programs of (see
// scripts/apt-packages.txt): deps.sh must install them.
var nonLab = []string{"tshark", "prometheus", "nftables", "iproute2", "ethtool", "systemd", "gcc", "libibverbs-dev", "fish", "zsh"}

// TestDepsInstallNothingLabOnly runs scripts/deps.sh (what test.sh runs
// first, with and without --no-lab) with apt-get, dpkg-query and go
// replaced by stubs that record what would be installed, on a machine
// where nothing is: it installs what the unit tests need and nothing only
// the lab needs; scripts/lab.sh's own lists still have every lab package,
// so the lab installs them when it runs.
func TestDepsInstallNothingLabOnly(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	stubs := t.TempDir()
	log := filepath.Join(stubs, "apt-get.log")
	for name, body := range map[string]string{
		"dpkg-query":             "exit 1", // nothing is installed
		"apt-get":                `echo "$@" >> ` + log,
		"debconf-set-selections": "cat >/dev/null",
		"go":                     "exit 0", // go mod download
		"sudo":                   `"$@"`,
	} {
		if err := os.WriteFile(filepath.Join(stubs, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bash, "../../scripts/deps.sh")
	cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("deps.sh: %v\n%s", err, out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var installed []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); slices.Contains(f, "install") {
			for _, w := range f[slices.Index(f, "install")+1:] {
				if !strings.HasPrefix(w, "-") {
					installed = append(installed, w)
				}
			}
		}
	}
	for _, p := range labOnly {
		if slices.Contains(installed, p) {
			t.Errorf("deps.sh installs %s, which only the lab needs (installed: %v)", p, installed)
		}
	}
	for _, p := range nonLab {
		if !slices.Contains(installed, p) {
			t.Errorf("deps.sh does not install %s (installed: %v)", p, installed)
		}
	}
	// scripts/lab.sh installs the lab's packages itself.
	sh, err := os.ReadFile("../../scripts/lab.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\nvm_packages=\(([^)]*)\)`).FindSubmatch(sh)
	if m == nil {
		t.Fatal("scripts/lab.sh: no vm_packages=(...)")
	}
	vm := strings.Fields(string(m[1]))
	for _, p := range labOnly {
		if !slices.Contains(vm, p) {
			t.Errorf("scripts/lab.sh's vm_packages lacks %s: the lab would not install it", p)
		}
	}
}
