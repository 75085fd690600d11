// Package gid reads RDMA GID tables from sysfs and maps every entry to its
// netdev, VLAN, RoCE version and address; predicts the table the kernel
// builds for a set of netdevs; and selects the source GID index for a
// destination, with the reason every other entry was rejected.
//
// GID is the one type for a 128-bit GID everywhere in roce-probe (GRHs,
// address handles, tables). Type is the GID type (IB, RoCE v1, RoCE v2).
package gid
