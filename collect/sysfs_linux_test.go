package collect

import (
	"encoding/json"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// Facts for these tests come from testdata/README.md, whose tables were
// written by hand from drivers/infiniband/core/roce_gid_mgmt.c, cache.c
// and sysfs.c (Linux 6.1); that README names the functions.

// readFixture reads the sysfs tree testdata/<dir>/sys with the collector's
// reader and maps its ports to the namespace of the snapshot fixture of the
// same name, as every command does.
func readFixture(t testing.TB, dir string) []gid.Port {
	t.Helper()
	devs, err := readAllOK(&sysfs{Root: filepath.Join("testdata", dir, "sys")})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := fixture(t, dir).Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	ports, err := (&host.Snapshot{RDMA: &host.RDMA{Devices: devs}}).Ports(ns)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// The snapshot fixtures hold exactly what the collector's reader reads from
// the sysfs trees beside them: the two forms of each fixture cannot drift.
func TestFixturesMatchSysfsTrees(t *testing.T) {
	for _, c := range []struct{ snap, tree string }{
		{"rxe", "rxe"}, {"rxe-churned", "rxe-churned"}, {"mlx5", "mlx5"}, {"mlx5-dscp", "mlx5"}, {"mlx5-pcp", "mlx5"}, {"mlx5-lag", "mlx5-lag"},
	} {
		devs, err := readAllOK(&sysfs{Root: filepath.Join("testdata", c.tree, "sys")})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(&host.RDMA{Devices: devs})
		want, _ := json.Marshal(fixture(t, c.snap).RDMA)
		if string(got) != string(want) {
			t.Errorf("%s.json's rdma section differs from reading testdata/%s/sys:\n%s\n%s", c.snap, c.tree, got, want)
		}
	}
}

func TestReadMlx5(t *testing.T) {
	ports := readFixture(t, "mlx5")
	if len(ports) != 2 || ports[0].Device != "mlx5_0" || ports[1].Device != "mlx5_0" {
		t.Fatalf("ports = %+v, want mlx5_0 with 2 ports", ports)
	}
	p := ports[0]
	if p.State != "ACTIVE" || p.PhysState != "LinkUp" || p.LinkLayer != "Ethernet" || p.Netdev != "enp1s0f0" {
		t.Errorf("port 1 = state %q phys %q ll %q netdev %q", p.State, p.PhysState, p.LinkLayer, p.Netdev)
	}
	if p.ActiveMTU != 4096 { // netdev MTU 9000 - 96 ≥ 4096
		t.Errorf("active MTU = %d, want 4096", p.ActiveMTU)
	}
	if len(p.Types) != 2 || p.Types[0] != gid.TypeRoCEv1 || p.Types[1] != gid.TypeRoCEv2 {
		t.Errorf("types = %v, want [RoCE v1 RoCE v2]", p.Types)
	}
	if len(p.Entries) != 16 {
		t.Fatalf("%d entries, want 16", len(p.Entries))
	}
	type want struct {
		gid     string
		typ     gid.Type
		kind    gid.AddrKind
		ip      string
		netdev  string
		vlan    int // -1 untagged
		def     bool
		realdev string
	}
	wants := map[int]want{
		0:  {"fe80::e42:a1ff:fe00:10", gid.TypeRoCEv1, gid.KindLinkLocal, "fe80::e42:a1ff:fe00:10", "enp1s0f0", -1, true, "enp1s0f0"},
		1:  {"fe80::e42:a1ff:fe00:10", gid.TypeRoCEv2, gid.KindLinkLocal, "fe80::e42:a1ff:fe00:10", "enp1s0f0", -1, true, "enp1s0f0"},
		3:  {"::ffff:192.168.1.10", gid.TypeRoCEv2, gid.KindIPv4, "192.168.1.10", "enp1s0f0", -1, false, "enp1s0f0"},
		4:  {"::ffff:10.100.0.10", gid.TypeRoCEv1, gid.KindIPv4, "10.100.0.10", "enp1s0f0.100", 100, false, "enp1s0f0"},
		7:  {"fe80::e42:a1ff:fe00:10", gid.TypeRoCEv2, gid.KindLinkLocal, "fe80::e42:a1ff:fe00:10", "enp1s0f0.100", 100, false, "enp1s0f0"},
		11: {"fd00:100::20", gid.TypeRoCEv2, gid.KindULA, "fd00:100::20", "mv0", 100, false, "enp1s0f0"},
	}
	for i, w := range wants {
		e := p.Entries[i]
		if e.Index != i || e.Device != "mlx5_0" || e.Port != 1 || e.Empty {
			t.Errorf("entry %d: identity %s/%d/%d empty=%v", i, e.Device, e.Port, e.Index, e.Empty)
		}
		if e.GID != gid.MustParse(w.gid) || e.Type != w.typ || e.Kind != w.kind || e.IP.String() != w.ip ||
			e.Netdev != w.netdev || e.Default != w.def || e.RealNetdev != w.realdev {
			t.Errorf("entry %d = %s %s %s %s %s default=%v real=%s, want %+v", i, e.GID, e.Type, e.Kind, e.IP, e.Netdev, e.Default, e.RealNetdev, w)
		}
		if (w.vlan < 0) != (e.VLAN == nil) || (e.VLAN != nil && int(*e.VLAN) != w.vlan) {
			t.Errorf("entry %d: vlan = %v, want %d", i, e.VLAN, w.vlan)
		}
		if e.Netns != gid.NetnsCurrent {
			t.Errorf("entry %d: netns = %q, want %q", i, e.Netns, gid.NetnsCurrent)
		}
	}
	// The macvlan's MAC is the source MAC of its entries.
	if got := p.Entries[8].MAC.String(); got != "02:00:00:aa:00:01" {
		t.Errorf("entry 8 MAC = %s, want the macvlan's 02:00:00:aa:00:01", got)
	}
	for _, i := range []int{14, 15} {
		e := p.Entries[i]
		if !e.Empty || e.Netdev != "" || e.Default || e.IP.IsValid() || e.Kind != gid.KindNone {
			t.Errorf("entry %d = %+v, want an empty slot", i, e)
		}
	}
	p2 := ports[1]
	if p2.State != "DOWN" || p2.Netdev != "enp1s0f1" {
		t.Errorf("port 2 = state %q netdev %q, want DOWN on enp1s0f1 (dev_port 1)", p2.State, p2.Netdev)
	}
}

func TestReadRxeQinQAndEmpty(t *testing.T) {
	p := readFixture(t, "rxe")[0]
	if p.Netdev != "veth0" || len(p.Types) != 1 || p.Types[0] != gid.TypeRoCEv2 || p.ActiveMTU != 1024 {
		t.Fatalf("port = netdev %q types %v mtu %d, want veth0 [RoCE v2] 1024", p.Netdev, p.Types, p.ActiveMTU)
	}
	if !p.Entries[0].Default || p.Entries[1].Default {
		t.Errorf("default flags: 0=%v 1=%v, want only index 0 (rxe reserves one slot)", p.Entries[0].Default, p.Entries[1].Default)
	}
	// veth0.q1000.10: 802.1Q 10 on 802.1ad 1000 on veth0. vlan is the
	// outermost tag's, the one the first switch classifies on.
	e := p.Entries[11]
	if e.Netdev != "veth0.q1000.10" || e.VLAN == nil || *e.VLAN != 1000 || len(e.VLANChain) != 2 ||
		e.VLANChain[0].Tag != (vlan.Tag{ID: 1000, TPID: vlan.TPID8021AD}) || e.VLANChain[0].Netdev != "veth0.q1000" ||
		e.VLANChain[1].Tag != (vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}) || e.VLANChain[1].Netdev != "veth0.q1000.10" ||
		e.RealNetdev != "veth0" {
		t.Errorf("entry 11 = %s vlan %v chain %v real %s, want veth0.q1000.10 vlan 1000 chain [802.1ad:1000 10] on veth0", e.Netdev, e.VLAN, e.VLANChain, e.RealNetdev)
	}
	if e := p.Entries[1]; e.VLAN != nil || len(e.VLANChain) != 0 || e.VLANChain == nil {
		t.Errorf("entry 1 (untagged) vlan %v chain %#v, want nil and []", e.VLAN, e.VLANChain)
	}
	for i := 13; i < 16; i++ {
		if !p.Entries[i].Empty {
			t.Errorf("entry %d not empty", i)
		}
	}
}

func TestReadUnreadableNetdev(t *testing.T) {
	p := readFixture(t, "rxe-churned")[0]
	e := p.Entries[5]
	if e.Empty || e.Netdev != "" || e.Netns != gid.NetnsOther || e.Type != gid.TypeRoCEv2 {
		t.Errorf("entry 5 = %+v, want a valid RoCE v2 entry with no netdev in netns %q", e, gid.NetnsOther)
	}
	if !p.Entries[1].Empty {
		t.Errorf("entry 1 should be an empty hole")
	}
}

func TestReadErrors(t *testing.T) {
	s := &sysfs{Root: t.TempDir()}
	if devs, err := readAllOK(s); err != nil || len(devs) != 0 {
		t.Errorf("readAll on an empty root = %v, %v: want no devices and no error (a host without RDMA)", devs, err)
	}
	s = &sysfs{Root: filepath.Join("testdata", "rxe", "sys")}
	if _, err := s.readPort("rxe0", 2); err == nil || !strings.Contains(err.Error(), "port 2 not found") {
		t.Errorf("readPort(rxe0, 2) = %v, want port not found", err)
	}
	if _, err := s.ports("nosuch"); err == nil || !strings.Contains(err.Error(), `"nosuch": no ports directory`) {
		t.Errorf("ports(nosuch) = %v", err)
	}
	if _, err := s.ports("../x"); err == nil {
		t.Errorf("ports(../x) accepted a path")
	}
}

// A slot rewritten between the reads of one entry is read again: the
// type and netdev reported belong to the GID reported.
func TestReadEntryRereadsChangingSlot(t *testing.T) {
	dir := "/p"
	reads := map[string]int{}
	s := &sysfs{readFile: func(path string) ([]byte, error) {
		reads[path]++
		gen := reads[dir+"/gids/0"] // 1, 2: old entry being replaced; ≥3: new entry
		switch path {
		case dir + "/gids/0":
			if gen == 1 {
				return []byte("0000:0000:0000:0000:0000:ffff:0a00:0001\n"), nil // old entry 10.0.0.1
			}
			return []byte("0000:0000:0000:0000:0000:ffff:0a00:0002\n"), nil // new entry 10.0.0.2, RoCE v2 on eth0.5
		case dir + "/gid_attrs/types/0":
			// Already the new entry's attributes while the first GID
			// read saw the old one: they must not be paired with it.
			return []byte("RoCE v2\n"), nil
		case dir + "/gid_attrs/ndevs/0":
			return []byte("eth0.5\n"), nil
		}
		return nil, os.ErrNotExist
	}}
	e, empty, err := s.readSlot(pathFiles{s, dir}, 0, false)
	if err != nil || empty {
		t.Fatal(err, empty)
	}
	if e.GID != gid.MustParse("10.0.0.2") || e.Type != gid.TypeRoCEv2 || e.Netdev != "eth0.5" {
		t.Errorf("entry = %s %s %s, want ::ffff:10.0.0.2 RoCE v2 eth0.5", e.GID, e.Type, e.Netdev)
	}
	if reads[dir+"/gids/0"] < 4 {
		t.Errorf("gids/0 read %d times, want the entry read again after the change", reads[dir+"/gids/0"])
	}

	// A slot that never settles is an error, not a mixed entry.
	n := 0
	s = &sysfs{readFile: func(path string) ([]byte, error) {
		if strings.HasSuffix(path, "/gids/0") {
			n++
			return []byte(gid.MustParse("10.0.0." + string(rune('0'+n%10))).SysfsString()), nil
		}
		return []byte("RoCE v2"), nil
	}}
	if _, _, err := s.readSlot(pathFiles{s, dir}, 0, false); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("readSlot on a churning slot = %v, want an error", err)
	}
}

