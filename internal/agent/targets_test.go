package agent

import (
	"net/netip"
	"reflect"
	"slices"
	"testing"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// The targets of tagged flows on the rxe fixture (host/testdata:
// veth0.100 with egress-qos-map 0:3, and QinQ veth0.q1000.10 with
// egress-qos-map 0:2 on 802.1ad 1000 without a map; default TTL 64).
// Soft-RoCE sends with skb priority 0 whatever the sl, and each VLAN
// device maps it through its own egress map (vlan_dev_get_egress_qos_mask,
// net/8021q/vlan_dev.c, Linux 6.1): PCP 3 on VLAN 100; PCP 0 on the outer
// 1000 and 2 on the inner 10. It sends the traffic class byte as is (106:
// DSCP 26, ECN 2) and the TTL of the route (ip4_dst_hoplimit: the
// route's hoplimit metric, else net.ipv4.ip_default_ttl). The tags and
// markings are the flow's, the TTL, addresses and MACs each peer's,
// whichever peer comes first; a next hop without MAC keeps the one the
// stream had, or has none.
func TestPlanTaggedTargets(t *testing.T) {
	s, err := host.Load(hostTestdata + "rxe.json")
	if err != nil {
		t.Fatal(err)
	}
	ns := s.Namespaces[0]
	qinq, _ := ns.ByName("veth0.q1000.10")
	v100, _ := ns.ByName("veth0.100")
	nb := func(ip string, l *vlan.Link, m string) vlan.Neighbor {
		return vlan.Neighbor{IP: mustAddr(ip), Dev: l.Name, Ifindex: l.Index, MAC: vlan.MAC(mac(m)), State: vlan.NUDReachable}
	}
	ns.Neighbors = append(ns.Neighbors, nb("10.10.10.2", qinq, "02:00:00:10:00:02"), nb("10.10.10.200", qinq, "02:00:00:10:00:c8"),
		nb("10.0.100.2", v100, "02:00:00:01:00:02"))
	ns.Routes = append(ns.Routes, vlan.Route{Table: vlan.TableMain, Type: vlan.RouteUnicast, Dst: netip.MustParsePrefix("10.10.10.128/25"),
		Dev: qinq.Name, Ifindex: qinq.Index, PrefSrc: mustAddr("10.10.10.1"), HopLimit: 9})
	ns.Freeze()
	v, err := s.View("")
	if err != nil {
		t.Fatal(err)
	}
	rows := gidRows(v)
	tc, sl := 106, 5
	var flows []*flowSource
	for _, f := range []FlowConfig{{Name: "qinq", Select: SelectConfig{Netdev: qinq.Name, Family: "ipv4"}, TClass: &tc, SL: &sl, HopLimit: 64},
		{Name: "v100", Select: SelectConfig{Netdev: v100.Name, Family: "ipv4"}, TClass: &tc, SL: &sl, HopLimit: 64}} {
		fs := resolveFlow(v, f, rows)
		if fs.src == nil {
			t.Fatalf("flow %s: %v", f.Name, fs.err)
		}
		flows = append(flows, fs)
	}
	sports := map[string]uint16{"qinq": 0xc001, "v100": 0xc002}
	local := mac("02:00:00:00:00:01")
	qinqTags := []roce.VLANTag{{TPID: roce.TPIDDot1AD, ID: 1000, PCP: 0}, {TPID: roce.TPIDDot1Q, ID: 10, PCP: 2}}
	qinqMarks := probe.Markings{Tagged: true, VLAN: 1000, PCP: 0, DSCP: 26, ECN: 2, TTL: 64, Sport: 0xc001}
	tgt := func(tags []roce.VLANTag, m probe.Markings, ttl uint8, src, dst, dmac string) target {
		m.TTL = ttl
		return target{wire: "veth0", marks: m, frame: targetFrame(local, mac(dmac), tags, mustAddr(src), mustAddr(dst))}
	}
	kept := "02:00:00:10:00:03" // what the stream to 10.10.10.3 had
	want := map[streamKey]target{
		{mustAddr("10.10.10.2"), "qinq"}:   tgt(qinqTags, qinqMarks, 64, "10.10.10.1", "10.10.10.2", "02:00:00:10:00:02"),
		{mustAddr("10.10.10.200"), "qinq"}: tgt(qinqTags, qinqMarks, 9, "10.10.10.1", "10.10.10.200", "02:00:00:10:00:c8"),
		{mustAddr("10.10.10.3"), "qinq"}:   tgt(qinqTags, qinqMarks, 64, "10.10.10.1", "10.10.10.3", kept),
		{mustAddr("10.10.10.4"), "qinq"}:   {reason: reasonNoNeighbor},
		{mustAddr("10.0.100.2"), "v100"}: tgt([]roce.VLANTag{{TPID: roce.TPIDDot1Q, ID: 100, PCP: 3}},
			probe.Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: 2, Sport: 0xc002}, 64, "10.0.100.1", "10.0.100.2", "02:00:00:01:00:02"),
	}
	prev := map[streamKey]target{{mustAddr("10.10.10.3"), "qinq"}: {frame: probe.Frame{DstMAC: mac(kept)}}}
	peers := []Peer{{Name: "a", Addr: mustAddr("10.10.10.200")}, {Name: "b", Addr: mustAddr("10.10.10.2")}, {Name: "c", Addr: mustAddr("10.10.10.3")},
		{Name: "d", Addr: mustAddr("10.10.10.4")}, {Name: "e", Addr: mustAddr("10.0.100.2")}}
	for _, order := range [][]Peer{peers, slices.Concat(peers[1:], peers[:1])} {
		p := makePlan(v, flows, order, sports, prev)
		if len(p.specs) != len(want) || len(p.errors) != 0 {
			t.Fatalf("peers %v: %d streams (want %d), errors %v", order, len(p.specs), len(want), p.errors)
		}
		for _, sp := range p.specs {
			key := streamKey{sp.peer.Addr, sp.flow}
			if w := want[key]; !reflect.DeepEqual(sp.tgt, w) {
				t.Errorf("peers %v: %v: target\n %+v\nwant\n %+v", order, key, sp.tgt, w)
			}
		}
		var kicked []string
		for _, k := range p.kicks {
			kicked = append(kicked, k.dst.String())
		}
		slices.Sort(kicked)
		if !slices.Equal(kicked, []string{"10.10.10.3", "10.10.10.4"}) {
			t.Errorf("peers %v: kicked %v: want the two next hops without MAC", order, kicked)
		}
	}
}
