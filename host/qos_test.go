package host

import (
	"errors"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// A RoCE LAG port's reports: the bond (it has no DCB: bond0 in the
// fixture answers RTM_GETDCB with EOPNOTSUPP), then each slave with its own
// DCB and SlaveOf naming the bond; every report names the device and
// port asked for.
func TestViewQoSReportsLAG(t *testing.T) {
	v, err := fixture(t, "mlx5-lag-differ").View("")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := v.QoSReports("mlx5_bond_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ netdev, slaveOf string }{{"bond0", ""}, {"enp1s0f0np0", "bond0"}, {"enp1s0f1np1", "bond0"}}
	if len(rs) != len(want) {
		t.Fatalf("%d reports, want %d: %+v", len(rs), len(want), rs)
	}
	for i, w := range want {
		r := rs[i]
		if r.Netdev != w.netdev || r.SlaveOf != w.slaveOf || r.Device != "mlx5_bond_0" || r.Port != 1 || r.Driver == nil || r.Driver.Driver != "mlx5" {
			t.Errorf("report %d: netdev %s slave of %q device %s port %d driver %v, want %s of %q on mlx5_bond_0 port 1 (mlx5)",
				i, r.Netdev, r.SlaveOf, r.Device, r.Port, r.Driver, w.netdev, w.slaveOf)
		}
	}
	if rs[0].DCB == nil || rs[0].DCB.Supported {
		t.Errorf("bond0's DCB: %+v, want read and unsupported", rs[0].DCB)
	}
	// The fixture: PFC on priority 3 on the first slave, off on the second.
	if len(rs[1].PFCEnabled) != 1 || rs[1].PFCEnabled[0] != 3 || len(rs[2].PFCEnabled) != 0 {
		t.Errorf("slaves' PFC: %v, %v; want [3], []", rs[1].PFCEnabled, rs[2].PFCEnabled)
	}
	if _, err := v.QoSReports("mlx5_bond_0", 2); !errors.Is(err, ErrNoDevice) {
		t.Errorf("port 2: %v, want ErrNoDevice", err)
	}
}

// A netdev whose DCB read failed reports the collector's error, found by
// DCBSource in the netdev's namespace; one never read says so.
func TestSnapshotQoSReportsDCBError(t *testing.T) {
	if got := DCBSource("", "eth0"); got != "dcb eth0" {
		t.Errorf("DCBSource(\"\", eth0) = %q", got)
	}
	if got := DCBSource("blue", "eth0"); got != "dcb blue/eth0" {
		t.Errorf("DCBSource(blue, eth0) = %q", got)
	}
	s := fixture(t, "mlx5")
	kept := []DCB{}
	for _, d := range s.DCB {
		if d.Netdev != "enp1s0f0" {
			kept = append(kept, d)
		}
	}
	s.DCB = kept
	s.Errors = []SourceError{{Source: "dcb other/enp1s0f0", Error: "wrong namespace"}}
	rs, err := s.QoSReports("", "enp1s0f0.100")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Real != "enp1s0f0" || rs[0].DCB != nil || rs[0].DCBError == nil || *rs[0].DCBError != "no DCB state was recorded for enp1s0f0" {
		t.Errorf("unread: %+v", rs)
	}
	s.Errors = append(s.Errors, SourceError{Source: "dcb enp1s0f0", Error: "RTM_GETDCB: permission denied"})
	rs, err = s.QoSReports("", "enp1s0f0.100")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].DCBError == nil || *rs[0].DCBError != "RTM_GETDCB: permission denied" {
		t.Errorf("failed read: %+v", rs)
	}
	if _, err := s.QoSReports("", "nosuch0"); !errors.Is(err, vlan.ErrNoLink) {
		t.Errorf("unknown netdev: %v, want vlan.ErrNoLink", err)
	}
	s.DCB = nil
	var m *MissingError
	if _, err := s.QoSReports("", "enp1s0f0"); !errors.As(err, &m) || m.Section != "dcb" {
		t.Errorf("no dcb section: %v, want MissingError{dcb}", err)
	}
}

// Diff compares a RoCE port's table with the kernel's rebuild (the
// rxe-churned fixture: 10.0.0.5 at 14 is an address no netdev has any
// more); it compares nothing for an InfiniBand port (no netdev explains
// its GIDs), so Stale marks none of its entries, nor for a predicted view.
func TestViewDiff(t *testing.T) {
	v, err := fixture(t, "rxe-churned").View("")
	if err != nil {
		t.Fatal(err)
	}
	p := v.Ports[0]
	changes, ok, err := v.Diff(p)
	if !ok || err != nil {
		t.Fatalf("Diff: compared %v, err %v", ok, err)
	}
	stale := false
	for _, c := range changes {
		if c.Kind == gid.Stale && c.ActualIndex == 14 {
			stale = true
		}
	}
	if !stale {
		t.Errorf("Diff lacks index 14 stale: %+v", changes)
	}
	if s := v.Stale(p); s[14] == "" {
		t.Errorf("Stale: %v, want index 14", s)
	}
	p.LinkLayer = "InfiniBand"
	if changes, ok, err := v.Diff(p); ok || err != nil || changes != nil {
		t.Errorf("InfiniBand port: Diff %v %v %v, want nothing compared", changes, ok, err)
	}
	if s := v.Stale(p); s != nil {
		t.Errorf("InfiniBand port: Stale %v, want nil", s)
	}
	pv, err := fixture(t, "rxe").View("")
	if err != nil {
		t.Fatal(err)
	}
	pv.Predicted = true
	if _, ok, _ := pv.Diff(pv.Ports[0]); ok {
		t.Error("a predicted view compares its own prediction")
	}
	// A match is an empty list, not nil (gids -o json: "diff": []).
	fresh, _ := fixture(t, "rxe").View("")
	if changes, ok, err := fresh.Diff(fresh.Ports[0]); !ok || err != nil || changes == nil || len(changes) != 0 {
		t.Errorf("rxe (as the kernel built it): Diff %v %v %v, want [] compared", changes, ok, err)
	}
}
