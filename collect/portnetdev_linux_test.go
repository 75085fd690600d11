package collect

import (
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
)

// TestApplyPortNetdevs: the shared-mode case the lab's routed fabric shows
// (every rxe device visible in every host namespace, each on its own
// namespace's "eth0"). RDMA netlink names rxe1's netdev in h1's namespace
// and reports rxe2's port without one (fill_port_info,
// drivers/infiniband/core/nldev.c: the netdev only when it is in the
// caller's namespace); sysfs said "eth0" for both (rxe's parent file,
// gid_attrs/ndevs).
func TestApplyPortNetdevs(t *testing.T) {
	slot := func(i int, nd string) host.Slot {
		return host.Slot{Index: i, GID: gid.MustParse("fe80::1"), Type: gid.TypeRoCEv2, Netdev: nd}
	}
	devs := []host.Device{
		{Name: "rxe1", Ports: []host.Port{{Port: 1, LinkLayer: "Ethernet", Netdev: "eth0", GIDs: []host.Slot{slot(0, "eth0")}}}},
		// A pod's view of a host NIC: the PF is in the host's namespace,
		// the pod's macvlan net1 on it is here.
		{Name: "mlx5_0", Ports: []host.Port{{Port: 1, LinkLayer: "Ethernet", Netdev: "eth0", GIDs: []host.Slot{slot(0, "eth0"), slot(2, "net1")}}}},
		{Name: "rxe2", Ports: []host.Port{{Port: 1, LinkLayer: "Ethernet", Netdev: "eth0", GIDs: []host.Slot{slot(0, "eth0"), slot(1, "eth0")}}}},
		// InfiniBand: netlink has no netdev for it; sysfs's IPoIB netdev stays.
		{Name: "mlx5_1", Ports: []host.Port{{Port: 1, LinkLayer: "InfiniBand", Netdev: "ib0"}}},
		// RDMA netlink said nothing about this one (went away meanwhile).
		{Name: "rxe9", Ports: []host.Port{{Port: 1, LinkLayer: "Ethernet", Netdev: "eth9", GIDs: []host.Slot{slot(0, "eth9")}}}},
	}
	applyPortNetdevs(devs, map[portKey]string{
		{"rxe1", 1}: "eth0", {"mlx5_0", 1}: "", {"rxe2", 1}: "", {"mlx5_1", 1}: "",
	})
	want := map[string]struct {
		port  string
		slots []string
	}{
		"rxe1":   {"eth0", []string{"eth0"}},
		"mlx5_0": {"", []string{"", "net1"}},
		"rxe2":   {"", []string{"", ""}},
		"mlx5_1": {"ib0", nil},
		"rxe9":   {"eth9", []string{"eth9"}},
	}
	for _, d := range devs {
		w := want[d.Name]
		p := d.Ports[0]
		if p.Netdev != w.port {
			t.Errorf("%s port netdev = %q, want %q", d.Name, p.Netdev, w.port)
		}
		for i, s := range p.GIDs {
			if s.Netdev != w.slots[i] {
				t.Errorf("%s GID index %d netdev = %q, want %q", d.Name, s.Index, s.Netdev, w.slots[i])
			}
		}
	}
}
