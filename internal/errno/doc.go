// Package errno names the errnos roce-probe reports: the ones ibv_create_ah,
// the verbs calls and a route lookup fail with ("EINVAL", "ENETUNREACH",
// ...), as a RoCE user reads them in rdma-core's man pages and the kernel's
// sources. ah.ErrnoName, vlan's route errors and internal/verbs use it.
package errno
