//go:build lab && ibverbs && cgo

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
)

// wireFrame is what the peer captured of one RoCE v2 frame.
type wireFrame struct {
	tags []capturedTag // outermost first
	tos  uint8
}

type capturedTag struct {
	tpid uint16
	id   uint16
	pcp  uint8
}

// parseRoCE decodes the tags and the IPv4 TOS / IPv6 traffic class of a
// RoCE v2 frame whose UDP payload contains marker.
func parseRoCE(f []byte, marker []byte) (wireFrame, bool) {
	var w wireFrame
	if len(f) < 14 {
		return w, false
	}
	off := 12
	for {
		if off+2 > len(f) {
			return w, false
		}
		et := binary.BigEndian.Uint16(f[off:])
		if et != 0x8100 && et != 0x88a8 {
			break
		}
		if off+4 > len(f) {
			return w, false
		}
		tci := binary.BigEndian.Uint16(f[off+2:])
		w.tags = append(w.tags, capturedTag{tpid: et, id: tci & 0xfff, pcp: uint8(tci >> 13)})
		off += 4
	}
	ip := f[off+2:]
	var udp []byte
	switch binary.BigEndian.Uint16(f[off:]) {
	case 0x0800: // IPv4: TOS is byte 1
		if len(ip) < 28 || ip[9] != 17 {
			return w, false
		}
		ihl := int(ip[0]&0xf) * 4
		if len(ip) < ihl+8 {
			return w, false
		}
		udp = ip[ihl:]
		w.tos = ip[1]
	case 0x86dd: // IPv6: traffic class is bits 4..11
		if len(ip) < 48 || ip[6] != 17 {
			return w, false
		}
		udp = ip[40:]
		w.tos = ip[0]<<4 | ip[1]>>4
	default:
		return w, false
	}
	if binary.BigEndian.Uint16(udp[2:]) != 4791 || !bytes.Contains(udp[8:], marker) {
		return w, false
	}
	return w, true
}

