package host

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
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
	// A flow from it is checked as a predicted device's, for every
	// caller of View.Flow (check, the agent, a library), not only the CLI.
	if src != nil {
		r, err := qos.Check(v.Flow(src, FlowParams{SL: 3, TrafficClass: 106}))
		if err != nil || !r.Predicted {
			t.Errorf("check of a predicted source: predicted %v, %v", r.Predicted, err)
		}
		rxe0, _ := view(t, "rxe").Source("rxe0", 1, 3)
		if r, err := qos.Check(view(t, "rxe").Flow(rxe0, FlowParams{})); err != nil || r.Predicted {
			t.Errorf("check of rxe0 (a real device): predicted %v, %v", r.Predicted, err)
		}
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

// An AHResolver resolves what ResolveAH resolves, destination by
// destination, and what does not depend on the destination is the same
// in every result (its doc's promise, which the agent relies on to work
// out a flow's tags and markings once for all its peers).
func TestAHResolverAsResolveAH(t *testing.T) {
	dsts := []string{"10.0.0.2", "10.0.100.2", "10.0.200.2", "10.10.10.2", "192.0.2.9", "10.0.0.1",
		"fd00::2", "fd00:100::2", "fe80::2", "ff02::1", "224.0.0.5"}
	for _, name := range []string{"rxe", "mlx5"} {
		v := view(t, name)
		resolved, compared := 0, 0 // results that resolved; of them, those compared with an earlier one
		for _, p := range v.Ports {
			for _, e := range p.Entries {
				if e.Empty {
					continue
				}
				for _, path := range []qos.Path{"", qos.PathConnectedQP} {
					req := AHRequest{Device: p.Device, Path: path, Attr: ah.Attr{IsGlobal: true, PortNum: uint8(p.Port), SL: 3,
						GRH: ah.GlobalRoute{SGIDIndex: uint8(e.Index), HopLimit: 64, TrafficClass: 106, FlowLabel: 0x12345}}}
					r, err := v.NewAHResolver(req)
					if err != nil {
						if _, err2 := v.ResolveAH(req); err2 == nil || err2.Error() != err.Error() {
							t.Errorf("%s %s index %d: NewAHResolver: %v; ResolveAH: %v", name, p.Device, e.Index, err, err2)
						}
						continue
					}
					var first *ah.Wire
					for _, d := range dsts {
						what := fmt.Sprintf("%s %s index %d path %q to %s", name, p.Device, e.Index, path, d)
						req.Attr.GRH.DGID = gid.MustParse(d)
						got, gerr := r.Resolve(req.Attr.GRH.DGID)
						want, werr := v.ResolveAH(req)
						if fmt.Sprint(gerr) != fmt.Sprint(werr) {
							t.Errorf("%s: error %v, ResolveAH's %v", what, gerr, werr)
						}
						if !reflect.DeepEqual(got, want) {
							t.Errorf("%s:\n got  %+v\n want %+v", what, got, want)
						}
						if got.Resolution == nil {
							continue
						}
						resolved++
						w := got.Wire
						if first == nil {
							first = &w
							continue
						}
						compared++
						if w.Netdev != first.Netdev || w.SMAC.String() != first.SMAC.String() || w.Src != first.Src ||
							!reflect.DeepEqual(w.VLANChain, first.VLANChain) || !reflect.DeepEqual(w.TOS, first.TOS) ||
							!reflect.DeepEqual(w.DSCP, first.DSCP) || !reflect.DeepEqual(w.ECN, first.ECN) ||
							!reflect.DeepEqual(w.FlowLabel, first.FlowLabel) || !reflect.DeepEqual(w.UDPSport, first.UDPSport) ||
							w.UDPSportFrom != first.UDPSportFrom {
							t.Errorf("%s: the source's part of the wire changed with the destination:\n %+v\n %+v", what, w, *first)
						}
					}
				}
			}
		}
		if resolved == 0 || compared == 0 {
			t.Errorf("%s: %d results resolved, %d compared with an earlier one: the test compared nothing", name, resolved, compared)
		}
	}
}
