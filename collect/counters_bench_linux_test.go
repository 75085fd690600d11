package collect

import (
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"os"
	"path/filepath"
	"testing"

	"github.com/roce-probe/roce-probe/counters"
)

// sysfsCounterTree writes 16 devices × 2 ports with mlx5's 31 hw_counters
// (Linux 6.1 names, plus lifespan) and 4 PMA counters each.
func sysfsCounterTree(b *testing.B) (string, []host.Device) {
	root := b.TempDir()
	hw := []string{"rx_write_requests", "rx_read_requests", "rx_atomic_requests", "out_of_buffer", "out_of_sequence", "duplicate_request",
		"rnr_nak_retry_err", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err", "rp_cnp_ignored", "rp_cnp_handled",
		"np_ecn_marked_roce_packets", "np_cnp_sent", "resp_local_length_error", "resp_cqe_error", "req_cqe_error",
		"req_remote_invalid_request", "req_remote_access_errors", "resp_remote_access_errors", "resp_cqe_flush_error",
		"req_cqe_flush_error", "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
		"roce_slow_restart_trans", "rx_icrc_encapsulated", "lifespan"}
	pma := []string{"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"}
	var devs []host.Device
	for i := 0; i < 16; i++ {
		d := host.Device{Name: fmt.Sprintf("mlx5_%d", i)}
		for p := 1; p <= 2; p++ {
			d.Ports = append(d.Ports, host.Port{Port: p})
			for dir, names := range map[string][]string{"hw_counters": hw, "counters": pma} {
				dd := filepath.Join(root, "class/infiniband", d.Name, "ports", fmt.Sprint(p), dir)
				if err := os.MkdirAll(dd, 0o755); err != nil {
					b.Fatal(err)
				}
				for _, n := range names {
					os.WriteFile(filepath.Join(dd, n), []byte("123456789\n"), 0o644)
				}
			}
		}
		devs = append(devs, d)
	}
	return root, devs
}

// BenchmarkReadRDMACounters16x2 reads the RDMA counters of 16 devices × 2
// ports from sysfs (the collector's path when RDMA netlink gives nothing).
func BenchmarkReadRDMACounters16x2(b *testing.B) {
	root, devs := sysfsCounterTree(b)
	s := &sysfs{Root: root}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ports, errs := s.readRDMACounters(devs, nil)
		if len(ports) != 32 || len(errs) != 0 || len(ports[31].HWCounters) != 28 {
			b.Fatalf("%d ports, %v", len(ports), errs)
		}
	}
}

// BenchmarkReadEthtool32 reads the ethtool set of this machine's first
// netdev with one 32 times (32 netdevs' worth of SIOCETHTOOL requests).
func BenchmarkReadEthtool32(b *testing.B) {
	ents, _ := os.ReadDir("/sys/class/net")
	var nd string
	fd, err := ethtoolSocket()
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		if _, m, err := readEthtool(fd, e.Name()); err == nil && len(m) > 0 {
			nd = e.Name()
			break
		}
	}
	if nd == "" {
		b.Skip("no netdev with ethtool statistics")
	}
	names := make([]string, 32)
	for i := range names {
		names[i] = nd
	}
	b.ResetTimer()
	var set []counters.Ethtool
	for i := 0; i < b.N; i++ {
		set, _ = readEthtoolSet("", names)
	}
	b.ReportMetric(float64(len(set[0].Stats)), "stats/netdev")
}
