//go:build lab && linux

package lab

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/roce-probe/roce-probe/roce"
)

// udpSeen is one captured UDP datagram (or the one an ICMP answer quotes).
type udpSeen struct {
	src, dst     netip.Addr
	sport, dport uint16
	tos, ttl     uint8 // IPv4 TOS / IPv6 traffic class; TTL / hop limit
	sentinel     bool  // the payload is a sentinel's (lsSentinel)
}

// ipUDP reads the IP and UDP headers of a decoded packet.
func ipUDP(p gopacket.Packet) (udpSeen, bool) {
	var u udpSeen
	if ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok {
		u.src, _ = netip.AddrFromSlice(ip.SrcIP.To4())
		u.dst, _ = netip.AddrFromSlice(ip.DstIP.To4())
		u.tos, u.ttl = ip.TOS, ip.TTL
	} else if ip, ok := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok {
		u.src, _ = netip.AddrFromSlice(ip.SrcIP)
		u.dst, _ = netip.AddrFromSlice(ip.DstIP)
		u.tos, u.ttl = ip.TrafficClass, ip.HopLimit
	} else {
		return u, false
	}
	udp, ok := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ok {
		return u, false
	}
	u.sport, u.dport = uint16(udp.SrcPort), uint16(udp.DstPort)
	u.sentinel = bytes.HasPrefix(udp.Payload, []byte(lsSentinel))
	return u, true
}

// udpFrames returns the UDP datagrams src → dst:4791 of a capture, by
// source port, sentinels left out.
func udpFrames(frames []Frame, src, dst netip.Addr) map[uint16][]udpSeen {
	out := map[uint16][]udpSeen{}
	for _, f := range frames {
		u, ok := ipUDP(gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.Default))
		if ok && u.src == src && u.dst == dst && u.dport == 4791 && !u.sentinel {
			out[u.sport] = append(out[u.sport], u)
		}
	}
	return out
}

// icmpSeen is an ICMP or ICMPv6 answer to a UDP probe.
type icmpSeen struct {
	from   netip.Addr
	typ    uint8
	quoted udpSeen
}

// icmpAnswers returns the ICMP Time Exceeded answers to host to in a
// capture, with the probe they quote.
func icmpAnswers(frames []Frame, to netip.Addr) []icmpSeen {
	var out []icmpSeen
	for _, f := range frames {
		p := gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.Default)
		var a icmpSeen
		var quote []byte
		var qt gopacket.LayerType
		if ip, ok := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4); ok && ip.Protocol == layers.IPProtocolICMPv4 {
			ic, ok := p.Layer(layers.LayerTypeICMPv4).(*layers.ICMPv4)
			if !ok || ic.TypeCode.Type() != layers.ICMPv4TypeTimeExceeded || netip.AddrFrom4([4]byte(ip.DstIP.To4())) != to {
				continue
			}
			a.from = netip.AddrFrom4([4]byte(ip.SrcIP.To4()))
			a.typ, quote, qt = ic.TypeCode.Type(), ic.Payload, layers.LayerTypeIPv4
		} else if ip, ok := p.Layer(layers.LayerTypeIPv6).(*layers.IPv6); ok && ip.NextHeader == layers.IPProtocolICMPv6 {
			ic, ok := p.Layer(layers.LayerTypeICMPv6).(*layers.ICMPv6)
			if !ok || ic.TypeCode.Type() != layers.ICMPv6TypeTimeExceeded || netip.AddrFrom16([16]byte(ip.DstIP)) != to {
				continue
			}
			a.from = netip.AddrFrom16([16]byte(ip.SrcIP))
			// ICMPv6 Time Exceeded: 4 unused bytes, then the quote.
			if len(ic.Payload) < 4 {
				continue
			}
			a.typ, quote, qt = ic.TypeCode.Type(), ic.Payload[4:], layers.LayerTypeIPv6
		} else {
			continue
		}
		q, ok := ipUDP(gopacket.NewPacket(quote, qt, gopacket.Default))
		if !ok {
			continue
		}
		a.quoted = q
		out = append(out, a)
	}
	return out
}

// lsProbes sends count UDP datagrams to dst:4791 from src with source
// ports base, base+1, ..., each with tos and ttl (0: the route's).
func lsProbes(t *testing.T, h RoutedHost, dst netip.Addr, base uint16, count int, tos, ttl uint8) {
	t.Helper()
	src := h.Addr(dst.Is6())
	for i := 0; i < count; i++ {
		payload := []byte(fmt.Sprintf("leaf-spine probe %d", i))
		if err := SendUDP(h.Name, netip.AddrPortFrom(src, base+uint16(i)), netip.AddrPortFrom(dst, 4791), tos, ttl, payload); err != nil {
			t.Fatal(err)
		}
	}
}

