//go:build lab && ibverbs && cgo

package ah_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/afpacket"
	"github.com/vishvananda/netlink"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

const (
	labQKey  = 0x5ca1ab1e
	labPSN   = 0x0c0ffe
	labDstQP = 0x00beef
)

// hostView collects the lab host's RDMA devices and network namespace as
// `roce-probe collect` does and opens the snapshot in that namespace.
func hostView(t *testing.T) *host.View {
	t.Helper()
	s, err := collect.Collect(collect.Options{Sections: collect.SectionRDMA | collect.SectionNet})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// netns collects the routes, neighbours, links and sysctls of the named
// network namespace ("" for the host's).
func netns(t *testing.T, name string) *vlan.Namespace {
	t.Helper()
	opt := collect.Options{Sections: collect.SectionNet}
	if name != "" {
		opt.Netns = []string{name}
	}
	s, err := collect.Collect(opt)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Namespace(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// hostTable is rxe0 port 1's GID table as the view maps it to its
// namespace's netdevs.
func hostTable(t *testing.T, v *host.View) ah.Table {
	t.Helper()
	p, err := v.Port(lab.RDMADevice, 1)
	if err != nil {
		t.Fatal(err)
	}
	return ah.Table{Entries: p.Entries, Len: len(p.Entries)}
}

func findEntry(t *testing.T, tab ah.Table, a netip.Addr, netdev string) gid.Entry {
	t.Helper()
	g := gid.FromAddr(a)
	for _, e := range tab.Entries {
		if !e.Empty && e.GID == g && e.Netdev == netdev && e.Type == gid.TypeRoCEv2 {
			return e
		}
	}
	t.Fatalf("no RoCE v2 GID %s on %s in %s's table", g, netdev, lab.RDMADevice)
	return gid.Entry{}
}

// ipv4ID returns the IPv4 identification of a frame (0 for IPv6), which
// the kernel picks per destination and no prediction can know.
func ipv4ID(frame []byte) uint16 {
	off := 12
	for {
		et := binary.BigEndian.Uint16(frame[off:])
		if et == 0x8100 || et == 0x88a8 {
			off += 4
			continue
		}
		if et != 0x0800 {
			return 0
		}
		return binary.BigEndian.Uint16(frame[off+2+4:])
	}
}

// compareFrames reports every field where got (captured) and want
// (predicted) differ, then the first differing byte.
func compareFrames(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w roce.Packet
	d := roce.NewDecoder()
	if err := d.Decode(got, &g); err != nil {
		t.Fatalf("captured frame: %v", err)
	}
	if err := d.Decode(want, &w); err != nil {
		t.Fatalf("predicted frame: %v", err)
	}
	check := func(field string, gv, wv any) {
		if fmt.Sprint(gv) != fmt.Sprint(wv) {
			t.Errorf("%s: on the wire %v, predicted %v", field, gv, wv)
		}
	}
	check("dmac", fmt.Sprintf("% x", got[0:6]), fmt.Sprintf("% x", want[0:6]))
	check("smac", fmt.Sprintf("% x", got[6:12]), fmt.Sprintf("% x", want[6:12]))
	check("vlan tags", g.VLANs[:g.NumVLANs], w.VLANs[:w.NumVLANs])
	check("ip version", g.IPVersion, w.IPVersion)
	check("src", g.Src, w.Src)
	check("dst", g.Dst, w.Dst)
	check("dscp", g.DSCP(), w.DSCP())
	check("ecn", g.ECN(), w.ECN())
	check("ttl", g.TTL, w.TTL)
	check("flow label", g.FlowLabel, w.FlowLabel)
	check("udp sport", g.SrcPort, w.SrcPort)
	check("udp dport", g.DstPort, w.DstPort)
	check("bth", fmt.Sprintf("%+v", g.BTH.Opcode)+fmt.Sprint(g.BTH.PKey, g.BTH.DestQP, g.BTH.PSN, g.BTH.PadCount, g.BTH.SolicitedEvent, g.BTH.AckReq),
		fmt.Sprintf("%+v", w.BTH.Opcode)+fmt.Sprint(w.BTH.PKey, w.BTH.DestQP, w.BTH.PSN, w.BTH.PadCount, w.BTH.SolicitedEvent, w.BTH.AckReq))
	check("deth", fmt.Sprint(g.QKey, g.SrcQP), fmt.Sprint(w.QKey, w.SrcQP))
	check("payload length", g.PayloadLen, w.PayloadLen)
	check("icrc", g.ICRC, w.ICRC)
	check("icrc status (captured)", g.ICRCStatus, roce.ICRCValid)
	if !bytes.Equal(got, want) {
		n := len(got)
		if len(want) < n {
			n = len(want)
		}
		for i := 0; i < n; i++ {
			if got[i] != want[i] {
				t.Errorf("frames differ first at byte %d: on the wire % x, predicted % x", i, got[i:min(i+8, len(got))], want[i:min(i+8, len(want))])
				break
			}
		}
		if len(got) != len(want) {
			t.Errorf("frame length: on the wire %d, predicted %d", len(got), len(want))
		}
	}
}

// labSend is rxe0 with a UD QP and a capture on the peer side (see
// labSender).
type labSend struct {
	ud     *verbs.UD
	capt   *lab.Capture
	frames []lab.Frame // written to the test's artifact file at the end
	psn    uint32      // the PSN of the next SEND
}

// labSender opens rxe0 with a UD QP whose first PSN is psn, and a capture
// on the peer side. The frames send captures are written to the artifact
// file name when the test ends.
func labSender(t *testing.T, psn uint32, name string) *labSend {
	t.Helper()
	ctx, err := verbs.Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() })
	ud, err := ctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: labQKey, SQPSN: psn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ud.Close() })
	capt, err := lab.CapturePeer()
	if err != nil {
		t.Fatal(err)
	}
	s := &labSend{ud: ud, capt: capt, psn: psn}
	t.Cleanup(func() {
		capt.Stop()
		if len(s.frames) > 0 {
			if err := lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), name), lab.PeerNetdev, s.frames); err != nil {
				t.Error(err)
			}
		}
	})
	return s
}

