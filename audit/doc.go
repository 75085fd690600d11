// Package audit checks that a host's RDMA traffic leaves on its RoCE
// priorities with the markings its configuration gives it: the check a
// configuration or a probe cannot make, since an application's own QPs may
// bypass the configured class (a DevX/GPU-initiated QP that ignores the
// mlx5 traffic class override, a library that ignores NCCL_IB_TC).
//
// Two sources, each bounded:
//
//   - counters, over an interval: the RDMA packets a real netdev sent
//     (mlx5's vport RDMA counters, the TX packets of the RDMA port's
//     hw_counters: rxe, bnxt_re) against the packets its expected
//     priorities sent (the per-priority counters of mlx5_core and
//     bnxt_en). RDMA traffic the expected priorities cannot account for
//     is a finding, naming the priority that carried it where one other
//     priority grew by as much;
//   - the wire, where the kernel sees the RDMA traffic (rxe; an mlx5 port
//     with the offloaded-traffic sniffer, from a capture file): a bounded
//     sample of the RoCE frames leaving the host (Wire), each QP's
//     markings classified into a priority by the port's DCB
//     (qos.DCB.Classify) and compared with what the flows' configuration
//     gives its source GID entry (host.View.Flow, qos.Check), joined to
//     the QP census so that a finding names the process.
//
// The expected markings come from Expectations (`roce-probe audit
// --tclass/--tos/--flow`); without them, from the host's RoCE priorities
// (counters.RoCEPriorities). Audit reads nothing: package collect takes
// the samples, Capture (Linux) the wire sample. docs/audit.md explains
// what each driver lets it see and how to act on a finding.
package audit
