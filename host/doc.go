// Package host is the host snapshot: everything roce-probe's read-only
// commands know about one host, as plain data, and the analysis entry
// points that work on it. It reads nothing from the kernel, links no
// netlink, raw-socket or BPF code, and builds on every system: a snapshot
// taken on a Linux host (package collect, `roce-probe collect`) is
// analysed the same way on a laptop.
//
// A Snapshot holds the RDMA devices with their driver, ports (state, link
// layer, netdev) and GID tables; the network namespaces with their netdevs
// (kind, VLAN stack, QoS maps, MACs, MTUs, addresses), routes, neighbours
// and TTL sysctls (package vlan); the DCB state of every real netdev; one
// sample of the RDMA ports' counters and of the real netdevs' ethtool and
// PFC counters (package counters analyses them); and the settings applied
// behind the application's back (rdma_cm's configfs defaults, MLNX_OFED
// mlx5's traffic class override, DCQCN; Settings). Decode and Load read
// the versioned JSON document (format "roce-probe-snapshot", version 1;
// docs/snapshot.md), plain or gzip-compressed; Encode and Save write it.
//
// Snapshot.View opens a snapshot in one namespace with every GID table
// mapped (or, on a host without RDMA devices, the tables Soft-RoCE would
// build); View.Source looks up a flow's source GID entry, its VLAN stack,
// driver and DCB; View.Flow builds the qos.Flow of traffic from that
// source with the sl and traffic class (or rdma_cm ToS) of FlowParams and
// the settings the host applies behind the application's back, for
// qos.Check; View.ResolveAH resolves an address handle to the frame it
// puts on the wire; View.Diff compares a port's GID table with the one the
// kernel would build; Snapshot.QoSReports and View.QoSReports give what
// decides a netdev's or port's priority (`roce-probe qos`);
// View.CountersInput gives package counters what it needs to judge a
// host's counters.
package host
