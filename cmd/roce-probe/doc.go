// Command roce-probe shows what RDMA traffic will look like on Ethernet —
// GID tables, VLANs, priorities, address handles — and checks it on the wire.
//
//	roce-probe gids                      the GID tables, each entry with netdev, VLAN, type, address
//	roce-probe select --dst ADDR         which GID index to use for a destination, and why
//	roce-probe qos / check               priorities, PFC, trust; a lossless verdict for one flow
//	roce-probe ah                        an address handle resolved to the exact frame it sends
//	roce-probe decode FILE               RoCE packets of a capture, with ICRC verification
//	roce-probe send / listen             active probes: which markings arrive at the other side
//	roce-probe lab up|down|status        a Soft-RoCE device on a veth pair
//
// Every command takes -o json. Exit status: 0 success, 1 a finding (an
// invalid ICRC with --fail-on-bad-icrc, a lossy flow, no reply), 2 bad
// input. See the guides in docs/.
package main