// send posts a UD SEND of payload to the peer's QP through h, waits for its
// frame at the peer and returns it with the PSN it was sent with.
func (s *labSend) send(t *testing.T, h *verbs.AH, payload []byte) (lab.Frame, uint32) {
	t.Helper()
	psn := s.psn
	if err := s.ud.Send(h, labDstQP, labQKey, payload, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	s.psn++
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f, err := s.capt.Wait(ctx, func(f lab.Frame) bool { return bytes.Contains(f.Data, payload) })
	if err != nil {
		t.Fatal(err)
	}
	s.frames = append(s.frames, f)
	return f, psn
}

// For every lab network (untagged, VLAN 100 with an egress-qos-map, VLAN
// 200 without, QinQ), IPv4 and IPv6, three traffic classes and two hop
// limits: the frame rxe puts on the wire for a UD SEND through a real
// ibv_create_ah equals, byte for byte, the frame ah.Resolve predicts from a
// host snapshot's GID table and namespace (collect.Collect; the IPv4 ID, which
// the kernel chooses per destination, is copied from the capture; rxe's
// UDP source port is predicted from the QPN). On QinQ the frame's tags are
// Wire.VLANChain in order, outermost first.
func TestLabResolveMatchesRXE(t *testing.T) {
	sender := labSender(t, labPSN, "ah-resolve.pcapng")
	ud := sender.ud
	for _, n := range lab.Nets {
		for _, fam := range []string{"ipv4", "ipv6"} {
			for _, tc := range []uint8{0x00, 26<<2 | 2, 46<<2 | 1} {
				for _, hop := range []uint8{8, 255} {
					src, dst := n.HostIPv4.Addr(), n.PeerIPv4.Addr()
					if fam == "ipv6" {
						src, dst = n.HostIPv6.Addr(), n.PeerIPv6.Addr()
					}
					t.Run(fmt.Sprintf("%s/%s/tc%#02x/hop%d", n.Name, fam, tc, hop), func(t *testing.T) {
						tab := hostTable(t, hostView(t))
						e := findEntry(t, tab, src, n.HostNetdev)
						a := ah.Attr{IsGlobal: true, PortNum: 1, SL: 5, GRH: ah.GlobalRoute{DGID: gid.FromAddr(dst), SGIDIndex: uint8(e.Index), HopLimit: hop, TrafficClass: tc, FlowLabel: 0x12345}}
						h, err := ud.CreateAH(ah.VerbsAttr(a)) // resolves the peer's MAC in the kernel
						if err != nil {
							t.Fatal(err)
						}
						defer h.Close()
						snap := netns(t, "") // now with the neighbour entry
						res, err := ah.Resolve(a, tab, snap, ah.ResolveOptions{Driver: qos.DriverRXE, SrcQPN: ud.QPN()})
						if err != nil {
							t.Fatal(err)
						}
						payload := []byte(fmt.Sprintf("roce-probe ah lab %s %s %d %d", n.Name, fam, tc, hop))
						f, psn := sender.send(t, h, payload)
						want, err := res.Frame(ah.Datagram{SrcQPN: ud.QPN(), DestQPN: labDstQP, QKey: labQKey, PSN: psn, Payload: payload, IPID: ipv4ID(f.Data)})
						if err != nil {
							t.Fatal(err)
						}
						compareFrames(t, f.Data, want)
						if res.Wire.TTL == hop && hop != 64 {
							t.Errorf("prediction kept hop limit %d; the kernel replaces it", hop)
						}
					})
				}
			}
		}
	}
}

// A UD SEND that roce/ builds (through ah.Resolve and Frame, from the peer's
// side: peer table, peer netdevs) and that is sent raw on veth1 is accepted
// by rxe: it completes a receive on a real UD QP with the payload, and
// ah.FromWC on that completion (both behaviours) names the peer's address and
// the host GID it was sent to. An AH created from that answer reaches the
// peer.
func TestLabRawSendFromPeerAndFromWC(t *testing.T) {
	ctx, err := verbs.Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ud, err := ctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: labQKey})
	if err != nil {
		t.Fatal(err)
	}
	defer ud.Close()
	hv := hostView(t)
	tab := hostTable(t, hv)
	peer := netns(t, lab.PeerNetns)
	hostMAC := mustMAC(lab.HostMAC)
	for _, n := range lab.Nets {
		for _, fam := range []string{"ipv4", "ipv6"} {
			t.Run(n.Name+"/"+fam, func(t *testing.T) {
				src, dst := n.PeerIPv4.Addr(), n.HostIPv4.Addr()
				if fam == "ipv6" {
					src, dst = n.PeerIPv6.Addr(), n.HostIPv6.Addr()
				}
				hostEntry := findEntry(t, tab, dst, n.HostNetdev)
				// The peer's "GID table": one entry for its address, mapped to its netdev.
				pe := gid.Entry{Device: "peer", Port: 1, Index: 0, GID: gid.FromAddr(src), Type: gid.TypeRoCEv2, Netdev: n.PeerNetdev}
				gid.MapEntry(&pe, "Ethernet", peer)
				p := *peer
				p.Neighbors = append(append([]vlan.Neighbor(nil), peer.Neighbors...), vlan.Neighbor{IP: dst, Dev: n.PeerNetdev, Ifindex: pe.Ifindex, MAC: hostMAC, State: vlan.NUDPermanent})
				p.Freeze()
				a := ah.Attr{IsGlobal: true, PortNum: 1, GRH: ah.GlobalRoute{DGID: gid.FromAddr(dst), HopLimit: 64, TrafficClass: 0x68}}
				res, err := ah.Resolve(a, ah.Table{Entries: []gid.Entry{pe}}, &p, ah.ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 0x123})
				if err != nil {
					t.Fatal(err)
				}
				payload := []byte("raw UD SEND from the peer, " + n.Name + " " + fam)
				frame, err := res.Frame(ah.Datagram{SrcQPN: 0x123, DestQPN: ud.QPN(), QKey: labQKey, PSN: 7, Payload: payload, IPID: 0x77})
				if err != nil {
					t.Fatal(err)
				}
				if err := sendRawInPeer(frame); err != nil {
					t.Fatal(err)
				}
				wc, err := ud.Recv(5 * time.Second)
				if err != nil {
					t.Fatalf("no receive completion for the raw frame % x: %v", frame, err)
				}
				if wc.Status != verbs.WCSuccess || wc.SrcQP != 0x123 || !bytes.Equal(wc.Payload, payload) {
					t.Fatalf("completion status %d (%s) src_qp %#x payload %q", wc.Status, wc.StatusText, wc.SrcQP, wc.Payload)
				}
				in := ah.WC{Status: wc.Status, GRH: wc.Flags&verbs.WCGRH != 0, SrcQP: wc.SrcQP, SL: wc.SL}
				for _, b := range []ah.Behaviour{ah.Kernel, ah.RDMACore} {
					r, err := ah.FromWC(in, wc.GRH, tab, ah.FromWCOptions{Behaviour: b, Net: hv.NS})
					if n.VLANs != nil && b == ah.Kernel {
						// libibverbs completions carry no VLAN: the kernel's
						// VLAN filter finds no untagged entry for a VLAN address.
						if !errors.Is(err, syscall.ENOENT) {
							t.Errorf("%s: %v, want ENOENT (user completions carry no VLAN ID)", b, err)
						}
						continue
					}
					if err != nil {
						t.Fatalf("%s: %v", b, err)
					}
					if r.Attr.GRH.DGID != gid.FromAddr(src) || int(r.Attr.GRH.SGIDIndex) != hostEntry.Index || !r.Attr.IsGlobal {
						t.Errorf("%s: answer dgid %s sgid_index %d, want %s and %d (%s)", b, r.Attr.GRH.DGID, r.Attr.GRH.SGIDIndex, src, hostEntry.Index, r.Detection)
					}
					if b == ah.RDMACore && (r.Attr.GRH.HopLimit != 64 || r.Attr.GRH.TrafficClass != 0x68) {
						t.Errorf("rdma-core: hop %d tc %#x, want 64 and 0x68 from the packet", r.Attr.GRH.HopLimit, r.Attr.GRH.TrafficClass)
					}
					if b == ah.Kernel && (r.Route == nil || int(r.Attr.GRH.HopLimit) != r.Route.HopLimit || r.Route.HopLimit != 64) {
						t.Errorf("kernel: hop %d, want the route's hop limit 64 (0xFF replaced): %+v", r.Attr.GRH.HopLimit, r.Route)
					}
				}
				// Answer the peer with the rdma-core AH.
				r, err := ah.FromWC(in, wc.GRH, tab, ah.FromWCOptions{Behaviour: ah.RDMACore})
				if err != nil {
					t.Fatal(err)
				}
				capt, err := lab.CapturePeer()
				if err != nil {
					t.Fatal(err)
				}
				defer capt.Stop()
				h, err := ud.CreateAH(ah.VerbsAttr(r.Attr))
				if err != nil {
					t.Fatal(err)
				}
				defer h.Close()
				reply := []byte("reply to " + string(payload))
				if err := ud.Send(h, wc.SrcQP, labQKey, reply, 5*time.Second); err != nil {
					t.Fatal(err)
				}
				wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				f, err := capt.Wait(wctx, func(f lab.Frame) bool { return bytes.Contains(f.Data, reply) })
				if err != nil {
					t.Fatal(err)
				}
				var pk roce.Packet
				if err := roce.NewDecoder().Decode(f.Data, &pk); err != nil {
					t.Fatal(err)
				}
				if pk.Dst != src || pk.SrcQP != ud.QPN() || pk.BTH.DestQP != 0x123 {
					t.Errorf("reply to %s QP %#x from QP %#x, want %s QP 0x123 from %#x", pk.Dst, pk.BTH.DestQP, pk.SrcQP, src, ud.QPN())
				}
			})
		}
	}
}

