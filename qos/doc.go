// Package qos turns an RDMA flow's service level, traffic class or ToS into
// what goes on the wire (VLAN PCP, DSCP, ECN) for each driver, decodes DCB
// state (PFC, ETS, APP table and trust: the RTM_GETDCB replies
// roce-probe's host snapshot reads), and gives a lossless-or-not verdict
// with every reason.
//
// The chain, each step with its kernel source:
//
//	AH sl / traffic_class        (or rdma_cm ToS → rt_tos2priority → iboe_tos_to_sl)
//	  → driver profile           (Predict: mlx5 PCP = sl & 7; rxe PCP = egress map[0]; ...)
//	  → VLAN tag or none         (the GID's netdev: Link)
//	  → PCP, DSCP, ECN on the wire
//	  → receiver's priority      (trust mode: PCP, or DSCP via the APP table)
//	  → traffic class (ETS) and PFC → lossless / lossy / unknown   (Check)
//
// Pure translations (TOSToPriority, EgressPCP, TOSToSL, DSCP, ECNOf) follow
// the kernel exactly; drivers whose behaviour is not in kernel or rdma-core
// source report "unknown" rather than a guess. A netdev without DCB
// support (veth, VLAN devices, rxe's netdev) is a DCB with Supported
// false, never an error. The package reads nothing from the kernel and
// builds on every system.
//
// docs/qos.md explains the chain, every verdict rule and warning.
package qos