// lsSentinel starts the payload of a sentinel: a datagram sent after the
// probes whose arrival (or whose router's answer) proves the captures hold
// everything the probes caused.
const lsSentinel = "sentinel"

// waitUDP waits until capture c holds a datagram src → dst:4791 from
// source port sport, a sentinel or not.
func waitUDP(t *testing.T, c *Capture, src, dst netip.Addr, sport uint16, sentinel bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Wait(ctx, func(f Frame) bool {
		u, ok := ipUDP(gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.Default))
		return ok && u.src == src && u.dst == dst && u.dport == 4791 && u.sport == sport && u.sentinel == sentinel
	}); err != nil {
		t.Fatalf("waiting for %s:%d → %s:4791 (sentinel %v): %v", src, sport, dst, sentinel, err)
	}
}

// waitAnswer waits until capture c (on the sender's NIC) holds a Time
// Exceeded answer quoting a sentinel from source port sport.
func waitAnswer(t *testing.T, c *Capture, src netip.Addr, sport uint16) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Wait(ctx, func(f Frame) bool {
		as := icmpAnswers([]Frame{f}, src)
		return len(as) == 1 && as[0].quoted.sport == sport && as[0].quoted.sentinel
	}); err != nil {
		t.Fatalf("waiting for the answer to the sentinel from %s:%d: %v", src, sport, err)
	}
}

// spineOf maps each probe source port to the spine it crossed, from
// captures on both spines' ports toward the destination's leaf; a port
// seen on both spines fails t.
func spineOf(t *testing.T, caps map[string][]Frame, src, dst netip.Addr) map[uint16]string {
	t.Helper()
	out := map[uint16]string{}
	for spine, frames := range caps {
		for sport := range udpFrames(frames, src, dst) {
			if other, ok := out[sport]; ok {
				t.Errorf("source port %d crossed %s and %s", sport, other, spine)
			}
			out[sport] = spine
		}
	}
	return out
}

const lsProbeCount = 24

// The leaf-spine carries RC (ibv_rc_pingpong) and rdma_cm (ucmatose,
// rping) traffic between hosts on different leaves, IPv4 and IPv6, and a
// capture on the spines' ports toward the server's leaf holds the
// client's RoCE v2 frames: every QP's frames on one spine (one 5-tuple,
// one path), ICRCs valid, TTL 62 (the hosts send 64, the route's default
// as docs/lab.md measured; leaf and spine each take one, RFC 791/8200).
func TestLeafSpineTraffic(t *testing.T) {
	ls := UseLeafSpine(t)
	cases := []struct {
		name, client, server string
		v6                   bool
		tool                 func(c, s RoutedHost, cIdx, sIdx, port int) Tool
	}{
		{"ibv_rc_pingpong IPv4", "h5", "h7", false, func(c, s RoutedHost, ci, si, p int) Tool { return RCPingpong(c.Host, s.Host, ci, si, p, 10) }},
		{"ibv_rc_pingpong IPv6", "h6", "h8", true, func(c, s RoutedHost, ci, si, p int) Tool { return RCPingpong(c.Host, s.Host, ci, si, p, 10) }},
		{"ucmatose IPv4", "h5", "h8", false, func(c, s RoutedHost, _, _, p int) Tool { return Ucmatose(c.Host, s.Host, s.IP4.Addr(), p, 4, 106) }},
		{"rping IPv6", "h6", "h7", true, func(c, s RoutedHost, _, _, p int) Tool { return Rping(c.Host, s.Host, s.IP6.Addr(), p, 3) }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, s := ls.Host(tc.client), ls.Host(tc.server)
			caddr, saddr := c.Addr(tc.v6), s.Addr(tc.v6)
			ci, err := GIDIndex(c.RDMADevice, caddr, HostNIC)
			if err != nil {
				t.Fatal(err)
			}
			si, err := GIDIndex(s.RDMADevice, saddr, HostNIC)
			if err != nil {
				t.Fatal(err)
			}
			caps := map[string]*Capture{}
			for _, sp := range Spines {
				caps[sp] = ls.Router(sp).Port(s.Leaf).Capture()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tc.tool(c, s, ci, si, 22000+i).Run(t, ctx)
			perQP := map[uint32]map[string]int{}
			total := 0
			for sp, capt := range caps {
				frames := capt.Stop()
				for _, p := range roceFrames(frames, caddr, saddr) {
					total++
					if perQP[p.BTH.DestQP] == nil {
						perQP[p.BTH.DestQP] = map[string]int{}
					}
					perQP[p.BTH.DestQP][sp]++
					if p.ICRCStatus != roce.ICRCValid {
						t.Errorf("%s: frame opcode %#x PSN %#x: ICRC %s", sp, p.BTH.Opcode, p.BTH.PSN, p.ICRCStatus)
					}
					if p.TTL != 62 {
						t.Errorf("%s: frame opcode %#x PSN %#x: TTL %d, want 62 (64 from the host, one per router)", sp, p.BTH.Opcode, p.BTH.PSN, p.TTL)
					}
				}
				_ = WritePcapng(filepath.Join(ArtifactDir(t), "leafspine-"+strings.ReplaceAll(tc.name, " ", "-")+"-"+sp+".pcapng"), s.Leaf, frames)
			}
			t.Logf("%s → %s: %d RoCE v2 frames on the spines, per destination QP and spine %v", caddr, saddr, total, perQP)
			if total == 0 {
				t.Fatalf("no RoCE v2 frame %s → %s on %v's ports toward %s", caddr, saddr, Spines, s.Leaf)
			}
			for qp, by := range perQP {
				if len(by) != 1 {
					t.Errorf("QP %#x: frames on %d spines %v, want one (one 5-tuple, one path)", qp, len(by), by)
				}
			}
		})
	}
}

