// Package vlan describes one network namespace as RoCE sees it: its
// netdevs (kind: physical, veth, VLAN, macvlan, bond, ...; MAC, MTU,
// operational state, ifindex, addresses), the chain of VLAN tags a frame
// sent through each carries down to the device it leaves through (802.1Q
// and 802.1ad, outermost first, with every VLAN device's egress and
// ingress QoS maps), the VLAN ID the RDMA stack derives for a GID's
// netdev, and the routes, neighbours and TTL sysctls that decide where a
// RoCE v2 packet goes and with which TTL.
//
// A Namespace is plain data: roce-probe's collector (package collect) reads
// it from rtnetlink, Decode reads it from JSON. Everything here works on
// it and never touches the kernel, so it builds and runs on any system:
// Describe is the one walk down a stack of devices, RouteGet and RouteTo
// the route lookups (`ip route get`, and the lookup rdma_cm and
// ibv_create_ah make with the GID's netdev as output device), Neighbor the
// neighbour table.
package vlan
