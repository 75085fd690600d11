package census

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// Builders of netlink messages laid out as the kernel's nla_put and
// nlmsg_put write them (include/net/netlink.h): 4-byte aligned
// attributes, native byte order.

func nla(typ uint16, val []byte) []byte {
	b := make([]byte, 4, 4+len(val)+3)
	binary.NativeEndian.PutUint16(b, uint16(4+len(val)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func nest(typ uint16, attrs ...[]byte) []byte {
	var v []byte
	for _, a := range attrs {
		v = append(v, a...)
	}
	return nla(typ, v)
}

func le32(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
func cstr(s string) []byte { return append([]byte(s), 0) }

func nlmsg(typ uint16, attrs ...[]byte) []byte {
	var v []byte
	for _, a := range attrs {
		v = append(v, a...)
	}
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b, uint32(16+len(v)))
	binary.NativeEndian.PutUint16(b[4:], typ)
	binary.NativeEndian.PutUint16(b[6:], 2) // NLM_F_MULTI
	return append(b, v...)
}

func done(errno int32) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b, 20)
	binary.NativeEndian.PutUint16(b[4:], nlmsgDone)
	binary.NativeEndian.PutUint32(b[16:], uint32(-errno))
	return b
}

func nlerr(errno int32, req []byte) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b, uint32(20+len(req)))
	binary.NativeEndian.PutUint16(b[4:], nlmsgError)
	binary.NativeEndian.PutUint32(b[16:], uint32(-errno))
	return append(b, req...)
}

func sockaddrIn(ip string, port uint16) []byte {
	b := make([]byte, sockaddrStorageLen)
	a := netip.MustParseAddr(ip)
	if a.Is4() {
		binary.NativeEndian.PutUint16(b, 2)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[4:], a.AsSlice())
	} else {
		binary.NativeEndian.PutUint16(b, 10)
		binary.BigEndian.PutUint16(b[2:], port)
		copy(b[8:], a.AsSlice())
	}
	return b
}

// qpReply is what fill_res_qp_entry writes for an RC QP of a process, a
// UD QP of another PID namespace's process and ib_core's GSI QP, on a
// device with one port.
func qpReply() []byte {
	typ := DumpQP.MessageType()
	return append(nlmsg(typ,
		nla(attrDevIndex, le32(3)), nla(attrDevName, cstr("rxe0")),
		nest(attrResQP,
			nest(attrResQPEntry, nla(attrPortIndex, le32(1)), nla(attrResLQPN, le32(1)), nla(attrResKernName, cstr("ib_core")),
				nla(attrResSQPSN, le32(0)), nla(attrResType, []byte{1}), nla(attrResState, []byte{3})),
			nest(attrResQPEntry, nla(attrPortIndex, le32(1)), nla(attrResLQPN, le32(17)), nla(attrResPDN, le32(4)), nla(attrResPID, le32(4242)),
				nla(attrResRQPN, le32(18)), nla(attrResRQPSN, le32(815)), nla(attrResSQPSN, le32(4711)), nla(attrResPathMig, []byte{0}),
				nla(attrResType, []byte{2}), nla(attrResState, []byte{3}),
				nest(attrDriver, nla(attrDriverString, cstr("sq_wqe_cnt")), nla(attrDriverPrint, []byte{1}), nla(attrDriverU32, le32(256)),
					nla(attrDriverString, cstr("owner")), nla(attrDriverString, cstr("user")),
					nla(attrDriverString, cstr("hwq")), nla(attrDriverU64, binary.NativeEndian.AppendUint64(nil, 0xffff888100000000)))),
			nest(attrResQPEntry, nla(attrResLQPN, le32(19)), nla(attrResPDN, le32(5)), nla(attrResSQPSN, le32(0)),
				nla(attrResType, []byte{4}), nla(attrResState, []byte{0})),
		)), done(0)...)
}

