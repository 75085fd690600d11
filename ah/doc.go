// Package ah models RDMA address handles (struct ibv_ah_attr), validates
// them with the rules RoCE drivers apply, resolves them to the exact frame
// they put on the wire, derives them from work completions, and — with the
// build tag ibverbs — creates them through libibverbs.
package ah