// ibv_create_ah's errnos on rxe, as docs/ah.md states them.
func TestLabCreateErrors(t *testing.T) {
	hv := hostView(t)
	tab := hostTable(t, hv)
	base := lab.Nets[0]
	e := findEntry(t, tab, base.HostIPv4.Addr(), base.HostNetdev)
	good := ah.Attr{IsGlobal: true, PortNum: 1, GRH: ah.GlobalRoute{DGID: gid.FromAddr(base.PeerIPv4.Addr()), SGIDIndex: uint8(e.Index), HopLimit: 64}}
	empty := -1
	for i := 0; i < 256 && i < tab.Size(); i++ {
		if x, _ := tab.Lookup(i); x.Empty {
			empty = i
			break
		}
	}
	cases := []struct {
		name   string
		mutate func(*ah.Attr)
		errno  syscall.Errno
	}{
		{"is_global 0", func(a *ah.Attr) { a.IsGlobal = false }, syscall.EINVAL},
		{"empty sgid_index", func(a *ah.Attr) { a.GRH.SGIDIndex = uint8(empty) }, syscall.ENODATA},
		{"IPv6 dgid from an IPv4 sgid", func(a *ah.Attr) { a.GRH.DGID = gid.FromAddr(base.PeerIPv6.Addr()) }, syscall.EINVAL},
		// Nobody has 10.0.0.99: ARP gets no answer.
		{"no neighbour", func(a *ah.Attr) { a.GRH.DGID = gid.FromAddr(netip.MustParseAddr("10.0.0.99")) }, syscall.ETIMEDOUT},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.errno == syscall.ENODATA && empty < 0 {
				t.Fatalf("no empty slot below 256 in %s's table", lab.RDMADevice)
			}
			a := good
			c.mutate(&a)
			h, err := ah.Create(lab.RDMADevice, a, ah.CreateOptions{})
			if err == nil {
				h.Close()
				t.Fatalf("ibv_create_ah succeeded")
			}
			if !errors.Is(err, c.errno) {
				t.Errorf("ibv_create_ah: %v, want %s", err, ah.ErrnoName(c.errno))
			}
			// The prediction agrees.
			_, perr := ah.Resolve(a, tab, hv.NS, ah.ResolveOptions{Driver: qos.DriverRXE})
			if !errors.Is(perr, c.errno) {
				t.Errorf("ah.Resolve: %v, want %s", perr, ah.ErrnoName(c.errno))
			}
		})
	}
}

