package collect

import (
	"errors"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/internal/netnstest"
	"github.com/roce-probe/roce-probe/qos"
)

var fixtureDevs = []host.Device{{Name: "mlx5_0", Ports: []host.Port{{Port: 1}}}, {Name: "rxe0", Ports: []host.Port{{Port: 1}}}}

// fakeNL answers for the devices it has.
type fakeNL map[string]map[string]uint64

func (f fakeNL) portStats(dev string, port int) (map[string]uint64, error) {
	if m, ok := f[dev]; ok {
		return m, nil
	}
	return nil, errors.New("operation not supported")
}
func (fakeNL) close() {}

// The sysfs counter tree (testdata/counters, laid out as ib core's
// sysfs.c setup_hw_port_stats and the PMA groups make it): hw_counters
// without lifespan, counters/ without the files that cannot be read, no
// counters/ for rxe; netlink first where it answers.
func TestReadRDMACounters(t *testing.T) {
	s := &sysfs{Root: "testdata/counters/sys"}
	ports, errs := s.readRDMACounters(fixtureDevs, nil)
	if len(errs) != 0 || len(ports) != 2 {
		t.Fatalf("ports %+v errs %v", ports, errs)
	}
	m := ports[0]
	if m.Source != counters.SourceSysfs || len(m.HWCounters) != 2 || m.HWCounters["out_of_sequence"] != 12 || m.HWCounters["np_cnp_sent"] != 3 {
		t.Errorf("mlx5_0 hw_counters %+v (%s)", m.HWCounters, m.Source)
	}
	if _, ok := m.HWCounters["lifespan"]; ok {
		t.Error("lifespan read as a counter")
	}
	if len(m.Counters) != 2 || m.Counters["port_xmit_data"] != 4242 {
		t.Errorf("mlx5_0 counters %+v: want port_xmit_data and port_rcv_packets, not the unreadable port_rcv_data_64", m.Counters)
	}
	if r := ports[1]; r.Counters != nil || len(r.HWCounters) != 3 {
		t.Errorf("rxe0 %+v: want 3 hw_counters and no counters/", r)
	}
	nl := fakeNL{"mlx5_0": {"out_of_sequence": 13, "cc_rx_ce_pkts": 7}}
	ports, _ = s.readRDMACounters(fixtureDevs, nl)
	if ports[0].Source != counters.SourceNetlink || ports[0].HWCounters["cc_rx_ce_pkts"] != 7 || ports[1].Source != counters.SourceSysfs {
		t.Errorf("with netlink: %+v", ports)
	}
}

// rxe on Linux 7.x has a counters/ directory (its process_mad answers
// the PMA MADs, rxe_mad.c) whose files are all readable, but it fills only
// four of them: testdata/counters/sys/class/infiniband/rxe1 is the lab's
// 7.3.4 listing after an RC exchange of 25 packets each way, where the 17
// others read 0. The collector keeps the four and leaves the rest out (a
// counter the driver does not have is absent, never 0); for a driver
// without such a list every readable file stays.
func TestReadRDMACountersRXEPMA(t *testing.T) {
	s := &sysfs{Root: "testdata/counters/sys"}
	rxe := []host.Device{{Name: "rxe1", Driver: qos.DriverInfo{Driver: qos.DriverRXE}, Ports: []host.Port{{Port: 1}}}}
	ports, errs := s.readRDMACounters(rxe, nil)
	if len(errs) != 0 || len(ports) != 1 {
		t.Fatalf("ports %+v errs %v", ports, errs)
	}
	want := map[string]uint64{"port_xmit_data": 5400, "port_rcv_data": 5400, "port_xmit_packets": 25, "port_rcv_packets": 25}
	if got := ports[0].Counters; fmt.Sprint(got) != fmt.Sprint(counters.Stats(want)) {
		t.Errorf("rxe1 counters/ %v, want %v", got, want)
	}
	if h := ports[0].HWCounters; len(h) != 17 || h["sent_bytes"] != 21600 || h["link_downed"] != 0 {
		t.Errorf("rxe1 hw_counters %v: want the 17 counters without lifespan", h)
	}
	rxe[0].Driver = qos.DriverInfo{}
	ports, _ = s.readRDMACounters(rxe, nil)
	if len(ports[0].Counters) != 21 {
		t.Errorf("driver unknown: %d counters/ files kept, want all 21", len(ports[0].Counters))
	}
}