func TestDecodeQPs(t *testing.T) {
	c, err := Decode(qpReply())
	if err != nil {
		t.Fatal(err)
	}
	u := func(v uint32) *uint32 { return &v }
	i := func(v int64) *int64 { return &v }
	want := []QP{
		{Device: "rxe0", Port: 1, QPN: 1, Type: "GSI", State: "RTS", Owner: OwnerKernel, Comm: "ib_core", MarkingsReason: noMarkings},
		{Device: "rxe0", Port: 1, QPN: 17, DestQP: u(18), Type: "RC", State: "RTS", SQPSN: 4711, RQPSN: u(815), PathMigState: "MIGRATED",
			PDN: u(4), Owner: OwnerProcess, PID: 4242, MarkingsReason: noMarkings,
			Driver: []DriverAttr{{Name: "sq_wqe_cnt", Value: i(256), Hex: true}, {Name: "owner", Text: "user"}, {Name: "hwq", Text: "18446612686364999680"}}},
		{Device: "rxe0", QPN: 19, Type: "UD", State: "RESET", PDN: u(5), MarkingsReason: noMarkings},
	}
	if !reflect.DeepEqual(c.QPs, want) {
		t.Errorf("got %+v\nwant %+v", c.QPs, want)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
}

func TestDecodeCMIDs(t *testing.T) {
	typ := DumpCMID.MessageType()
	b := append(nlmsg(typ, nla(attrDevIndex, le32(3)), nla(attrDevName, cstr("rxe0")),
		nest(attrResCMID,
			nest(attrResCMIDEntry, nla(attrResPS, le32(0x106)), nla(attrResState, []byte{8}), nla(attrResSrcAddr, sockaddrIn("0.0.0.0", 7471)),
				nla(attrResCMIDN, le32(0)), nla(attrResPID, le32(100))),
			nest(attrResCMIDEntry, nla(attrPortIndex, le32(1)), nla(attrResLQPN, le32(21)), nla(attrResType, []byte{2}), nla(attrResPS, le32(0x106)),
				nla(attrResState, []byte{5}), nla(attrResSrcAddr, sockaddrIn("fd00::1", 40000)), nla(attrResDstAddr, sockaddrIn("fd00::2", 7471)),
				nla(attrResCMIDN, le32(1)), nla(attrResPID, le32(101))),
			nest(attrResCMIDEntry, nla(attrResPS, le32(0x13f)), nla(attrResState, []byte{0}), nla(attrResCMIDN, le32(2)), nla(attrResKernName, cstr("rdma_cm"))),
		)), done(0)...)
	c, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	u := func(v uint32) *uint32 { return &v }
	want := []CMID{
		{Device: "rxe0", PortSpace: "TCP", State: "LISTEN", Src: netip.MustParseAddrPort("0.0.0.0:7471"), Owner: OwnerProcess, PID: 100},
		{Device: "rxe0", Port: 1, ID: 1, QPN: u(21), QPType: "RC", PortSpace: "TCP", State: "CONNECT",
			Src: netip.MustParseAddrPort("[fd00::1]:40000"), Dst: netip.MustParseAddrPort("[fd00::2]:7471"), Owner: OwnerProcess, PID: 101},
		{Device: "rxe0", ID: 2, PortSpace: "IB", State: "IDLE", Owner: OwnerKernel, Comm: "rdma_cm"},
	}
	if !reflect.DeepEqual(c.CMIDs, want) {
		t.Errorf("got %+v\nwant %+v", c.CMIDs, want)
	}
}

// The raw dump without CAP_NET_ADMIN: rdma_nl_rcv_msg answers EPERM with
// an NLMSG_ERROR; a dump whose callback fails ends with an NLMSG_DONE
// carrying the error (net/netlink/af_netlink.c netlink_dump).
func TestDecodeKernelErrors(t *testing.T) {
	req := DumpQPRaw.Request(3, 7)
	_, err := Decode(nlerr(int32(syscall.EPERM), req))
	var ke *KernelError
	if !errors.As(err, &ke) || ke.Dump != DumpQPRaw || ke.Errno != int(syscall.EPERM) || !errors.Is(err, syscall.EPERM) {
		t.Errorf("NLMSG_ERROR EPERM: got %v (%#v)", err, ke)
	}
	c, err := Decode(append(qpReply()[:len(qpReply())-20], done(int32(syscall.EINVAL))...))
	if !errors.As(err, &ke) || ke.Errno != int(syscall.EINVAL) || len(c.QPs) != 3 {
		t.Errorf("NLMSG_DONE EINVAL: got %v, %d QPs", err, len(c.QPs))
	}
}

func TestDecodeRaw(t *testing.T) {
	b := append(nlmsg(DumpQPRaw.MessageType(), nla(attrDevIndex, le32(0)), nla(attrDevName, cstr("mlx5_0")),
		nest(attrResQP, nest(attrResQPEntry, nla(attrPortIndex, le32(1)), nla(attrResRaw, []byte{1, 2, 3, 4, 5})))), done(0)...)
	c, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []RawQP{{Device: "mlx5_0", Port: 1, Data: []byte{1, 2, 3, 4, 5}}}; !reflect.DeepEqual(c.RawQPs, want) {
		t.Errorf("got %+v, want %+v", c.RawQPs, want)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := qpReply()
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short header", good[:10], "shorter than a header"},
		{"length past end", good[:20], "length"},
		{"no LQPN", nlmsg(DumpQP.MessageType(), nla(attrDevName, cstr("rxe0")), nest(attrResQP, nest(attrResQPEntry, nla(attrResSQPSN, le32(0)), nla(attrResType, []byte{2}), nla(attrResState, []byte{0})))), "no RDMA_NLDEV_ATTR_RES_LQPN"},
		{"short u32", nlmsg(DumpQP.MessageType(), nla(attrDevName, cstr("rxe0")), nest(attrResQP, nest(attrResQPEntry, nla(attrResLQPN, []byte{1})))), "want 4"},
		{"no device", nlmsg(DumpQP.MessageType(), nest(attrResQP)), "device name"},
		{"PID and kernel", nlmsg(DumpQP.MessageType(), nla(attrDevName, cstr("rxe0")), nest(attrResQP, nest(attrResQPEntry, nla(attrResLQPN, le32(1)), nla(attrResSQPSN, le32(0)), nla(attrResType, []byte{2}), nla(attrResState, []byte{0}), nla(attrResPID, le32(1)), nla(attrResKernName, cstr("x"))))), "both a PID and a kernel name"},
	} {
		if _, err := Decode(tc.b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestRequest(t *testing.T) {
	b := DumpQP.Request(7, 42)
	// RDMA_NL_GET_TYPE(RDMA_NL_NLDEV=5, RDMA_NLDEV_CMD_RES_QP_GET=10) =
	// 5<<10 + 10 = 5130; NLM_F_REQUEST|NLM_F_ACK|NLM_F_DUMP = 0x305.
	ne := binary.NativeEndian
	if ne.Uint32(b) != 24 || ne.Uint16(b[4:]) != 5130 || ne.Uint16(b[6:]) != 0x305 || ne.Uint32(b[8:]) != 42 ||
		ne.Uint16(b[16:]) != 8 || ne.Uint16(b[18:]) != 1 || ne.Uint32(b[20:]) != 7 {
		t.Errorf("request % x", b)
	}
}
