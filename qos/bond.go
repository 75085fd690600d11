package qos

import (
	"fmt"
	"slices"
	"strings"
)

// BondFlow is the bond a flow leaves by (RoCE LAG: mlx5_bond_0 over
// bond0) and its slaves, the NIC ports whose DCB decides the flow's fate.
type BondFlow struct {
	Netdev string // the bond
	Mode   string // its mode ("802.3ad", "active-backup", ...); "" when not known
	// Slaves are the slaves that carry the flow (active-backup: the
	// active one; other modes: every slave), each with its DCB (nil when
	// not read).
	Slaves []SlaveDCB
	// Backup are the standby slaves of an active-backup bond.
	Backup []string
}

// SlaveDCB is one slave of a bond and its DCB state (nil when not read).
type SlaveDCB struct {
	Netdev string
	DCB    *DCB
}

// BondResult is a bond flow's judgement on each slave that carries it.
type BondResult struct {
	Netdev string        `json:"netdev"`
	Mode   *string       `json:"bond_mode"`
	Slaves []SlaveResult `json:"slaves"`
	Backup []string      `json:"backup_slaves"`
}

// SlaveResult is the verdict of a flow on one slave of a bond, by that
// slave's DCB.
type SlaveResult struct {
	Netdev   string   `json:"netdev"`
	Trust    Trust    `json:"trust"`
	Priority *uint8   `json:"priority"`
	TC       *uint8   `json:"tc"`
	PFC      *bool    `json:"pfc_enabled"`
	Verdict  Verdict  `json:"verdict"`
	Reasons  []string `json:"reasons"`
}