func sendRawInPeer(frame []byte) error {
	return lab.InPeer(func() error {
		tp, err := afpacket.NewTPacket(afpacket.OptInterface(lab.PeerNetdev))
		if err != nil {
			return err
		}
		defer tp.Close()
		return tp.WritePacketData(frame)
	})
}

func mustMAC(s string) (m vlan.MAC) {
	if err := m.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return m
}

// ProbeNeighbor makes the kernel resolve the peer's MAC without RDMA (and
// without privileges), and reports ETIMEDOUT for an address nobody has.
func TestLabProbeNeighbor(t *testing.T) {
	base := lab.Nets[0]
	for _, c := range []struct {
		dst   netip.Addr
		src   netip.Addr
		errno error
	}{
		{base.PeerIPv4.Addr(), base.HostIPv4.Addr(), nil},
		{base.PeerIPv6.Addr(), base.HostIPv6.Addr(), nil},
		{netip.MustParseAddr("10.0.0.98"), base.HostIPv4.Addr(), syscall.ETIMEDOUT},
	} {
		t.Run(c.dst.String(), func(t *testing.T) {
			n := netns(t, "")
			l, ok := n.ByName(base.HostNetdev)
			if !ok {
				t.Fatalf("no %s in the host's namespace", base.HostNetdev)
			}
			// Forget what the kernel knows about the destination.
			_ = netlinkNeighDel(l.Index, c.dst)
			rr, err := n.RouteTo(c.dst, base.HostNetdev, l.Index)
			if err != nil {
				t.Fatal(err)
			}
			// Generous for the reachable peers (a loaded TCG guest can be slow
			// to answer ARP/ND); short where the timeout is the expected result.
			timeout := 10 * time.Second
			if c.errno != nil {
				timeout = 1500 * time.Millisecond
			}
			nb, err := collect.ProbeNeighbor(c.src, c.dst, rr, timeout)
			if c.errno != nil {
				if !errors.Is(err, c.errno) {
					t.Fatalf("ProbeNeighbor: %v, want %v", err, c.errno)
				}
				return
			}
			if err != nil || nb.MAC.String() != lab.PeerMAC || !nb.State.Valid() {
				t.Fatalf("ProbeNeighbor: %+v, %v; want %s", nb, err, lab.PeerMAC)
			}
		})
	}
}

