package fleetsim

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/roce-probe/roce-probe/fabric"
)

// FabricLocalize is the Localizer of roce-probe: fabric.Localize over the
// window (ToFabric).
func FabricLocalize(in Input) []Suspect {
	f := in.Fabric
	var out []Suspect
	for _, s := range fabric.Localize(ToFabric(in)) {
		su := Suspect{NIC: -1, ToR: -1, Spine: -1}
		switch s.Kind {
		case fabric.SuspectNIC:
			su.Kind = SuspectNIC
		case fabric.SuspectToR:
			su.Kind = SuspectToR
		case fabric.SuspectLink:
			su.Kind = SuspectLink
		case fabric.SuspectSpine:
			su.Kind = SuspectSpine
		case fabric.SuspectRemark:
			su.Kind = SuspectRemark
		case fabric.SuspectHostNoise:
			su.Kind = SuspectNoise
		default:
			continue
		}
		if a, err := netip.ParseAddr(s.NIC); err == nil {
			su.NIC = f.nicOf(a)
		}
		if t, ok := strings.CutPrefix(s.ToR, "leaf"); ok {
			su.ToR = atoi(t)
		}
		if sp, ok := strings.CutPrefix(s.Spine, "spine"); ok {
			su.Spine = atoi(sp)
		}
		out = append(out, su)
	}
	return out
}

// ToFabric is the window as fabric.Localize takes it: the NICs named by
// their addresses, the ToRs and spines by their names, each lost or
// remarked source port with the spine a trace of it finds (Fabric.Trace)
// and, for a remarked port, the change the trace saw and between which
// hops (SportObs.RemarkAt: as AgentObservations reads a port's remark
// from /pairs, with the hops' names where the agent gives addresses),
// each ToR's NICs (Fabric.ToRNICs), and the noisy agents.
func ToFabric(in Input) fabric.LocalizeInput {
	f := in.Fabric
	name := func(i int32) string { return f.NICs[i].Addr.String() }
	li := fabric.LocalizeInput{Pairs: make([]fabric.PairObservation, 0, len(in.Pairs)), ToRNICs: f.ToRNICs()}
	for _, o := range in.Pairs {
		p := fabric.PairObservation{Src: name(o.Src), Dst: name(o.Dst), SrcToR: f.NICs[o.Src].ToR, DstToR: f.NICs[o.Dst].ToR,
			Sent: uint64(o.Sent), Lost: uint64(o.Lost), Remarked: uint64(o.Remarked)}
		for _, sp := range o.Sports {
			so := fabric.SportObservation{Sport: sp.Sport, Lost: uint64(sp.Lost), Remarked: uint64(sp.Remarked)}
			t := f.Trace(o.Src, o.Dst, sp.Sport)
			if t.Spine >= 0 {
				so.Spine = SpineName(t.Spine)
				if sp.Remarked > 0 && sp.RemarkAt > 0 {
					// Hop 1 the prober's ToR, 2 the spine, 3 the peer's ToR.
					hop := [...]string{1: p.SrcToR, 2: so.Spine, 3: p.DstToR}
					so.RemarkBeforeTTL, so.RemarkAtTTL = int(sp.RemarkAt)-1, int(sp.RemarkAt)
					so.Remark = fmt.Sprintf("dscp %d→0 between %s and %s", sentDSCP, hop[so.RemarkBeforeTTL], hop[so.RemarkAtTTL])
				}
			}
			p.Sports = append(p.Sports, so)
		}
		li.Pairs = append(li.Pairs, p)
	}
	for _, a := range in.Noisy {
		li.Noisy = append(li.Noisy, name(a))
	}
	return li
}

// sentDSCP is the DSCP the simulated probes are sent with (RoCE's
// usual 26); a remarking link rewrites it to 0.
const sentDSCP = 26

// nicOf is the index of the NIC with address a (NewFabric's numbering),
// -1 when none has it.
func (f *Fabric) nicOf(a netip.Addr) int32 {
	if !a.Is4() {
		return -1
	}
	b := a.As4()
	i := int(uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) - 1
	if b[0] != 10 || i < 0 || i >= len(f.NICs) {
		return -1
	}
	return int32(i)
}

// atoi is the value of a string of decimal digits, -1 for anything else.
func atoi(s string) int32 {
	if s == "" || len(s) > 9 {
		return -1
	}
	n := int32(0)
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + c - '0'
	}
	return n
}
