package qos

import (
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

func mlx5Link() Link {
	return Link{Netdev: "ens1f0.10", Real: "ens1f0", Tags: []vlan.ChainTag{{Netdev: "ens1f0.10", Tag: vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}}}}
}

func TestPredictMLX5(t *testing.T) {
	// drivers/infiniband/hw/mlx5/ah.c, create_ib_ah, and qp.c, mlx5_set_path
	// (Linux 6.1); providers/mlx5/verbs.c, mlx5_create_ah (rdma-core v64.0).
	for sl := uint8(0); sl < 16; sl++ {
		for _, p := range []Path{PathUserAH, PathKernelAH, PathConnectedQP} {
			w := Predict(DriverMLX5, WireInput{Path: p, SL: sl, TrafficClass: 104, GIDType: gid.TypeRoCEv2, Link: mlx5Link()})
			if len(w.Tags) != 1 || w.Tags[0].PCP == nil || *w.Tags[0].PCP != sl&7 || w.Tags[0].ID != 10 {
				t.Fatalf("%s sl %d: tags %+v, want VLAN 10 PCP %d", p, sl, w.Tags, sl&7)
			}
			if w.SLIgnored {
				t.Fatalf("mlx5 uses the sl")
			}
		}
	}
	for tc := 0; tc < 256; tc++ {
		in := WireInput{SL: 3, TrafficClass: uint8(tc), GIDType: gid.TypeRoCEv2, Link: mlx5Link()}
		in.Path = PathKernelAH // tclass | 0x02
		w := Predict(DriverMLX5, in)
		if *w.DSCP != uint8(tc>>2) || *w.ECN != ECN((tc|2)&3) {
			t.Fatalf("kernel AH tc %d: DSCP %d ECN %v", tc, *w.DSCP, *w.ECN)
		}
		in.Path = PathUserAH // unchanged
		w = Predict(DriverMLX5, in)
		if *w.DSCP != uint8(tc>>2) || *w.ECN != ECN(tc&3) {
			t.Fatalf("user AH tc %d: DSCP %d ECN %v", tc, *w.DSCP, *w.ECN)
		}
		in.Path = PathConnectedQP // dscp = tc >> 2, ECN not from tc
		w = Predict(DriverMLX5, in)
		if *w.DSCP != uint8(tc>>2) || w.ECN != nil {
			t.Fatalf("QP tc %d: DSCP %d ECN %v", tc, *w.DSCP, w.ECN)
		}
	}
	// Kernel AH with traffic_class 104 (DSCP 26, Not-ECT) goes out as 106.
	w := Predict(DriverMLX5, WireInput{Path: PathKernelAH, TrafficClass: 104, GIDType: gid.TypeRoCEv2, Link: mlx5Link()})
	if *w.ECN != ECT0 {
		t.Errorf("kernel AH 104: ECN %v, want ECT(0)", *w.ECN)
	}
	// RoCE v1 has no IP header; the kernel AH does not add ECT for v1.
	w = Predict(DriverMLX5, WireInput{Path: PathKernelAH, TrafficClass: 104, GIDType: gid.TypeRoCEv1, Link: mlx5Link()})
	if w.DSCP != nil || w.ECN != nil {
		t.Errorf("RoCE v1: DSCP %v ECN %v, want none", w.DSCP, w.ECN)
	}
	// Untagged: no tag, known.
	w = Predict(DriverMLX5, WireInput{Path: PathUserAH, SL: 3, GIDType: gid.TypeRoCEv2, Link: Link{Netdev: "ens1f0", Real: "ens1f0"}})
	if len(w.Tags) != 0 || !w.TagsKnown {
		t.Errorf("untagged mlx5: %+v", w)
	}
}

func TestPredictRXE(t *testing.T) {
	// drivers/infiniband/sw/rxe/rxe_av.c, rxe_av_from_attr, and rxe_net.c,
	// rxe_init_packet, prepare_ipv4_hdr and prepare_ipv6_hdr (Linux 6.1): sl
	// ignored, skb priority 0 → egress map entry for 0 on every VLAN device;
	// the whole tclass byte in IP.
	qinq := Link{Netdev: "q1000.10", Real: "veth0", Tags: []vlan.ChainTag{
		{Netdev: "q1000", Tag: vlan.Tag{ID: 1000, TPID: vlan.TPID8021AD}, EgressQoS: map[uint32]uint32{0: 6}},
		{Netdev: "q1000.10", Tag: vlan.Tag{ID: 10, TPID: vlan.TPID8021Q}, EgressQoS: map[uint32]uint32{0: 2}},
	}}
	for sl := uint8(0); sl < 16; sl++ {
		for tc := 0; tc < 256; tc++ {
			w := Predict(DriverRXE, WireInput{SL: sl, TrafficClass: uint8(tc), GIDType: gid.TypeRoCEv2, Link: labVLAN100()})
			if !w.SLIgnored || len(w.Tags) != 1 || *w.Tags[0].PCP != 3 || *w.DSCP != uint8(tc>>2) || *w.ECN != ECN(tc&3) {
				t.Fatalf("sl %d tc %d: %+v", sl, tc, w)
			}
		}
	}
	w := Predict(DriverRXE, WireInput{SL: 5, TrafficClass: 106, GIDType: gid.TypeRoCEv2, Link: qinq})
	if len(w.Tags) != 2 || w.Tags[0].ID != 1000 || *w.Tags[0].PCP != 6 || w.Tags[1].ID != 10 || *w.Tags[1].PCP != 2 {
		t.Errorf("QinQ: %+v", w.Tags)
	}
	w = Predict(DriverRXE, WireInput{GIDType: gid.TypeRoCEv2, Link: Link{Netdev: "veth0.200", Real: "veth0", Tags: []vlan.ChainTag{{Netdev: "veth0.200", Tag: vlan.Tag{ID: 200, TPID: vlan.TPID8021Q}}}}})
	if *w.Tags[0].PCP != 0 {
		t.Errorf("VLAN without a map: PCP %d, want 0", *w.Tags[0].PCP)
	}
}

