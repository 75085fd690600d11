// Package gid models RDMA GID tables and maps every entry to its netdev,
// VLAN chain, RoCE version and address; predicts the table the kernel
// builds for a set of netdevs; and selects the source GID index for a
// destination, with the reason every other entry was rejected. It reads
// nothing from the kernel (roce-probe's host snapshot does) and builds on
// every system.
//
// GID is the one type for a 128-bit GID everywhere in roce-probe (GRHs,
// address handles, tables); Type is the GID type (IB, RoCE v1, RoCE v2);
// Entry is one table slot.
//
// Tables: NewPort builds a port's table from the slots sysfs shows in use
// (/sys/class/infiniband/<dev>/ports/<p>/gids and gid_attrs, read by the
// host snapshot); empty slots are entries with Empty set. Map then adds
// what the netdev says (VLAN chain outermost first, the kernel's own VLAN
// ID, MAC, MTU, namespace) from a vlan.Namespace.
//
// Predicting: Predict applies the kernel's rules (roce_gid_mgmt.c and
// cache.c: default GIDs from the MAC in reserved slots, one entry per
// supported type and address, lowest free slot first) to a snapshot, and
// Diff reports stale, missing, moved and unseen entries.
//
// Selecting: Select picks the source GID index for a destination and
// preferences and explains every rejection; RDMACM reproduces what the
// kernel's rdma_cm picks for an IP destination; NCCL, UCX and Perftest
// reproduce those tools' automatic choices (see docs/gid-selection.md).
package gid
