package ah

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

func macOf(s string) vlan.MAC {
	var m vlan.MAC
	if err := m.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return m
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func ip(s string) netip.Addr    { return netip.MustParseAddr(s) }

// labNet is testdata/rxe-net.json (see its README): the host side of the
// lab topology (internal/lab/topology.go) with the kernel's routes for its
// addresses, plus a routed network with a hoplimit metric, neighbours in
// several states and a per-netdev IPv6 hop limit. Each call decodes a
// fresh copy, frozen: a caller that changes it must Freeze it again.
func labNet(t testing.TB) *vlan.Namespace {
	t.Helper()
	f, err := os.Open("testdata/rxe-net.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, err := vlan.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// labTable is rxe0's table in the lab topology (docs/lab.md), mapped to
// labNet's netdevs (ifindex, MAC, MTU, VLAN chain outermost first, VLAN =
// the outermost tag's ID), plus a RoCE v1 entry as mlx5 would have it.
func labTable() Table {
	e := func(i int, g string, t gid.Type, dev string, vid *uint16) gid.Entry {
		ent := gid.Entry{Device: "rxe0", Port: 1, Index: i, GID: gid.MustParse(g), Type: t, Netdev: dev,
			VLAN: vid, VLANChain: []vlan.ChainTag{}, MAC: macOf("02:00:00:00:00:01"), MTU: 1500, Ifindex: 2, RealNetdev: "veth0"}
		if vid != nil {
			ent.Ifindex = 4
			ent.VLANChain = []vlan.ChainTag{{Tag: vlan.Tag{ID: *vid, TPID: vlan.TPID8021Q}, Netdev: dev}}
		}
		return ent
	}
	qinq := e(10, "::ffff:10.10.10.1", gid.TypeRoCEv2, "veth0.q1000.10", u16p(1000))
	qinq.Ifindex = 7
	qinq.VLANChain = []vlan.ChainTag{
		{Tag: vlan.Tag{ID: 1000, TPID: vlan.TPID8021AD}, Netdev: "veth0.q1000"},
		{Tag: vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}, Netdev: "veth0.q1000.10"},
	}
	return Table{Len: 1024, Entries: []gid.Entry{
		e(0, "fe80::ff:fe00:1", gid.TypeRoCEv2, "veth0", nil),
		e(1, "::ffff:10.0.0.1", gid.TypeRoCEv2, "veth0", nil),
		e(2, "fd00::1", gid.TypeRoCEv2, "veth0", nil),
		e(3, "::ffff:10.0.100.1", gid.TypeRoCEv2, "veth0.100", u16p(100)),
		e(4, "fd00:100::1", gid.TypeRoCEv2, "veth0.100", u16p(100)),
		e(5, "fe80::ff:fe00:1", gid.TypeRoCEv1, "veth0", nil),
		qinq,
	}}
}

func attrTo(sgid uint8, dst string) Attr {
	return Attr{IsGlobal: true, PortNum: 1, GRH: GlobalRoute{SGIDIndex: sgid, DGID: gid.MustParse(dst), HopLimit: 8, TrafficClass: 0x6A, FlowLabel: 0x12345}, SL: 5}
}

func TestResolveRXE(t *testing.T) {
	rxe := ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 17}
	cases := []struct {
		name      string
		a         Attr
		dmac      string
		from      string
		vlanID    *uint16
		pcp       *uint8
		ipv       int
		ttl       uint8
		fl        *uint32
		mtu       int
		chain     []string // Wire.VLANChain, outermost first: tag/pcp N netdev
		warnField []string
	}{
		// Linux 6.1's rxe as the lab saw it (docs/lab.md): a requested hop limit of 8 goes out as 64
		// (drivers/infiniband/core/verbs.c, ib_resolve_unicast_gid_dmac); TOS = the whole
		// traffic_class byte (drivers/infiniband/sw/rxe/rxe_net.c, prepare_ipv4_hdr); rxe's UD
		// source port from the QPN, 17 → 0xDF94 (rxe_qp.c, rxe_qp_init_req); the SL is ignored
		// (rxe_av.c, rxe_av_from_attr) and an untagged frame has no PCP.
		{name: "IPv4 untagged", a: attrTo(1, "::ffff:10.0.0.2"), dmac: "02:00:00:00:00:02", from: "neighbour", ipv: 4, ttl: 64, mtu: 1024,
			warnField: []string{"grh.hop_limit", "sl", "grh.flow_label"}},
		// PCP = the egress-qos-map entry for skb priority 0 (0:3 on veth0.100), whatever the SL:
		// rxe_net.c, rxe_init_packet never sets skb->priority.
		{name: "IPv4 VLAN 100", a: attrTo(3, "::ffff:10.0.100.2"), dmac: "02:00:00:00:00:02", from: "neighbour", vlanID: u16p(100), pcp: u8(3), ipv: 4, ttl: 64, mtu: 1024,
			chain: []string{"100/pcp 3 veth0.100"}, warnField: []string{"grh.hop_limit", "sl", "grh.flow_label"}},
		// QinQ (the lab's veth0.q1000.10): each VLAN device tags with its own egress map's
		// entry for skb priority 0 (vlan_dev_hard_start_xmit): veth0.q1000.10 maps 0:2,
		// veth0.q1000 has no map (PCP 0). vlan and pcp are the OUTERMOST tag's: 1000 / 0.
		{name: "IPv4 QinQ", a: attrTo(10, "::ffff:10.10.10.2"), dmac: "02:00:00:00:00:02", from: "neighbour", vlanID: u16p(1000), pcp: u8(0), ipv: 4, ttl: 64, mtu: 1024,
			chain: []string{"802.1ad:1000/pcp 0 veth0.q1000", "10/pcp 2 veth0.q1000.10"}, warnField: []string{"grh.hop_limit", "sl", "grh.flow_label"}},
		// IPv6 with flow label 0 on the wire (rxe_net.c, prepare_ipv6_hdr).
		{name: "IPv6 untagged", a: attrTo(2, "fd00::2"), dmac: "02:00:00:00:00:02", from: "neighbour", ipv: 6, ttl: 64, fl: u32(0), mtu: 1024,
			warnField: []string{"grh.hop_limit", "sl", "grh.flow_label", "grh.flow_label"}},
		{name: "IPv6 VLAN 100 hop limit of veth0.100", a: attrTo(4, "fd00:100::2"), from: "neighbour", vlanID: u16p(100), pcp: u8(3), ipv: 6, ttl: 32, fl: u32(0), mtu: 1024,
			chain: []string{"100/pcp 3 veth0.100"}, warnField: []string{"grh.hop_limit", "sl", "grh.flow_label", "grh.flow_label"}},
		// ib_resolve_eth_dmac: multicast → ip_eth_mc_map, no route lookup, hop limit kept.
		{name: "IPv4 multicast", a: attrTo(1, "::ffff:239.129.1.2"), dmac: "01:00:5e:01:01:02", from: "multicast", ipv: 4, ttl: 8, mtu: 1024,
			warnField: []string{"sl", "grh.flow_label"}},
		{name: "IPv6 multicast", a: attrTo(2, "ff0e::1:2:3:4"), dmac: "33:33:00:03:00:04", from: "multicast", ipv: 6, ttl: 8, fl: u32(0), mtu: 1024,
			warnField: []string{"sl", "grh.flow_label", "grh.flow_label"}},
		// Own address: the route is local, the MAC that of the netdev owning it.
		{name: "own address", a: attrTo(1, "::ffff:10.0.0.1"), dmac: "02:00:00:00:00:01", from: "local", ipv: 4, ttl: 64, mtu: 1024,
			warnField: []string{"grh.hop_limit", "sl", "grh.flow_label"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.dmac == "" {
				c.dmac = "02:00:00:00:00:02"
			}
			r, err := Resolve(c.a, labTable(), labNet(t), rxe)
			if err != nil {
				t.Fatal(err)
			}
			w := r.Wire
			if w.DMAC.String() != c.dmac || w.DMACFrom != c.from || w.SMAC.String() != "02:00:00:00:00:01" {
				t.Errorf("smac %s dmac %s (%s), want dmac %s (%s)", w.SMAC, w.DMAC, w.DMACFrom, c.dmac, c.from)
			}
			if !eqU16(w.VLAN, c.vlanID) || !eqU8(w.PCP, c.pcp) {
				t.Errorf("vlan %v pcp %v, want %v %v", ptrStr(w.VLAN), ptrStr(w.PCP), ptrStr(c.vlanID), ptrStr(c.pcp))
			}
			chain := []string{}
			for _, tg := range w.VLANChain {
				chain = append(chain, fmt.Sprintf("%s %s", tg, tg.Netdev))
			}
			if w.VLANChain == nil || !equalStrings(chain, c.chain) {
				t.Errorf("vlan_chain %q, want %q (outermost first; [] when untagged)", chain, c.chain)
			}
			if w.IPVersion != c.ipv || w.RoCEVersion != 2 || w.TTL != c.ttl || w.MTU != c.mtu {
				t.Errorf("ip v%d roce v%d ttl %d mtu %d, want v%d v2 ttl %d mtu %d", w.IPVersion, w.RoCEVersion, w.TTL, w.MTU, c.ipv, c.ttl, c.mtu)
			}
			if w.TOS == nil || *w.TOS != 0x6A || *w.DSCP != 26 || *w.ECN != 2 {
				t.Errorf("tos %v dscp %v ecn %v, want 0x6a 26 2", ptrStr(w.TOS), ptrStr(w.DSCP), ptrStr(w.ECN))
			}
			if (w.FlowLabel == nil) != (c.fl == nil) || (c.fl != nil && *w.FlowLabel != *c.fl) {
				t.Errorf("flow label %v, want %v", ptrStr(w.FlowLabel), ptrStr(c.fl))
			}
			if w.UDPSport == nil || *w.UDPSport != 0xDF94 {
				t.Errorf("udp sport %v, want 0xdf94 (rxe, QPN 17)", ptrStr(w.UDPSport))
			}
			var got []string
			for _, x := range r.Warnings {
				got = append(got, x.Field)
			}
			if !equalStrings(got, c.warnField) {
				t.Errorf("warnings %q, want fields %q: %v", got, c.warnField, r.Warnings)
			}
		})
	}
}

func TestResolveMLX5(t *testing.T) {
	a := attrTo(3, "::ffff:10.0.100.2")
	r, err := Resolve(a, labTable(), labNet(t), ResolveOptions{Driver: qos.DriverMLX5})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Wire
	// PCP = sl & 7; user AH: traffic class unchanged (providers/mlx5/verbs.c, mlx5_create_ah,
	// rdma-core v64.0); flow label 0x12345 → 0xE341 (libibverbs/verbs.h, ibv_flow_label_to_udp_sport).
	if !eqU8(w.PCP, u8(5)) || *w.TOS != 0x6A || w.UDPSport == nil || *w.UDPSport != 0xE341 {
		t.Errorf("pcp %v tos %v sport %v, want 5 0x6a 0xe341", ptrStr(w.PCP), ptrStr(w.TOS), ptrStr(w.UDPSport))
	}
	// Kernel AH: traffic_class | 0x02 for RoCE v2 (drivers/infiniband/hw/mlx5/ah.c, create_ib_ah;
	// Linux 6.1): 0x68 → 0x6A.
	a.GRH.TrafficClass = 0x68
	r, err = Resolve(a, labTable(), labNet(t), ResolveOptions{Driver: qos.DriverMLX5, Path: qos.PathKernelAH})
	if err != nil {
		t.Fatal(err)
	}
	if *r.Wire.TOS != 0x6A || !hasWarning(r, "grh.traffic_class") {
		t.Errorf("kernel AH tos %v, warnings %v: want 0x6a and a traffic_class warning", ptrStr(r.Wire.TOS), r.Warnings)
	}
	// No flow label: the user AH's port is random.
	a.GRH.FlowLabel = 0
	r, err = Resolve(a, labTable(), labNet(t), ResolveOptions{Driver: qos.DriverMLX5})
	if err != nil || r.Wire.UDPSport != nil || !hasWarning(r, "udp_sport") {
		t.Errorf("mlx5 without flow label: sport %v, err %v, warnings %v", ptrStr(r.Wire.UDPSport), err, r.Warnings)
	}
}

func TestResolveRoCEv1LinkLocal(t *testing.T) {
	// rdma_get_ll_mac: bytes 8..10 and 13..15 of the GID, first byte ^ 2:
	// fe80::ff:fe00:2 → 00:00:00 + 00:00:02 → 02:00:00:00:00:02. Hop
	// limit kept (no route lookup for link-local + RoCE v1).
	a := attrTo(5, "fe80::ff:fe00:2")
	r, err := Resolve(a, labTable(), labNet(t), ResolveOptions{Driver: qos.DriverMLX5})
	if err != nil {
		t.Fatal(err)
	}
	w := r.Wire
	if w.RoCEVersion != 1 || w.IPVersion != 0 || w.DMAC.String() != "02:00:00:00:00:02" || w.DMACFrom != "link-local-gid" || w.TTL != 8 {
		t.Errorf("v%d ip%d dmac %s (%s) ttl %d", w.RoCEVersion, w.IPVersion, w.DMAC, w.DMACFrom, w.TTL)
	}
	if w.UDPSport != nil || w.FlowLabel == nil || *w.FlowLabel != 0x12345 {
		t.Errorf("v1: sport %v flow label %v", ptrStr(w.UDPSport), ptrStr(w.FlowLabel))
	}
}

func TestResolveNeighbourNotResolved(t *testing.T) {
	for _, c := range []struct {
		dst   string
		state string
	}{
		{"::ffff:10.0.0.3", "neighbour entry: FAILED"},
		{"::ffff:10.0.0.4", "neighbour entry: none"},
	} {
		r, err := Resolve(attrTo(1, c.dst), labTable(), labNet(t), ResolveOptions{Driver: qos.DriverRXE})
		var ne *NeighborError
		if !errors.As(err, &ne) || !errors.Is(err, syscall.ETIMEDOUT) {
			t.Fatalf("%s: err %v, want a NeighborError (ETIMEDOUT)", c.dst, err)
		}
		if r == nil || r.Wire.DMAC != nil || r.Route == nil {
			t.Fatalf("%s: want a partial resolution without DMAC, got %+v", c.dst, r)
		}
		for _, s := range []string{c.state, "10.0.0.0/24 dev veth0", "ETIMEDOUT"} {
			if !contains(err.Error(), s) {
				t.Errorf("%s: message %q lacks %q", c.dst, err, s)
			}
		}
		if _, err := r.Frame(Datagram{}); err == nil {
			t.Errorf("%s: Frame without a DMAC succeeded", c.dst)
		}
	}
}

func TestResolveErrors(t *testing.T) {
	// Invalid attributes come back as the ValidationError.
	a := attrTo(1, "fd00::2")
	if _, err := Resolve(a, labTable(), labNet(t), ResolveOptions{}); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("family mismatch: %v", err)
	}
	// IPv6 with no route through the sgid's netdev: ENETUNREACH.
	if _, err := Resolve(attrTo(4, "fd00::2"), labTable(), labNet(t), ResolveOptions{}); !errors.Is(err, syscall.ENETUNREACH) {
		t.Errorf("IPv6 through veth0.100 to fd00::2: %v", err)
	}
	// Unicast needs the namespace's routes and neighbours.
	if _, err := Resolve(attrTo(1, "::ffff:10.0.0.2"), labTable(), nil, ResolveOptions{}); err == nil {
		t.Error("unicast without a namespace succeeded")
	}
}

