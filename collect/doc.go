// Package collect reads a live Linux host into a host.Snapshot: the one
// place in roce-probe that reads the kernel for the facts the snapshot
// holds.
//
// Collect reads the RDMA devices, ports and GID tables (sysfs,
// /sys/class/infiniband), every requested network namespace's netdevs,
// addresses, routes, neighbours and TTL sysctls (rtnetlink, /proc/sys), the
// DCB state of every real netdev (RTM_GETDCB), one sample of the RDMA
// ports' counters (RDMA netlink, sysfs hw_counters/ and counters/) and of
// the real netdevs' ethtool and PFC counters (SIOCETHTOOL), and the
// settings applied behind the application's back (rdma_cm configfs,
// mlx5's tc/<port>/traffic_class, DCQCN). Options.SysfsRoot reads the
// sysfs parts from another root. Reading the collector's own namespace
// needs no privileges; another named namespace needs CAP_SYS_ADMIN.
//
// NewSampler reads further counter samples for rates; Watch tells a
// long-running reader (the agent) when links or addresses change, so that
// it collects again; ProbeNeighbor and SolicitNeighbor make the kernel
// resolve a next hop's MAC address.
//
// On systems other than Linux every function returns ErrNotLinux: take a
// snapshot on the host and analyse it with package host.
package collect