func TestPredictIRDMA(t *testing.T) {
	// irdma: user_pri = rt_tos2priority(tclass), then the GID VLAN
	// device's egress map (irdma_setup_ah, irdma_roce_get_vlan_prio).
	labPCP := map[uint8]uint8{0: 3, 2: 5, 4: 6, 6: 7}
	for tc := 0; tc < 256; tc++ {
		w := Predict(DriverIRDMA, WireInput{Path: PathUserAH, SL: 7, TrafficClass: uint8(tc), GIDType: gid.TypeRoCEv2, Link: labVLAN100()})
		want := labPCP[refTOS2Prio[uint8(tc)&0x18]]
		if !w.SLIgnored || len(w.Tags) != 1 || w.Tags[0].PCP == nil || *w.Tags[0].PCP != want {
			t.Fatalf("tc %d: tags %+v, want PCP %d", tc, w.Tags, want)
		}
	}
	// DSCP mode on a connected QP: dscp_map from the APP table.
	dcb := &DCB{Supported: true, Apps: []App{{AppSelDSCP, 4, 26}}}
	// The VLAN device then maps that priority through its egress map:
	// 4 → 5; without an entry the PCP would be 0.
	link := Link{Netdev: "ens2.5", Real: "ens2", Tags: []vlan.ChainTag{{Netdev: "ens2.5", Tag: vlan.Tag{ID: 5, TPID: vlan.TPID8021Q}, EgressQoS: map[uint32]uint32{4: 5}}}}
	w := Predict(DriverIRDMA, WireInput{Path: PathConnectedQP, TrafficClass: 104, GIDType: gid.TypeRoCEv2, Link: link, DCB: dcb})
	if *w.Tags[0].PCP != 5 {
		t.Errorf("DSCP mode: PCP %d, want 5", *w.Tags[0].PCP)
	}
	link.Tags[0].EgressQoS = nil
	w = Predict(DriverIRDMA, WireInput{Path: PathConnectedQP, TrafficClass: 104, GIDType: gid.TypeRoCEv2, Link: link, DCB: dcb})
	if *w.Tags[0].PCP != 0 {
		t.Errorf("DSCP mode, no egress map: PCP %d, want 0", *w.Tags[0].PCP)
	}
	// Untagged: priority tagging unknown.
	w = Predict(DriverIRDMA, WireInput{Path: PathUserAH, GIDType: gid.TypeRoCEv2, Link: Link{Netdev: "ens2", Real: "ens2"}})
	if w.TagsKnown {
		t.Error("untagged irdma: tagging must be unknown")
	}
}

func TestPredictUnknowns(t *testing.T) {
	in := WireInput{Path: PathUserAH, SL: 3, TrafficClass: 106, GIDType: gid.TypeRoCEv2, Link: mlx5Link()}
	for _, d := range []Driver{DriverBNXTRE, DriverHNS, DriverERDMA, DriverUnknown, Driver("qede")} {
		w := Predict(d, in)
		if len(w.Unknowns) == 0 {
			t.Errorf("%q: no unknowns reported", d)
		}
		for _, tg := range w.Tags {
			if tg.PCP != nil {
				t.Errorf("%q: PCP %d claimed, want unknown", d, *tg.PCP)
			}
		}
	}
	// hns: DSCP = tclass >> 2 for RoCE v2 (providers/hns/hns_roce_u_verbs.c,
	// get_tclass; rdma-core v64.0); bnxt_re: sl not passed for AHs.
	if w := Predict(DriverHNS, in); w.DSCP == nil || *w.DSCP != 26 || w.ECN != nil {
		t.Errorf("hns: DSCP %v ECN %v", w.DSCP, w.ECN)
	}
	if w := Predict(DriverBNXTRE, in); !w.SLIgnored || w.DSCP != nil {
		t.Errorf("bnxt_re AH: %+v", w)
	}
	// hns in DSCP mode replaces the sl with the NIC's priority.
	dcb := &DCB{Supported: true, Apps: []App{{AppSelDSCP, 6, 26}}}
	in.DCB = dcb
	if w := Predict(DriverHNS, in); !w.SLIgnored {
		t.Error("hns DSCP mode: sl must be reported as replaced")
	}
}

