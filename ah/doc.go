// Package ah models RDMA address handles (struct ibv_ah_attr), validates
// them with the rules RoCE drivers apply, resolves them to the exact frame
// they put on the wire, derives them from work completions, and — with the
// build tag ibverbs — creates them through libibverbs.
//
// # Attributes and validation
//
// Attr and GlobalRoute mirror struct ibv_ah_attr and struct
// ibv_global_route field for field. Attr.Validate checks an Attr against a
// port's GID table (Table) and reports every problem with the field, the
// value, what is allowed and the errno ibv_create_ah fails with: is_global
// = 0 (EINVAL), a static_rate that is not an enum ibv_rate value (EINVAL on
// mlx5), a port or sgid_index beyond the table (EINVAL), an empty sgid
// entry (ENODATA), an IB entry, a destination of the other address family
// (EINVAL), and values that the kernel accepts but drivers silently
// truncate (sl > 15, flow labels over 20 bits). errors.Is(err,
// syscall.EINVAL) works on the *ValidationError.
//
// # Resolution to the wire
//
// Resolve (or a Resolver, for many AHs) turns an Attr, the port's GID
// table (gid.Port entries, mapped), and the network namespace it lives in
// (a vlan.Namespace: links, routes, neighbours, hop-limit sysctls; read
// once by roce-probe's host snapshot) into a Resolution:
// source and destination MAC (neighbour table; ip_eth_mc_map for
// multicast; the MAC inside a link-local GID for RoCE v1), the VLAN tags
// with their PCP, IP version and addresses, DSCP and ECN, TTL / hop limit
// (the kernel replaces the requested value with the route's hop limit),
// flow label, UDP source port, RoCE version and path MTU, with the
// driver's behaviour taken from the qos/ profiles (rxe ignores the SL and
// sends flow label 0 and a per-QP UDP port; mlx5 maps sl & 7 to the PCP;
// ...). Every field the kernel or the driver changes is a Warning.
//
// The route lookup follows rdma_resolve_ip with the sgid's netdev as
// output interface: a route whose next hop leaves elsewhere does not
// match; IPv4 then assumes the destination is on the netdev's link (ARP
// there, ETIMEDOUT if nobody answers: the classic wrong-GID-index
// failure), IPv6 fails with ENETUNREACH. When the next hop's MAC is not
// in the neighbour table, Resolve returns the partial Resolution and a
// *NeighborError that unwraps to syscall.ETIMEDOUT and names the route
// and the neighbour state it saw.
//
// Resolution.Frame serializes, with roce/, the UD SEND_ONLY frame a send
// through this AH produces for given QPNs, Q_Key, PSN and payload, with
// the IPv4 checksum and the ICRC. The lab tests check it byte for byte
// against what Soft-RoCE sends.
//
// # AH from a work completion
//
// FromWC is ibv_init_ah_from_wc: from a receive completion (WC) and the
// 40-byte GRH buffer, the Attr that answers the sender. Behaviour selects
// the kernel's ib_init_ah_attr_from_wc or rdma-core's ibv_init_ah_from_wc,
// which differ in how IPv4 is told from IPv6 (network_hdr_type or the
// IPv4 checksum test, with rdma-core folding the carry only once), the hop
// limit, the traffic class of IPv4, a missing GRH flag, VLAN matching and
// multicast destinations. HeaderVersion exposes the detection alone.
//
// # Real address handles
//
// Create opens an RDMA device, creates a UD QP and the AH with
// ibv_create_ah, and returns a Handle that sends and receives single
// datagrams and answers them (Handle.Answer runs FromWC). It needs a
// binary built with -tags ibverbs (cgo, libibverbs-dev); otherwise it
// returns ErrNotBuilt. The cgo lives in internal/verbs.
//
// docs/ah.md explains every EINVAL and ETIMEDOUT cause and what the kernel
// rewrites, for users; `roce-probe ah` is the command-line front end.
package ah
