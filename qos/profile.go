package qos

import (
	"fmt"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// Path is how an address vector reaches the driver. mlx5 treats the
// traffic class differently on each (drivers/infiniband/hw/mlx5/ah.c,
// create_ib_ah, and qp.c, mlx5_set_path (Linux 6.1); providers/mlx5/verbs.c,
// mlx5_create_ah (rdma-core v64.0)).
type Path string

// Paths.
const (
	// PathUserAH is ibv_create_ah in user space (UD sends from verbs
	// applications).
	PathUserAH Path = "user-ah"
	// PathKernelAH is rdma_create_ah in the kernel (kernel ULPs, MADs).
	PathKernelAH Path = "kernel-ah"
	// PathConnectedQP is the AV of a connected QP (RC/UC/XRC) set with
	// ibv_modify_qp to RTR; rdma_cm connections take this path.
	PathConnectedQP Path = "connected-qp"
)

// ParsePath parses "user-ah", "kernel-ah" or "connected-qp".
func ParsePath(s string) (Path, error) {
	switch p := Path(s); p {
	case PathUserAH, PathKernelAH, PathConnectedQP:
		return p, nil
	}
	return "", fmt.Errorf("qos: path %q is not known: want user-ah, kernel-ah or connected-qp", s)
}

// Step is one link of the chain from the AH to the verdict: what was
// decided, the value it came to (the JSON key result), and why (with the
// kernel or reference source).
type Step struct {
	Step  string `json:"step"`
	Value string `json:"result"`
	Why   string `json:"why"`
}

// WireInput is what a driver profile needs to predict the wire.
type WireInput struct {
	Path         Path
	SL           uint8    // the AH's service level, 0..15
	TrafficClass uint8    // the AH's grh.traffic_class
	GIDType      gid.Type // type of the source GID entry
	Link         Link     // the source GID's netdev
	DCB          *DCB     // DCB of Link.Real; nil when not read
}

// Wire is a driver's prediction of the QoS fields on the wire.
type Wire struct {
	Driver Driver `json:"driver"`
	// Tags are the VLAN tags, outermost first, each with the PCP the
	// driver puts there (nil when unknown); empty means untagged.
	// TagsKnown is false when even the presence of tags is unknown.
	Tags      []vlan.ChainTag `json:"vlan_chain"`
	TagsKnown bool            `json:"tags_known"`
	// DSCP and ECN of the IP header; nil when unknown or not applicable
	// (RoCE v1 has no IP header).
	DSCP *uint8 `json:"dscp"`
	ECN  *ECN   `json:"ecn"`
	// SLIgnored is true when the driver provably does not use the SL.
	SLIgnored bool   `json:"sl_ignored"`
	Steps     []Step `json:"steps"`
	Unknowns  []string
}

func u8p(v uint8) *uint8 { return &v }
func ecnp(v ECN) *ECN    { return &v }

func (w *Wire) step(step, value, why string, args ...any) {
	w.Steps = append(w.Steps, Step{Step: step, Value: value, Why: fmt.Sprintf(why, args...)})
}

func (w *Wire) unknown(format string, args ...any) {
	w.Unknowns = append(w.Unknowns, fmt.Sprintf(format, args...))
}

// Predict returns what driver d puts on the wire for in.
func Predict(d Driver, in WireInput) Wire {
	w := Wire{Driver: d, TagsKnown: true}
	switch d {
	case DriverMLX5:
		predictMLX5(&w, in)
	case DriverRXE:
		predictRXE(&w, in)
	case DriverIRDMA:
		predictIRDMA(&w, in)
	case DriverBNXTRE:
		predictBNXTRE(&w, in)
	case DriverHNS:
		predictHNS(&w, in)
	case DriverERDMA:
		predictERDMA(&w, in)
	case DriverIONIC:
		predictIONIC(&w, in)
	case DriverHIROCE3:
		predictHIROCE3(&w, in)
	default:
		w.TagsKnown = false
		name := d.String()
		w.step("driver", name, "no profile for this driver: how it maps sl and traffic_class is unknown")
		w.unknown("driver %s has no profile: PCP, DSCP and ECN are unknown", name)
	}
	if in.Link.Boundary != "" {
		// The tags the driver adds are the visible part only: what the
		// devices beyond the namespace boundary add is unknown.
		w.TagsKnown, w.Tags = false, nil
		for i := range w.Steps {
			if w.Steps[i].Step == "vlan tag" || w.Steps[i].Step == "pcp" {
				w.Steps[i].Value, w.Steps[i].Why = "unknown", in.Link.Boundary
			}
		}
	}
	return w
}

// hwTags is the tag layout of hardware RoCE drivers: the hardware inserts
// one tag with the VLAN ID of the GID's netdev (rdma_read_gid_l2_fields);
// pcp is the driver's PCP or nil.
func hwTags(w *Wire, in WireInput, pcp *uint8) {
	switch len(in.Link.Tags) {
	case 0:
		w.Tags = nil
	case 1:
		t := in.Link.Tags[0]
		t.PCP = pcp
		w.Tags = []vlan.ChainTag{t}
	default:
		w.TagsKnown = false
		w.unknown("stacked VLANs on %s: hardware RoCE gets one VLAN ID per GID (rdma_read_gid_l2_fields); which tags reach the wire is unknown", in.Link.Netdev)
	}
}

func ipFields(w *Wire, in WireInput, tos uint8, why string) {
	if in.GIDType == gid.TypeRoCEv1 {
		w.step("dscp/ecn", "none", "RoCE v1 has no IP header: the GRH traffic class carries %d (0x%02x) and switches classify on the PCP", tos, tos)
		return
	}
	w.DSCP = u8p(DSCP(tos))
	w.ECN = ecnp(ECNOf(tos))
	w.step("ip tos", fmt.Sprintf("0x%02x (DSCP %d, %s)", tos, DSCP(tos), ECNOf(tos)), "%s", why)
}

func predictMLX5(w *Wire, in WireInput) {
	pcp := in.SL & 7
	why := "mlx5: Ethernet priority = sl & 7 (kernel AH: drivers/infiniband/hw/mlx5/ah.c, create_ib_ah; QP path: qp.c, mlx5_set_path; Linux 6.1; user AH: providers/mlx5/verbs.c, mlx5_create_ah; rdma-core v64.0)"
	if in.SL > 7 {
		why += fmt.Sprintf("; sl %d loses its top bit", in.SL)
	}
	w.step("priority", fmt.Sprint(pcp), "%s", why)
	hwTags(w, in, u8p(pcp))
	if len(in.Link.Tags) == 0 {
		w.step("vlan tag", "none", "the GID's netdev %s is not a VLAN device: no tag, so the sl reaches the wire only as the local TX priority (whether mlx5 sends a VID 0 priority tag is unconfirmed)", in.Link.Netdev)
	}
	tc := in.TrafficClass
	switch in.Path {
	case PathKernelAH:
		if in.GIDType == gid.TypeRoCEv2 {
			tc |= 0x02
			ipFields(w, in, tc, fmt.Sprintf("mlx5 kernel AH: traffic_class | 0x02 (MLX5_ECN_ENABLED, ECT(0)) for a RoCE v2 GID (create_ib_ah): %d → %d", in.TrafficClass, tc))
			return
		}
		ipFields(w, in, tc, "mlx5 kernel AH: traffic_class unchanged")
	case PathConnectedQP:
		if in.GIDType == gid.TypeRoCEv1 {
			ipFields(w, in, tc, "")
			return
		}
		w.DSCP = u8p(DSCP(tc))
		w.step("ip tos", fmt.Sprintf("DSCP %d, ECN set by hardware", DSCP(tc)), "mlx5 connected QP: dscp = traffic_class >> 2 (mlx5_set_path); the ECN bits are dropped, the NIC's ECN configuration decides them")
		w.unknown("ECN of an mlx5 connected QP is set by the NIC's ECN configuration, not by traffic_class")
	default:
		ipFields(w, in, tc, "mlx5 user AH: traffic_class copied to av.tclass unchanged (providers/mlx5/verbs.c mlx5_create_ah); whether the NIC rewrites the ECN bits is unconfirmed")
	}
}

func predictRXE(w *Wire, in WireInput) {
	w.SLIgnored = true
	w.step("sl", fmt.Sprintf("%d ignored", in.SL), "rxe: struct rxe_av has no SL; rxe_av_from_attr copies only dgid, flow_label, sgid_index, hop_limit, traffic_class (drivers/infiniband/sw/rxe/rxe_av.c; Linux 6.1)")
	w.step("skb priority", "0", "rxe sends with alloc_skb + ip_local_out and never sets skb->priority (only tc, netfilter or net_prio could change it)")
	for _, t := range in.Link.Tags {
		pcp := EgressPCP(t.EgressQoS, 0)
		t.PCP = u8p(pcp)
		w.Tags = append(w.Tags, t)
		why := "%s has no egress-qos-map entry for skb priority 0: PCP 0"
		if HasEgressEntry(t.EgressQoS, 0) {
			why = "%s egress-qos-map 0:%d (vlan_dev_get_egress_qos_mask, exact match on skb priority 0)"
			w.step("pcp", fmt.Sprintf("%d (tag %d on %s)", pcp, t.ID, t.Netdev), why, t.Netdev, pcp)
		} else {
			w.step("pcp", fmt.Sprintf("%d (tag %d on %s)", pcp, t.ID, t.Netdev), why, t.Netdev)
		}
	}
	if len(in.Link.Tags) == 0 {
		w.step("vlan tag", "none", "the GID's netdev %s adds no VLAN tag: the frame is untagged and has no PCP", in.Link.Netdev)
	}
	ipFields(w, in, in.TrafficClass, "rxe copies the whole traffic_class byte into the IPv4 TOS / IPv6 traffic class (prepare_ipv4_hdr, prepare_ipv6_hdr)")
}

func predictIRDMA(w *Wire, in WireInput) {
	w.SLIgnored = true
	w.step("sl", fmt.Sprintf("%d ignored", in.SL), "irdma derives the user priority from traffic_class, not from the sl (irdma_modify_qp_roce, irdma_setup_ah)")
	tos := in.TrafficClass
	var prio *uint8
	dscpMode := in.Path == PathConnectedQP && in.DCB != nil && in.DCB.Supported && in.DCB.Trust() == TrustDSCP
	if dscpMode {
		if p, ok := in.DCB.DSCPPriority(DSCP(tos)); ok {
			prio = u8p(p)
			w.step("user priority", fmt.Sprint(p), "irdma in DSCP mode: user_pri = dscp_map[%d] (the port's DSCP APP table)", DSCP(tos))
		} else {
			w.step("user priority", "unknown", "irdma in DSCP mode: DSCP %d has no APP entry, so dscp_map's default is used, which is not readable here", DSCP(tos))
			w.unknown("irdma DSCP-mode default priority for DSCP %d", DSCP(tos))
		}
	} else {
		p := TOSToPriority(tos)
		prio = u8p(p)
		where := "irdma_setup_ah (AH)"
		if in.Path == PathConnectedQP {
			where = "irdma_modify_qp_roce (PCP mode)"
		}
		w.step("user priority", fmt.Sprint(p), "irdma: user_pri = rt_tos2priority(traffic_class %d) in %s", tos, where)
	}
	if in.Link.IsVLAN() && prio != nil {
		t := in.Link.Tags[len(in.Link.Tags)-1]
		p := EgressPCP(t.EgressQoS, uint32(*prio))
		w.step("pcp", fmt.Sprint(p), "irdma_roce_get_vlan_prio: the GID's VLAN device %s maps priority %d through its egress-qos-map", t.Netdev, *prio)
		prio = u8p(p)
	}
	if len(in.Link.Tags) == 0 {
		w.TagsKnown = false
		w.step("vlan tag", "unknown", "untagged GID: irdma inserts a VID 0 priority tag when its dcb_vlan_mode is on, which user space cannot read")
		w.unknown("whether irdma priority-tags (VID 0) frames of the untagged GID on %s", in.Link.Netdev)
	} else {
		hwTags(w, in, prio)
	}
	ipFields(w, in, tos, "irdma passes traffic_class to the hardware as the IP TOS (udp_info->tos, ah_info->tc_tos)")
}

func predictBNXTRE(w *Wire, in WireInput) {
	if in.Path == PathConnectedQP {
		w.step("sl", fmt.Sprint(in.SL), "bnxt_re passes the QP's sl to the firmware; its effect on the wire is not in driver source")
		w.unknown("what bnxt_re firmware does with the sl of a connected QP")
	} else {
		w.SLIgnored = true
		w.step("sl", fmt.Sprintf("%d ignored", in.SL), "bnxt_re: the CREATE_AH firmware command carries no SL (bnxt_qplib_create_ah)")
	}
	why := "the firmware picks the RoCE priority; bnxt_re only reads the DCB APP entries for RoCE (EtherType 0x8915, UDP 4791) to enable VLAN priority tagging (bnxt_re_setup_qos)"
	if in.DCB != nil {
		if p, ok := in.DCB.RoCEAppPriority(); ok {
			why += fmt.Sprintf("; the APP table assigns RoCE to priority %d, which the firmware is expected to use (unconfirmed)", p)
		}
	}
	w.step("pcp", "unknown", "%s", why)
	w.unknown("bnxt_re PCP (chosen by firmware)")
	hwTags(w, in, nil)
	if in.GIDType == gid.TypeRoCEv1 {
		ipFields(w, in, in.TrafficClass, "")
		return
	}
	w.step("ip tos", "unknown", "bnxt_re passes traffic_class %d to the firmware unchanged (CREATE_AH traffic_class); how it becomes DSCP/ECN is firmware behaviour", in.TrafficClass)
	w.unknown("bnxt_re DSCP/ECN (firmware)")
}

func predictHNS(w *Wire, in WireInput) {
	prio := in.SL
	if in.GIDType == gid.TypeRoCEv2 && in.DCB != nil && in.DCB.Supported && in.DCB.Trust() == TrustDSCP {
		if p, ok := in.DCB.DSCPPriority(DSCP(in.TrafficClass)); ok {
			prio = p
			w.SLIgnored = true
			w.step("priority", fmt.Sprint(p), "hns in DSCP mode: av.sl = the NIC's dscp→priority for DSCP %d, the AH's sl %d is replaced (hns_roce_create_ah)", DSCP(in.TrafficClass), in.SL)
		} else {
			w.step("priority", "unknown", "hns in DSCP mode: av.sl = the NIC's priority for DSCP %d, which has no APP entry", DSCP(in.TrafficClass))
			w.unknown("hns DSCP-mode priority for DSCP %d", DSCP(in.TrafficClass))
		}
	} else {
		w.step("priority", fmt.Sprint(prio), "hns: av.sl = the AH's sl (hns_roce_create_ah); it must be below the device's sl_num (check_sl_valid)")
	}
	w.step("pcp", "unknown", "hns hands priority %d to the hardware as the SL of the WQE/QP context; how the hardware turns it into a PCP is not in driver source", prio)
	w.unknown("hns PCP (hardware)")
	hwTags(w, in, nil)
	if in.GIDType == gid.TypeRoCEv1 {
		ipFields(w, in, in.TrafficClass, "")
		return
	}
	w.DSCP = u8p(DSCP(in.TrafficClass))
	w.step("ip tos", fmt.Sprintf("DSCP %d, ECN set by hardware", DSCP(in.TrafficClass)), "hns converts traffic_class to a DSCP (traffic_class >> 2) for RoCE v2 GIDs (providers/hns/hns_roce_u_verbs.c, get_tclass; rdma-core v64.0); the ECN bits are not passed")
	w.unknown("hns ECN bits (hardware)")
}

func predictERDMA(w *Wire, in WireInput) {
	w.TagsKnown = len(in.Link.Tags) <= 1
	w.step("sl/traffic_class", fmt.Sprintf("sl %d, traffic_class %d", in.SL, in.TrafficClass), "erdma hands both to the device unchanged (erdma_attr_to_av); the device's mapping to PCP, DSCP and ECN is not in driver source")
	w.unknown("erdma PCP, DSCP and ECN (device)")
	hwTags(w, in, nil)
}

// srcIONIC is where the ionic profile comes from: the RDMA driver of AMD
// Pensando NICs, which builds the whole header template itself.
const srcIONIC = "drivers/infiniband/hw/ionic/ionic_controlpath.c, ionic_build_hdr, ionic_create_ah_cmd, ionic_modify_qp_cmd (torvalds/linux 28a06de7)"

func predictIONIC(w *Wire, in WireInput) {
	if in.GIDType == gid.TypeRoCEv1 {
		w.TagsKnown = false
		w.step("gid type", "RoCE v1", "ionic_build_hdr always builds an Ethernet/IP/UDP template (RoCE v2); a RoCE v1 GID is not what it sends (%s)", srcIONIC)
		w.unknown("ionic with a RoCE v1 GID")
		return
	}
	pcp := in.SL & 7
	switch len(in.Link.Tags) {
	case 0:
		w.step("vlan tag", "none", "ionic_build_hdr adds a VLAN tag only when the GID's netdev has a VLAN ID (rdma_read_gid_l2_fields); %s has none, so the template is untagged and the sl is not in it (%s)", in.Link.Netdev, srcIONIC)
		if in.Path == PathConnectedQP {
			w.unknown("ionic hands a connected QP's sl to the firmware as en_pcp besides the template; whether the firmware then priority-tags the frames is not in driver source")
		}
	default:
		why := "ionic_build_hdr: vlan |= sl << VLAN_PRIO_SHIFT in a u16, so the PCP is sl & 7"
		if in.SL > 7 {
			why += fmt.Sprintf("; sl %d loses its top bit", in.SL)
		}
		w.step("pcp", fmt.Sprint(pcp), "%s (%s)", why, srcIONIC)
	}
	hwTags(w, in, u8p(pcp))
	tc := in.TrafficClass
	if in.Path == PathConnectedQP {
		tos := (tc | 2) &^ 1
		ipFields(w, in, tos, fmt.Sprintf("ionic connected QP: ionic_modify_qp_cmd builds the template with want_ecn, ionic_set_ecn(traffic_class) = (tc | 2) & ~1 (ECT(0)): %d → %d; the firmware also gets ip_dscp = traffic_class >> 2", tc, tos))
		return
	}
	tos := tc &^ 3
	why := fmt.Sprintf("ionic AH: ionic_create_ah_cmd builds the template without ECN, ionic_clear_ecn(traffic_class) = tc & ~3: %d → %d", tc, tos)
	if in.Path == PathUserAH {
		why += "; a user AH is created by the kernel's ionic_create_ah too (ibv_cmd_create_ah; rdma-core's providers/ionic not read: unconfirmed)"
	}
	ipFields(w, in, tos, why)
}

// srcHIROCE3 is where the hiroce3 profile comes from: openEuler's kernel
// (the driver is not in mainline).
const srcHIROCE3 = "drivers/infiniband/hw/hiroce3/qp/roce_qp_modify.c, roce3_qp_set_path (openeuler-mirror/kernel 5bc8dbb5)"

// predictHIROCE3 knows the connected QP's path context, which hiroce3
// fills itself: sl & 7 as the QP's sl, traffic_class | 0x02 as its
// traffic class. Its AH code was not read.
func predictHIROCE3(w *Wire, in WireInput) {
	if in.Path != PathConnectedQP {
		w.TagsKnown = false
		w.step("sl/traffic_class", fmt.Sprintf("sl %d, traffic_class %d", in.SL, in.TrafficClass), "hiroce3's address handles were not read; only its connected QP path is known (%s)", srcHIROCE3)
		w.unknown("hiroce3 %s: PCP, DSCP and ECN not read from source", in.Path)
		return
	}
	w.step("priority", fmt.Sprint(in.SL&7), "hiroce3 writes sl & 7 into the QP context (path sl, 3 bits) (%s)", srcHIROCE3)
	w.step("pcp", "unknown", "how the hardware turns the QP context's sl into a PCP is not in driver source")
	w.unknown("hiroce3 PCP (hardware)")
	hwTags(w, in, nil)
	if in.GIDType == gid.TypeRoCEv1 {
		ipFields(w, in, in.TrafficClass|2, "")
		return
	}
	tos := in.TrafficClass | 2
	ipFields(w, in, tos, fmt.Sprintf("hiroce3 connected QP: the QP context's tclass = traffic_class | 0x2 (ECT(0)) (roce3_qp_set_path): %d → %d; the ECN bits from the hardware are unconfirmed", in.TrafficClass, tos))
}
