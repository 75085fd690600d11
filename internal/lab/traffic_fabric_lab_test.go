//go:build lab && linux

package lab

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/roce"
)

// hostGIDIndex is the index of host h's GID for addr (on netdev) in its rxe
// device's table.
func hostGIDIndex(t *testing.T, h Host, addr netip.Addr, netdev string) int {
	t.Helper()
	i, err := GIDIndex(h.RDMADevice, addr, netdev)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// roceFrames decodes the RoCE v2 frames of a capture from src to dst.
func roceFrames(frames []Frame, src, dst netip.Addr) []roce.Packet {
	var out []roce.Packet
	d := roce.NewDecoder()
	for _, f := range frames {
		var p roce.Packet
		if d.Decode(f.Data, &p) != nil || p.Src != src || p.Dst != dst {
			continue
		}
		out = append(out, p)
	}
	return out
}

func isRC(op uint8) bool { return op < 0x20 }

// Every kind of traffic the lab offers, between different pairs of hosts
// and on every network: RC (ibv_rc_pingpong, perftest ib_send_bw,
// ib_write_bw, ib_read_bw), rdma_cm (ucmatose, rping, perftest -R). Both
// ends must exit 0 (lab.Tool.Run), and the server's switch port must have
// carried the client's RoCE v2 frames with the expected opcodes and valid
// ICRCs.
func TestFabricTraffic(t *testing.T) {
	type tool func(c, s Host, cIdx, sIdx int, saddr netip.Addr, port int) Tool
	perf := func(prog string) tool {
		return func(c, s Host, cIdx, sIdx int, saddr netip.Addr, port int) Tool {
			return Perftest(prog, c, s, cIdx, sIdx, port, 20, 2048)
		}
	}
	cases := []struct {
		name, client, server, net string
		v6                        bool
		tool                      tool
		opcodes                   func(op uint8) bool // the BTH opcodes the client must send
	}{
		{"ibv_rc_pingpong", "h1", "h2", "vlan100", false, func(c, s Host, ci, si int, a netip.Addr, p int) Tool {
			return RCPingpong(c, s, ci, si, p, 10)
		}, isRC},
		{"ib_send_bw", "h3", "h4", "untagged", true, perf("ib_send_bw"), func(op uint8) bool { return op <= 0x05 }},
		{"ib_write_bw", "h2", "h3", "vlan200", false, perf("ib_write_bw"), func(op uint8) bool { return op >= 0x06 && op <= 0x0b }},
		{"ib_read_bw", "h4", "h1", "vlan100", true, perf("ib_read_bw"), func(op uint8) bool { return op == 0x0c }},
		{"ib_send_bw -R", "h2", "h4", "vlan100", false, func(c, s Host, _, _ int, a netip.Addr, p int) Tool {
			return PerftestCM("ib_send_bw", c, s, a, p, 20, 2048)
		}, func(op uint8) bool { return op <= 0x05 }},
		{"ucmatose", "h1", "h2", "qinq1000.10", false, func(c, s Host, _, _ int, a netip.Addr, p int) Tool {
			return Ucmatose(c, s, a, p, 4, -1)
		}, isRC},
		{"rping", "h3", "h1", "vlan200", true, func(c, s Host, _, _ int, a netip.Addr, p int) Tool {
			return Rping(c, s, a, p, 3)
		}, isRC},
	}
	sw := UseFabric(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, s := sw.Host(tc.client), sw.Host(tc.server)
			n, err := FabricNetByName(tc.net)
			if err != nil {
				t.Fatal(err)
			}
			caddr, saddr := c.Addr(n, tc.v6), s.Addr(n, tc.v6)
			cIdx := hostGIDIndex(t, c, caddr, n.Netdev)
			sIdx := hostGIDIndex(t, s, saddr, n.Netdev)
			capt := sw.Capture(s.Name)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tc.tool(c, s, cIdx, sIdx, saddr, 20000+i).Run(t, ctx)
			frames := capt.Stop()
			pkts := roceFrames(frames, caddr, saddr)
			ops := map[uint8]int{}
			want := 0
			for _, p := range pkts {
				ops[uint8(p.BTH.Opcode)]++
				if tc.opcodes(uint8(p.BTH.Opcode)) {
					want++
				}
				if p.ICRCStatus != roce.ICRCValid {
					t.Errorf("frame %s → %s opcode %#x PSN %#x: ICRC %s", p.Src, p.Dst, p.BTH.Opcode, p.BTH.PSN, p.ICRCStatus)
				}
			}
			t.Logf("%s → %s on %s (%s): %d RoCE v2 frames from the client on %s, opcodes %v", c.Name, s.Name, n.Name, saddr, len(pkts), s.Port, ops)
			if want == 0 {
				t.Errorf("no frame with the expected opcodes from %s to %s among %d captured on %s", caddr, saddr, len(frames), s.Port)
			}
			_ = WritePcapng(filepath.Join(ArtifactDir(t), "fabric-"+strings.ReplaceAll(tc.name, " ", "")+".pcapng"), s.Port, frames)
		})
	}
}