// An sgid entry whose netdev the namespace does not have (a netdev of
// another namespace, or one that went away) cannot be resolved there: its
// VLAN tags, MAC and routes are unknown, so Resolve says so (wrapping
// vlan.ErrNoLink) instead of predicting an untagged frame without a
// source MAC — for unicast and multicast destinations alike (issue 12:
// "a GID entry whose netdev is absent is reported as such, never as
// untagged"). The same holds for an entry whose netdev the kernel hides
// (gid_attrs/ndevs fails: Netdev ""). Without a namespace the entry's own
// fields are all there is, as documented for NewResolver.
func TestResolveNetdevNotInNamespace(t *testing.T) {
	tab := labTable()
	tab.Entries = append(tab.Entries,
		gid.Entry{Device: "rxe0", Port: 1, Index: 20, GID: gid.MustParse("::ffff:10.0.44.1"), Type: gid.TypeRoCEv2, Netdev: "veth0.300", Netns: gid.NetnsOther},
		gid.Entry{Device: "rxe0", Port: 1, Index: 21, GID: gid.MustParse("::ffff:10.0.45.1"), Type: gid.TypeRoCEv2, Netns: gid.NetnsOther})
	for _, c := range []struct {
		sgid     uint8
		dst, msg string
	}{
		{20, "::ffff:10.0.44.2", `"veth0.300"`},
		{20, "::ffff:239.1.1.1", `"veth0.300"`},
		{21, "::ffff:10.0.45.2", "GID index 21"},
		{21, "::ffff:239.1.1.1", "GID index 21"},
	} {
		r, err := Resolve(attrTo(c.sgid, c.dst), tab, labNet(t), ResolveOptions{Driver: qos.DriverRXE})
		if !errors.Is(err, vlan.ErrNoLink) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("sgid %d → %s: %v, want vlan.ErrNoLink naming %s", c.sgid, c.dst, err, c.msg)
		}
		if r != nil {
			t.Errorf("sgid %d → %s: a resolution (vlan %v, chain %v) for a netdev that is not there", c.sgid, c.dst, ptrStr(r.Wire.VLAN), r.Wire.VLANChain)
		}
	}
	// No namespace: multicast resolves from the entry alone.
	if _, err := Resolve(attrTo(3, "::ffff:239.1.1.1"), labTable(), nil, ResolveOptions{Driver: qos.DriverRXE}); err != nil {
		t.Errorf("multicast without a namespace: %v", err)
	}
}

