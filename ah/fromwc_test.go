package ah

import (
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// Test buffers. IPv4 headers whose checksums are independent known
// answers: hdrRef is the IPv4 header of the first ICRC vector of
// roce/icrc_test.go (192.168.0.2 → 192.168.0.3, TTL 64, checksum 0xf8da;
// from ruiqurm/dtld-rdma-driver, test_computing_icrc); hdrTOS and
// hdrCarry were computed with RFC 1071 (Python, outside this code base).
// hdrCarry's correct checksum is 0xfeff, but rdma-core's
// ipv4_calc_hdr_csum, which folds the carry only once, computes 0xffff on
// a little-endian host.
var (
	hdrRef   = mustHex("45 00 00 bc 00 01 00 00 40 11 f8 da c0 a8 00 02 c0 a8 00 03")
	hdrRef2  = mustHex("45 00 00 00 00 00 00 00 40 11 7c e8 7f 00 00 03 7f 00 00 02")
	hdrTOS   = mustHex("45 68 00 3c 12 34 40 00 40 11 14 13 0a 00 00 02 0a 00 00 01") // TOS 0x68, TTL 64, 10.0.0.2 → 10.0.0.1
	hdrCarry = mustHex("45 68 00 3c b9 fb 40 00 40 11 fe ff c0 a8 ff fe c0 a8 ff fd") // 192.168.255.254 → 192.168.255.253
	hdrMcast = mustHex("45 00 00 3c 00 00 40 00 40 11 40 ad 0a 00 00 02 ef 01 01 01") // 10.0.0.2 → 239.1.1.1
	// bytes 0..19 of a stale IPv6 header (version 6, traffic class 0xB8,
	// flow label 0x12345) left in a reused receive buffer.
	staleV6 = mustHex("6b 81 23 45 00 20 11 40 fd 00 00 00 00 00 00 00 00 00 00 00")
)

func mustHex(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// ipv4Buf puts an IPv4 header in bytes 20..39 behind head (bytes 0..19).
func ipv4Buf(head, ip []byte) (b [40]byte) {
	copy(b[:20], head)
	copy(b[20:], ip)
	return b
}

// ipv6Buf builds an IPv6 header / GRH: version 6, traffic class tc, flow
// label fl, next header nh, hop limit hop, sgid → dgid.
func ipv6Buf(tc uint8, fl uint32, nh, hop uint8, sgid, dgid string) (b [40]byte) {
	w := 6<<28 | uint32(tc)<<20 | fl
	b[0], b[1], b[2], b[3] = byte(w>>24), byte(w>>16), byte(w>>8), byte(w)
	b[4], b[5] = 0, 0x20
	b[6], b[7] = nh, hop
	s, d := gid.MustParse(sgid), gid.MustParse(dgid)
	copy(b[8:24], s[:])
	copy(b[24:40], d[:])
	return b
}

func u16p(v uint16) *uint16 { return &v }

func ntp(t NetworkType) *NetworkType { return &t }

// wcTable is the receiver's table: rxe-like, plus a VLAN 100 entry, a RoCE
// v1 entry and the addresses of the ICRC vectors (roce/icrc_test.go).
func wcTable() Table {
	e := func(i int, g string, t gid.Type, dev string, vlanID *uint16) gid.Entry {
		return gid.Entry{Device: "dev0", Port: 1, Index: i, GID: gid.MustParse(g), Type: t, Netdev: dev, VLAN: vlanID}
	}
	return Table{Len: 16, Entries: []gid.Entry{
		e(0, "fe80::ff:fe00:1", gid.TypeRoCEv2, "veth0", nil),
		e(1, "::ffff:10.0.0.1", gid.TypeRoCEv2, "veth0", nil),
		e(2, "fd00::1", gid.TypeRoCEv2, "veth0", nil),
		e(3, "::ffff:10.0.100.1", gid.TypeRoCEv2, "veth0.100", u16p(100)),
		e(4, "fe80::1:1", gid.TypeRoCEv1, "veth0", nil),
		e(5, "::ffff:192.168.0.3", gid.TypeRoCEv2, "veth0", nil),
		e(6, "::ffff:192.168.255.253", gid.TypeRoCEv2, "veth0", nil),
		{Device: "dev0", Port: 1, Index: 7, Empty: true},
	}}
}

func TestHeaderVersion(t *testing.T) {
	cases := []struct {
		name         string
		buf          [40]byte
		kernel, core int
		coreErr      error
	}{
		// rxe zeroes bytes 0..19 (drivers/infiniband/sw/rxe/rxe_resp.c, execute; Linux 6.1):
		// version nibble 0, byte 20 = 0x45 → IPv4 without checksum test.
		{"rxe IPv4, zero head", ipv4Buf(nil, hdrRef), 4, 4, nil},
		// Version 6 in bytes 0..3, IHL 5, valid checksum → IPv4 (drivers/infiniband/core/verbs.c,
		// ib_get_rdma_header_version, Linux 6.1; libibverbs/verbs.c, get_grh_header_version, rdma-core v64.0).
		{"IPv4 behind stale IPv6 bytes, valid checksum", ipv4Buf(staleV6, hdrTOS), 4, 4, nil},
		// Checksum wrong → IPv6.
		{"IPv4 behind stale IPv6 bytes, bad checksum", ipv4Buf(staleV6, append(append([]byte{}, hdrTOS[:10]...), append([]byte{0x14, 0x14}, hdrTOS[12:]...)...)), 6, 6, nil},
		// rdma-core folds the carry once (libibverbs/verbs.c, ipv4_calc_hdr_csum, rdma-core v64.0):
		// a valid header whose sum carries twice is taken for IPv6.
		{"carry folded once", ipv4Buf(staleV6, hdrCarry), 4, 6, nil},
		// IHL ≠ 5 → IPv6 without a checksum test (ib_get_rdma_header_version, get_grh_header_version).
		{"ihl 6", ipv4Buf(staleV6, append([]byte{0x46}, hdrTOS[1:]...)), 6, 6, nil},
		// A real IPv6 header: its bytes 20..39 are address bytes (fd00::… has 0x00 at byte 20 → IHL 0).
		{"IPv6", ipv6Buf(0x68, 0x12345, 17, 64, "fd00::2", "fd00::1"), 6, 6, nil},
		// Neither: kernel 0, rdma-core EPROTONOSUPPORT.
		{"garbage", ipv4Buf([]byte{0x12}, []byte{0x33}), 0, 0, syscall.EPROTONOSUPPORT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, why, err := HeaderVersion(c.buf, Kernel)
			if k != c.kernel || err != nil || why == "" {
				t.Errorf("kernel: %d, %v (%s), want %d", k, err, why, c.kernel)
			}
			r, why, err := HeaderVersion(c.buf, RDMACore)
			if r != c.core || !errors.Is(err, c.coreErr) || (c.coreErr == nil && err != nil) || why == "" {
				t.Errorf("rdma-core: %d, %v (%s), want %d, %v", r, err, why, c.core, c.coreErr)
			}
		})
	}
}

func TestFromWC(t *testing.T) {
	grhWC := WC{GRH: true, SrcQP: 0x11, SL: 3}
	type want struct {
		err     error
		dgid    string
		sgidIdx uint8
		hop, tc uint8
		fl      uint32
		global  bool
		netType NetworkType
	}
	cases := []struct {
		name   string
		wc     WC
		buf    [40]byte
		kernel want
		core   want
	}{
		{
			// rxe IPv4: kernel takes tc/fl from the zero head, hop 0xFF; rdma-core TTL and TOS.
			name: "rxe IPv4", wc: grhWC, buf: ipv4Buf(nil, hdrTOS),
			kernel: want{dgid: "::ffff:10.0.0.2", sgidIdx: 1, hop: 0xFF, tc: 0, fl: 0, global: true, netType: NetworkIPv4},
			core:   want{dgid: "::ffff:10.0.0.2", sgidIdx: 1, hop: 64, tc: 0x68, fl: 0, global: true, netType: NetworkIPv4},
		},
		{
			// Stale IPv6 bytes in front of IPv4: both detect IPv4 (valid checksum), but take the
			// flow label (and the kernel the traffic class) from the stale bytes.
			name: "IPv4 behind stale bytes", wc: grhWC, buf: ipv4Buf(staleV6, hdrTOS),
			kernel: want{dgid: "::ffff:10.0.0.2", sgidIdx: 1, hop: 0xFF, tc: 0xB8, fl: 0x12345, global: true, netType: NetworkIPv4},
			core:   want{dgid: "::ffff:10.0.0.2", sgidIdx: 1, hop: 64, tc: 0x68, fl: 0x12345, global: true, netType: NetworkIPv4},
		},
		{
			// Single carry fold: rdma-core takes the IPv4 packet for IPv6 and looks for GID
			// 0000:...(bytes 24..39) which is not in the table.
			name: "carry folded once", wc: grhWC, buf: ipv4Buf(staleV6, hdrCarry),
			kernel: want{dgid: "::ffff:192.168.255.254", sgidIdx: 6, hop: 0xFF, tc: 0xB8, fl: 0x12345, global: true, netType: NetworkIPv4},
			core:   want{err: syscall.ENOENT},
		},
		{
			// network_hdr_type given (kernel completions): trusted over the buffer.
			name: "network_hdr_type IPv4", wc: WC{GRH: true, NetworkHdrType: ntp(NetworkIPv4)}, buf: ipv4Buf(staleV6, hdrCarry),
			kernel: want{dgid: "::ffff:192.168.255.254", sgidIdx: 6, hop: 0xFF, tc: 0xB8, fl: 0x12345, global: true, netType: NetworkIPv4},
			core:   want{err: syscall.ENOENT},
		},
		{
			name: "RoCE v2 IPv6", wc: grhWC, buf: ipv6Buf(0x6A, 0xABCDE, 17, 63, "fd00::2", "fd00::1"),
			kernel: want{dgid: "fd00::2", sgidIdx: 2, hop: 0xFF, tc: 0x6A, fl: 0xABCDE, global: true, netType: NetworkIPv6},
			core:   want{dgid: "fd00::2", sgidIdx: 2, hop: 63, tc: 0x6A, fl: 0xABCDE, global: true, netType: NetworkIPv6},
		},
		{
			// Next header 0x1B: a RoCE v1 GRH; the local entry must be of type RoCE v1.
			name: "RoCE v1 GRH", wc: grhWC, buf: ipv6Buf(0x20, 7, 0x1B, 1, "fe80::2:2", "fe80::1:1"),
			kernel: want{dgid: "fe80::2:2", sgidIdx: 4, hop: 0xFF, tc: 0x20, fl: 7, global: true, netType: NetworkRoCEv1},
			core:   want{dgid: "fe80::2:2", sgidIdx: 4, hop: 1, tc: 0x20, fl: 7, global: true, netType: NetworkRoCEv1},
		},
		{
			// Next header neither 17 nor 0x1B: the kernel calls it RoCE v1; rdma-core refuses.
			name: "next header 6", wc: grhWC, buf: ipv6Buf(0, 0, 6, 64, "fe80::2:2", "fe80::1:1"),
			kernel: want{dgid: "fe80::2:2", sgidIdx: 4, hop: 0xFF, global: true, netType: NetworkRoCEv1},
			core:   want{err: syscall.EPROTONOSUPPORT},
		},
		{
			// Right GID, wrong type: a RoCE v2 (UDP) packet to the v1 entry's GID.
			name: "type mismatch", wc: grhWC, buf: ipv6Buf(0, 0, 17, 64, "fe80::2:2", "fe80::1:1"),
			kernel: want{err: syscall.ENOENT}, core: want{err: syscall.ENOENT},
		},
		{
			name: "IPv4 multicast", wc: grhWC, buf: ipv4Buf(nil, hdrMcast),
			kernel: want{err: syscall.ENOENT}, core: want{err: syscall.EINVAL},
		},
		{
			name: "IPv6 multicast", wc: grhWC, buf: ipv6Buf(0, 0, 17, 64, "fd00::2", "ff0e::1"),
			kernel: want{err: syscall.ENOENT}, core: want{err: syscall.EINVAL},
		},
		{
			// Kernel -EPROTOTYPE (ib_init_ah_attr_from_wc); rdma-core success with is_global = 0
			// (ibv_init_ah_from_wc).
			name: "missing GRH flag", wc: WC{SrcQP: 0x11}, buf: ipv4Buf(nil, hdrTOS),
			kernel: want{err: syscall.EPROTOTYPE},
			core:   want{global: false},
		},
		{
			// ICRC vector 1's header (hdrRef): 192.168.0.2 → 192.168.0.3 (entry 5), TTL 64, TOS 0.
			name: "ICRC vector 1", wc: grhWC, buf: ipv4Buf(nil, hdrRef),
			kernel: want{dgid: "::ffff:192.168.0.2", sgidIdx: 5, hop: 0xFF, global: true, netType: NetworkIPv4},
			core:   want{dgid: "::ffff:192.168.0.2", sgidIdx: 5, hop: 64, global: true, netType: NetworkIPv4},
		},
		{
			// ICRC vector 2's header (hdrRef2): 127.0.0.3 → 127.0.0.2, not in the table.
			name: "destination not in table", wc: grhWC, buf: ipv4Buf(nil, hdrRef2),
			kernel: want{err: syscall.ENOENT}, core: want{err: syscall.ENOENT},
		},
		{
			// Kernel matches the VLAN of the entry's netdev: an untagged completion for the
			// VLAN 100 address finds nothing; rdma-core ignores VLANs.
			name: "VLAN entry, untagged completion", wc: grhWC, buf: ipv4Buf(nil, mustHex("45 00 00 3c 00 00 40 00 40 11 00 00 0a 00 64 02 0a 00 64 01")),
			kernel: want{err: syscall.ENOENT},
			core:   want{dgid: "::ffff:10.0.100.2", sgidIdx: 3, hop: 64, global: true, netType: NetworkIPv4},
		},
		{
			name: "VLAN entry, VLAN 100 completion", wc: WC{GRH: true, VLAN: u16p(100), NetworkHdrType: ntp(NetworkIPv4)},
			buf:    ipv4Buf(nil, mustHex("45 00 00 3c 00 00 40 00 40 11 00 00 0a 00 64 02 0a 00 64 01")),
			kernel: want{dgid: "::ffff:10.0.100.2", sgidIdx: 3, hop: 0xFF, global: true, netType: NetworkIPv4},
			core:   want{dgid: "::ffff:10.0.100.2", sgidIdx: 3, hop: 64, global: true, netType: NetworkIPv4},
		},
		{
			// rdma-core: an empty slot reads as (zero GID, RoCE v1), so a v1 GRH addressed to
			// the zero GID "matches" empty slot 7.
			name: "zero destination matches an empty slot", wc: grhWC, buf: ipv6Buf(0, 0, 0x1B, 1, "fe80::2:2", "::"),
			kernel: want{err: syscall.ENOENT},
			core:   want{dgid: "fe80::2:2", sgidIdx: 7, hop: 1, global: true, netType: NetworkRoCEv1},
		},
	}
	for _, c := range cases {
		for _, b := range []Behaviour{Kernel, RDMACore} {
			w := c.kernel
			if b == RDMACore {
				w = c.core
			}
			t.Run(c.name+"/"+b.String(), func(t *testing.T) {
				r, err := FromWC(c.wc, c.buf, wcTable(), FromWCOptions{Behaviour: b})
				if w.err != nil {
					if !errors.Is(err, w.err) {
						t.Fatalf("err = %v, want %v", err, w.err)
					}
					return
				}
				if err != nil {
					t.Fatalf("FromWC: %v", err)
				}
				a := r.Attr
				if a.IsGlobal != w.global || a.PortNum != 1 || a.SL != c.wc.SL {
					t.Fatalf("attr %+v: want is_global %v, port 1, sl %d", a, w.global, c.wc.SL)
				}
				if !w.global {
					return
				}
				if a.GRH.DGID != gid.MustParse(w.dgid) || a.GRH.SGIDIndex != w.sgidIdx || a.GRH.HopLimit != w.hop ||
					a.GRH.TrafficClass != w.tc || a.GRH.FlowLabel != w.fl || r.NetworkType != w.netType {
					t.Errorf("got dgid %s sgid %d hop %d tc %#x fl %#x %s; want dgid %s sgid %d hop %d tc %#x fl %#x %s",
						a.GRH.DGID, a.GRH.SGIDIndex, a.GRH.HopLimit, a.GRH.TrafficClass, a.GRH.FlowLabel, r.NetworkType,
						w.dgid, w.sgidIdx, w.hop, w.tc, w.fl, w.netType)
				}
				if r.Detection == "" {
					t.Error("no detection explanation")
				}
			})
		}
	}
}

func TestFromWCUnsuccessfulCompletion(t *testing.T) {
	_, err := FromWC(WC{Status: 12, GRH: true}, ipv4Buf(nil, hdrTOS), wcTable(), FromWCOptions{})
	if err == nil || !strings.Contains(err.Error(), "status 12") {
		t.Fatalf("err = %v, want one naming status 12", err)
	}
}

func TestFromWCNotInTableSaysWhy(t *testing.T) {
	// The VLAN 100 address reached over an untagged completion: the error
	// must point at the entry that has the GID and its VLAN.
	_, err := FromWC(WC{GRH: true}, ipv4Buf(nil, mustHex("45 00 00 3c 00 00 40 00 40 11 00 00 0a 00 64 02 0a 00 64 01")), wcTable(), FromWCOptions{})
	if !errors.Is(err, ErrNotInTable) || !strings.Contains(err.Error(), "entry 3") || !strings.Contains(err.Error(), "VLAN 100") {
		t.Fatalf("err = %v", err)
	}
}

// The kernel's GID filter for a completion (find_gid_filter,
// drivers/infiniband/core/cache.c) compares the completion's VLAN ID with
// rdma_read_gid_l2_fields' VLAN ID of each entry: the ID of the entry's
// netdev when it is a VLAN device, else that of its first-level lower
// device when that is one (get_lower_dev_vlan), else 0xffff. For the lab's
// QinQ netdev veth0.q1000.10 that is the inner tag, 10 — what rxe puts in
// the completion of a frame received there (rxe_resp.c do_complete:
// vlan_dev_vlan_id(skb->dev)) — not the outermost tag 1000 that
// gid.Entry.VLAN names. A macvlan on veth0.100 gets its lower device's 100.
func TestFromWCKernelVLANFilter(t *testing.T) {
	ns := labNet(t)
	ns.Links = append(ns.Links, vlan.Link{Name: "mv0", Index: 8, Kind: vlan.KindMacvlan, ParentIndex: 4, MAC: macOf("02:00:00:00:00:05"), MTU: 1500, OperState: "up", Ether: true,
		Addrs: []netip.Prefix{pfx("10.0.100.5/24")}},
		// An ipvlan on the macvlan: its frames carry VLAN 100, but the
		// kernel's rule looks only one device down (get_lower_dev_vlan:
		// the macvlan, not a VLAN device) and gives it no VLAN ID.
		vlan.Link{Name: "ipv0", Index: 9, Kind: vlan.KindIPvlan, ParentIndex: 8, MAC: macOf("02:00:00:00:00:05"), MTU: 1500, OperState: "up", Ether: true,
			Addrs: []netip.Prefix{pfx("10.0.100.6/24")}})
	ns.Freeze()
	var entries []gid.Entry
	for i, x := range []struct{ addr, netdev string }{
		{"10.0.0.1", "veth0"}, {"10.0.100.1", "veth0.100"}, {"10.10.10.1", "veth0.q1000.10"}, {"10.0.100.5", "mv0"}, {"10.0.100.6", "ipv0"},
	} {
		e := gid.Entry{Device: "rxe0", Port: 1, Index: i, GID: gid.FromAddr(ip(x.addr)), Type: gid.TypeRoCEv2, Netdev: x.netdev}
		gid.MapEntry(&e, "Ethernet", ns) // as a host snapshot's view maps every table
		entries = append(entries, e)
	}
	tab := Table{Len: 5, Entries: entries}
	if e := entries[2]; e.VLAN == nil || *e.VLAN != 1000 {
		t.Fatalf("the QinQ entry's VLAN is %v: this test assumes gid.Entry.VLAN is the outermost tag (1000)", ptrStr(e.VLAN))
	}
	hdr := func(src, dst string) [40]byte { // zero head + IPv4 header, TTL 64, UDP
		s, d := ip(src).As4(), ip(dst).As4()
		return ipv4Buf(nil, append(mustHex("45 00 00 3c 00 00 40 00 40 11 00 00"), append(s[:], d[:]...)...))
	}
	for _, c := range []struct {
		name     string
		vlan     *uint16
		src, dst string
		index    int // -1: ENOENT
	}{
		{"QinQ, inner VLAN 10", u16p(10), "10.10.10.2", "10.10.10.1", 2},
		{"QinQ, outer VLAN 1000", u16p(1000), "10.10.10.2", "10.10.10.1", -1},
		{"QinQ, untagged", nil, "10.10.10.2", "10.10.10.1", -1},
		{"VLAN 100", u16p(100), "10.0.100.2", "10.0.100.1", 1},
		{"macvlan on VLAN 100", u16p(100), "10.0.100.2", "10.0.100.5", 3},
		{"macvlan on VLAN 100, untagged", nil, "10.0.100.2", "10.0.100.5", -1},
		{"untagged", nil, "10.0.0.2", "10.0.0.1", 0},
		{"ipvlan on macvlan on VLAN 100, untagged completion", nil, "10.0.100.2", "10.0.100.6", 4},
		{"ipvlan on macvlan on VLAN 100, VLAN 100 completion", u16p(100), "10.0.100.2", "10.0.100.6", -1},
		{"untagged address, VLAN 10", u16p(10), "10.0.0.2", "10.0.0.1", -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := FromWC(WC{GRH: true, VLAN: c.vlan, NetworkHdrType: ntp(NetworkIPv4)}, hdr(c.src, c.dst), tab, FromWCOptions{Behaviour: Kernel})
			if c.index < 0 {
				if !errors.Is(err, syscall.ENOENT) {
					t.Fatalf("err = %v, want ENOENT", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if int(r.Attr.GRH.SGIDIndex) != c.index || r.Attr.GRH.DGID != gid.FromAddr(ip(c.src)) {
				t.Errorf("sgid_index %d dgid %s, want %d %s", r.Attr.GRH.SGIDIndex, r.Attr.GRH.DGID, c.index, c.src)
			}
		})
	}
	// The error for a VLAN mismatch names the VLAN the filter compared.
	_, err := FromWC(WC{GRH: true, VLAN: u16p(1000), NetworkHdrType: ntp(NetworkIPv4)}, hdr("10.10.10.2", "10.10.10.1"), tab, FromWCOptions{Behaviour: Kernel})
	if err == nil || !strings.Contains(err.Error(), "entry 2") || !strings.Contains(err.Error(), "VLAN 10)") {
		t.Errorf("err = %v, want one naming entry 2 and its VLAN 10", err)
	}
}
