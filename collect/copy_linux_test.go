package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/vlan"
)

// writeTree writes files (path → content) below root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A copy of /sys as the documented command makes it (docs/snapshot.md):
// the mlx5-lag tree (mlx5_bond_0, port netdev enp1s0f0np0 from
// device/net) and the class/net of its host — values as the kernel's
// net-sysfs.c prints them (type 1 ARPHRD_ETHER, 772 loopback; uevent's
// DEVTYPE for bond and vlan; bonding/mode "802.3ad 4"; a slave's master/
// dereferenced to the bond's directory) — and /proc/net/vlan/bond0.100
// (vlanproc.c's format). One GID file is padded with NULs to 4096 bytes,
// as tar pads the sysfs files it copies.
func TestCollectSysfsCopy(t *testing.T) {
	root := copyTree(t, "mlx5-lag")
	gid2 := filepath.Join(root, "class/infiniband/mlx5_bond_0/ports/1/gids/2")
	b, _ := os.ReadFile(gid2)
	if err := os.WriteFile(gid2, append(b, make([]byte, 4096-len(b))...), 0o644); err != nil {
		t.Fatal(err)
	}
	writeTree(t, root, map[string]string{
		"class/net/lo/ifindex": "1\n", "class/net/lo/type": "772\n", "class/net/lo/mtu": "65536\n", "class/net/lo/operstate": "unknown\n",
		"class/net/lo/address": "00:00:00:00:00:00\n", "class/net/lo/iflink": "1\n", "class/net/lo/uevent": "INTERFACE=lo\nIFINDEX=1\n",
		"class/net/enp1s0f0np0/ifindex": "2\n", "class/net/enp1s0f0np0/iflink": "2\n", "class/net/enp1s0f0np0/type": "1\n",
		"class/net/enp1s0f0np0/mtu": "9000\n", "class/net/enp1s0f0np0/operstate": "up\n", "class/net/enp1s0f0np0/address": "0c:42:a1:00:00:20\n",
		"class/net/enp1s0f0np0/uevent": "INTERFACE=enp1s0f0np0\nIFINDEX=2\n", "class/net/enp1s0f0np0/master/ifindex": "4\n",
		"class/net/enp1s0f1np1/ifindex": "3\n", "class/net/enp1s0f1np1/iflink": "3\n", "class/net/enp1s0f1np1/type": "1\n",
		"class/net/enp1s0f1np1/mtu": "9000\n", "class/net/enp1s0f1np1/operstate": "up\n", "class/net/enp1s0f1np1/address": "0c:42:a1:00:00:20\n",
		"class/net/enp1s0f1np1/uevent": "INTERFACE=enp1s0f1np1\nIFINDEX=3\n", "class/net/enp1s0f1np1/master/ifindex": "4\n",
		"class/net/bond0/ifindex": "4\n", "class/net/bond0/iflink": "4\n", "class/net/bond0/type": "1\n", "class/net/bond0/mtu": "9000\n",
		"class/net/bond0/operstate": "up\n", "class/net/bond0/address": "0c:42:a1:00:00:20\n", "class/net/bond0/uevent": "DEVTYPE=bond\nINTERFACE=bond0\nIFINDEX=4\n",
		"class/net/bond0/bonding/mode": "802.3ad 4\n", "class/net/bond0/bonding/active_slave": "\n",
		"class/net/bond0.100/ifindex": "5\n", "class/net/bond0.100/iflink": "4\n", "class/net/bond0.100/type": "1\n", "class/net/bond0.100/mtu": "9000\n",
		"class/net/bond0.100/operstate": "up\n", "class/net/bond0.100/address": "0c:42:a1:00:00:20\n", "class/net/bond0.100/uevent": "DEVTYPE=vlan\nINTERFACE=bond0.100\nIFINDEX=5\n",
	})
	proc := t.TempDir()
	writeTree(t, proc, map[string]string{"net/vlan/bond0.100": "bond0.100  VID: 100\t REORDER_HDR: 1  dev->priv_flags: 1021\n" +
		"         total frames received            0\n" +
		"Device: bond0\nINGRESS priority mappings: 0:0  1:0  2:0  3:0  4:0  5:0  6:0 7:0\n EGRESS priority mappings: 0:3 \n"})

	s, err := Collect(Options{SysfsRoot: root, SysfsCopy: true, ProcRoot: proc})
	if err != nil {
		t.Fatal(err)
	}
	if s.Hostname != "" || s.Kernel != "" {
		t.Errorf("hostname %q kernel %q: a copy's are not this machine's", s.Hostname, s.Kernel)
	}
	want := fixture(t, "mlx5-lag")
	if len(s.RDMA.Devices) != 1 || len(s.RDMA.Devices[0].Ports[0].GIDs) != 4 || s.RDMA.Devices[0].Ports[0].GIDs[2] != want.RDMA.Devices[0].Ports[0].GIDs[2] {
		t.Fatalf("rdma %+v, want mlx5-lag.json's table", s.RDMA)
	}
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	if v.Ports[0].Netdev != "bond0" {
		t.Errorf("port netdev %q, want bond0 (the bond of enp1s0f0np0)", v.Ports[0].Netdev)
	}
	d, err := v.NS.Describe("bond0.100")
	if err != nil {
		t.Fatal(err)
	}
	if d.Real != "bond0" || len(d.Chain) != 1 || d.Chain[0].ID != 100 || d.Chain[0].EgressQoS[0] != 3 || d.Bond == nil ||
		d.Bond.Mode != "802.3ad" || strings.Join(d.Bond.Slaves, ",") != "enp1s0f0np0,enp1s0f1np1" {
		t.Errorf("bond0.100 = real %s chain %+v bond %+v", d.Real, d.Chain, d.Bond)
	}
	if l, _ := v.NS.ByName("lo"); l.Kind != vlan.KindLoopback || l.Ether {
		t.Errorf("lo = %+v", l)
	}
	srcs := map[string]bool{}
	for _, e := range s.Errors {
		srcs[e.Source] = true
		if !strings.Contains(e.Error, "not collected: read from a copy of /sys") {
			t.Errorf("error %s: %s", e.Source, e.Error)
		}
	}
	for _, src := range []string{"namespaces", "netlink rdma", "dcb enp1s0f0np0", "dcb enp1s0f1np1", "dcb bond0", "counters"} {
		if !srcs[src] {
			t.Errorf("errors %+v lack %q", s.Errors, src)
		}
	}
	if s.DCB == nil || len(s.DCB) != 0 || s.Counters != nil || s.Settings == nil {
		t.Errorf("dcb %v counters %v settings %v: want an empty DCB list, no counters, the settings read", s.DCB, s.Counters, s.Settings)
	}

	// Without the /proc copy, the VLAN device is left out and named.
	s, err = Collect(Options{SysfsRoot: root, SysfsCopy: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Namespaces[0].ByName("bond0.100"); ok {
		t.Errorf("bond0.100 read without its VLAN ID")
	}
	found := false
	for _, e := range s.Errors {
		found = found || (e.Source == "link bond0.100" && strings.Contains(e.Error, "--proc"))
	}
	if !found {
		t.Errorf("errors %+v, want link bond0.100 naming --proc", s.Errors)
	}
}
