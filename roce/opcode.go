package roce

import (
	"fmt"

	"github.com/gopacket/gopacket"
)

// Opcode is the BTH OpCode: a transport prefix (the top 3 bits) and an
// operation (the low 5 bits). The opcode alone decides which extension
// headers follow the BTH (IBTA vol. 1, table 38; the kernel's
// include/rdma/ib_pack.h and drivers/infiniband/sw/rxe/rxe_opcode.c).
type Opcode uint8

// Transport is the transport service named by the top 3 bits of an Opcode.
type Transport uint8

// Transports (Opcode >> 5).
const (
	TransportRC     Transport = 0 // reliable connection, opcodes 0x00-0x1F
	TransportUC     Transport = 1 // unreliable connection, 0x20-0x3F
	TransportRD     Transport = 2 // reliable datagram, 0x40-0x5F
	TransportUD     Transport = 3 // unreliable datagram, 0x60-0x7F
	TransportCNP    Transport = 4 // congestion notification, 0x80-0x9F (RoCE v2 CNP is 0x81)
	TransportXRC    Transport = 5 // extended reliable connection, 0xA0-0xBF
	TransportVendor Transport = 6 // manufacturer specific, 0xC0-0xFF (6 and 7)
)

var transportNames = [...]string{"RC", "UC", "RD", "UD", "CNP", "XRC", "VENDOR", "VENDOR"}

// String returns "RC", "UC", "RD", "UD", "CNP", "XRC" or "VENDOR".
func (t Transport) String() string {
	if int(t) < len(transportNames) {
		return transportNames[t]
	}
	return fmt.Sprintf("Transport(%d)", uint8(t))
}

// Operations: the low 5 bits of an Opcode.
const (
	OpSendFirst                  = 0x00
	OpSendMiddle                 = 0x01
	OpSendLast                   = 0x02
	OpSendLastWithImmediate      = 0x03
	OpSendOnly                   = 0x04
	OpSendOnlyWithImmediate      = 0x05
	OpRDMAWriteFirst             = 0x06
	OpRDMAWriteMiddle            = 0x07
	OpRDMAWriteLast              = 0x08
	OpRDMAWriteLastWithImmediate = 0x09
	OpRDMAWriteOnly              = 0x0A
	OpRDMAWriteOnlyWithImmediate = 0x0B
	OpRDMAReadRequest            = 0x0C
	OpRDMAReadResponseFirst      = 0x0D
	OpRDMAReadResponseMiddle     = 0x0E
	OpRDMAReadResponseLast       = 0x0F
	OpRDMAReadResponseOnly       = 0x10
	OpAcknowledge                = 0x11
	OpAtomicAcknowledge          = 0x12
	OpCompareSwap                = 0x13
	OpFetchAdd                   = 0x14
	OpResync                     = 0x15
	OpSendLastWithInvalidate     = 0x16
	OpSendOnlyWithInvalidate     = 0x17
	OpFlush                      = 0x1C
	OpAtomicWrite                = 0x1D
)

// Frequently used opcodes. Every other opcode is Opcode(prefix | operation),
// for example Opcode(0x20|OpRDMAWriteOnly) is UC_RDMA_WRITE_ONLY.
const (
	OpcodeRCSendOnly              Opcode = 0x04
	OpcodeRCSendOnlyWithImmediate Opcode = 0x05
	OpcodeRCRDMAWriteOnly         Opcode = 0x0A
	OpcodeRCRDMAReadRequest       Opcode = 0x0C
	OpcodeRCAcknowledge           Opcode = 0x11
	OpcodeUDSendOnly              Opcode = 0x64
	OpcodeUDSendOnlyWithImmediate Opcode = 0x65
	OpcodeCNP                     Opcode = 0x81
)

