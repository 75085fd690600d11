// Package vlan describes netdevs through rtnetlink: link kind (physical,
// veth, VLAN, macvlan, bond, ...), the chain of VLAN tags down to the
// device frames leave through (802.1Q and 802.1ad), the VLAN ID the RDMA
// stack derives for a GID's netdev, egress and ingress QoS maps, MAC, MTU,
// operational state, ifindex and network namespace.
//
// Access to the kernel is split from the logic: Handle (a vishvananda/netlink
// handle bound to one namespace) produces a Snapshot, a plain struct that
// can also be decoded from JSON; everything else (Describe, IsUpper,
// ConnectedRoute) works on snapshots, so it is tested with fixtures on
// machines without VLAN support. Reading the caller's own namespace needs
// no privileges; Open with a namespace name needs CAP_SYS_ADMIN.
package vlan
