//go:build lab && linux

package lab

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/roce"
)

// What the UD SEND test asks rxe for. The hop limit is deliberately not
// the route's: the kernel replaces it with the route's hop limit for a
// unicast destination (drivers/infiniband/core/verbs.c,
// ib_resolve_unicast_gid_dmac, Linux 6.1; docs/lab.md).
const (
	udQKey         = 0x1234abcd
	udRemoteQPN    = 0x00abcd
	udSQPSN        = 0x0a0b0c
	udTrafficClass = 26<<2 | 2 // DSCP 26 (AF31), ECN ECT(0)
	udHopLimit     = 8
)

// gidIndex finds the index of addr's GID owned by netdev in a GID table.
func gidIndex(t *testing.T, table []sysfsGID, addr netip.Addr, netdev string) int {
	t.Helper()
	want := addr
	if addr.Is4() {
		want = netip.AddrFrom16(addr.As16())
	}
	for _, g := range table {
		if g.GID == want && g.Netdev == netdev {
			return g.Index
		}
	}
	t.Fatalf("no GID %s on %s in %s's table", want, netdev, RDMADevice)
	return -1
}

// sysctlInt reads a /proc/sys value of the initial namespace.
func sysctlInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc/sys", path))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A UD SEND from rxe0 through an AH with a chosen traffic class and hop
// limit, on every lab network and for IPv4 and IPv6, captured on the peer's
// end of the veth pair. The frame must carry the network's VLAN tags
// (outermost first, with their TPIDs), the PCP of the VLAN device's
// egress-qos-map entry for skb priority 0 (rxe never sets skb->priority;
// 0 without a map), the AH's traffic class as DSCP/ECN, the route's hop
// limit as TTL, the lab MACs and addresses, UDP port 4791, BTH opcode
// UD SEND Only with the QP numbers and PSN, and DETH with the Q_Key and
// source QP. All frames go to ArtifactDir/rxe-ud-send.pcapng.
func TestUDSendOnTheWire(t *testing.T) {
	ctx, err := verbs.Open(RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	ud, err := ctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: udQKey, SQPSN: udSQPSN})
	if err != nil {
		t.Fatal(err)
	}
	defer ud.Close()

	capt, err := CapturePeer()
	if err != nil {
		t.Fatal(err)
	}
	var roceFrames []Frame
	defer func() {
		capt.Stop()
		if len(roceFrames) == 0 {
			return
		}
		path := filepath.Join(ArtifactDir(t), "rxe-ud-send.pcapng")
		if err := WritePcapng(path, PeerNetdev, roceFrames); err != nil {
			t.Error(err)
		} else {
			t.Logf("wrote %d RoCE frames to %s", len(roceFrames), path)
		}
	}()

	table := readSysfsGIDs(t, RDMADevice, 1)
	ttl := sysctlInt(t, "net/ipv4/ip_default_ttl")
	sent := 0
	for _, n := range Nets {
		for _, fam := range []string{"ipv4", "ipv6"} {
			src, dst := n.HostIPv4.Addr(), n.PeerIPv4.Addr()
			hop := ttl
			if fam == "ipv6" {
				src, dst = n.HostIPv6.Addr(), n.PeerIPv6.Addr()
				hop = sysctlInt(t, "net/ipv6/conf/"+n.HostNetdev+"/hop_limit")
			}
			t.Run(n.Name+"/"+fam, func(t *testing.T) {
				idx := gidIndex(t, table, src, n.HostNetdev)
				ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(idx),
					DGID: dst.As16(), HopLimit: udHopLimit, TrafficClass: udTrafficClass, SL: 5})
				if err != nil {
					t.Fatal(err)
				}
				defer ah.Close()
				payload := []byte(fmt.Sprintf("roce-probe lab UD SEND %s %s", n.Name, fam))
				psn := uint32(udSQPSN + sent)
				if err := ud.Send(ah, udRemoteQPN, udQKey, payload, 5*time.Second); err != nil {
					t.Fatal(err)
				}
				sent++
				wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				f, err := capt.Wait(wctx, func(f Frame) bool { return bytes.Contains(f.Data, payload) })
				if err != nil {
					t.Fatal(err)
				}
				roceFrames = append(roceFrames, f)
				checkUDFrame(t, f.Data, n, src, dst, hop, ud.QPN(), psn, payload)
				checkRoCEDecode(t, f.Data, n, src, dst, hop, ud.QPN(), psn, payload)
			})
		}
	}
}