// OpcodeInfo describes an opcode: its name, transport and the extension
// headers that follow the BTH, in wire order.
type OpcodeInfo struct {
	// Name is the kernel's name without IB_OPCODE_, e.g. "UD_SEND_ONLY",
	// "CNP", or "UNKNOWN_0xNN" for a reserved or vendor opcode.
	Name      string
	Transport Transport
	// Known reports whether the opcode is defined (not reserved or vendor).
	Known bool
	// Headers lists the extension headers after the BTH, in order, as layer
	// types (LayerTypeRDETH, LayerTypeDETH, LayerTypeRETH, ...).
	Headers []gopacket.LayerType
	// HeaderLen is the total length of Headers in bytes.
	HeaderLen int
	// HasPayload reports whether the packet carries a data payload (always
	// false for requests such as RDMA READ, atomics and ACKs).
	HasPayload bool
}

var opcodeTable [256]OpcodeInfo

var operationNames = map[uint8]string{
	OpSendFirst:                  "SEND_FIRST",
	OpSendMiddle:                 "SEND_MIDDLE",
	OpSendLast:                   "SEND_LAST",
	OpSendLastWithImmediate:      "SEND_LAST_WITH_IMMEDIATE",
	OpSendOnly:                   "SEND_ONLY",
	OpSendOnlyWithImmediate:      "SEND_ONLY_WITH_IMMEDIATE",
	OpRDMAWriteFirst:             "RDMA_WRITE_FIRST",
	OpRDMAWriteMiddle:            "RDMA_WRITE_MIDDLE",
	OpRDMAWriteLast:              "RDMA_WRITE_LAST",
	OpRDMAWriteLastWithImmediate: "RDMA_WRITE_LAST_WITH_IMMEDIATE",
	OpRDMAWriteOnly:              "RDMA_WRITE_ONLY",
	OpRDMAWriteOnlyWithImmediate: "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
	OpRDMAReadRequest:            "RDMA_READ_REQUEST",
	OpRDMAReadResponseFirst:      "RDMA_READ_RESPONSE_FIRST",
	OpRDMAReadResponseMiddle:     "RDMA_READ_RESPONSE_MIDDLE",
	OpRDMAReadResponseLast:       "RDMA_READ_RESPONSE_LAST",
	OpRDMAReadResponseOnly:       "RDMA_READ_RESPONSE_ONLY",
	OpAcknowledge:                "ACKNOWLEDGE",
	OpAtomicAcknowledge:          "ATOMIC_ACKNOWLEDGE",
	OpCompareSwap:                "COMPARE_SWAP",
	OpFetchAdd:                   "FETCH_ADD",
	OpResync:                     "RESYNC",
	OpSendLastWithInvalidate:     "SEND_LAST_WITH_INVALIDATE",
	OpSendOnlyWithInvalidate:     "SEND_ONLY_WITH_INVALIDATE",
	OpFlush:                      "FLUSH",
	OpAtomicWrite:                "ATOMIC_WRITE",
}

// operationHeaders returns the extension headers of an RC/UC/XRC operation
// (without the RD, UD or XRC prefix headers) and whether it carries a payload.
func operationHeaders(op uint8) ([]gopacket.LayerType, bool) {
	switch op {
	case OpSendFirst, OpSendMiddle, OpSendLast, OpSendOnly,
		OpRDMAWriteMiddle, OpRDMAWriteLast, OpRDMAReadResponseMiddle:
		return nil, true
	case OpSendLastWithImmediate, OpSendOnlyWithImmediate, OpRDMAWriteLastWithImmediate:
		return []gopacket.LayerType{LayerTypeImmDt}, true
	case OpRDMAWriteFirst, OpRDMAWriteOnly, OpAtomicWrite:
		return []gopacket.LayerType{LayerTypeRETH}, true
	case OpRDMAWriteOnlyWithImmediate:
		return []gopacket.LayerType{LayerTypeRETH, LayerTypeImmDt}, true
	case OpRDMAReadRequest:
		return []gopacket.LayerType{LayerTypeRETH}, false
	case OpRDMAReadResponseFirst, OpRDMAReadResponseLast, OpRDMAReadResponseOnly:
		return []gopacket.LayerType{LayerTypeAETH}, true
	case OpAcknowledge:
		return []gopacket.LayerType{LayerTypeAETH}, false
	case OpAtomicAcknowledge:
		return []gopacket.LayerType{LayerTypeAETH, LayerTypeAtomicAckETH}, false
	case OpCompareSwap, OpFetchAdd:
		return []gopacket.LayerType{LayerTypeAtomicETH}, false
	case OpSendLastWithInvalidate, OpSendOnlyWithInvalidate:
		return []gopacket.LayerType{LayerTypeIETH}, true
	case OpFlush:
		return []gopacket.LayerType{LayerTypeFETH, LayerTypeRETH}, false
	case OpResync:
		return nil, false
	}
	return nil, true
}

