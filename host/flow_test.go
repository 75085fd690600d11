package host

import (
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/qos"
)

// View.Flow with the settings of the fixtures (testdata/README.md,
// "Counters and settings"): mlx5-counters has default_roce_tos 106 read
// on mlx5_0 port 1 and no traffic class override (not exposed);
// mlx5-tcoverride adds Global tclass=96 on port 1; mlx5-dscp has no
// settings section.
func TestViewFlow(t *testing.T) {
	src := func(name string) (*View, *Source) {
		v, err := fixture(t, name).View("")
		if err != nil {
			t.Fatal(err)
		}
		s, err := v.Source("mlx5_0", 1, 5)
		if err != nil {
			t.Fatal(err)
		}
		return v, s
	}
	tos := func(b uint8) *uint8 { return &b }

	v, s := src("mlx5-counters")
	f := v.Flow(s, FlowParams{RDMACM: true})
	if f.Device != "mlx5_0" || f.Port != 1 || f.GIDIndex != 5 || f.Link.Netdev != "enp1s0f0.100" || f.Link.Real != "enp1s0f0" || f.DCB == nil {
		t.Errorf("rdma_cm flow of mlx5_0 port 1 index 5: %+v", f)
	}
	if !f.RDMACM || f.TOSDefault == nil || f.TOSDefault.Status != qos.SettingRead || f.TOSDefault.ToS == nil || *f.TOSDefault.ToS != 106 {
		t.Errorf("rdma_cm without a ToS: TOSDefault %+v, want default_roce_tos 106 read", f.TOSDefault)
	}
	if f.TCOverride == nil || f.TCOverride.Status != qos.SettingNotExposed || f.TCOverride.Active() {
		t.Errorf("TCOverride %+v, want the port's entry, not exposed", f.TCOverride)
	}
	if f = v.Flow(s, FlowParams{RDMACM: true, TOS: tos(96)}); f.TOSDefault != nil || f.TOS != 96 || !f.RDMACM {
		t.Errorf("rdma_cm with ToS 96: TOS %d, TOSDefault %+v; want 96 and no default", f.TOS, f.TOSDefault)
	}
	if f = v.Flow(s, FlowParams{SL: 3, TrafficClass: 106}); f.RDMACM || f.TOSDefault != nil || f.SL != 3 || f.TrafficClass != 106 {
		t.Errorf("verbs sl 3 tclass 106: %+v", f)
	}

	v, s = src("mlx5-tcoverride")
	if f = v.Flow(s, FlowParams{SL: 3, TrafficClass: 106}); !f.TCOverride.Active() || f.TCOverride.Global == nil || *f.TCOverride.Global != 96 {
		t.Errorf("mlx5-tcoverride: TCOverride %+v, want Global 96", f.TCOverride)
	}

	v, s = src("mlx5-dscp")
	f = v.Flow(s, FlowParams{RDMACM: true})
	if f.TOSDefault == nil || f.TOSDefault.Status != qos.SettingNotExposed || f.TOSDefault.Reason == nil || !strings.Contains(*f.TOSDefault.Reason, "no settings section") || f.TCOverride != nil {
		t.Errorf("no settings section: TOSDefault %+v, TCOverride %+v; want not exposed saying why, and no override", f.TOSDefault, f.TCOverride)
	}
	// What qos.Check makes of it: the kernel's initial ToS 0, warned about.
	r, err := qos.Check(f)
	if err != nil || r.TOS == nil || *r.TOS != 0 || !strings.Contains(strings.Join(r.Warnings, "\n"), "default_roce_tos") {
		t.Errorf("check of the rdma_cm flow without settings: %v, tos %v, warnings %q", err, r.TOS, r.Warnings)
	}
}
