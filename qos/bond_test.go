package qos

import (
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/vlan"
)

// bondFlow is a RoCE v2 verbs flow (sl 3, traffic class 106: DSCP 26,
// ECT(0)) of mlx5_bond_0 on untagged bond0 whose slaves have dcbs.
func bondFlow(mode string, backup []string, dcbs ...*DCB) Flow {
	b := &BondFlow{Netdev: "bond0", Mode: mode, Backup: backup}
	for i, d := range dcbs {
		name := []string{"ens1f0np0", "ens1f1np1"}[i]
		if d != nil {
			d.Netdev = name
		}
		b.Slaves = append(b.Slaves, SlaveDCB{Netdev: name, DCB: d})
	}
	return Flow{Device: "mlx5_bond_0", Port: 1, GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5,
		Link: Link{Netdev: "bond0", Tags: []vlan.ChainTag{}, Real: "bond0", RealNumTC: -1},
		DCB:  &DCB{Netdev: "bond0", Reason: "bond0 has no DCB support"}, Bond: b, SL: 3, TrafficClass: 106}
}

// A RoCE LAG bond whose two ports both trust DSCP with 26 → 3 and PFC on
// 3 carries the flow losslessly on either: lossless, with each slave's
// judgement. The bond's own (absent) DCB is not what decides.
func TestCheckBondLossless(t *testing.T) {
	r, err := Check(bondFlow("802.3ad", nil, roceDCB(true), roceDCB(true)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Lossless || r.Trust != TrustDSCP || r.Priority == nil || *r.Priority != 3 || r.PFC == nil || !*r.PFC {
		t.Fatalf("verdict %s trust %s priority %v pfc %v, want lossless on priority 3 by DSCP", r.Verdict, r.Trust, r.Priority, r.PFC)
	}
	if r.Bond == nil || len(r.Bond.Slaves) != 2 || r.Bond.Slaves[0].Netdev != "ens1f0np0" || r.Bond.Slaves[1].Verdict != Lossless {
		t.Fatalf("bond = %+v", r.Bond)
	}
	if r.RealNetdev != "bond0" || len(r.Warnings) != 0 {
		t.Errorf("real %s, warnings %v", r.RealNetdev, r.Warnings)
	}
	var dcbSteps []string
	for _, s := range r.Steps {
		if strings.HasPrefix(s.Step, "pfc") {
			dcbSteps = append(dcbSteps, s.Step)
		}
	}
	if strings.Join(dcbSteps, ",") != "pfc (ens1f0np0),pfc (ens1f1np1)" {
		t.Errorf("pfc steps %v, want one per slave", dcbSteps)
	}
}

// Slaves that differ: PFC off on the second port makes a hashed flow lossy
// there, and the difference is a finding of its own.
func TestCheckBondSlavesDiffer(t *testing.T) {
	off := roceDCB(true)
	off.PFC.Enabled = 0
	r, err := Check(bondFlow("802.3ad", nil, roceDCB(true), off))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Lossy || r.PFC != nil || r.Bond.Slaves[0].Verdict != Lossless || r.Bond.Slaves[1].Verdict != Lossy {
		t.Fatalf("verdict %s pfc %v slaves %+v, want lossy, pfc unknown, lossless then lossy", r.Verdict, r.PFC, r.Bond.Slaves)
	}
	if !hasWarning(r, "the slaves of bond0 judge the flow differently") {
		t.Errorf("warnings %v, want the slaves' difference", r.Warnings)
	}
	// One slave's DCB not read: unknown, not lossless.
	r, _ = Check(bondFlow("802.3ad", nil, roceDCB(true), nil))
	if r.Verdict != Unknown || !strings.Contains(strings.Join(r.Reasons, ";"), "ens1f1np1: the DCB state of ens1f1np1 was not read") {
		t.Errorf("verdict %s reasons %v, want unknown naming ens1f1np1", r.Verdict, r.Reasons)
	}
}

// Active-backup: the active slave decides; the standby ones are listed.
func TestCheckBondActiveBackup(t *testing.T) {
	r, err := Check(bondFlow("active-backup", []string{"ens1f1np1"}, roceDCB(true)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Lossless || len(r.Bond.Slaves) != 1 || len(r.Bond.Backup) != 1 || r.Bond.Backup[0] != "ens1f1np1" || *r.Bond.Mode != "active-backup" {
		t.Fatalf("verdict %s bond %+v", r.Verdict, r.Bond)
	}
	r, _ = Check(bondFlow("active-backup", []string{"ens1f0np0", "ens1f1np1"}))
	if r.Verdict != Unknown || !strings.Contains(r.Reasons[0], "no active slave") {
		t.Errorf("no active slave: verdict %s reasons %v", r.Verdict, r.Reasons)
	}
}
