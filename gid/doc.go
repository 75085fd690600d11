// Package gid reads RDMA GID tables from sysfs and maps every entry to its
// netdev, VLAN, RoCE version and address; predicts the table the kernel
// builds for a set of netdevs; and selects the source GID index for a
// destination, with the reason every other entry was rejected.
//
// GID is the one type for a 128-bit GID everywhere in roce-probe (GRHs,
// address handles, tables); Type is the GID type (IB, RoCE v1, RoCE v2);
// Entry is one table slot.
//
// Reading: Sysfs reads /sys/class/infiniband (or a fixture tree) without
// privileges. Each entry's GID, type and netdev are read together and read
// again if the slot changed in between. Empty slots (zero GID; EINVAL from
// gid_attrs) are entries with Empty set, not errors. Map then adds what the
// netdev says (VLAN chain, MAC, MTU, namespace) from a vlan.Snapshot.
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