// The frame decodes as a UD SEND_ONLY with the resolved fields and a valid ICRC.
func TestResolutionFrame(t *testing.T) {
	for _, c := range []struct {
		name string
		a    Attr
	}{
		{"IPv4 VLAN 100", attrTo(3, "::ffff:10.0.100.2")},
		{"IPv6 untagged", attrTo(2, "fd00::2")},
		{"IPv4 QinQ", attrTo(10, "::ffff:10.10.10.2")},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := Resolve(c.a, labTable(), labNet(t), ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 0x11})
			if err != nil {
				t.Fatal(err)
			}
			payload := []byte("hello, rxe!")
			f, err := r.Frame(Datagram{SrcQPN: 0x11, DestQPN: 0x12, QKey: 0x11111111, PSN: 0x123456, Payload: payload, IPID: 0x4242})
			if err != nil {
				t.Fatal(err)
			}
			var p roce.Packet
			if err := roce.NewDecoder().Decode(f, &p); err != nil {
				t.Fatal(err)
			}
			w := r.Wire
			if p.Version != 2 || p.IPVersion != w.IPVersion || p.Src != w.Src || p.Dst != w.Dst || p.TOS != *w.TOS || p.TTL != w.TTL ||
				p.SrcPort != 0xDF94 || p.DstPort != 4791 || p.BTH.Opcode != roce.OpcodeUDSendOnly || p.BTH.PKey != 0xFFFF ||
				p.BTH.DestQP != 0x12 || p.BTH.PSN != 0x123456 || !p.HasDETH || p.QKey != 0x11111111 || p.SrcQP != 0x11 ||
				p.PayloadLen != len(payload) || p.PadLen != 1 || p.ICRCStatus != roce.ICRCValid {
				t.Errorf("decoded %+v", p)
			}
			// The frame's first tag is the outermost one: Wire.VLAN and PCP;
			// then every tag of Wire.VLANChain in order, with its TPID.
			if w.VLAN != nil && (p.NumVLANs < 1 || p.VLANs[0].ID != *w.VLAN || p.VLANs[0].PCP != *w.PCP) {
				t.Errorf("vlans %+v, want the first %d pcp %d", p.VLANs[:p.NumVLANs], *w.VLAN, *w.PCP)
			}
			if p.NumVLANs != len(w.VLANChain) {
				t.Fatalf("%d tags in the frame, want %d: %+v", p.NumVLANs, len(w.VLANChain), w.VLANChain)
			}
			for i, tg := range w.VLANChain {
				if got := p.VLANs[i]; got.ID != tg.ID || got.TPID != uint16(tg.TPID) || got.PCP != *tg.PCP {
					t.Errorf("tag %d in the frame: %+v, want %s with TPID %#04x", i, got, tg, uint16(tg.TPID))
				}
			}
		})
	}
}