func TestEntryJSONKeys(t *testing.T) {
	p := readFixture(t, "rxe")[0]
	b, err := p.Entries[3].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"device":"rxe0","port":1,"index":3,"gid":"::ffff:10.0.100.1","type":"RoCE v2","kind":"ipv4","ip":"10.0.100.1",` +
		`"netdev":"veth0.100","ifindex":4,"vlan":100,"vlan_chain":[{"id":100,"tpid":33024,"pcp":null,"netdev":"veth0.100"}],"real_netdev":"veth0",` +
		`"mac":"02:00:00:00:00:01","mtu":1500,"operstate":"up","netns":"current","netns_boundary":null,"default":false,"empty":false}`
	if string(b) != want {
		t.Errorf("JSON =\n%s\nwant\n%s", b, want)
	}
	var back gid.Entry
	if err := back.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	b2, _ := back.MarshalJSON()
	if string(b2) != want {
		t.Errorf("round trip =\n%s", b2)
	}
	b, _ = p.Entries[15].MarshalJSON()
	want = `{"device":"rxe0","port":1,"index":15,"gid":"::","type":null,"kind":null,"ip":null,"netdev":null,"ifindex":null,` +
		`"vlan":null,"vlan_chain":null,"real_netdev":null,"mac":null,"mtu":null,"operstate":null,"netns":null,"netns_boundary":null,"default":false,"empty":true}`
	if string(b) != want {
		t.Errorf("empty JSON =\n%s\nwant\n%s", b, want)
	}
}

// copyTree copies the sysfs fixture trees testdata/<dir>/sys into one
// fresh root, for tests that break part of it.
func copyTree(t *testing.T, dirs ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range dirs {
		if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", d, "sys"))); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A port without a gids/ directory (what a device going away mid-read
// also gives) costs that port only; a device without a ports/ directory
// costs that device only. Each is named in the errors, and everything
// else reads as the fixture trees do whole.
func TestReadPartial(t *testing.T) {
	root := copyTree(t, "mlx5", "rxe")
	ib := filepath.Join(root, "class", "infiniband")
	if err := os.RemoveAll(filepath.Join(ib, "mlx5_0", "ports", "2", "gids")); err != nil {
		t.Fatal(err)
	}
	// A third device whose ports directory is gone.
	if err := os.MkdirAll(filepath.Join(ib, "mlx5_1"), 0o755); err != nil {
		t.Fatal(err)
	}
	devs, errs, err := (&sysfs{Root: root}).readAll()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.Name)
	}
	if strings.Join(names, " ") != "mlx5_0 rxe0" {
		t.Fatalf("devices %v, want mlx5_0 rxe0 (mlx5_1 has no ports directory)", names)
	}
	want := fixture(t, "mlx5").RDMA.Devices[0]
	if len(devs[0].Ports) != 1 {
		t.Fatalf("mlx5_0 has %d ports, want port 1 only", len(devs[0].Ports))
	}
	got, _ := json.Marshal(devs[0].Ports[0])
	exp, _ := json.Marshal(want.Ports[0])
	if string(got) != string(exp) {
		t.Errorf("mlx5_0 port 1 =\n%s\nwant (mlx5.json)\n%s", got, exp)
	}
	got, _ = json.Marshal(devs[1])
	exp, _ = json.Marshal(fixture(t, "rxe").RDMA.Devices[0])
	if string(got) != string(exp) {
		t.Errorf("rxe0 =\n%s\nwant (rxe.json)\n%s", got, exp)
	}
	srcs := map[string]string{}
	for _, e := range errs {
		srcs[e.Source] = e.Error
	}
	if len(errs) != 2 || !strings.Contains(srcs["rdma mlx5_0 port 2"], "GID table") || !strings.Contains(srcs["rdma mlx5_1"], "no ports directory") {
		t.Errorf("errors = %+v, want rdma mlx5_0 port 2 (GID table) and rdma mlx5_1 (no ports directory)", errs)
	}

	// Collect records them in the snapshot.
	s, err := Collect(Options{SysfsRoot: root, Sections: SectionRDMA})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RDMA.Devices) != 2 || len(s.Errors) != 2 || s.Errors[0].Source != "rdma mlx5_1" || s.Errors[1].Source != "rdma mlx5_0 port 2" {
		t.Errorf("snapshot: %d devices, errors %+v", len(s.RDMA.Devices), s.Errors)
	}
}

// readAllOK is readAll for trees that must read whole.
func readAllOK(s *sysfs) ([]host.Device, error) {
	devs, errs, err := s.readAll()
	if err == nil && len(errs) > 0 {
		err = fmt.Errorf("%s: %s", errs[0].Source, errs[0].Error)
	}
	return devs, err
}

// RoCE LAG: the counters and DCQCN settings of a port on a bond are read
// from every slave (the NIC ports), not from the bond, which has none.
func TestCounterNetdevsLAG(t *testing.T) {
	s := fixture(t, "mlx5-lag")
	ns, _ := s.Namespace("")
	got := counterNetdevs(s.RDMA.Devices, ns, nil)
	if strings.Join(got, " ") != "enp1s0f0np0 enp1s0f1np1" {
		t.Errorf("counter netdevs %v, want both slaves of bond0", got)
	}
}
