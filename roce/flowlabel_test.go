package roce

import "testing"

// Vectors computed by hand from include/rdma/ib_verbs.h, rdma_calc_flow_label
// and rdma_flow_label_to_udp_sport, and from drivers/infiniband/sw/rxe/rxe_qp.c,
// rxe_qp_init_req (hash_32 of include/linux/hash.h) (Linux 6.1).
func TestFlowLabelVectors(t *testing.T) {
	for _, v := range []struct {
		l, r, fl uint32
		port     uint16
	}{
		{0x11, 0x12, 0x00132, 0xC132},
		{0x1234, 0x5678, 0x60002, 0xC01A},
		{0xABCDEF, 0x123456, 0xAC3E3, 0xC3C8},
		{0, 0x1234, 0, 0xC000},
		{0x1234, 0, 0, 0xC000},
	} {
		if got := FlowLabelFromQPNs(v.l, v.r); got != v.fl {
			t.Errorf("FlowLabelFromQPNs(%#x, %#x) = %#x, want %#x", v.l, v.r, got, v.fl)
		}
		if got := FlowLabelFromQPNs(v.r, v.l); got != v.fl {
			t.Errorf("FlowLabelFromQPNs(%#x, %#x) = %#x, want %#x (symmetric)", v.r, v.l, got, v.fl)
		}
		if got := UDPSourcePort(0, v.l, v.r); got != v.port {
			t.Errorf("UDPSourcePort(0, %#x, %#x) = %#x, want %#x", v.l, v.r, got, v.port)
		}
	}
	for _, v := range []struct {
		fl   uint32
		port uint16
	}{{0x03FFF, 0xFFFF}, {0x04000, 0xC001}, {0xFFFFF, 0xFFC0}, {0x12345, 0xE341}} {
		if got := FlowLabelToUDPSourcePort(v.fl); got != v.port {
			t.Errorf("FlowLabelToUDPSourcePort(%#x) = %#x, want %#x", v.fl, got, v.port)
		}
		if got := UDPSourcePort(v.fl, 0x11, 0x12); got != v.port {
			t.Errorf("UDPSourcePort(%#x, ...) = %#x, want %#x (a set flow label wins)", v.fl, got, v.port)
		}
	}
	if got := RXESourcePort(17); got != 0xDF94 {
		t.Errorf("RXESourcePort(17) = %#x, want 0xdf94", got)
	}
	for q := uint32(0); q < 5000; q += 7 {
		if p := RXESourcePort(q); p < 0xC000 {
			t.Fatalf("RXESourcePort(%d) = %#x, below 0xC000", q, p)
		}
	}
}
