// Package lab builds and describes the Soft-RoCE lab: a real RoCE v2 stack
// (rdma_rxe) on a veth pair with VLAN and QinQ devices, run natively or in a
// Debian kernel under qemu, that lab tests (build tag lab) send and capture
// frames through. See docs/lab.md.
package lab