// checkBond judges the flow on each slave of f.Bond that carries it, as
// check judges a flow on one real netdev, and combines the verdicts: a
// frame hashed (802.3ad, balance-xor) or failed over onto any of them
// must be lossless, so the flow is lossless only when it is on every
// slave; lossy when it is lossy on one; unknown otherwise. Slaves that
// judge it differently are a warning of their own. The result's trust,
// priority, tc and pfc_enabled are the slaves' when they agree, null
// otherwise; its wire fields (VLAN, PCP, DSCP, ECN) are the first slave's
// (the driver's wire rules can depend on the port's trust mode: the
// steps of each slave show it).
func checkBond(f Flow) (Result, error) {
	b := f.Bond
	mode := b.Mode
	if mode == "" {
		mode = "mode not recorded"
	}
	var names []string
	for _, s := range b.Slaves {
		names = append(names, s.Netdev)
	}
	bondStep := Step{Step: "bond", Value: fmt.Sprintf("%s (%s): %s", b.Netdev, mode, strings.Join(names, ", "))}
	switch {
	case len(b.Slaves) == 0:
		bondStep.Why = fmt.Sprintf("%s has no slave that carries traffic (no active slave)", b.Netdev)
	case b.Mode == "active-backup" || len(b.Backup) > 0:
		bondStep.Why = fmt.Sprintf("an active-backup bond sends on its active slave (bond_xmit_activebackup, drivers/net/bonding/bond_main.c); standby: %s", orNone(b.Backup))
	default:
		bondStep.Why = "the bond hashes flows over every slave (802.3ad, balance-xor: bond_xmit_hash, drivers/net/bonding/bond_main.c): each one's DCB must make the flow lossless; a bond has no DCB of its own"
	}
	res := &BondResult{Netdev: b.Netdev, Slaves: []SlaveResult{}, Backup: append([]string{}, b.Backup...)}
	if b.Mode != "" {
		m := b.Mode
		res.Mode = &m
	}
	if len(b.Slaves) == 0 {
		g := f
		g.Bond = nil
		r, err := check(g)
		if err != nil {
			return r, err
		}
		r.Steps = append(r.Steps, bondStep)
		r.Verdict = Unknown
		r.Reasons = []string{fmt.Sprintf("%s has no active slave: no port carries the flow", b.Netdev)}
		r.Bond = res
		return r, nil
	}
	rs := make([]Result, len(b.Slaves))
	for i, s := range b.Slaves {
		g := f
		g.Bond = nil
		g.DCB, g.slave = s.DCB, s.Netdev
		r, err := check(g)
		if err != nil {
			return Result{}, err
		}
		rs[i] = r
	}
	out := rs[0]
	out.RealNetdev = f.Link.Real
	out.Bond = res
	// The steps every slave shares, then the bond, then each slave's own.
	common := len(out.Steps)
	for _, r := range rs[1:] {
		n := 0
		for n < common && n < len(r.Steps) && r.Steps[n] == out.Steps[n] {
			n++
		}
		common = n
	}
	for _, r := range rs {
		// The DCB steps are always each slave's own.
		if k := slices.IndexFunc(r.Steps, func(s Step) bool { return s.Step == "dcb" }); k >= 0 && k < common {
			common = k
		}
	}
	steps := append([]Step{}, out.Steps[:common]...)
	steps = append(steps, bondStep)
	for i, r := range rs {
		for _, s := range r.Steps[common:] {
			s.Step += " (" + b.Slaves[i].Netdev + ")"
			steps = append(steps, s)
		}
	}
	out.Steps = steps
	out.Reasons, out.Warnings, out.Unknowns = []string{}, []string{}, []string{}
	lossy, unknown := false, false
	for i, r := range rs {
		name := b.Slaves[i].Netdev
		res.Slaves = append(res.Slaves, SlaveResult{Netdev: name, Trust: r.Trust, Priority: r.Priority, TC: r.TC, PFC: r.PFC, Verdict: r.Verdict, Reasons: r.Reasons})
		for _, x := range r.Reasons {
			out.Reasons = append(out.Reasons, name+": "+x)
		}
		out.Warnings = appendNew(out.Warnings, r.Warnings...)
		out.Unknowns = appendNew(out.Unknowns, r.Unknowns...)
		switch r.Verdict {
		case Lossy:
			lossy = true
		case Unknown:
			unknown = true
		}
		if !sameU8(r.Priority, out.Priority) {
			out.Priority = nil
		}
		if !sameU8(r.TC, out.TC) {
			out.TC = nil
		}
		if r.PFC == nil || out.PFC == nil || *r.PFC != *out.PFC {
			out.PFC = nil
		}
		if r.Trust != out.Trust {
			out.Trust = TrustUnknown
		}
	}
	switch {
	case lossy:
		out.Verdict = Lossy
	case unknown:
		out.Verdict = Unknown
	default:
		out.Verdict = Lossless
	}
	if differ(res.Slaves) {
		var parts []string
		for _, s := range res.Slaves {
			pfc := "pfc unknown"
			if s.PFC != nil {
				pfc = map[bool]string{true: "PFC on", false: "PFC off"}[*s.PFC]
			}
			parts = append(parts, fmt.Sprintf("%s %s (trust %s, priority %s, %s)", s.Netdev, s.Verdict, s.Trust, u8Or(s.Priority), pfc))
		}
		out.Warnings = append(out.Warnings, fmt.Sprintf("the slaves of %s judge the flow differently: %s; a bond hashes or fails flows over to any of them, so configure every slave's DCB alike", b.Netdev, strings.Join(parts, "; ")))
	}
	return out, nil
}

// differ reports whether the slaves' judgements differ.
func differ(ss []SlaveResult) bool {
	for _, s := range ss[1:] {
		f := ss[0]
		if s.Verdict != f.Verdict || s.Trust != f.Trust || !sameU8(s.Priority, f.Priority) || !sameU8(s.TC, f.TC) ||
			(s.PFC == nil) != (f.PFC == nil) || (s.PFC != nil && *s.PFC != *f.PFC) {
			return true
		}
	}
	return false
}

func sameU8(a, b *uint8) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func u8Or(p *uint8) string {
	if p == nil {
		return "unknown"
	}
	return fmt.Sprint(*p)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// appendNew appends the strings of add that out does not hold yet.
func appendNew(out []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