// ionic builds the header template itself (ionic_controlpath.c,
// ionic_build_hdr; torvalds/linux 28a06de7): a tag only for a VLAN GID,
// with PCP sl & 7 (sl << VLAN_PRIO_SHIFT in a u16); an AH's TOS is the
// traffic class with the ECN bits cleared (ionic_clear_ecn: tc & ~3), a
// connected QP's has ECT(0) (ionic_set_ecn: (tc | 2) & ~1).
func TestPredictIONIC(t *testing.T) {
	for sl := uint8(0); sl < 16; sl++ {
		w := Predict(DriverIONIC, WireInput{Path: PathConnectedQP, SL: sl, TrafficClass: 106, GIDType: gid.TypeRoCEv2, Link: mlx5Link()})
		if len(w.Tags) != 1 || w.Tags[0].PCP == nil || *w.Tags[0].PCP != sl%8 || w.Tags[0].ID != 10 || w.SLIgnored {
			t.Fatalf("sl %d: tags %+v, want VLAN 10 PCP %d", sl, w.Tags, sl%8)
		}
	}
	for _, c := range []struct {
		path Path
		tc   uint8
		dscp uint8
		ecn  ECN
	}{
		{PathKernelAH, 106, 26, NotECT}, // 0x6a & ~3 = 0x68
		{PathUserAH, 107, 26, NotECT},   // CE cleared too
		{PathConnectedQP, 104, 26, ECT0},
		{PathConnectedQP, 107, 26, ECT0}, // 0x6b | 2 = 0x6b, & ~1 = 0x6a
		{PathConnectedQP, 0, 0, ECT0},
	} {
		w := Predict(DriverIONIC, WireInput{Path: c.path, TrafficClass: c.tc, GIDType: gid.TypeRoCEv2, Link: mlx5Link()})
		if w.DSCP == nil || *w.DSCP != c.dscp || w.ECN == nil || *w.ECN != c.ecn {
			t.Errorf("%s tc %d: DSCP %v ECN %v, want %d %v", c.path, c.tc, w.DSCP, w.ECN, c.dscp, c.ecn)
		}
	}
	// Untagged GID: no tag in the template, known.
	w := Predict(DriverIONIC, WireInput{Path: PathKernelAH, SL: 3, GIDType: gid.TypeRoCEv2, Link: Link{Netdev: "enp1s0", Real: "enp1s0"}})
	if len(w.Tags) != 0 || !w.TagsKnown {
		t.Errorf("untagged ionic: %+v", w)
	}
	// RoCE v1: not what ionic sends.
	w = Predict(DriverIONIC, WireInput{Path: PathKernelAH, GIDType: gid.TypeRoCEv1, Link: mlx5Link()})
	if w.TagsKnown || w.DSCP != nil || len(w.Unknowns) == 0 {
		t.Errorf("RoCE v1 on ionic: %+v", w)
	}
}

// hiroce3 (openEuler's driver for hinic3 NICs) fills a connected QP's
// path context itself (roce_qp_modify.c roce3_qp_set_path,
// openeuler-mirror/kernel 5bc8dbb5): tclass = traffic_class | 0x2, sl &
// 7. Its AH paths were not read: unknown.
func TestPredictHIROCE3(t *testing.T) {
	for _, c := range []struct {
		tc   uint8
		dscp uint8
		ecn  ECN
	}{{104, 26, ECT0}, {106, 26, ECT0}, {107, 26, CE}, {0, 0, ECT0}} {
		w := Predict(DriverHIROCE3, WireInput{Path: PathConnectedQP, SL: 11, TrafficClass: c.tc, GIDType: gid.TypeRoCEv2, Link: mlx5Link()})
		if w.DSCP == nil || *w.DSCP != c.dscp || w.ECN == nil || *w.ECN != c.ecn {
			t.Errorf("tc %d: DSCP %v ECN %v, want %d %v", c.tc, w.DSCP, w.ECN, c.dscp, c.ecn)
		}
		if len(w.Tags) != 1 || w.Tags[0].PCP != nil || !w.TagsKnown {
			t.Errorf("tc %d: tags %+v: want VLAN 10 with an unknown PCP", c.tc, w.Tags)
		}
	}
	w := Predict(DriverHIROCE3, WireInput{Path: PathUserAH, TrafficClass: 106, GIDType: gid.TypeRoCEv2, Link: mlx5Link()})
	if w.DSCP != nil || w.TagsKnown || len(w.Unknowns) == 0 {
		t.Errorf("hiroce3 user AH: %+v, want unknown", w)
	}
}