func hasWarning(r *Resolution, field string) bool {
	for _, w := range r.Warnings {
		if w.Field == field {
			return true
		}
	}
	return false
}

func eqU8(a, b *uint8) bool   { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func eqU16(a, b *uint16) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func ptrStr[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func u8(v uint8) *uint8    { return &v }
func u32(v uint32) *uint32 { return &v }

// The library's warnings speak of the AH and the host, not of a command's
// flags or Go field names: `send` printed "give the QPN
// (ResolveOptions.SrcQPN, --src-qpn)", a flag send does not have.
func TestWarningsNameNoFlags(t *testing.T) {
	ns := labNet(t)
	tab := labTable()
	n := 0
	for _, e := range tab.Entries {
		if e.Empty || e.Type != gid.TypeRoCEv2 {
			continue
		}
		idx := uint8(e.Index)
		dst := gid.MustParse("10.0.0.2")
		if !e.GID.IsIPv4Mapped() {
			dst = gid.MustParse("fd00::2")
		}
		a := Attr{IsGlobal: true, PortNum: 1, SL: 5, GRH: GlobalRoute{DGID: dst, SGIDIndex: idx, HopLimit: 8, FlowLabel: 7}}
		res, _ := Resolve(a, tab, ns, ResolveOptions{Driver: qos.DriverRXE})
		if res == nil {
			continue
		}
		n += len(res.Warnings)
		for _, w := range res.Warnings {
			if strings.Contains(w.Reason, "--") || strings.Contains(w.Reason, "ResolveOptions") || strings.Contains(w.Reason, "Datagram.") {
				t.Errorf("index %d: warning %q names a flag or a Go field", idx, w)
			}
		}
	}
	if n < 4 {
		t.Fatalf("only %d warnings: the test must see the usual ones (sl, hop limit, flow label, udp_sport)", n)
	}
}

// TestResolveNextHopMAC: a next hop the neighbour table does not have
// (10.0.0.3 FAILED, 10.0.0.4 absent in testdata/rxe-net.json) takes the
// MAC given, says so, and the frame carries it as its destination; a
// next hop the table has (10.0.0.2, 02:00:00:00:00:02 REACHABLE) keeps the
// table's MAC, with a warning when the one given differs.
func TestResolveNextHopMAC(t *testing.T) {
	given := macOf("02:00:00:00:00:99")
	for _, dst := range []string{"::ffff:10.0.0.3", "::ffff:10.0.0.4"} {
		r, err := Resolve(attrTo(1, dst), labTable(), labNet(t), ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 17, NextHopMAC: given})
		if err != nil {
			t.Fatalf("%s: %v", dst, err)
		}
		if r.Wire.DMAC.String() != "02:00:00:00:00:99" || r.Wire.DMACFrom != "given" || !hasWarning(r, "dmac") {
			t.Errorf("%s: dmac %s from %q, warnings %v; want 02:00:00:00:00:99 from given, with a dmac warning", dst, r.Wire.DMAC, r.Wire.DMACFrom, r.Warnings)
		}
		f, err := r.Frame(Datagram{SrcQPN: 17, DestQPN: 1, Payload: []byte("x")})
		if err != nil {
			t.Fatalf("%s: Frame: %v", dst, err)
		}
		if want := []byte{0x02, 0, 0, 0, 0, 0x99}; string(f[:6]) != string(want) {
			t.Errorf("%s: the frame's destination MAC is % x, want % x", dst, f[:6], want)
		}
	}
	r, err := Resolve(attrTo(1, "::ffff:10.0.0.2"), labTable(), labNet(t), ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 17, NextHopMAC: given})
	if err != nil || r.Wire.DMAC.String() != "02:00:00:00:00:02" || r.Wire.DMACFrom != "neighbour" || !hasWarning(r, "dmac") {
		t.Errorf("a resolved next hop and another MAC given: %v, dmac %s from %q, warnings %v; want the table's 02:00:00:00:00:02 and a dmac warning", err, r.Wire.DMAC, r.Wire.DMACFrom, r.Warnings)
	}
	r, err = Resolve(attrTo(1, "::ffff:10.0.0.2"), labTable(), labNet(t), ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 17, NextHopMAC: macOf("02:00:00:00:00:02")})
	if err != nil || hasWarning(r, "dmac") {
		t.Errorf("the table's own MAC given: %v, warnings %v; want no dmac warning", err, r.Warnings)
	}
}

