package qos

import (
	"testing"

	"github.com/roce-probe/roce-probe/gid"
)

func u8ptr(v uint8) *uint8 { return &v }

// rdma_cm without a ToS from the application: the configfs default
// replaces Flow.TOS (cma.c cma_resolve_iboe_route); unreadable, 0 with a
// warning.
func TestCheckRDMACMDefaultToS(t *testing.T) {
	f := Flow{Device: "mlx5_0", Port: 1, GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: mlx5Link(), DCB: roceDCB(true),
		RDMACM: true, TOS: 200, TOSDefault: &RDMACMDefault{Device: "mlx5_0", Port: 1, ToS: u8ptr(106), Status: SettingRead, Source: "/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos"}}
	r, err := Check(f)
	if err != nil {
		t.Fatal(err)
	}
	if *r.TOS != 106 || *r.DSCP != 26 || *r.Priority != 3 || r.Verdict != Lossless {
		t.Fatalf("tos %v dscp %v prio %v verdict %s", *r.TOS, *r.DSCP, *r.Priority, r.Verdict)
	}
	why := "not exposed here"
	f.TOSDefault = &RDMACMDefault{Device: "mlx5_0", Port: 1, Status: SettingNotExposed, Reason: &why}
	r, _ = Check(f)
	if *r.TOS != 0 || !hasWarning(r, "could not be read (not exposed here); ToS 0 is assumed") {
		t.Errorf("not exposed: tos %v warnings %v", *r.TOS, r.Warnings)
	}
}

// The mlx5 traffic class override replaces a connected QP's traffic class
// only; rules without a global value only warn.
func TestCheckTCOverride(t *testing.T) {
	o := &TCOverride{Device: "mlx5_0", Port: 1, Global: u8ptr(96), Status: SettingRead, Source: "/sys/class/infiniband/mlx5_0/tc/1/traffic_class"}
	base := Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: mlx5Link(), DCB: roceDCB(true), SL: 3, TrafficClass: 106, TCOverride: o}
	for _, c := range []struct {
		path Path
		tc   uint8
		warn bool
	}{{PathConnectedQP, 96, true}, {PathUserAH, 106, false}, {PathKernelAH, 106, false}} {
		f := base
		f.Path = c.path
		r, _ := Check(f)
		if r.TrafficClass != c.tc || hasWarning(r, "overrides the traffic class") != c.warn {
			t.Errorf("%s: traffic class %d warnings %v, want %d", c.path, r.TrafficClass, r.Warnings, c.tc)
		}
	}
	f := base
	f.Path = PathConnectedQP
	f.TCOverride = &TCOverride{Status: SettingRead, Source: "x", Rules: []TCRule{{TrafficClass: 3}}}
	if r, _ := Check(f); r.TrafficClass != 106 || !hasWarning(r, "1 address rule(s)") {
		t.Errorf("rules only: %d %v", r.TrafficClass, r.Warnings)
	}
	// Not read or not exposed: nothing changes.
	f.TCOverride = &TCOverride{Status: SettingNotExposed, Global: u8ptr(1)}
	if r, _ := Check(f); r.TrafficClass != 106 || len(r.Warnings) != 0 && hasWarning(r, "override") {
		t.Errorf("not exposed: %d %v", r.TrafficClass, r.Warnings)
	}
}
