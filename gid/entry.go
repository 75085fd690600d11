package gid

// Entry is one slot of a port's GID table. The gid/ and vlan/ work extends
// it with the netdev mapping (VLAN chain, MAC, MTU, namespace); every
// package uses this one type for a table entry.
type Entry struct {
	Device string `json:"device"` // RDMA device, e.g. "mlx5_0", "rxe0"
	Port   int    `json:"port"`   // port number, from 1
	Index  int    `json:"index"`  // GID index within the port's table
	GID    GID    `json:"gid"`
	Type   Type   `json:"type"`
	Netdev string `json:"netdev,omitempty"` // gid_attrs/ndevs/<index>: the netdev that owns the address
	Empty  bool   `json:"empty"`            // zero GID: the slot is unused
}
