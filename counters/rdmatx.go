package counters

// RDMATx is the RDMA traffic a netdev's own counters say its RDMA function
// sent: the packets, and the driver's names of the counters summed.
type RDMATx struct {
	Packets uint64
	// Counters are the ethtool names summed.
	Counters []string
}

// netdevRDMATx lists, per ethtool driver, the counters of RDMA traffic a
// netdev's ethtool set has: mlx5's vport RDMA counters
// (drivers/net/ethernet/mellanox/mlx5/core/en_stats.c vport_stats_desc:
// transmitted_ib_unicast and transmitted_ib_multicast of the vport's
// QUERY_VPORT_COUNTER, Linux 6.1.192; counters.rst: "the number of RDMA
// unicast/multicast packets/bytes transmitted"), unicast and multicast
// summed. bnxt_en, ice and ionic count their RDMA function's traffic in
// the RDMA driver's hw_counters (bnxt_re tx_pkts/tx_bytes), not in the
// netdev's set.
var netdevRDMATx = map[string][]string{
	"mlx5_core": {"tx_vport_rdma_unicast_packets", "tx_vport_rdma_multicast_packets"},
}

// NetdevRDMATx returns the RDMA packets a netdev's ethtool set (of
// driver, an ethtool driver name) says were sent; ok is false when the
// driver has no such counters or the set has none of them.
func NetdevRDMATx(driver string, stats map[string]uint64) (RDMATx, bool) {
	names, known := netdevRDMATx[driver]
	if !known {
		return RDMATx{}, false
	}
	var r RDMATx
	found := false
	for _, n := range names {
		if v, ok := stats[n]; ok {
			r.Packets += v
			r.Counters = append(r.Counters, n)
			found = true
		}
	}
	if !found {
		return RDMATx{}, false
	}
	return r, true
}
