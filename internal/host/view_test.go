package host

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

func view(t *testing.T, name string) *View {
	t.Helper()
	v, err := fixture(t, name).View("")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestViewPortErrors(t *testing.T) {
	v := view(t, "rxe")
	if v.Predicted || len(v.Ports) != 1 {
		t.Fatalf("rxe view: predicted %v, %d ports", v.Predicted, len(v.Ports))
	}
	if _, err := v.Port("rxe9", 1); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "want one of rxe0") {
		t.Errorf("Port(rxe9) = %v", err)
	}
	if _, err := v.Port("rxe0", 2); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "rxe0 has no port 2: want one of 1") {
		t.Errorf("Port(rxe0, 2) = %v", err)
	}
	if _, err := fixture(t, "rxe").View("blue"); !errors.Is(err, ErrNoNetns) || !strings.Contains(err.Error(), "only the collector's own namespace") {
		t.Errorf("View(blue) = %v", err)
	}
}

// The source of a flow: an empty slot, an entry the kernel hides (another
// namespace) and an entry whose netdev is not in the namespace are errors
// naming the index, never an untagged entry.
func TestSourceErrors(t *testing.T) {
	v := view(t, "rxe")
	if _, err := v.Source("rxe0", 1, 13); !errors.Is(err, ErrEmptySlot) || !strings.Contains(err.Error(), "GID index 13") {
		t.Errorf("empty slot: %v", err)
	}
	if _, err := v.Source("rxe0", 1, 16); err == nil || !strings.Contains(err.Error(), "0..15") {
		t.Errorf("index beyond the table: %v", err)
	}
	churned := view(t, "rxe-churned")
	if _, err := churned.Source("rxe0", 1, 5); !errors.Is(err, ErrNetdevAbsent) || !strings.Contains(err.Error(), "another network namespace") {
		t.Errorf("hidden netdev: %v", err)
	}
	// The namespace without veth0.100 (a container that does not have the
	// host's VLAN device): GID 3 exists, its netdev does not.
	s := fixture(t, "rxe")
	ns := s.Namespaces[0]
	var links []vlan.Link
	for _, l := range ns.Links {
		if l.Name != "veth0.100" {
			links = append(links, l)
		}
	}
	ns.Links = links
	ns.Freeze()
	v2, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v2.Source("rxe0", 1, 3); !errors.Is(err, ErrNetdevAbsent) || !strings.Contains(err.Error(), "veth0.100 is not in this network namespace") {
		t.Errorf("netdev absent from the namespace: %v", err)
	}
	_, err = v2.ResolveAH(AHRequest{Device: "rxe0", Attr: ah.Attr{IsGlobal: true, GRH: ah.GlobalRoute{DGID: gid.MustParse("10.0.100.2"), SGIDIndex: 3, HopLimit: 64}}})
	if !errors.Is(err, ErrNetdevAbsent) {
		t.Errorf("ResolveAH with an absent netdev: %v, want ErrNetdevAbsent", err)
	}
}

// The QinQ entry of the lab topology (802.1Q 10 on 802.1ad 1000 on
// veth0; egress-qos-map 0:2 on the inner device only). rxe sends with skb
// priority 0 and each VLAN device maps it through its own egress map
// (vlan_dev_get_egress_qos_mask), so the inner tag carries PCP 2 and the
// outer one PCP 0: vlan and pcp are the outer tag's, 1000 and 0.
func TestResolveAHQinQOutermost(t *testing.T) {
	v := view(t, "rxe")
	r, err := v.ResolveAH(AHRequest{Device: "rxe0", Attr: ah.Attr{IsGlobal: true, GRH: ah.GlobalRoute{DGID: gid.MustParse("10.10.10.2"), SGIDIndex: 10, HopLimit: 64}}})
	var nerr *ah.NeighborError
	if err != nil && !errors.As(err, &nerr) {
		t.Fatal(err)
	}
	w := r.Wire
	if w.VLAN == nil || *w.VLAN != 1000 || w.PCP == nil || *w.PCP != 0 || len(w.VLANChain) != 2 {
		t.Fatalf("wire vlan %v pcp %v chain %v, want outer 1000 pcp 0", w.VLAN, w.PCP, w.VLANChain)
	}
	in := w.VLANChain[1]
	if in.ID != 10 || in.TPID != vlan.TPID8021Q || in.PCP == nil || *in.PCP != 2 || in.Netdev != "veth0.q1000.10" || w.VLANChain[0].TPID != vlan.TPID8021AD {
		t.Errorf("chain = %v", w.VLANChain)
	}
	if r.Source == nil || r.Source.Driver.Driver != qos.DriverRXE || r.Driver != qos.DriverRXE {
		t.Errorf("driver = %+v", r.Source)
	}
	if nerr == nil {
		t.Errorf("the fixture has no neighbour for 10.10.10.2: want a NeighborError")
	}
}

// --gid-index auto on the fixture picks what select picks.
func TestResolveAHAuto(t *testing.T) {
	v := view(t, "rxe")
	r, _ := v.ResolveAH(AHRequest{Device: "rxe0", AutoIndex: true, Attr: ah.Attr{IsGlobal: true, GRH: ah.GlobalRoute{DGID: gid.MustParse("10.0.200.2"), HopLimit: 64}}})
	if r == nil || r.Selection == nil || r.Selection.Entry.Index != 6 || r.Resolution == nil || r.Wire.Netdev != "veth0.200" {
		t.Fatalf("auto = %+v", r)
	}
	if r.Route == nil || r.Route.Src != netip.MustParseAddr("10.0.200.1") {
		t.Errorf("route = %+v", r.Route)
	}
}

// A host without RDMA devices: every analysis uses the tables Soft-RoCE
// would build, and says so.
func TestViewPredicted(t *testing.T) {
	s := fixture(t, "rxe")
	s.RDMA.Devices = nil
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	if !v.Predicted || len(v.Ports) != 1 || v.Ports[0].Device != "rxe_veth0" {
		t.Fatalf("predicted view: %v %d ports", v.Predicted, len(v.Ports))
	}
	src, err := v.Source("rxe_veth0", 1, 3)
	if err != nil || src.Entry.Netdev != "veth0.100" || src.Driver.Driver != qos.DriverRXE {
		t.Errorf("predicted source = %+v, %v", src, err)
	}
	if _, err := v.Port("rxe0", 1); err == nil || !strings.Contains(err.Error(), "predicted Soft-RoCE devices are rxe_veth0") {
		t.Errorf("Port(rxe0) on a predicted view = %v", err)
	}
}

// DCB of the real netdev below a VLAN device.
func TestViewDCB(t *testing.T) {
	v := view(t, "mlx5-dscp")
	d := v.DCB("enp1s0f0.100")
	if d == nil || d.Netdev != "enp1s0f0" || d.Trust() != qos.TrustDSCP {
		t.Errorf("DCB(enp1s0f0.100) = %+v", d)
	}
	if d := view(t, "mlx5").DCB("enp1s0f0"); d != nil {
		t.Errorf("mlx5 fixture without DCB: %+v", d)
	}
}