func TestReadSettings(t *testing.T) {
	s := &sysfs{Root: "testdata/counters/sys"}
	st := s.readSettings(fixtureDevs, []string{"enp1s0f0", "veth0"})
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	cm := st.RDMACMOf("mlx5_0", 1)
	if cm.Status != qos.SettingRead || *cm.ToS != 106 || *cm.Mode != "RoCE v2" || cm.Source != "testdata/counters/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos" {
		t.Errorf("mlx5_0 rdma_cm %+v", cm)
	}
	if cm := st.RDMACMOf("rxe0", 1); cm.Status != qos.SettingNotExposed || cm.ToS != nil || !strings.Contains(*cm.Reason, "mkdir testdata/counters/sys/kernel/config/rdma_cm/rxe0") {
		t.Errorf("rxe0 rdma_cm %+v", cm)
	}
	if o := st.TCOverrideOf("mlx5_0", 1); !o.Active() || *o.Global != 106 {
		t.Errorf("mlx5_0 tc %+v", o)
	}
	if o := st.TCOverrideOf("rxe0", 1); o.Status != qos.SettingNotExposed || o.Active() || !strings.Contains(*o.Reason, "only MLNX_OFED") {
		t.Errorf("rxe0 tc %+v", o)
	}
	d := st.DCQCNOf("enp1s0f0")
	if d.Status != qos.SettingRead || !*d.NP[3] || *d.NP[0] || d.RP[5] != nil || !*d.RP[3] || *d.CNPDSCP != 48 || *d.CNPPrio != 6 {
		t.Errorf("enp1s0f0 DCQCN %+v", d)
	}
	if d := st.DCQCNOf("veth0"); d.Status != qos.SettingNotExposed {
		t.Errorf("veth0 DCQCN %+v", d)
	}
	// Without configfs at all.
	empty := &sysfs{Root: t.TempDir()}
	if cm := empty.readRDMACM("mlx5_0", 1); cm.Status != qos.SettingNotExposed || !strings.Contains(*cm.Reason, "configfs is not mounted") {
		t.Errorf("no configfs: %+v", cm)
	}
}

// ethtool stats of a real netdev, read without privileges, against the
// ethtool program's own `ethtool -S` (an independent reader of the same
// ioctls) and the driver sysfs shows.
func TestReadEthtoolLive(t *testing.T) {
	ents, _ := os.ReadDir("/sys/class/net")
	fd, err := ethtoolSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, _, err := readEthtool(fd, "lo"); !errors.Is(err, errNoStats) {
		t.Errorf("lo: %v, want no statistics", err)
	}
	tool, toolErr := exec.LookPath("ethtool")
	tested := 0
	for _, e := range ents {
		name := e.Name()
		link, err := os.Readlink(filepath.Join("/sys/class/net", name, "device", "driver"))
		if err != nil {
			continue // no bus device: lo, veth, bridges
		}
		drv, stats, err := readEthtool(fd, name)
		if errors.Is(err, errNoStats) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if drv != filepath.Base(link) {
			t.Errorf("%s: driver %q, sysfs device/driver %q", name, drv, filepath.Base(link))
		}
		if toolErr != nil {
			continue
		}
		out, err := exec.Command(tool, "-S", name).Output()
		if err != nil {
			t.Fatalf("ethtool -S %s: %v", name, err)
		}
		want := map[string]bool{}
		for _, l := range strings.Split(string(out), "\n")[1:] {
			if k, _, ok := strings.Cut(strings.TrimSpace(l), ": "); ok {
				want[k] = true
			}
		}
		for k := range want {
			if _, ok := stats[k]; !ok {
				t.Errorf("%s: ethtool -S shows %s, roce-probe does not", name, k)
			}
		}
		if len(stats) != len(want) {
			t.Errorf("%s: %d statistics, ethtool -S shows %d", name, len(stats), len(want))
		}
		tested++
	}
	if tested == 0 {
		t.Skip("no netdev with a bus device and ethtool statistics on this machine")
	}
}

// A veth's ethtool set (drivers/net/veth.c veth_get_strings: peer_ifindex,
// then per-queue XDP counters), read in another namespace: peer_ifindex is
// the peer's ifindex as ip link shows it.
func TestReadEthtoolVeth(t *testing.T) {
	netnstest.RequireRoot(t)
	a, b := netnstest.New(t, "a"), netnstest.New(t, "b")
	netnstest.Veth(t, a, "ca0", "02:00:00:00:01:0a", b, "cb0", "02:00:00:00:01:0b")
	out := netnstest.Run(t, "ip", "-n", b, "-o", "link", "show", "cb0")
	idx, _, _ := strings.Cut(out, ":")
	h, err := openNetns(a)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var eth []counters.Ethtool
	var errs []host.SourceError
	if err := h.inNetns(func() { eth, errs = readEthtoolSet(a, []string{"ca0", "lo"}) }); err != nil {
		t.Fatal(err)
	}
	if len(errs) != 0 || len(eth) != 1 {
		t.Fatalf("sets %+v errors %v: want ca0's only (lo has none)", eth, errs)
	}
	e := eth[0]
	if e.Driver != "veth" || e.Netns != a || strconv.FormatUint(e.Stats["peer_ifindex"], 10) != strings.TrimSpace(idx) {
		t.Errorf("ca0: driver %q netns %q peer_ifindex %d, want veth, %s, %s", e.Driver, e.Netns, e.Stats["peer_ifindex"], a, idx)
	}
	if n := counters.Normalize(e.Driver, e.Stats); n.HasPrio() || n.Port != nil {
		t.Errorf("veth normalized to %+v", n)
	}
}
