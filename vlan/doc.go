// Package vlan describes netdevs through netlink: link kind, the chain of
// VLAN tags down to an RDMA device's netdev, VLAN IDs, egress and ingress
// QoS maps, MAC, MTU, state and network namespace.
package vlan