// For rxe over VLAN devices with and without egress maps (and untagged,
// and QinQ), the PCPs, DSCP and ECN that `roce-probe check` predicts are
// the ones the peer captures for a UD SEND with the same GID index, sl and
// traffic_class.
func TestLabCheckPredictsWire(t *testing.T) {
	ctx, err := verbs.Open(lab.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	const qkey = 0x11111111
	ud, err := ctx.NewUD(1, qkey)
	if err != nil {
		t.Fatal(err)
	}
	defer ud.Close()

	type probe struct {
		net     lab.Net
		index   int
		dst     netip.Addr
		sl, tc  uint8
		marker  []byte
		predict checkJSON
	}
	var probes []probe
	values := []struct{ sl, tc uint8 }{{0, 0}, {5, 104}, {3, 106}, {7, 0xB9}, {15, 0x03}, {1, 0xFE}}
	for _, n := range lab.Nets {
		for _, fam := range []struct{ src, dst netip.Addr }{{n.HostIPv4.Addr(), n.PeerIPv4.Addr()}, {n.HostIPv6.Addr(), n.PeerIPv6.Addr()}} {
			idx := gidIndexOf(t, fam.src, n.HostNetdev)
			for _, v := range values {
				p := probe{net: n, index: idx, dst: fam.dst, sl: v.sl, tc: v.tc, marker: []byte(fmt.Sprintf("roce-probe-qos-%v-%d-%d", fam.dst, v.sl, v.tc))}
				var stderr string
				var code int
				p.predict, stderr, code = runCheck(t, "--dev", lab.RDMADevice, "--gid-index", fmt.Sprint(idx),
					"--tclass", fmt.Sprint(v.tc), "--sl", fmt.Sprint(v.sl))
				if code == exitUsage {
					t.Fatalf("check for %s: exit 2: %s", n.Name, stderr)
				}
				probes = append(probes, p)
			}
		}
	}

	capt, err := lab.CapturePeer()
	if err != nil {
		t.Fatal(err)
	}
	defer capt.Stop()
	for _, p := range probes {
		name := fmt.Sprintf("%s to %v sl %d tclass %d", p.net.Name, p.dst, p.sl, p.tc)
		ah, err := ud.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(p.index),
			DGID: gid.FromAddr(p.dst), HopLimit: 64, TrafficClass: p.tc, SL: p.sl})
		if err != nil {
			t.Fatalf("%s: create AH: %v", name, err)
		}
		err = ud.Send(ah, 0x000123, qkey, p.marker, 5*time.Second)
		ah.Close()
		if err != nil {
			t.Fatalf("%s: send: %v", name, err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		f, err := capt.Wait(wctx, func(f lab.Frame) bool { _, ok := parseRoCE(f.Data, p.marker); return ok })
		cancel()
		if err != nil {
			t.Errorf("%s: no RoCE v2 frame with the marker on the peer: %v", name, err)
			continue
		}
		got, _ := parseRoCE(f.Data, p.marker)
		pr := p.predict
		t.Logf("%s: captured tags %+v tos 0x%02x; check predicted vlan_chain %s dscp %v ecn %v", name, got.tags, got.tos, chainString(pr), deref(pr.DSCP), deref(pr.ECN))
		if len(got.tags) != len(pr.VLANChain) {
			t.Errorf("%s: captured %d tags %+v, check predicted %+v", name, len(got.tags), got.tags, pr.VLANChain)
			continue
		}
		for i, tg := range got.tags {
			want := pr.VLANChain[i]
			if want.PCP == nil || int(tg.pcp) != *want.PCP || int(tg.id) != want.ID || int(tg.tpid) != want.TPID {
				t.Errorf("%s tag %d: captured VLAN %d PCP %d, check predicted %+v", name, i, tg.id, tg.pcp, want)
			}
		}
		if len(got.tags) > 0 && (pr.PCP == nil || int(got.tags[0].pcp) != *pr.PCP) {
			t.Errorf("%s: outermost PCP %d, check's pcp %v", name, got.tags[0].pcp, pr.PCP)
		}
		if len(got.tags) == 0 && (pr.PCP != nil || pr.VLAN != nil) {
			t.Errorf("%s: untagged frame, check predicted vlan %v pcp %v", name, pr.VLAN, pr.PCP)
		}
		if pr.DSCP == nil || int(got.tos>>2) != *pr.DSCP {
			t.Errorf("%s: captured DSCP %d, check predicted %v", name, got.tos>>2, pr.DSCP)
		}
		ecnNames := []string{"Not-ECT", "ECT(1)", "ECT(0)", "CE"}
		if pr.ECN == nil || int(got.tos&3) != *pr.ECN || pr.ECNName == nil || ecnNames[got.tos&3] != *pr.ECNName {
			t.Errorf("%s: captured ECN %d (%s), check predicted %v (%v)", name, got.tos&3, ecnNames[got.tos&3], deref(pr.ECN), derefS(pr.ECNName))
		}
		if pr.Verdict != "unknown" || pr.Trust != nil {
			t.Errorf("%s: veth has no DCB, yet verdict %s trust %v (want unknown, null)", name, pr.Verdict, derefS(pr.Trust))
		}
	}
}

// `roce-probe qos` on the lab's netdevs reports "no DCB" (veth has no
// dcbnl_ops) and the VLAN devices' egress maps, with exit status 0.
func TestLabQoSNoDCB(t *testing.T) {
	out, stderr, code := runCLI(t, "", "qos", "--netdev", lab.Nets[1].HostNetdev, "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r []struct {
		Real string `json:"real_netdev"`
		DCB  struct {
			Supported bool   `json:"supported"`
			Reason    string `json:"reason"`
		} `json:"dcb"`
		Trust *string `json:"trust"`
		VLANs []struct {
			Netdev string            `json:"netdev"`
			Egress map[string]uint32 `json:"egress_qos_map"`
		} `json:"vlan_devices"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r) != 1 || r[0].Real != lab.HostNetdev || r[0].DCB.Supported || !strings.Contains(r[0].DCB.Reason, "no DCB support") || r[0].Trust != nil {
		t.Fatalf("%+v", r)
	}
	found := false
	for _, v := range r[0].VLANs {
		if v.Netdev == lab.Nets[1].HostNetdev {
			found = true
			for prio, pcp := range lab.Nets[1].EgressQoS {
				if v.Egress[fmt.Sprint(prio)] != pcp {
					t.Errorf("%s egress %d: %d, want %d", v.Netdev, prio, v.Egress[fmt.Sprint(prio)], pcp)
				}
			}
		}
	}
	if !found {
		t.Errorf("%s missing from vlan_devices: %+v", lab.Nets[1].HostNetdev, r[0].VLANs)
	}
	out, _, code = runCLI(t, "", "qos", "--dev", lab.RDMADevice)
	if code != exitOK || !strings.Contains(out, "no DCB") {
		t.Errorf("qos --dev %s: exit %d\n%s", lab.RDMADevice, code, out)
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func derefS(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func chainString(r checkJSON) string {
	var parts []string
	for _, t := range r.VLANChain {
		parts = append(parts, fmt.Sprintf("%#x %d pcp %v", t.TPID, t.ID, deref(t.PCP)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