func checkUDFrame(t *testing.T, data []byte, n Net, src, dst netip.Addr, hop int, srcQPN, wantPSN uint32, payload []byte) {
	t.Helper()
	pkt := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
	if el := pkt.ErrorLayer(); el != nil {
		t.Fatalf("decode: %v", el.Error())
	}
	eth := pkt.Layer(layers.LayerTypeEthernet).(*layers.Ethernet)
	if eth.SrcMAC.String() != HostMAC || eth.DstMAC.String() != PeerMAC {
		t.Errorf("MACs %s → %s, want %s → %s", eth.SrcMAC, eth.DstMAC, HostMAC, PeerMAC)
	}

	// VLAN tags, outermost first: the TPID of each tag is the EtherType in
	// front of it (the Ethernet header's, then the previous tag's).
	var tags []*layers.Dot1Q
	for _, l := range pkt.Layers() {
		if d, ok := l.(*layers.Dot1Q); ok {
			tags = append(tags, d)
		}
	}
	if len(tags) != len(n.VLANs) {
		t.Fatalf("%d VLAN tags, want %d (%v)", len(tags), len(n.VLANs), n.VLANs)
	}
	tpid := uint16(eth.EthernetType)
	for i, v := range n.VLANs {
		if tags[i].VLANIdentifier != v.ID || tpid != v.Proto {
			t.Errorf("tag %d: VID %d TPID %#04x, want VID %d TPID %#04x", i, tags[i].VLANIdentifier, tpid, v.ID, v.Proto)
		}
		// Only the device that owns the address (the innermost tag) has
		// the network's egress-qos-map; outer QinQ tags use PCP 0.
		wantPCP := uint8(0)
		if i == len(n.VLANs)-1 {
			wantPCP = uint8(n.EgressQoS[0])
		}
		if tags[i].Priority != wantPCP {
			t.Errorf("tag %d (VID %d): PCP %d, want %d (egress-qos-map %v, skb priority 0)", i, v.ID, tags[i].Priority, wantPCP, n.EgressQoS)
		}
		tpid = uint16(tags[i].Type)
	}

	var tclass, gotHop uint8
	var gotSrc, gotDst netip.Addr
	if src.Is4() {
		ip4, ok := pkt.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if !ok {
			t.Fatalf("no IPv4 header: %v", pkt)
		}
		tclass, gotHop = ip4.TOS, ip4.TTL
		gotSrc, _ = netip.AddrFromSlice(ip4.SrcIP.To4())
		gotDst, _ = netip.AddrFromSlice(ip4.DstIP.To4())
		if ip4.Flags&layers.IPv4DontFragment == 0 {
			t.Errorf("IPv4 flags %v, want DF", ip4.Flags)
		}
	} else {
		ip6, ok := pkt.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
		if !ok {
			t.Fatalf("no IPv6 header: %v", pkt)
		}
		tclass, gotHop = ip6.TrafficClass, ip6.HopLimit
		gotSrc, _ = netip.AddrFromSlice(ip6.SrcIP)
		gotDst, _ = netip.AddrFromSlice(ip6.DstIP)
		if ip6.FlowLabel != 0 {
			t.Errorf("flow label %#x, want 0 (rxe never sets it)", ip6.FlowLabel)
		}
	}
	if gotSrc != src || gotDst != dst {
		t.Errorf("IP %s → %s, want %s → %s", gotSrc, gotDst, src, dst)
	}
	if tclass>>2 != udTrafficClass>>2 || tclass&3 != udTrafficClass&3 {
		t.Errorf("DSCP %d ECN %d, want DSCP %d ECN %d (the AH's traffic class %#02x)", tclass>>2, tclass&3, udTrafficClass>>2, udTrafficClass&3, udTrafficClass)
	}
	if int(gotHop) != hop {
		t.Errorf("TTL/hop limit %d, want %d (the route's; the AH asked for %d)", gotHop, hop, udHopLimit)
	}

	udp, ok := pkt.Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !ok {
		t.Fatalf("no UDP header: %v", pkt)
	}
	if udp.DstPort != 4791 {
		t.Errorf("UDP destination port %d, want 4791", udp.DstPort)
	}
	if udp.Checksum != 0 {
		t.Errorf("UDP checksum %#04x, want 0 (rxe leaves it 0)", udp.Checksum)
	}
	// IBA BTH (12 bytes) + DETH (8 bytes) + payload + ICRC (4 bytes).
	ib := udp.Payload
	if len(ib) != 12+8+len(payload)+int((4-len(payload)%4)%4)+4 {
		t.Fatalf("UDP payload %d bytes, want BTH+DETH+%d bytes payload (padded)+ICRC", len(ib), len(payload))
	}
	if op := ib[0]; op != 0x64 {
		t.Errorf("BTH opcode %#02x, want 0x64 (UD SEND Only)", op)
	}
	if pkey := binary.BigEndian.Uint16(ib[2:4]); pkey != 0xffff {
		t.Errorf("BTH P_Key %#04x, want 0xffff", pkey)
	}
	if qpn := binary.BigEndian.Uint32(ib[4:8]) & 0xffffff; qpn != udRemoteQPN {
		t.Errorf("BTH DestQP %#x, want %#x", qpn, udRemoteQPN)
	}
	if qkey := binary.BigEndian.Uint32(ib[12:16]); qkey != udQKey {
		t.Errorf("DETH Q_Key %#x, want %#x", qkey, udQKey)
	}
	if sqp := binary.BigEndian.Uint32(ib[16:20]) & 0xffffff; sqp != srcQPN {
		t.Errorf("DETH SrcQP %#x, want %#x", sqp, srcQPN)
	}
	if psn := binary.BigEndian.Uint32(ib[8:12]) & 0xffffff; psn != wantPSN {
		t.Errorf("BTH PSN %#x, want %#x (the QP's sq_psn plus the sends before this one)", psn, wantPSN)
	}
}