// TestErrnoOf: the errno of each kind of error this package returns, as
// the verbs calls fail (docs/ah.md's table; the FromWC errnos from
// ib_init_ah_attr_from_wc and ibv_init_ah_from_wc).
func TestErrnoOf(t *testing.T) {
	_, nerr := Resolve(attrTo(1, "::ffff:10.0.0.4"), labTable(), labNet(t), ResolveOptions{Driver: qos.DriverRXE})
	empty := attrTo(99, "::ffff:10.0.0.2").Validate(labTable()) // index 99 of 1024 is empty
	badRate := attrTo(1, "::ffff:10.0.0.2")
	badRate.StaticRate = 1 // not an enum ibv_rate value
	_, wcErr := FromWC(WC{}, [40]byte{}, labTable(), FromWCOptions{Behaviour: Kernel})
	for _, c := range []struct {
		err  error
		want string
	}{
		{nerr, "ETIMEDOUT"},
		{empty, "ENODATA"},
		{badRate.Validate(labTable()), "EINVAL"},
		{wcErr, "EPROTOTYPE"}, // a completion without IB_WC_GRH, kernel rule
		{errors.New("other"), ""},
		{nil, ""},
	} {
		if got := ErrnoOf(c.err); got != c.want {
			t.Errorf("ErrnoOf(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}
