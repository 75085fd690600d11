package qos

import (
	"os"
	"testing"

	"github.com/roce-probe/roce-probe/vlan"
)

func labSnapshot(t *testing.T) *vlan.Snapshot {
	t.Helper()
	f, err := os.Open("../vlan/testdata/lab.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := vlan.DecodeSnapshot(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLinkFromSnapshotLab(t *testing.T) {
	s := labSnapshot(t)
	l, err := LinkFromSnapshot(s, "veth0.100")
	if err != nil {
		t.Fatal(err)
	}
	if l.Real != "veth0" || len(l.Tags) != 1 || l.Tags[0].ID != 100 || l.Tags[0].Netdev != "veth0.100" || EgressPCP(l.Tags[0].EgressMap, 0) != 3 || !l.IsVLAN() || l.RealNumTC != -1 {
		t.Fatalf("veth0.100: %+v", l)
	}
	// QinQ: outer 802.1ad 1000 (veth0.q1000, no map) then 802.1Q 10 (veth0.q1000.10, 0:2).
	l, err = LinkFromSnapshot(s, "veth0.q1000.10")
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Tags) != 2 || l.Tags[0].ID != 1000 || l.Tags[0].Proto != vlan.Proto8021AD || l.Tags[1].ID != 10 || EgressPCP(l.Tags[0].EgressMap, 0) != 0 || EgressPCP(l.Tags[1].EgressMap, 0) != 2 {
		t.Fatalf("veth0.q1000.10: %+v", l)
	}
	l, _ = LinkFromSnapshot(s, "veth0")
	if l.Tagged() || l.Real != "veth0" {
		t.Fatalf("veth0: %+v", l)
	}
	if _, err := LinkFromSnapshot(s, "nope"); err == nil {
		t.Error("unknown netdev accepted")
	}
}

func TestNewReportLab(t *testing.T) {
	s := labSnapshot(t)
	r, err := NewReport(s, "veth0.100", &DCB{Netdev: "veth0", Reason: "no DCB"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Real != "veth0" || r.Trust != TrustUnknown || r.PrioTC != nil || r.PFCEnabled != nil {
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
	if r.VLANs[0].Egress.String() != "0:3 2:5 4:6 6:7" || r.VLANs[3].Lower != "veth0.q1000" {
		t.Errorf("vlan details %+v", r.VLANs)
	}
	r, _ = NewReport(s, "veth0", roceDCB(true))
	if r.Trust != TrustDSCP || r.PrioTC[3] != 3 || len(r.PFCEnabled) != 1 || r.DSCPPrio[26][0] != 3 {
		t.Errorf("with DCB: %+v", r)
	}
}
