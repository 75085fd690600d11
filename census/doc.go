// Package census is the QP census: which processes hold which queue
// pairs and rdma_cm IDs on a host, as the kernel's RDMA netlink resource
// dumps report them — what `rdma resource show qp` and `rdma resource show
// cm_id` (iproute2) print, as data.
//
// A Census holds the QPs (device, port, QPN, remote QPN, type, state,
// PSNs, the owning process's PID and command, the driver's attributes),
// the rdma_cm IDs (addresses, port space, state, owner) and, per device
// and dump, whether it was read and why not (Sources). Decode reads the
// replies to the dumps — netlink messages as read from a NETLINK_RDMA
// socket — and Dump.Request builds the requests; the socket itself and
// the /proc/PID/comm lookups are package collect's (collect.Census), so
// this package reads nothing, links no netlink code and builds on every
// system: a census in a snapshot is analysed anywhere.
//
// What the kernel shows, and to whom (drivers/infiniband/core/nldev.c):
// the QP and rdma_cm ID dumps need no privilege; the raw QP dump
// (DumpQPRaw) needs CAP_NET_ADMIN. Every device the reader's network
// namespace sees is dumped whole, but a PID is given in the reader's PID
// namespace: a QP whose process is not visible from there (another
// container's) comes without one (Owner ""). No driver reports a QP's
// traffic class, SL or DSCP in the dump (QP.MarkingsReason says so;
// docs/qps.md lists what each driver adds): the wire shows them.
//
// The JSON form is docs/json.md's "census".
package census