// Different UDP source ports take different spines (the leaves' multipath
// routes hash on the 5-tuple), and one source port always the same one:
// each of 24 source ports, sent twice, is captured on exactly one spine,
// both times; and both spines carry some. IPv4 and IPv6.
func TestLeafSpineECMP(t *testing.T) {
	ls := UseLeafSpine(t)
	for i, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "IPv4", true: "IPv6"}[v6], func(t *testing.T) {
			from, to := ls.Host("h5"), ls.Host("h7")
			src, dst := from.Addr(v6), to.Addr(v6)
			caps := map[string]*Capture{}
			for _, sp := range Spines {
				caps[sp] = ls.Router(sp).Port(to.Leaf).Capture()
			}
			at := ls.CaptureHost(to.Name)
			base := uint16(40000 + 100*i)
			ls.ShieldRXE(to.Name, base, base+lsProbeCount)
			lsProbes(t, from, dst, base, lsProbeCount, 0, 0)
			lsProbes(t, from, dst, base, lsProbeCount, 0, 0)
			// A sentinel after both rounds: once the receiver has it, the
			// spines have carried every probe.
			if err := SendUDP(from.Name, netip.AddrPortFrom(src, base), netip.AddrPortFrom(dst, 4791), 0, 0, []byte(lsSentinel)); err != nil {
				t.Fatal(err)
			}
			waitUDP(t, at, src, dst, base, true)
			got := map[string][]Frame{}
			for sp, c := range caps {
				got[sp] = c.Stop()
			}
			paths := spineOf(t, got, src, dst)
			count := map[string]int{}
			for sport := uint16(base); sport < base+lsProbeCount; sport++ {
				sp, ok := paths[sport]
				if !ok {
					t.Errorf("source port %d crossed no spine", sport)
					continue
				}
				count[sp]++
				if n := len(udpFrames(got[sp], src, dst)[sport]); n != 2 {
					t.Errorf("source port %d: %d datagrams on %s, want both (2)", sport, n, sp)
				}
			}
			t.Logf("%s → %s: source ports per spine %v", src, dst, count)
			for _, sp := range Spines {
				if count[sp] == 0 {
					t.Errorf("no source port of %d crossed %s: %v", lsProbeCount, sp, count)
				}
			}
		})
	}
}

