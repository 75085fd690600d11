package qos

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// Verdict is the outcome of Check.
type Verdict string

// Verdicts.
const (
	Lossless Verdict = "lossless" // the flow lands on a priority with PFC on
	Lossy    Verdict = "lossy"    // it lands on a priority with PFC off
	Unknown  Verdict = "unknown"  // something on the chain cannot be known from this host
)

// Flow is one RDMA flow to check: where it leaves (device, port, GID entry,
// the GID's netdev and DCB) and what the application asks for (sl and
// traffic_class, or a ToS through rdma_cm).
type Flow struct {
	Device   string
	Port     int
	GIDIndex int      // GID index; -1 when only a netdev is known
	GIDType  gid.Type // RoCE v1 or v2
	Driver   Driver
	Link     Link // the GID's netdev
	// DCB of Link.Real; nil when it was not read. A netdev without DCB
	// support has Supported false.
	DCB  *DCB
	Path Path // how the AV reaches the driver; "" picks user-ah (verbs) or connected-qp (rdma_cm)

	SL           uint8 // verbs: the AH's sl, 0..15
	TrafficClass uint8 // verbs: the AH's grh.traffic_class
	RDMACM       bool  // rdma_cm: sl and traffic_class come from TOS
	TOS          uint8 // rdma_cm: rdma_set_option(RDMA_OPTION_ID_TOS) or default_roce_tos

	// Settings applied behind the application's back (override.go).
	// TOSDefault, for an rdma_cm flow whose application sets no ToS, is
	// the port's configfs default that replaces TOS. TCOverride is the
	// port's mlx5 traffic class override (nil: none read).
	TOSDefault *RDMACMDefault
	TCOverride *TCOverride

	// Bond is set when Link.Real is a bond (RoCE LAG): the slaves the
	// traffic leaves by, each judged by its own DCB (DCB, the bond's,
	// is not used: a bond has none). Nil otherwise.
	Bond *BondFlow

	// Predicted is true when Device is a predicted Soft-RoCE device (the
	// host has no RDMA device: host.View.Predicted); Result.Predicted
	// says so.
	Predicted bool

	// slave is, for one slave of a bond flow (checkBond), the slave whose
	// DCB is DCB; "" for a flow judged by Link.Real's DCB.
	slave string
}

// dcbNetdev is the netdev whose DCB judges the flow.
func (f Flow) dcbNetdev() string {
	if f.slave != "" {
		return f.slave
	}
	return f.Link.Real
}

// Result is the chain and verdict for a Flow. Pointer fields are null in
// JSON when the value is unknown or does not exist (pcp of an untagged
// frame, dscp of RoCE v1).
type Result struct {
	Device string `json:"device"`
	// Predicted is true when the device is a predicted Soft-RoCE device
	// (the host has none): the Flow's Predicted.
	Predicted    bool            `json:"predicted"`
	Port         int             `json:"port"`
	Index        int             `json:"index"`
	Netdev       string          `json:"netdev"`
	RealNetdev   string          `json:"real_netdev"`
	Driver       Driver          `json:"driver"`
	GIDType      string          `json:"gid_type"`
	Path         Path            `json:"path"`
	SL           uint8           `json:"sl"`
	TrafficClass uint8           `json:"traffic_class"`
	RDMACM       bool            `json:"rdma_cm"`
	TOS          *uint8          `json:"tos"`
	VLAN         *uint16         `json:"vlan"` // ID of the outermost tag; null when untagged
	PCP          *uint8          `json:"pcp"`  // PCP of the outermost tag, the one the first switch sees
	VLANChain    []vlan.ChainTag `json:"vlan_chain"`
	DSCP         *uint8          `json:"dscp"`
	ECN          *ECN            `json:"ecn"`
	// ECNName is ECN's RFC 3168 name ("ECT(0)"); MarshalJSON sets it from
	// ECN.
	ECNName  *string  `json:"ecn_name"`
	Trust    Trust    `json:"trust"`       // null in JSON when unknown
	Priority *uint8   `json:"priority"`    // the priority the receiving port classifies the frame into
	TC       *uint8   `json:"tc"`          // that priority's traffic class (ETS prio_tc)
	PFC      *bool    `json:"pfc_enabled"` // PFC on that priority
	Verdict  Verdict  `json:"verdict"`
	Reasons  []string `json:"reasons"`
	Warnings []string `json:"warnings"`
	Unknowns []string `json:"unknowns"`
	Steps    []Step   `json:"steps"`
	// Bond is, when the real netdev is a bond, each slave's judgement;
	// nil otherwise.
	Bond *BondResult `json:"bond"`
}