func isResponse(op uint8) bool {
	return op >= OpRDMAReadResponseFirst && op <= OpAtomicAcknowledge
}

func headerLen(t gopacket.LayerType) int {
	switch t {
	case LayerTypeRDETH, LayerTypeAETH, LayerTypeImmDt, LayerTypeIETH, LayerTypeXRCETH, LayerTypeFETH:
		return 4
	case LayerTypeDETH, LayerTypeAtomicAckETH:
		return 8
	case LayerTypeRETH, LayerTypeCNP:
		return 16
	case LayerTypeAtomicETH:
		return 28
	}
	return 0
}

func initOpcodes() {
	for i := 0; i < 256; i++ {
		opcodeTable[i] = OpcodeInfo{
			Name:       fmt.Sprintf("UNKNOWN_0x%02X", i),
			Transport:  Transport(i >> 5),
			HasPayload: true,
		}
		if i >= 0xC0 {
			opcodeTable[i].Transport = TransportVendor
		}
	}
	define := func(code int, name string, hdrs []gopacket.LayerType, payload bool) {
		n := 0
		for _, h := range hdrs {
			n += headerLen(h)
		}
		opcodeTable[code] = OpcodeInfo{Name: name, Transport: Transport(code >> 5), Known: true,
			Headers: hdrs, HeaderLen: n, HasPayload: payload}
	}
	prefix := func(pre gopacket.LayerType, hdrs []gopacket.LayerType) []gopacket.LayerType {
		return append([]gopacket.LayerType{pre}, hdrs...)
	}
	for op, name := range operationNames {
		hdrs, payload := operationHeaders(op)
		o := int(op)
		// RC: every operation except RD's RESYNC.
		if op != OpResync {
			define(0x00|o, "RC_"+name, hdrs, payload)
		}
		// UC: SEND and RDMA WRITE only.
		if op <= OpRDMAWriteOnlyWithImmediate {
			define(0x20|o, "UC_"+name, hdrs, payload)
		}
		// RD: RDETH on every packet, DETH on requests (IBTA 9.3, Wireshark's
		// header sequences). FLUSH/ATOMIC_WRITE are RC only in Linux.
		if op <= OpResync {
			h := prefix(LayerTypeRDETH, nil)
			if !isResponse(op) {
				h = append(h, LayerTypeDETH)
			}
			define(0x40|o, "RD_"+name, append(h, hdrs...), payload)
		}
		// UD: SEND_ONLY and SEND_ONLY_WITH_IMMEDIATE, with a DETH.
		if op == OpSendOnly || op == OpSendOnlyWithImmediate {
			define(0x60|o, "UD_"+name, prefix(LayerTypeDETH, hdrs), payload)
		}
		// XRC: XRCETH on requests; responses are the RC layout.
		if op <= OpSendOnlyWithInvalidate && op != OpResync {
			h := hdrs
			if !isResponse(op) {
				h = prefix(LayerTypeXRCETH, hdrs)
			}
			define(0xA0|o, "XRC_"+name, h, payload)
		}
	}
	define(int(OpcodeCNP), "CNP", []gopacket.LayerType{LayerTypeCNP}, false)
}

// Info returns the opcode's name, transport and extension headers.
func (o Opcode) Info() *OpcodeInfo { return &opcodeTable[o] }

// String returns the opcode's name, e.g. "UD_SEND_ONLY".
func (o Opcode) String() string { return opcodeTable[o].Name }

// Transport returns the transport service named by the top 3 bits.
func (o Opcode) Transport() Transport { return opcodeTable[o].Transport }

// Operation returns the low 5 bits of the opcode (OpSendOnly, ...).
func (o Opcode) Operation() uint8 { return uint8(o) & 0x1F }
