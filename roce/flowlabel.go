package roce

// Flow label and UDP source port rules of RoCE v2 (the kernel's
// include/rdma/ib_verbs.h, rdma-core's libibverbs/verbs.h).

// MinUDPSourcePort is the lowest RoCE v2 UDP source port the kernel and
// rdma-core use (IB_ROCE_UDP_ENCAP_VALID_PORT_MIN); the highest is 0xFFFF.
const MinUDPSourcePort = 0xC000

// FlowLabelToUDPSourcePort folds a 20-bit flow label into a UDP source
// port in 0xC000-0xFFFF (rdma_flow_label_to_udp_sport): the low 14 bits
// XOR the high 6 bits, with the top two bits set.
func FlowLabelToUDPSourcePort(fl uint32) uint16 {
	lo := fl & 0x3FFF
	hi := fl & 0xFC000
	lo ^= hi >> 14
	return uint16(lo | MinUDPSourcePort)
}

// FlowLabelFromQPNs returns the flow label the kernel derives from the two
// QPNs of a connection when none is set (rdma_calc_flow_label). It is
// symmetric: both ends compute the same label.
func FlowLabelFromQPNs(lqpn, rqpn uint32) uint32 {
	v := uint64(lqpn) * uint64(rqpn)
	v ^= v >> 20
	v ^= v >> 40
	return uint32(v & 0xFFFFF)
}

// UDPSourcePort returns the source port for a flow label, or for the QPN
// pair when the flow label is 0 (rdma_get_udp_sport).
func UDPSourcePort(fl, lqpn, rqpn uint32) uint16 {
	if fl == 0 {
		fl = FlowLabelFromQPNs(lqpn, rqpn)
	}
	return FlowLabelToUDPSourcePort(fl)
}

// RXESourcePort returns the UDP source port Soft-RoCE (rxe) gives a QP when
// it is created: 0xC000 + (hash_32(qpn, 14) & 0x3FFF). Every UD packet of
// the QP uses it; RC/UC QPs switch to UDPSourcePort(flow label, qpn,
// dest qpn) when modified to RTR with a GRH.
func RXESourcePort(qpn uint32) uint16 {
	h := (qpn * 0x61C88647) >> (32 - 14)
	return uint16(MinUDPSourcePort + h&0x3FFF)
}