// Each fault of a router port does what it says on the paths through that
// port and nothing on the others: UDP datagrams to 4791 with TOS 0x6a
// (DSCP 26, ECT(0)) from h5 to h7 (and IPv6 h6 → h8), captured on both
// spines' ports toward leaf2 (after their faults) or on the receiver's
// NIC; ICMP faults seen from the sender's NIC.
func TestLeafSpineFaults(t *testing.T) {
	ls := UseLeafSpine(t)
	const tos = 0x6a
	for i, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "IPv4", true: "IPv6"}[v6], func(t *testing.T) {
			from, to := ls.Host("h5"), ls.Host("h7")
			if v6 {
				from, to = ls.Host("h6"), ls.Host("h8")
			}
			src, dst := from.Addr(v6), to.Addr(v6)
			base := uint16(41000 + 1000*i)
			// The shield has its own LeafSpine: ls.Reset between the
			// faults leaves it.
			UseLeafSpine(t).ShieldRXE(to.Name, base, base+lsProbeCount)
			// send sends the probes with tos and ttl and captures them on
			// both spines' ports toward the receiver's leaf, on the
			// receiver's NIC and on the sender's. Sentinels follow, from a
			// source port whose path crosses spine via, which the fault
			// under test leaves alone (none in the first run, before the
			// paths are known: the last probe is its sentinel): one to the
			// receiver, waited for there, and one with TTL sttl (when not
			// 0), whose Time Exceeded answer is waited for at the sender.
			var viaPort map[string]uint16
			var paths map[uint16]string // each source port's spine, once known
			send := func(tos, ttl uint8, via string, sttl uint8) (map[string][]Frame, []Frame, []Frame) {
				caps := map[string]*Capture{}
				for _, sp := range Spines {
					caps[sp] = ls.Router(sp).Port(to.Leaf).Capture()
				}
				at, back := ls.CaptureHost(to.Name), ls.CaptureHost(from.Name)
				lsProbes(t, from, dst, base, lsProbeCount, tos, ttl)
				if via == "" {
					waitUDP(t, at, src, dst, base+lsProbeCount-1, false)
				} else {
					sport := viaPort[via]
					sentinel := func(ttl uint8) {
						if err := SendUDP(from.Name, netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, 4791), 0, ttl, []byte(lsSentinel)); err != nil {
							t.Fatal(err)
						}
					}
					sentinel(0)
					waitUDP(t, at, src, dst, sport, true)
					if sttl > 0 {
						sentinel(sttl)
						waitAnswer(t, back, src, sport)
					}
					// The sentinel crossed one spine; probes through the
					// other can still be on their way (two paths keep no
					// order: a full run once stopped spine1's capture before
					// its last probe). Each spine capture gets up to a second
					// in all to show the probes it carries; a fault that
					// drops them costs that second, and the checks decide.
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					for sp, c := range caps {
						for p, psp := range paths {
							if psp != sp {
								continue
							}
							_, _ = c.Wait(ctx, func(f Frame) bool {
								u, ok := ipUDP(gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.Default))
								return ok && u.src == src && u.dst == dst && u.sport == p && !u.sentinel
							})
						}
					}
					cancel()
				}
				got := map[string][]Frame{}
				for sp, c := range caps {
					got[sp] = c.Stop()
				}
				return got, at.Stop(), back.Stop()
			}
			// The path of each source port, with no fault.
			clean, _, _ := send(tos, 0, "", 0)
			paths = spineOf(t, clean, src, dst)
			viaPort = map[string]uint16{}
			for sport, sp := range paths {
				if u := udpFrames(clean[sp], src, dst)[sport][0]; u.tos != tos {
					t.Errorf("no fault: source port %d on %s: TOS %#x, want %#x", sport, sp, u.tos, tos)
				}
				viaPort[sp] = sport
			}
			t.Logf("%s → %s: source port → spine %v", src, dst, paths)
			if len(paths) != lsProbeCount || viaPort[Spine1] == 0 || viaPort[Spine2] == 0 {
				t.Fatalf("%d of %d source ports seen on the spines, a port per spine %v: need every port, both spines", len(paths), lsProbeCount, viaPort)
			}
			other := map[string]string{Spine1: Spine2, Spine2: Spine1}

			// checkTOS sends again and wants TOS want on the ports through
			// spine faulty, tos on the others.
			checkTOS := func(t *testing.T, faulty string, want uint8) {
				got, _, _ := send(tos, 0, other[faulty], 0)
				for sport, sp := range paths {
					us := udpFrames(got[sp], src, dst)[sport]
					if len(us) != 1 {
						t.Errorf("source port %d: %d datagrams on %s, want 1", sport, len(us), sp)
						continue
					}
					w := uint8(tos)
					if sp == faulty {
						w = want
					}
					if us[0].tos != w {
						t.Errorf("source port %d through %s: TOS %#x, want %#x", sport, sp, us[0].tos, w)
					}
				}
			}
			t.Run("RemarkDSCP", func(t *testing.T) {
				ls.Router(Spine1).Port(to.Leaf).RemarkDSCP(26, 0)
				checkTOS(t, Spine1, 0x02)
				ls.Reset()
			})
			t.Run("BleachECN", func(t *testing.T) {
				ls.Router(Spine2).Port(to.Leaf).BleachECN()
				checkTOS(t, Spine2, 0x68)
				ls.Reset()
			})
			t.Run("MarkCE", func(t *testing.T) {
				ls.Router(Spine1).Port(to.Leaf).MarkCE()
				checkTOS(t, Spine1, 0x6b)
				ls.Reset()
			})
			// checkLost sends again and wants the ports through spine
			// faulty missing at the receiver, the others there.
			checkLost := func(t *testing.T, faulty string) {
				_, at, _ := send(tos, 0, other[faulty], 0)
				arrived := udpFrames(at, src, dst)
				for sport, sp := range paths {
					if n := len(arrived[sport]); (sp == faulty) != (n == 0) {
						t.Errorf("source port %d through %s: %d datagrams arrived (faulty spine %s)", sport, sp, n, faulty)
					}
				}
			}
			t.Run("DropRoCE", func(t *testing.T) {
				ls.Router(Spine1).Port(to.Leaf).DropRoCE()
				checkLost(t, Spine1)
				ls.Reset()
			})
			t.Run("Loss", func(t *testing.T) {
				ls.Router(Spine2).Port(to.Leaf).Loss(100)
				checkLost(t, Spine2)
				ls.Reset()
			})

			// answers sends probes with TTL ttl and returns the routers'
			// Time Exceeded answers by quoted source port.
			answers := func(ttl uint8, via string, sttl uint8) map[uint16][]icmpSeen {
				_, _, back := send(tos, ttl, via, sttl)
				out := map[uint16][]icmpSeen{}
				for _, a := range icmpAnswers(back, src) {
					if a.quoted.src == src && a.quoted.dst == dst && a.quoted.dport == 4791 && !a.quoted.sentinel {
						out[a.quoted.sport] = append(out[a.quoted.sport], a)
					}
				}
				return out
			}
			isAddrOf := func(a netip.Addr, router string) bool {
				for _, x := range ls.Router(router).Addrs() {
					if x == a {
						return true
					}
				}
				return false
			}
			t.Run("ICMP answers", func(t *testing.T) {
				// TTL 2 runs out at the spine, which quotes the probe as it
				// arrived (TTL 1, TOS unchanged).
				got := answers(2, Spine1, 2)
				for sport, sp := range paths {
					as := got[sport]
					if len(as) != 1 || !isAddrOf(as[0].from, sp) || as[0].quoted.ttl != 1 || as[0].quoted.tos != tos {
						t.Errorf("TTL 2, source port %d through %s: answers %+v; want one from %s quoting TTL 1, TOS %#x", sport, sp, as, sp, tos)
					}
				}
			})
			t.Run("NoICMP", func(t *testing.T) {
				ls.Router(Spine1).NoICMP()
				got := answers(2, Spine2, 2)
				for sport, sp := range paths {
					if n := len(got[sport]); (sp == Spine1) != (n == 0) {
						t.Errorf("TTL 2, source port %d through %s: %d answers; want none through %s, one through the other", sport, sp, n, Spine1)
					}
				}
				// TTL 3 runs out at the destination's leaf, whose answers
				// spine1 forwards untouched.
				got = answers(3, Spine2, 3)
				for sport, sp := range paths {
					if as := got[sport]; len(as) != 1 || !isAddrOf(as[0].from, to.Leaf) {
						t.Errorf("TTL 3, source port %d through %s: answers %+v; want one from %s", sport, sp, as, to.Leaf)
					}
				}
				ls.Reset()
			})
			t.Run("ICMPRateLimit", func(t *testing.T) {
				// One answer per second per destination after a burst of at
				// most 6 (XRLIM_BURST_FACTOR, net/ipv4/inetpeer.c): of 24
				// probes sent at once, 1 to 7 are answered. Without the
				// limit ("ICMP answers" above) every probe was.
				ls.Router(to.Leaf).ICMPRateLimit(time.Second)
				got := answers(3, Spine1, 2)
				n := 0
				for _, as := range got {
					n += len(as)
				}
				if n < 1 || n > 7 {
					t.Errorf("TTL 3 with %s rate-limited to 1/s: %d of %d probes answered, want 1..7", to.Leaf, n, lsProbeCount)
				}
				t.Logf("%s rate-limited: %d of %d probes answered", to.Leaf, n, lsProbeCount)
				ls.Reset()
			})
		})
	}
}
