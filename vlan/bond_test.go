package vlan

import (
	"reflect"
	"testing"
)

// bondNS is a namespace with bond0 over eth0 and eth1 (a VLAN device on
// the bond) in mode, active slave active (ifindex; 0 none).
func bondNS(mode string, active int) *Namespace {
	n := &Namespace{Links: []Link{
		{Name: "eth1", Index: 3, Kind: KindPhysical, Ether: true, MasterIndex: 4},
		{Name: "eth0", Index: 2, Kind: KindPhysical, Ether: true, MasterIndex: 4},
		{Name: "bond0", Index: 4, Kind: KindBond, Ether: true, BondMode: mode, ActiveSlave: active},
		{Name: "bond0.100", Index: 5, Kind: KindVLAN, Ether: true, ParentIndex: 4, Tag: &Tag{ID: 100, TPID: TPID8021Q}},
		{Name: "eth9", Index: 6, Kind: KindPhysical, Ether: true},
	}}
	n.Freeze()
	return n
}

// A stack ending in a bond names the slaves its traffic leaves by: every
// slave when the bond hashes (802.3ad, balance-xor), the active one of an
// active-backup bond with the others as standby; a snapshot without the
// mode counts an active slave as active-backup's.
func TestDescribeBond(t *testing.T) {
	for _, c := range []struct {
		mode           string
		active         int
		slaves, backup []string
	}{
		{"802.3ad", 0, []string{"eth0", "eth1"}, []string{}},
		{"balance-xor", 0, []string{"eth0", "eth1"}, []string{}},
		{"active-backup", 3, []string{"eth1"}, []string{"eth0"}},
		{"active-backup", 0, []string{}, []string{"eth0", "eth1"}}, // no slave up
		{"", 2, []string{"eth0"}, []string{"eth1"}},
		{"", 0, []string{"eth0", "eth1"}, []string{}},
	} {
		d, err := bondNS(c.mode, c.active).Describe("bond0.100")
		if err != nil {
			t.Fatal(err)
		}
		want := &Bond{Name: "bond0", Mode: c.mode, Slaves: c.slaves, Backup: c.backup}
		if d.Real != "bond0" || !reflect.DeepEqual(d.Bond, want) {
			t.Errorf("mode %q active %d: real %s bond %+v, want %+v", c.mode, c.active, d.Real, d.Bond, want)
		}
	}
	d, _ := bondNS("802.3ad", 0).Describe("eth9")
	if d.Bond != nil {
		t.Errorf("eth9 (no bond) has Bond %+v", d.Bond)
	}
}

func TestBondOf(t *testing.T) {
	n := bondNS("802.3ad", 0)
	for name, want := range map[string]string{"eth0": "bond0", "eth1": "bond0", "bond0": "", "eth9": "", "nosuch": ""} {
		b, ok := n.BondOf(name)
		got := ""
		if ok {
			got = b.Name
		}
		if got != want {
			t.Errorf("BondOf(%s) = %q, want %q", name, got, want)
		}
	}
}

// Members is every slave, carrying ones first: an active-backup bond's
// standby slaves too (they carry the traffic after a failover), and a
// fresh slice (appending to it leaves the Bond alone).
func TestBondMembers(t *testing.T) {
	d, err := bondNS("active-backup", 3).Describe("bond0.100")
	if err != nil {
		t.Fatal(err)
	}
	m := d.Bond.Members()
	if want := []string{"eth1", "eth0"}; !reflect.DeepEqual(m, want) {
		t.Errorf("Members() = %v, want %v", m, want)
	}
	m[0] = "changed"
	if d.Bond.Slaves[0] != "eth1" {
		t.Errorf("Members shares its slice with Slaves: %v", d.Bond.Slaves)
	}
	d, _ = bondNS("802.3ad", 0).Describe("bond0.100")
	if m, want := d.Bond.Members(), []string{"eth0", "eth1"}; !reflect.DeepEqual(m, want) {
		t.Errorf("802.3ad Members() = %v, want %v", m, want)
	}
}
