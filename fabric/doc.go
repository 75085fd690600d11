// Package fabric compares many hosts' RoCE configuration and reports what
// differs where it must not: roce-probe fabric (docs/fabric.md).
//
// A host's facts (Host) are its RDMA ports' attachments to networks: the
// network of a port is the prefix of the addresses of its usable GIDs
// (gid.Unusable and gid.Entry.Usable: not link-local, netdev up and in the
// collector's namespace, not stale, host.View.Stale; Network), and its facts there come from the netdev of the lowest
// usable entry: the usable GID index per GID type (GIDIndexes — what
// NCCL_IB_GID_INDEX must be on that host, the roce_probe_gid_index
// metric), the VLAN tags and egress maps, the MTU, the real netdev's DCB
// (trust, PFC, DSCP map, ETS) and the settings applied behind the
// application's back (rdma_cm's defaults, MLNX_OFED's traffic class
// override, DCQCN). Analyze groups the ports of each network by each fact
// and reports every network where a fact has more than one value, with the
// ports (and hosts) of each value.
//
// The facts come from three readers: ReadFiles (snapshot files written by
// roce-probe collect), ReadAgents (the agents' /snapshot, the same
// document) and ReadPrometheus (the agents' GID metrics queried back from
// Prometheus, which carry only the GID index, RoCE version and VLAN
// facts). Localize names the suspects of a window of probe results (a
// NIC, a ToR, a ToR uplink or spine, a remarking hop, or host noise) with
// the evidence. WriteHTML formats a report (with the hosts' GID indexes
// and switches, and a window's probe results and suspects when the caller
// has them) as one self-contained HTML page. The package is pure: it reads no kernel state and builds
// on every system.
package fabric
