package main

import (
	"io"
	"os"
)

// Decoding the real Soft-RoCE capture shipped in roce/testdata (made in the
// lab by roce/testdata/make-rxe-captures.sh): UD SENDs from rxe0 with
// traffic_class 0x6a on every lab network. The VLAN 100 and QinQ frames
// carry the PCP of their VLAN device's egress-qos-map entry for skb
// priority 0 (3, and 2 on the inner tag), whatever the AH's sl.
func Example_decode() {
	run([]string{"decode", "../../roce/testdata/rxe-ud-send.pcapng"}, nil, os.Stdout, io.Discard)
	// Output:
	// 1 22:21:16.874224760 RoCEv2 10.0.0.1:57236 > 10.0.0.2:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658188 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 36 pad 0 icrc ok
	// 2 22:21:19.488902250 RoCEv2 [fd00::1]:57236 > [fd00::2]:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658189 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 36 pad 0 icrc ok
	// 3 22:21:21.855707590 RoCEv2 vlan 100 pcp 3 10.0.100.1:57236 > 10.0.100.2:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658190 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 35 pad 1 icrc ok
	// 4 22:21:23.686714370 RoCEv2 vlan 100 pcp 3 [fd00:100::1]:57236 > [fd00:100::2]:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658191 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 35 pad 1 icrc ok
	// 5 22:21:26.718207010 RoCEv2 vlan 200 pcp 0 10.0.200.1:57236 > 10.0.200.2:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658192 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 35 pad 1 icrc ok
	// 6 22:21:28.553530890 RoCEv2 vlan 200 pcp 0 [fd00:200::1]:57236 > [fd00:200::2]:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658193 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 35 pad 1 icrc ok
	// 7 22:21:30.607678940 RoCEv2 vlan 1000 pcp 0 vlan 10 pcp 2 10.10.10.1:57236 > 10.10.10.2:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658194 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 39 pad 1 icrc ok
	// 8 22:21:33.159898500 RoCEv2 vlan 1000 pcp 0 vlan 10 pcp 2 [fd00:1010::1]:57236 > [fd00:1010::2]:4791 dscp 26 ecn 2 ttl 64 UD_SEND_ONLY qp 0xabcd psn 658195 pkey 0xffff src-qp 0x11 qkey 0x1234abcd len 39 pad 1 icrc ok
}
