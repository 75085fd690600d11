// Package counters is roce-probe's knowledge of RDMA and Ethernet counters:
// what each driver calls a counter, what it means, how per-priority
// counters of different NICs line up, how two samples become rates, and
// which combinations of counters and QoS settings are worth telling an
// operator about (findings).
//
// It reads nothing: package collect collects a Sample (RDMA port counters
// over RDMA netlink or sysfs, the driver's `ethtool -S` set of each real
// netdev) into the host snapshot, and this package analyses one or two
// samples. It builds on every system.
//
// Names are kept as the driver gives them; a counter the driver does not
// have is absent, never 0. Every name this package knows is listed with
// its driver source in RDMA (drivers/infiniband/hw/mlx5/counters.c,
// drivers/infiniband/sw/rxe/rxe_hw_counters.c, bnxt_re/hw_counters.c,
// irdma/verbs.c) and in the per-priority tables of Normalize (mlx5
// en_stats.c and counters.rst, bnxt_en bnxt_ethtool.c, ice
// ice_ethtool.c). docs/counters.md explains the meanings, the RoCE
// priorities and every finding.
package counters
