package roce

import (
	"fmt"

	"github.com/gopacket/gopacket"
)

// AETH is the ACK Extended Transport Header (4 bytes) of ACKNOWLEDGE,
// ATOMIC ACKNOWLEDGE and RDMA READ RESPONSE FIRST/LAST/ONLY packets:
// syndrome (8) | MSN (24) (IBTA vol. 1, 9.3, the extended transport
// headers: "ACK Extended Transport Header"). The syndrome's bit 7 is reserved, bits 6-5 its type and bits
// 4-0 a value whose meaning the type gives: an ACK with a credit count, an
// RNR NAK with a timer, or a NAK with an error code (Kind, Credits,
// RNRTimer, NAKCode; the kernel's rxe_hdr.h enum aeth_syndrome,
// AETH_TYPE_MASK 0xe0: ACK 0x00, RNR NAK 0x20, reserved 0x40, NAK 0x60;
// Wireshark's infiniband.aeth.syndrome.opcode, .credit_count, .timer and
// .error_code split it the same way, which TestTsharkInterop checks).
//
// The MSN (message sequence number) is the responder's count of request
// messages it has completed, modulo 2^24: the requester learns from it how
// many messages an ACK acknowledges (rxe_resp.c increments qp->resp.msn
// per completed SEND, RDMA WRITE, READ and atomic, and send_common_ack puts
// it in the AETH; Linux 6.1.192 and 7.3.4).
type AETH struct {
	extHeader
	Syndrome uint8
	MSN      uint32 // message sequence number, 24 bits
}

// AckKind is the type of an AETH syndrome (its bits 6-5).
type AckKind uint8

// AETH syndrome types.
const (
	AckKindACK      AckKind = 0 // 0b00: ACK, low 5 bits = credit count
	AckKindRNRNAK   AckKind = 1 // 0b01: receiver not ready NAK, low 5 bits = timer
	AckKindReserved AckKind = 2 // 0b10: reserved
	AckKindNAK      AckKind = 3 // 0b11: NAK, low 5 bits = NAK code
)

// String returns "ACK", "RNR_NAK", "RESERVED" or "NAK".
func (k AckKind) String() string {
	switch k {
	case AckKindACK:
		return "ACK"
	case AckKindRNRNAK:
		return "RNR_NAK"
	case AckKindReserved:
		return "RESERVED"
	case AckKindNAK:
		return "NAK"
	}
	return fmt.Sprintf("AckKind(%d)", uint8(k))
}

// NAKCode is the low 5 bits of a NAK syndrome.
type NAKCode uint8

// NAK codes (IBTA vol. 1, the NAK code table of the AETH; rxe_hdr.h
// AETH_NAK_PSN_SEQ_ERROR 0x60, AETH_NAK_INVALID_REQ 0x61,
// AETH_NAK_REM_ACC_ERR 0x62, AETH_NAK_REM_OP_ERR 0x63 with the type bits).
const (
	NAKPSNSequenceError     NAKCode = 0
	NAKInvalidRequest       NAKCode = 1
	NAKRemoteAccessError    NAKCode = 2
	NAKRemoteOperationalErr NAKCode = 3
	NAKInvalidRDRequest     NAKCode = 4
)

// CreditsUnlimited is the ACK credit count meaning "no end-to-end flow
// control" (invalid credit count).
const CreditsUnlimited uint8 = 0x1F

const (
	syndromeKindShift   = 5
	syndromeValueMask   = 0x1F
	rnrTimerTableLength = 32
)

var nakNames = [...]string{"PSN_SEQUENCE_ERROR", "INVALID_REQUEST", "REMOTE_ACCESS_ERROR", "REMOTE_OPERATIONAL_ERROR", "INVALID_RD_REQUEST"}

// String returns the NAK code's name, e.g. "PSN_SEQUENCE_ERROR".
func (c NAKCode) String() string {
	if int(c) < len(nakNames) {
		return nakNames[c]
	}
	return fmt.Sprintf("RESERVED_NAK_%d", uint8(c))
}

// rnrTimerMicros is the RNR NAK timer table (IBTA table 46; the kernel's
// enum ib_rnr_timeout) in microseconds, indexed by the 5-bit timer value.
var rnrTimerMicros = [rnrTimerTableLength]uint32{
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920,
	2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880,
	163840, 245760, 327680, 491520,
}

// Kind returns the syndrome type.
func (a *AETH) Kind() AckKind { return AckKind(a.Syndrome >> syndromeKindShift & 0x3) }

// Credits returns the credit count of an ACK (0x1F means unlimited).
func (a *AETH) Credits() uint8 { return a.Syndrome & syndromeValueMask }

// RNRTimer returns the 5-bit timer of an RNR NAK.
func (a *AETH) RNRTimer() uint8 { return a.Syndrome & syndromeValueMask }

// RNRTimerMicros returns the RNR NAK timer in microseconds.
func (a *AETH) RNRTimerMicros() uint32 { return rnrTimerMicros[a.Syndrome&syndromeValueMask] }

// NAKCode returns the code of a NAK.
func (a *AETH) NAKCode() NAKCode { return NAKCode(a.Syndrome & syndromeValueMask) }

// Describe returns the decoded syndrome: "ACK credits=31 (unlimited)",
// "RNR_NAK timer=14 (1.28 ms)" or "NAK REMOTE_ACCESS_ERROR".
func (a *AETH) Describe() string {
	switch a.Kind() {
	case AckKindACK:
		if a.Credits() == CreditsUnlimited {
			return "ACK credits=31 (unlimited)"
		}
		return fmt.Sprintf("ACK credits=%d", a.Credits())
	case AckKindRNRNAK:
		us := a.RNRTimerMicros()
		return fmt.Sprintf("RNR_NAK timer=%d (%d.%02d ms)", a.RNRTimer(), us/1000, us%1000/10)
	case AckKindNAK:
		return "NAK " + a.NAKCode().String()
	}
	return fmt.Sprintf("RESERVED syndrome=%#02x", a.Syndrome)
}

// LayerType returns LayerTypeAETH.
func (a *AETH) LayerType() gopacket.LayerType { return LayerTypeAETH }

// CanDecode returns LayerTypeAETH.
func (a *AETH) CanDecode() gopacket.LayerClass { return LayerTypeAETH }

// NextLayerType returns the header the opcode calls for after the AETH.
func (a *AETH) NextLayerType() gopacket.LayerType { return a.next(LayerTypeAETH) }

// DecodeFromBytes decodes the 4 AETH bytes.
func (a *AETH) DecodeFromBytes(data []byte, df gopacket.DecodeFeedback) error {
	if err := a.split("AETH", data, 4, df); err != nil {
		return err
	}
	a.Syndrome = data[0]
	a.MSN = get24(data[1:4])
	return nil
}

// SerializeTo writes the 4 AETH bytes.
func (a *AETH) SerializeTo(buf gopacket.SerializeBuffer, opts gopacket.SerializeOptions) error {
	if a.MSN > 0xFFFFFF {
		return fmt.Errorf("AETH: MSN %#x out of range: want 0..0xffffff", a.MSN)
	}
	b, err := buf.PrependBytes(4)
	if err != nil {
		return err
	}
	b[0] = a.Syndrome
	put24(b[1:4], a.MSN)
	return nil
}
