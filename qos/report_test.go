package qos_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// loadSnapshot reads a host snapshot fixture of host/testdata and
// returns it with its view namespace. rxe.json is the host side of the lab
// topology (internal/lab/topology.go): veth0 with VLAN 100 (egress map 0:3
// 2:5 4:6 6:7), VLAN 200, and QinQ 802.1ad 1000 (veth0.q1000, no map) +
// 802.1Q 10 (veth0.q1000.10, egress map 0:2); veth0 has no DCB support.
// mlx5-dscp.json is an mlx5 port on enp1s0f0 (VLAN 100 enp1s0f0.100, a
// macvlan mv0 on it) trusting DSCP: APP dscp 26 → priority 3 and 48 → 6,
// PFC on priority 3, ETS priority 3 in TC 1, DCBX host + IEEE.
func loadSnapshot(t *testing.T, name string) (*host.Snapshot, *vlan.Namespace) {
	t.Helper()
	s, err := host.Load(filepath.Join("..", "host", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	return s, ns
}

func TestLinkFromNamespaceLab(t *testing.T) {
	_, ns := loadSnapshot(t, "rxe.json")
	l, err := qos.LinkFromNamespace(ns, "veth0.100")
	if err != nil {
		t.Fatal(err)
	}
	if l.Netdev != "veth0.100" || l.Real != "veth0" || len(l.Tags) != 1 || l.Tags[0].ID != 100 || l.Tags[0].TPID != vlan.TPID8021Q || l.Tags[0].Netdev != "veth0.100" ||
		qos.EgressPCP(l.Tags[0].EgressQoS, 0) != 3 || !l.IsVLAN() || l.RealNumTC != -1 {
		t.Fatalf("veth0.100: %+v", l)
	}
	// QinQ: outer 802.1ad 1000 (veth0.q1000, no map) then 802.1Q 10 (veth0.q1000.10, 0:2).
	l, err = qos.LinkFromNamespace(ns, "veth0.q1000.10")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tags) != 2 || l.Tags[0].ID != 1000 || l.Tags[0].TPID != vlan.TPID8021AD || l.Tags[0].Netdev != "veth0.q1000" ||
		l.Tags[1].ID != 10 || l.Tags[1].TPID != vlan.TPID8021Q || l.Tags[1].Netdev != "veth0.q1000.10" ||
		qos.EgressPCP(l.Tags[0].EgressQoS, 0) != 0 || qos.EgressPCP(l.Tags[1].EgressQoS, 0) != 2 || l.Real != "veth0" {
		t.Fatalf("veth0.q1000.10: %+v", l)
	}
	// A netdev's description carries no PCP: that is the driver's choice (Predict).
	for _, tg := range l.Tags {
		if tg.PCP != nil {
			t.Errorf("tag %s: PCP %d before any prediction", tg, *tg.PCP)
		}
	}
	l, err = qos.LinkFromNamespace(ns, "veth0")
	if err != nil || l.Tagged() || l.Real != "veth0" {
		t.Fatalf("veth0: %+v, %v", l, err)
	}
	if _, err := qos.LinkFromNamespace(ns, "nope"); !errors.Is(err, vlan.ErrNoLink) {
		t.Errorf("unknown netdev: %v, want vlan.ErrNoLink", err)
	}
}

func TestNewReportLab(t *testing.T) {
	s, ns := loadSnapshot(t, "rxe.json")
	dcb, err := s.DCBOf("", "veth0")
	if err != nil || dcb == nil || dcb.Supported {
		t.Fatalf("the fixture's DCB of veth0: %+v, %v; want one without DCB support", dcb, err)
	}
	r, err := qos.NewReport(ns, "veth0.100", dcb)
	if err != nil {
		t.Fatal(err)
	}
	if r.Real != "veth0" || r.Trust != qos.TrustUnknown || r.PrioTC != nil || r.PFCEnabled != nil || r.DCBX != nil {
		t.Fatalf("%+v", r)
	}
	names := []string{}
	for _, v := range r.VLANs {
		names = append(names, v.Netdev)
	}
	want := []string{"veth0.100", "veth0.200", "veth0.q1000", "veth0.q1000.10"}
	if len(names) != len(want) {
		t.Fatalf("vlans %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("vlans %v, want %v", names, want)
		}
	}
	if r.VLANs[0].Egress.String() != "0:3 2:5 4:6 6:7" || r.VLANs[0].TPID != vlan.TPID8021Q || r.VLANs[0].Lower != "veth0" ||
		r.VLANs[2].ID != 1000 || r.VLANs[2].TPID != vlan.TPID8021AD || r.VLANs[3].Lower != "veth0.q1000" {
		t.Errorf("vlan details %+v", r.VLANs)
	}

	// A port with DCB: the report carries trust, APP, ETS, PFC and DCBX
	// of the real device below the VLAN netdev asked for.
	s, ns = loadSnapshot(t, "mlx5-dscp.json")
	dcb, err = s.DCBOf("", "enp1s0f0")
	if err != nil || dcb == nil {
		t.Fatalf("the fixture's DCB of enp1s0f0: %v", err)
	}
	r, err = qos.NewReport(ns, "enp1s0f0.100", dcb)
	if err != nil {
		t.Fatal(err)
	}
	if r.Real != "enp1s0f0" || r.Trust != qos.TrustDSCP || r.PrioTC == nil || r.PrioTC[3] != 1 || len(r.PFCEnabled) != 1 || r.PFCEnabled[0] != 3 ||
		len(r.DSCPPrio[26]) != 1 || r.DSCPPrio[26][0] != 3 || len(r.DSCPPrio[48]) != 1 || r.DSCPPrio[48][0] != 6 {
		t.Errorf("with DCB: %+v", r)
	}
	// DCBX 9 = DCB_CAP_DCBX_HOST (0x01) | DCB_CAP_DCBX_VER_IEEE (0x08), include/uapi/linux/dcbnl.h.
	if r.DCBX == nil || *r.DCBX != "host,ieee" {
		t.Errorf("dcbx %v, want host,ieee", r.DCBX)
	}
	if len(r.VLANs) != 1 || r.VLANs[0].Netdev != "enp1s0f0.100" || r.VLANs[0].ID != 100 || r.VLANs[0].Lower != "enp1s0f0" {
		t.Errorf("vlans %+v, want enp1s0f0.100 only (mv0 is a macvlan)", r.VLANs)
	}
}