// checkRoCEDecode decodes the frame with package roce and checks the ICRC
// and what roce reports against the topology and the AH.
func checkRoCEDecode(t *testing.T, data []byte, n Net, src, dst netip.Addr, hop int, srcQPN, wantPSN uint32, payload []byte) {
	t.Helper()
	var p roce.Packet
	if err := roce.NewDecoder().Decode(data, &p); err != nil {
		t.Fatalf("roce: %v", err)
	}
	if p.ICRCStatus != roce.ICRCValid {
		t.Errorf("roce: ICRC %s (wire % x, computed %#08x), want valid", p.ICRCStatus, p.ICRC, p.Computed)
	}
	if _, ok, err := roce.VerifyFrameICRC(data); err != nil || !ok {
		t.Errorf("roce.VerifyFrameICRC = %v, %v, want ok", ok, err)
	}
	wantIP := 4
	if src.Is6() {
		wantIP = 6
	}
	if p.Version != 2 || p.IPVersion != wantIP {
		t.Errorf("roce: RoCE v%d over IPv%d, want RoCE v2 over IPv%d", p.Version, p.IPVersion, wantIP)
	}
	if p.NumVLANs != len(n.VLANs) {
		t.Fatalf("roce: %d VLAN tags, want %d", p.NumVLANs, len(n.VLANs))
	}
	for i, v := range n.VLANs {
		wantPCP := uint8(0)
		if i == len(n.VLANs)-1 {
			wantPCP = uint8(n.EgressQoS[0])
		}
		if g := p.VLANs[i]; g.ID != v.ID || g.TPID != v.Proto || g.PCP != wantPCP {
			t.Errorf("roce: tag %d = %+v, want ID %d TPID %#04x PCP %d", i, g, v.ID, v.Proto, wantPCP)
		}
	}
	if p.Src != src || p.Dst != dst {
		t.Errorf("roce: %s → %s, want %s → %s", p.Src, p.Dst, src, dst)
	}
	if p.DSCP() != udTrafficClass>>2 || p.ECN() != udTrafficClass&3 || int(p.TTL) != hop {
		t.Errorf("roce: DSCP %d ECN %d TTL %d, want DSCP %d ECN %d TTL %d", p.DSCP(), p.ECN(), p.TTL, udTrafficClass>>2, udTrafficClass&3, hop)
	}
	// rxe picks a UD QP's source port at creation from its QPN, and the
	// AH's flow label (0 here) does not change it (drivers/infiniband/sw/rxe/rxe_qp.c,
	// rxe_qp_init_req; only rxe_verbs.c, rxe_modify_qp with IB_QP_AV, which UD
	// QPs never get, would; Linux 6.1).
	if p.SrcPort != roce.RXESourcePort(srcQPN) {
		t.Errorf("roce: UDP source port %#04x, want %#04x (rxe: from QPN %#x)", p.SrcPort, roce.RXESourcePort(srcQPN), srcQPN)
	}
	if p.DstPort != 4791 || p.BTH.DestQP != udRemoteQPN || p.BTH.PSN != wantPSN ||
		!p.HasDETH || p.QKey != udQKey || p.SrcQP != srcQPN || p.PayloadLen != len(payload) {
		t.Errorf("roce: port %d DestQP %#x PSN %#x DETH %v Q_Key %#x SrcQP %#x payload %d bytes; want 4791 %#x %#x true %#x %#x %d",
			p.DstPort, p.BTH.DestQP, p.BTH.PSN, p.HasDETH, p.QKey, p.SrcQP, p.PayloadLen, udRemoteQPN, wantPSN, udQKey, srcQPN, len(payload))
	}
}
