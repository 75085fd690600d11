// Package host is roce-probe's one source of truth per host: the host
// snapshot, and the one place that reads the kernel.
//
// A Snapshot holds everything the read-only commands read from a host:
// RDMA devices with their driver, ports (state, link layer, netdev) and GID
// tables (sysfs); the network namespaces with their netdevs (kind, VLAN
// stack, QoS maps, MACs, MTUs, addresses), routes, neighbours and TTL
// sysctls (rtnetlink, /proc/sys); the DCB state of every real netdev
// (RTM_GETDCB); one sample of the RDMA ports' counters and of the real
// netdevs' ethtool and PFC counters (RDMA netlink, sysfs hw_counters/ and
// counters/, SIOCETHTOOL), which internal/counters analyses; and the
// settings applied behind the application's back (rdma_cm's configfs
// defaults, MLNX_OFED mlx5's traffic class override, DCQCN; Settings).
// Collect reads it from the live kernel (Linux only; no
// privileges for the own namespace), and Watch tells a long-running reader
// (the agent) when links or addresses change so that it collects again; Decode and Load read the versioned
// JSON document `roce-probe collect` writes (docs/snapshot.md), plain or
// gzip-compressed. Nothing else in roce-probe reads sysfs or rtnetlink for
// these facts, so a command's answer from a snapshot equals its live answer
// on the host where the snapshot was taken.
//
// The analysis entry points work on a snapshot and never touch the kernel:
// Snapshot.View opens it in one namespace with every GID table mapped
// (or, on a host without RDMA devices, the tables Soft-RoCE would build);
// View.Source looks up a flow's source GID entry, its VLAN stack, driver
// and DCB; View.ResolveAH resolves an address handle to the frame it puts
// on the wire.
package host