func netlinkNeighDel(ifindex int, a netip.Addr) error {
	fam := netlink.FAMILY_V4
	if a.Is6() {
		fam = netlink.FAMILY_V6
	}
	return netlink.NeighDel(&netlink.Neigh{LinkIndex: ifindex, Family: fam, IP: a.AsSlice()})
}

// Destinations whose hop limit and MAC do not come from the default
// route and a neighbour entry: IPv4 and IPv6 multicast (MAC mapped from
// the group, hop limit kept as requested), the peer's link-local address
// from the default GID (neighbour discovery), and a route with a hoplimit
// metric (the metric becomes the TTL). The frame rxe sends must equal the
// prediction; the BTH DestQP rxe uses for multicast is reported.
func TestLabResolveSpecialDestinations(t *testing.T) {
	sender := labSender(t, 0x100, "ah-special.pcapng")
	ud := sender.ud
	base := lab.Nets[0]
	veth0, err := netlink.LinkByName(base.HostNetdev)
	if err != nil {
		t.Fatal(err)
	}
	// 10.0.0.2/32 with hoplimit 9: more specific than the on-link /24.
	hr := &netlink.Route{LinkIndex: veth0.Attrs().Index, Dst: &net.IPNet{IP: base.PeerIPv4.Addr().AsSlice(), Mask: net.CIDRMask(32, 32)}, Hoplimit: 9}
	if err := netlink.RouteAdd(hr); err != nil {
		t.Fatal(err)
	}
	defer netlink.RouteDel(hr)
	peerLL := gid.MustParse("fe80::ff:fe00:2") // the peer's link-local address (from its MAC 02:00:00:00:00:02)
	cases := []struct {
		name    string
		src     gid.GID
		dst     gid.GID
		ttl     uint8
		dmac    string
		destQPs []uint32 // acceptable BTH DestQP values on the wire
	}{
		{"IPv4 multicast", gid.FromAddr(base.HostIPv4.Addr()), gid.MustParse("239.1.2.3"), 8, "01:00:5e:01:02:03", []uint32{labDstQP, 0xFFFFFF}},
		{"IPv6 multicast", gid.FromAddr(base.HostIPv6.Addr()), gid.MustParse("ff0e::1:2"), 8, "33:33:00:01:00:02", []uint32{labDstQP, 0xFFFFFF}},
		{"link-local", gid.MustParse("fe80::ff:fe00:1"), peerLL, 64, lab.PeerMAC, []uint32{labDstQP}},
		{"route hoplimit metric", gid.FromAddr(base.HostIPv4.Addr()), gid.FromAddr(base.PeerIPv4.Addr()), 9, lab.PeerMAC, []uint32{labDstQP}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := hostTable(t, hostView(t))
			idx := -1
			for _, e := range tab.Entries {
				if !e.Empty && e.GID == c.src && e.Netdev == base.HostNetdev {
					idx = e.Index
				}
			}
			if idx < 0 {
				t.Fatalf("no entry %s on %s", c.src, base.HostNetdev)
			}
			a := ah.Attr{IsGlobal: true, PortNum: 1, GRH: ah.GlobalRoute{DGID: c.dst, SGIDIndex: uint8(idx), HopLimit: 8, TrafficClass: 0x6A}}
			h, err := ud.CreateAH(ah.VerbsAttr(a))
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			n1 := netns(t, "")
			res, err := ah.Resolve(a, tab, n1, ah.ResolveOptions{Driver: qos.DriverRXE, SrcQPN: ud.QPN()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Wire.TTL != c.ttl || res.Wire.DMAC.String() != c.dmac {
				t.Errorf("prediction TTL %d DMAC %s, want %d %s", res.Wire.TTL, res.Wire.DMAC, c.ttl, c.dmac)
			}
			payload := []byte("roce-probe ah special " + c.name)
			f, psn := sender.send(t, h, payload)
			var p roce.Packet
			if err := roce.NewDecoder().Decode(f.Data, &p); err != nil {
				t.Fatal(err)
			}
			ok := false
			for _, q := range c.destQPs {
				ok = ok || p.BTH.DestQP == q
			}
			if !ok {
				t.Errorf("BTH DestQP %#x on the wire, want one of %#x", p.BTH.DestQP, c.destQPs)
			}
			t.Logf("%s: BTH DestQP on the wire %#x (asked for %#x), TTL %d", c.name, p.BTH.DestQP, labDstQP, p.TTL)
			want, err := res.Frame(ah.Datagram{SrcQPN: ud.QPN(), DestQPN: p.BTH.DestQP, QKey: labQKey, PSN: psn, Payload: payload, IPID: ipv4ID(f.Data)})
			if err != nil {
				t.Fatal(err)
			}
			compareFrames(t, f.Data, want)
		})
	}
}