// MarshalJSON writes the keys of docs/json.md's "check", with ecn_name
// the name of ecn.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	p.ECNName = nil
	if r.ECN != nil {
		n := r.ECN.String()
		p.ECNName = &n
	}
	return json.Marshal(p)
}

func (r *Result) step(step, value, format string, args ...any) {
	r.Steps = append(r.Steps, Step{Step: step, Value: value, Why: fmt.Sprintf(format, args...)})
}

func (r *Result) warn(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

func (r *Result) reason(format string, args ...any) {
	r.Reasons = append(r.Reasons, fmt.Sprintf(format, args...))
}

// Check follows a flow from the AH (or rdma_cm ToS) through the driver,
// the VLAN devices and the port's DCB settings to a verdict. It fails only
// on invalid input (sl > 15, an unknown path); everything that cannot be
// known makes the verdict "unknown" with a reason.
//
// The receiving side is judged by this host's port settings (trust mode,
// APP table, ETS, PFC): a lossless fabric has the same classification on
// every hop, and the NIC's own settings are the only ones readable here.
//
// A flow whose real netdev is a bond (f.Bond) is judged on every slave
// that carries it, each by its own DCB (checkBond).
func Check(f Flow) (Result, error) {
	if f.Bond != nil {
		return checkBond(f)
	}
	return check(f)
}

// check is Check for a flow that leaves by one real netdev, f.Link.Real,
// with f.DCB.
func check(f Flow) (Result, error) {
	if f.SL > 15 {
		return Result{}, fmt.Errorf("qos: sl %d is out of range: want 0..15", f.SL)
	}
	path := f.Path
	if path == "" {
		path = PathUserAH
		if f.RDMACM {
			path = PathConnectedQP
		}
	}
	if _, err := ParsePath(string(path)); err != nil {
		return Result{}, err
	}
	r := Result{
		Device: f.Device, Port: f.Port, Index: f.GIDIndex, Netdev: f.Link.Netdev, RealNetdev: f.Link.Real,
		Driver: f.Driver, GIDType: f.GIDType.String(), Path: path, RDMACM: f.RDMACM, Predicted: f.Predicted,
		Reasons: []string{}, Warnings: []string{}, Unknowns: []string{}, VLANChain: []vlan.ChainTag{},
	}
	if f.GIDIndex >= 0 {
		r.step("gid", fmt.Sprintf("%s port %d index %d", f.Device, f.Port, f.GIDIndex), "the source GID entry: %s on netdev %s", f.GIDType, f.Link.Netdev)
	} else {
		r.step("netdev", f.Link.Netdev, "the flow's netdev (%s)", f.GIDType)
	}
	if f.GIDType != gid.TypeRoCEv1 && f.GIDType != gid.TypeRoCEv2 {
		r.Verdict = Unknown
		r.reason("GID type %s is not RoCE: no Ethernet QoS chain", f.GIDType)
		return r, nil
	}
	chain := "untagged"
	if len(f.Link.Tags) > 0 {
		var parts []string
		for _, t := range f.Link.Tags {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", t.TPID, t.ID, t.Netdev))
		}
		chain = strings.Join(parts, " / ")
	}
	if f.Link.Boundary != "" {
		r.VLANChain = nil
		visible := "no VLAN device in this namespace"
		if len(f.Link.Tags) > 0 {
			visible = "in this namespace: " + chain
		}
		r.step("vlan devices", "unknown", "%s; %s", visible, f.Link.Boundary)
	} else {
		r.step("vlan devices", chain, "the VLAN devices between the GID's netdev %s and the real device %s, outermost tag first", f.Link.Netdev, f.Link.Real)
	}

	sl, tc := f.SL, f.TrafficClass
	if f.RDMACM {
		tos := f.TOS
		if f.TOSDefault != nil {
			tos = r.defaultToS(f.TOSDefault)
		}
		r.TOS = &tos
		prio := TOSToPriority(tos)
		r.step("skb priority", fmt.Sprint(prio), "rdma_cm: rt_tos2priority(ToS 0x%02x) = ip_tos2prio[(tos & 0x1E) >> 1]; only 0, 2, 4, 6 are possible (include/net/route.h, net/ipv4/route.c; Linux 6.1)", tos)
		sl = TOSToSL(f.Link, tos)
		why := "iboe_tos_to_sl (drivers/infiniband/core/cma.c; Linux 6.1)"
		switch {
		case len(f.Link.Tags) > 0 && f.Link.RealNumTC > 0:
			why += fmt.Sprintf(": %s has %d traffic classes, so the SL is its prio_tc_map[%d], a TC number", f.Link.Real, f.Link.RealNumTC, prio)
		case len(f.Link.Tags) > 0:
			t := f.Link.Tags[len(f.Link.Tags)-1]
			why += fmt.Sprintf(": the egress-qos-map of %s for priority %d", t.Netdev, prio)
			if f.Link.RealNumTC < 0 {
				why += fmt.Sprintf(" (assuming %s has no mqprio traffic classes; num_tc was not read)", f.Link.Real)
			}
			if !HasEgressEntry(t.EgressQoS, uint32(prio)) {
				r.warn("rdma_cm ToS 0x%02x gives skb priority %d, which the egress-qos-map of %s does not map: the SL (and PCP on drivers that use it) is 0; add egress-qos-map %d:<pcp>", tos, prio, t.Netdev, prio)
			}
		case f.Link.RealNumTC > 0:
			why += fmt.Sprintf(": untagged, %s prio_tc_map[%d]", f.Link.Real, prio)
		default:
			why += ": untagged netdev without traffic classes → 0"
			if f.Link.RealNumTC < 0 {
				why += fmt.Sprintf(" (assuming %s has no mqprio traffic classes; num_tc was not read)", f.Link.Real)
			}
		}
		r.step("sl", fmt.Sprint(sl), "%s", why)
		tc = tos
		r.step("traffic_class", fmt.Sprint(tc), "rdma_cm: path.traffic_class = the ToS byte, ECN bits included (cma_resolve_iboe_route)")
	} else {
		r.step("ah", fmt.Sprintf("sl %d, traffic_class %d (0x%02x)", sl, tc, tc), "the application's address handle (%s)", path)
	}
	tc = r.tcOverride(f.TCOverride, path, tc)
	r.SL, r.TrafficClass = sl, tc

	w := Predict(f.Driver, WireInput{Path: path, SL: sl, TrafficClass: tc, GIDType: f.GIDType, Link: f.Link, DCB: f.DCB})
	r.Steps = append(r.Steps, w.Steps...)
	r.Unknowns = append(r.Unknowns, w.Unknowns...)
	if w.SLIgnored && sl != 0 {
		if f.RDMACM {
			r.warn("sl %d (from rdma_cm's ToS) is ignored by %s: the ToS reaches the wire only as DSCP/ECN", sl, f.Driver)
		} else {
			r.warn("sl %d is ignored by %s: it does not reach the wire", sl, f.Driver)
		}
	}
	if f.Link.Boundary == "" {
		r.VLANChain = append(r.VLANChain, w.Tags...)
	}
	if len(w.Tags) > 0 {
		id := w.Tags[0].ID
		r.VLAN = &id
		r.PCP = w.Tags[0].PCP
	}
	r.DSCP, r.ECN = w.DSCP, w.ECN
	if f.GIDType == gid.TypeRoCEv2 && w.ECN != nil {
		switch {
		case *w.ECN == CE:
			r.warn("traffic_class %d sets ECN to CE (11): senders must not mark congestion; use ECT(0) (traffic_class %d)", tc, tc&^3|2)
		case !w.ECN.IsECT():
			msg := fmt.Sprintf("ECN bits are Not-ECT (00) for RoCE v2: ECN-marking switches drop instead of marking and DCQCN gets no congestion signal; use ECT(0), e.g. traffic_class %d instead of %d", tc|2, tc)
			if f.Driver == DriverMLX5 {
				msg += " (whether mlx5 hardware sets ECT itself when ECN is enabled is unconfirmed)"
			}
			r.warn("%s", msg)
		}
	}

	// The port's DCB.
	d := f.DCB
	switch {
	case d == nil && f.Link.Boundary != "":
		r.step("dcb", "not visible", "%s", f.Link.Boundary)
	case d == nil:
		r.step("dcb", "not read", "DCB of %s was not read", f.dcbNetdev())
	case !d.Supported:
		r.step("dcb", "none", "%s", d.Reason)
	default:
		pfc := "no PFC attribute"
		if d.PFC != nil {
			pfc = fmt.Sprintf("PFC on %v", d.PFC.EnabledPriorities())
		}
		r.step("dcb", pfc, "RTM_GETDCB DCB_CMD_IEEE_GET on %s", d.Netdev)
	}
	r.Trust = d.Trust()
	if r.Trust == TrustUnknown {
		r.step("trust", "unknown", "no DCB information for %s: the trust mode, dscp→prio, prio→tc and PFC cannot be read", f.dcbNetdev())
		if d == nil && f.Link.Boundary != "" {
			r.reason("%s", f.Link.Boundary)
		} else if d == nil {
			r.reason("the DCB state of %s was not read: trust mode and PFC are unknown", f.dcbNetdev())
		} else {
			r.reason("no DCB on %s: trust mode and PFC are unknown", f.dcbNetdev())
		}
		r.Verdict = Unknown
		return r, nil
	}
	if len(d.AppTrust) > 0 {
		r.step("trust", string(r.Trust), "the APP trust table of %s", d.Netdev)
	} else if r.Trust == TrustDSCP {
		r.step("trust", "dscp", "the APP table of %s has DSCP entries: the port classifies by DSCP (mlx5e_dcbnl_ieee_setapp switches to TRUST_DSCP; mlnx_qos reports it the same way)", d.Netdev)
	} else {
		r.step("trust", "pcp", "the APP table of %s has no DSCP entries: the port classifies by the VLAN PCP", d.Netdev)
	}

	// Classification (DCB.Classify), with what the flow's chain adds: the
	// warnings, and the cases where the markings are unknown.
	var tagPCP *uint8
	if len(w.Tags) > 0 {
		tagPCP = w.Tags[0].PCP
	}
	switch {
	case r.Trust == TrustDSCP && r.DSCP == nil:
		r.step("priority", "unknown", "DSCP trust but the DSCP on the wire is unknown or absent (RoCE v1)")
		r.reason("DSCP trust and no known DSCP")
	case r.Trust == TrustPCP && !w.TagsKnown:
		r.step("priority", "unknown", "PCP trust, and whether the frame is tagged is unknown")
		r.reason("PCP trust and the VLAN tagging is unknown")
	default:
		p, why, ok := d.Classify(len(w.Tags) > 0, tagPCP, r.DSCP)
		switch {
		case ok:
			r.Priority = u8p(p)
			r.step("priority", fmt.Sprint(p), "%s", why)
			if r.Trust == TrustPCP && len(w.Tags) == 0 {
				r.warn("untagged traffic under PCP trust: the frame carries no PCP, so every switch puts it on the default priority %d whatever the sl or traffic_class; use a VLAN netdev's GID or switch the port to DSCP trust", p)
			}
		case r.Trust == TrustDSCP:
			r.warn("DSCP %d has no entry in the APP table of %s under DSCP trust: the NIC's default dscp→prio applies (firmware, not readable here); add `dcb app add dev %s dscp-prio %d:<prio>`", *r.DSCP, d.Netdev, d.Netdev, *r.DSCP)
			r.step("priority", "unknown", "%s", why)
			r.reason("DSCP %d is not mapped to a priority", *r.DSCP)
		default:
			r.step("priority", "unknown", "%s", why)
			r.reason("the PCP is unknown")
		}
	}
	if r.Priority == nil {
		r.Verdict = Unknown
		return r, nil
	}
	prio := *r.Priority
	if d.ETS != nil {
		r.TC = u8p(d.ETS.PrioTC[prio&7])
		tsa := d.ETS.TCTSA[*r.TC&7]
		r.step("tc", fmt.Sprint(*r.TC), "ETS prio-tc %d:%d (%s, %d%% bandwidth)", prio, *r.TC, TSAName(tsa), d.ETS.TCTxBW[*r.TC&7])
	} else {
		r.step("tc", "unknown", "%s reports no ETS", d.Netdev)
	}
	if d.PFC == nil {
		r.step("pfc", "unknown", "%s reports no PFC attribute", d.Netdev)
		r.reason("%s reports no PFC settings", d.Netdev)
		r.Verdict = Unknown
		return r, nil
	}
	on := d.PFC.On(prio)
	r.PFC = &on
	if on {
		r.step("pfc", "on", "pfc_en 0x%02x has bit %d set", d.PFC.Enabled, prio)
		r.reason("priority %d has PFC on %s", prio, d.Netdev)
		r.Verdict = Lossless
	} else {
		r.step("pfc", "off", "pfc_en 0x%02x lacks bit %d", d.PFC.Enabled, prio)
		if en := d.PFC.EnabledPriorities(); len(en) > 0 {
			r.warn("priority %d has no PFC on %s; PFC is on for priorities %v", prio, d.Netdev, en)
		} else {
			r.warn("priority %d has no PFC: PFC is off on every priority of %s", prio, d.Netdev)
		}
		r.reason("priority %d has PFC off on %s", prio, d.Netdev)
		r.Verdict = Lossy
	}
	return r, nil
}
