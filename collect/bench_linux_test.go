package collect

import (
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// writeBigFixture writes devs RDMA devices × ports ports × slots fully used
// mlx5-like GID slots (v1+v2 pairs) below root, with each port's addresses
// spread over its netdev and four VLAN devices, and returns the snapshot.
func writeBigFixture(tb testing.TB, root string, devs, ports, slots int) *vlan.Namespace {
	return writeFixture(tb, root, devs, ports, slots, slots)
}

// writeFixture is writeBigFixture with only the first used slots in use
// and the rest empty (zero GID, no types/ndevs files: EINVAL).
func writeFixture(tb testing.TB, root string, devs, ports, slots, used int) *vlan.Namespace {
	tb.Helper()
	snap := &vlan.Namespace{}
	idx := 1
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s+"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for d := 0; d < devs; d++ {
		dev := fmt.Sprintf("mlx5_%d", d)
		for p := 1; p <= ports; p++ {
			nd := fmt.Sprintf("ens%df%d", d, p-1)
			mac := vlan.MAC{0x0c, 0x42, 0xa1, byte(d), byte(p), 1}
			base := idx
			snap.Links = append(snap.Links, vlan.Link{Name: nd, Index: idx, Kind: vlan.KindPhysical, MAC: mac, MTU: 9000, OperState: "up", Ether: true})
			idx++
			var names []string
			for v := 0; v < 4; v++ {
				name := fmt.Sprintf("%s.%d", nd, 100+v)
				snap.Links = append(snap.Links, vlan.Link{Name: name, Index: idx, Kind: vlan.KindVLAN, ParentIndex: base, MAC: mac, MTU: 9000,
					OperState: "up", Ether: true, Tag: &vlan.Tag{ID: uint16(100 + v), TPID: vlan.TPID8021Q}, EgressQoS: vlan.QoSMap{0: 3}})
				names = append(names, name)
				idx++
			}
			pd := filepath.Join(root, "class", "infiniband", dev, "ports", fmt.Sprint(p))
			for _, sub := range []string{"gids", "gid_attrs/types", "gid_attrs/ndevs"} {
				if err := os.MkdirAll(filepath.Join(pd, sub), 0o755); err != nil {
					tb.Fatal(err)
				}
			}
			if p == 1 {
				os.MkdirAll(filepath.Join(root, "class", "infiniband", dev, "device", "net", nd), 0o755)
			}
			write(filepath.Join(pd, "state"), "4: ACTIVE")
			write(filepath.Join(pd, "phys_state"), "5: LinkUp")
			write(filepath.Join(pd, "link_layer"), "Ethernet")
			for i := 0; i < slots; i++ {
				if i >= used {
					write(filepath.Join(pd, "gids", fmt.Sprint(i)), gid.Zero.SysfsString())
					continue
				}
				var g gid.GID
				owner := nd
				if i < 2 {
					g = gid.DefaultGID(mac, 0)
				} else {
					g = gid.FromAddr(netip.AddrFrom4([4]byte{10, byte(d), byte(p), byte(i / 2)}))
					owner = names[(i/2)%4]
				}
				typ := "IB/RoCE v1"
				if i%2 == 1 {
					typ = "RoCE v2"
				}
				n := fmt.Sprint(i)
				write(filepath.Join(pd, "gids", n), g.SysfsString())
				write(filepath.Join(pd, "gid_attrs", "types", n), typ)
				write(filepath.Join(pd, "gid_attrs", "ndevs", n), owner)
			}
		}
	}
	return snap
}

// BenchmarkReadAndMap16x2x256 enumerates and maps 16 devices × 2 ports ×
// 256 used entries (8192 entries, 24576 sysfs files): the collector's
// sysfs reader, then the tables built and mapped as every command does
// (Snapshot.Ports). Target: ≤ 100 ms per
// operation. Figure in docs/performance.md.
func BenchmarkReadAndMap16x2x256(b *testing.B) {
	benchReadAndMap(b, 256)
}

// BenchmarkReadAndMap16x2x256Used12 is the same 16 × 2 × 256-slot tables
// with 12 slots in use per port, as on a ConnectX port with defaults and
// five addresses.
func BenchmarkReadAndMap16x2x256Used12(b *testing.B) {
	benchReadAndMap(b, 12)
}

func benchReadAndMap(b *testing.B, used int) {
	root, snap := benchFixture(b, used)
	sys := &sysfs{Root: root}
	b.ResetTimer()
	for b.Loop() {
		devs, err := readAllOK(sys)
		if err != nil {
			b.Fatal(err)
		}
		s := &host.Snapshot{RDMA: &host.RDMA{Devices: devs}}
		ports, err := s.Ports(snap)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, p := range ports {
			n += len(p.Entries)
		}
		if n != 16*2*256 {
			b.Fatalf("%d entries", n)
		}
	}
}

// benchFixtures holds the benchmark fixtures by slots used, written once
// per test binary: writing 24,576 files takes seconds on this VM's disk,
// and -count 3 would write each fixture three times. TestMain removes
// them.
var benchFixtures = struct {
	sync.Mutex
	dir   string
	roots map[int]string
	snaps map[int]*vlan.Namespace
}{roots: map[int]string{}, snaps: map[int]*vlan.Namespace{}}

func benchFixture(b *testing.B, used int) (string, *vlan.Namespace) {
	f := &benchFixtures
	f.Lock()
	defer f.Unlock()
	if root, ok := f.roots[used]; ok {
		return root, f.snaps[used]
	}
	if f.dir == "" {
		dir, err := os.MkdirTemp("", "gid-bench-")
		if err != nil {
			b.Fatal(err)
		}
		f.dir = dir
	}
	root := filepath.Join(f.dir, fmt.Sprint(used))
	f.snaps[used] = writeFixture(b, root, 16, 2, 256, used)
	f.roots[used] = root
	return root, f.snaps[used]
}

func TestMain(m *testing.M) {
	code := m.Run()
	if d := benchFixtures.dir; d != "" {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// The big fixture reads back as written: every entry mapped to its VLAN.
func TestBigFixture(t *testing.T) {
	root := t.TempDir()
	snap := writeBigFixture(t, root, 2, 2, 16)
	devs, err := readAllOK(&sysfs{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	ports, err := (&host.Snapshot{RDMA: &host.RDMA{Devices: devs}}).Ports(snap)
	if err != nil {
		t.Fatal(err)
	}
	e := ports[3].Entries[5] // mlx5_1 port 2
	if e.GID != gid.MustParse("10.1.2.2") || e.Type != gid.TypeRoCEv2 || e.Netdev != "ens1f1.102" || e.VLAN == nil || *e.VLAN != 102 || e.Default {
		t.Errorf("entry = %+v", e)
	}
	if !ports[3].Entries[1].Default || ports[2].Netdev != "ens1f0" {
		t.Errorf("defaults/netdev wrong")
	}
}