// udSender is the library's own cgo UD path on one fabric host: a UD QP on
// the host's rxe device and an AH to another host's address.
type udSender struct {
	ctx *verbs.Context
	ud  *verbs.UD
	ah  *verbs.AH
	psn uint32
}

const fabricQKey = 0x0f0f0f0f

func newUDSender(t *testing.T, from, to Host, n FabricNet, v6 bool, tclass uint8) *udSender {
	t.Helper()
	ctx, err := verbs.Open(from.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	ud, err := ctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: fabricQKey, SQPSN: 0x100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ud.Close() })
	idx := hostGIDIndex(t, from, from.Addr(n, v6), n.Netdev)
	ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(idx),
		DGID: to.Addr(n, v6).As16(), HopLimit: 64, TrafficClass: tclass})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ah.Close() })
	return &udSender{ctx: ctx, ud: ud, ah: ah, psn: 0x100}
}

// send posts one UD SEND of payload to remote QPN qpn and returns its PSN.
func (u *udSender) send(t *testing.T, qpn uint32, payload []byte) uint32 {
	t.Helper()
	if err := u.ud.Send(u.ah, qpn, fabricQKey, payload, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	u.psn++
	return u.psn - 1
}

// The library's own UD path (internal/verbs, cgo) between two hosts: a UD
// SEND from h4's rxe4 reaches a UD QP on h3's rxe3 through the switch, and
// the receive completion names rxe4's QP.
func TestFabricUDVerbs(t *testing.T) {
	sw := UseFabric(t)
	from, to := sw.Host("h4"), sw.Host("h3")
	n, _ := FabricNetByName("vlan200")
	rctx, err := verbs.Open(to.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer rctx.Close()
	rx, err := rctx.NewUD(1, fabricQKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	for _, v6 := range []bool{false, true} {
		s := newUDSender(t, from, to, n, v6, 0)
		payload := []byte(fmt.Sprintf("roce-probe fabric UD %s→%s v6=%v", from.Name, to.Name, v6))
		s.send(t, rx.QPN(), payload)
		wc, err := rx.Recv(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if wc.Status != verbs.WCSuccess || wc.SrcQP != s.ud.QPN() || !strings.Contains(string(wc.Payload), string(payload)) {
			t.Errorf("v6=%v: completion %+v: want success from QPN %#x with %q", v6, wc, s.ud.QPN(), payload)
		}
	}
}

// What each fault of a switch port does to a UD SEND from h1 to h2 on
// VLAN 100 (DSCP 26, ECN ECT(0); h1's egress-qos-map gives PCP 3), as h2's
// NIC receives it, for IPv4 and IPv6; and the netem faults of a link.
func TestFabricFaults(t *testing.T) {
	const tclass = 26<<2 | 2
	n, _ := FabricNetByName("vlan100")
	type want struct {
		tagged   bool
		pcp      uint8
		dscp     uint8
		ecn      uint8
		dropped  bool
		received int // frames with the payload at h2 (0: 1)
	}
	h1, _ := HostByName("h1")
	base := want{tagged: true, pcp: uint8(h1.EgressMap(n)[0]), dscp: 26, ecn: 2}
	cases := []struct {
		name  string
		fault func(sw *Switch)
		want  want
	}{
		{"none", func(*Switch) {}, base},
		{"remark DSCP 26→0", func(sw *Switch) { sw.Port("h2").RemarkDSCP(26, 0) },
			want{tagged: true, pcp: base.pcp, dscp: 0, ecn: 2}},
		{"remark DSCP 10→0 leaves 26", func(sw *Switch) { sw.Port("h2").RemarkDSCP(10, 0) }, base},
		{"remark PCP to 6", func(sw *Switch) { sw.Port("h2").RemarkPCP(100, 6) },
			want{tagged: true, pcp: 6, dscp: 26, ecn: 2}},
		{"strip tag", func(sw *Switch) { sw.Port("h2").StripTag(100) },
			want{tagged: false, dscp: 26, ecn: 2}},
		{"mark CE", func(sw *Switch) { sw.Port("h2").MarkCE() },
			want{tagged: true, pcp: base.pcp, dscp: 26, ecn: 3}},
		{"another port's fault", func(sw *Switch) { sw.Port("h3").RemarkDSCP(26, 0) }, base},
		{"drop", func(sw *Switch) { sw.Port("h2").DropRoCE() }, want{dropped: true}},
		{"netem duplicate", func(sw *Switch) { sw.Link("h1", "h2").Netem(Netem{Duplicate: 100}) },
			want{tagged: true, pcp: base.pcp, dscp: 26, ecn: 2, received: 2}},
	}
	// The receiver: a UD QP on h2's rxe2, so the frames go to a QP that
	// exists.
	rctx, err := verbs.Open("rxe2")
	if err != nil {
		t.Fatal(err)
	}
	defer rctx.Close()
	rx, err := rctx.NewUD(1, fabricQKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	for _, c := range cases {
		for _, v6 := range []bool{false, true} {
			if c.name == "strip tag" && v6 {
				// Linux 7.3.4 oopsed here once (general protection fault in
				// __rxe_put called from rxe_rcv, IPv6 UD frame to a VLAN
				// address arriving untagged on the rxe netdev itself, sent
				// to a QPN that did not exist): not run until understood.
				continue
			}
			t.Run(fmt.Sprintf("%s/v6=%v", c.name, v6), func(t *testing.T) {
				sw := UseFabric(t)
				c.fault(sw)
				s := newUDSender(t, sw.Host("h1"), sw.Host("h2"), n, v6, tclass)
				in := sw.Capture("h1")
				at := sw.CaptureHost("h2")
				payload := []byte(fmt.Sprintf("roce-probe fault %s v6=%v", c.name, v6))
				psn := s.send(t, rx.QPN(), payload)
				match := func(f Frame) bool { return strings.Contains(string(f.Data), string(payload)) }
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				// The frame entered the switch in every case.
				if _, err := in.Wait(ctx, match); err != nil {
					t.Fatalf("not even on h1's port: %v", err)
				}
				if c.want.dropped {
					// Proof of absence, bounded: a frame sent after the
					// fault is gone must arrive, and the dropped one must
					// not have arrived before it.
					sw.Reset()
					marker := []byte(fmt.Sprintf("roce-probe after the drop v6=%v", v6))
					s.send(t, rx.QPN(), marker)
					if _, err := at.Wait(ctx, func(f Frame) bool { return strings.Contains(string(f.Data), string(marker)) }); err != nil {
						t.Fatal(err)
					}
					for _, f := range at.Frames() {
						if match(f) {
							t.Errorf("the dropped frame reached h2")
						}
					}
					return
				}
				f, err := at.Wait(ctx, match)
				if err != nil {
					t.Fatal(err)
				}
				var p roce.Packet
				if err := roce.NewDecoder().Decode(f.Data, &p); err != nil {
					t.Fatal(err)
				}
				if c.want.tagged != (p.NumVLANs == 1) || (c.want.tagged && (p.VLANs[0].ID != 100 || p.VLANs[0].PCP != c.want.pcp)) {
					t.Errorf("tags %v (%d), want tagged %v VLAN 100 PCP %d", p.VLANs[:p.NumVLANs], p.NumVLANs, c.want.tagged, c.want.pcp)
				}
				if p.DSCP() != c.want.dscp || p.ECN() != c.want.ecn {
					t.Errorf("DSCP %d ECN %d, want DSCP %d ECN %d", p.DSCP(), p.ECN(), c.want.dscp, c.want.ecn)
				}
				if p.ICRCStatus != roce.ICRCValid || p.BTH.PSN != psn {
					t.Errorf("ICRC %s PSN %#x, want valid (the ICRC does not cover DSCP/ECN) and %#x", p.ICRCStatus, p.BTH.PSN, psn)
				}
				if c.want.received > 1 {
					// The copy follows at once; wait for it.
					if _, err := at.Wait(ctx, func(f Frame) bool {
						k := 0
						for _, g := range at.Frames() {
							if match(g) {
								k++
							}
						}
						return k >= c.want.received
					}); err != nil {
						t.Errorf("%d copies wanted: %v", c.want.received, err)
					}
				}
			})
		}
	}
}

// netem delay and reordering on the link h1 → h2: with a delay, the
// frame reaches h2's NIC at least that much after it entered the switch;
// with every second frame sent at once (reorder 100 % gap 2), frames
// arrive out of PSN order.
func TestFabricNetemDelayReorder(t *testing.T) {
	n, _ := FabricNetByName("untagged")
	rctx, err := verbs.Open("rxe2")
	if err != nil {
		t.Fatal(err)
	}
	defer rctx.Close()
	rx, err := rctx.NewUD(1, fabricQKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	t.Run("delay", func(t *testing.T) {
		sw := UseFabric(t)
		const delay = 300 * time.Millisecond
		sw.Link("h1", "h2").Netem(Netem{Delay: delay})
		s := newUDSender(t, sw.Host("h1"), sw.Host("h2"), n, false, 0)
		in, at := sw.Capture("h1"), sw.CaptureHost("h2")
		payload := []byte("roce-probe netem delay")
		s.send(t, rx.QPN(), payload)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		match := func(f Frame) bool { return strings.Contains(string(f.Data), string(payload)) }
		f0, err := in.Wait(ctx, match)
		if err != nil {
			t.Fatal(err)
		}
		f1, err := at.Wait(ctx, match)
		if err != nil {
			t.Fatal(err)
		}
		if d := f1.Info.Timestamp.Sub(f0.Info.Timestamp); d < delay {
			t.Errorf("frame took %v through the switch, want ≥ %v", d, delay)
		} else {
			t.Logf("frame took %v through the switch (netem delay %v)", d, delay)
		}
	})
	t.Run("reorder", func(t *testing.T) {
		sw := UseFabric(t)
		sw.Link("h1", "h2").Netem(Netem{Delay: 200 * time.Millisecond, Reorder: 100, ReorderGap: 2})
		s := newUDSender(t, sw.Host("h1"), sw.Host("h2"), n, false, 0)
		at := sw.CaptureHost("h2")
		var psns []uint32
		for i := 0; i < 4; i++ {
			psns = append(psns, s.send(t, rx.QPN(), []byte(fmt.Sprintf("roce-probe netem reorder %d", i))))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var got []uint32
		h1, h2 := sw.Host("h1"), sw.Host("h2")
		if _, err := at.Wait(ctx, func(Frame) bool {
			got = got[:0]
			for _, p := range roceFrames(at.Frames(), h1.Addr(n, false), h2.Addr(n, false)) {
				got = append(got, p.BTH.PSN)
			}
			return len(got) >= len(psns)
		}); err != nil {
			t.Fatalf("%v (PSNs so far %#x)", err, got)
		}
		inOrder := true
		for i := 1; i < len(got); i++ {
			inOrder = inOrder && got[i] > got[i-1]
		}
		t.Logf("sent PSNs %#x, h2 received %#x", psns, got)
		if inOrder {
			t.Errorf("PSNs arrived in order %#x despite netem reorder", got)
		}
	})
}
