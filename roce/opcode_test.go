package roce

import (
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
)

// The headers after the BTH of a sample of opcodes, written out by hand
// from the InfiniBand transport header rules the kernel encodes in
// drivers/infiniband/sw/rxe/rxe_opcode.c, rxe_opcode[] (Linux 6.1; FLUSH from
// Linux 6.12; XRC from the rxe XRC patches posted to linux-rdma, not merged
// as of 6.12) and include/rdma/ib_pack.h:
// RETH on the first/only packet of RDMA WRITE and on READ requests, AETH on
// ACKs and on the first/last/only READ responses, ImmDt and IETH last,
// RDETH then DETH on RD, DETH on UD, XRCETH first on XRC, FETH then RETH
// on FLUSH. Not derived from opcodeTable.
func TestOpcodeHeaders(t *testing.T) {
	L := func(ls ...gopacket.LayerType) []gopacket.LayerType { return ls }
	for _, tc := range []struct {
		op      Opcode
		name    string
		headers []gopacket.LayerType
		hdrLen  int
		payload bool
	}{
		{0x00, "RC_SEND_FIRST", nil, 0, true},
		{0x03, "RC_SEND_LAST_WITH_IMMEDIATE", L(LayerTypeImmDt), 4, true},
		{0x06, "RC_RDMA_WRITE_FIRST", L(LayerTypeRETH), 16, true},
		{0x07, "RC_RDMA_WRITE_MIDDLE", nil, 0, true},
		{0x0B, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", L(LayerTypeRETH, LayerTypeImmDt), 20, true},
		{0x0C, "RC_RDMA_READ_REQUEST", L(LayerTypeRETH), 16, false},
		{0x0D, "RC_RDMA_READ_RESPONSE_FIRST", L(LayerTypeAETH), 4, true},
		{0x0E, "RC_RDMA_READ_RESPONSE_MIDDLE", nil, 0, true},
		{0x10, "RC_RDMA_READ_RESPONSE_ONLY", L(LayerTypeAETH), 4, true},
		{0x11, "RC_ACKNOWLEDGE", L(LayerTypeAETH), 4, false},
		{0x12, "RC_ATOMIC_ACKNOWLEDGE", L(LayerTypeAETH, LayerTypeAtomicAckETH), 12, false},
		{0x13, "RC_COMPARE_SWAP", L(LayerTypeAtomicETH), 28, false},
		{0x17, "RC_SEND_ONLY_WITH_INVALIDATE", L(LayerTypeIETH), 4, true},
		{0x1C, "RC_FLUSH", L(LayerTypeFETH, LayerTypeRETH), 20, false},
		{0x2A, "UC_RDMA_WRITE_ONLY", L(LayerTypeRETH), 16, true},
		{0x44, "RD_SEND_ONLY", L(LayerTypeRDETH, LayerTypeDETH), 12, true},
		{0x4C, "RD_RDMA_READ_REQUEST", L(LayerTypeRDETH, LayerTypeDETH, LayerTypeRETH), 28, false},
		{0x64, "UD_SEND_ONLY", L(LayerTypeDETH), 8, true},
		{0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", L(LayerTypeDETH, LayerTypeImmDt), 12, true},
		{0xA4, "XRC_SEND_ONLY", L(LayerTypeXRCETH), 4, true},
		{0xAA, "XRC_RDMA_WRITE_ONLY", L(LayerTypeXRCETH, LayerTypeRETH), 20, true},
	} {
		info := tc.op.Info()
		if !info.Known || info.Name != tc.name || !reflect.DeepEqual(info.Headers, tc.headers) ||
			info.HeaderLen != tc.hdrLen || info.HasPayload != tc.payload {
			t.Errorf("%#02x: %s headers %v (%d bytes) payload %v; want %s %v (%d bytes) payload %v",
				uint8(tc.op), info.Name, info.Headers, info.HeaderLen, info.HasPayload, tc.name, tc.headers, tc.hdrLen, tc.payload)
		}
	}
	for _, op := range []Opcode{0x15, 0x18, 0x1B, 0x1E, 0x38, 0x66, 0xE0} {
		if op.Info().Known {
			t.Errorf("%#02x is reserved or vendor-specific, but Known", uint8(op))
		}
	}
}
