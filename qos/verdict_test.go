package qos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
)

// roceDCB is a typical RoCE port: PFC on priority 3, priority 3 in TC 3.
func roceDCB(trustDSCP bool) *DCB {
	d := &DCB{Netdev: "ens1f0", Supported: true,
		PFC: &PFC{Cap: 8, Enabled: 1 << 3},
		ETS: &ETS{PrioTC: [8]uint8{0, 0, 0, 3, 0, 0, 0, 0}, TCTSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}, TCTxBW: [8]uint8{50, 0, 0, 50}}}
	if trustDSCP {
		d.Apps = []App{{AppSelDSCP, 3, 26}, {AppSelDSCP, 6, 48}}
	}
	return d
}

func hasWarning(r Result, sub string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestCheckMLX5DSCPTrustLossless(t *testing.T) {
	r, err := Check(Flow{Device: "mlx5_0", Port: 1, GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5,
		Link: mlx5Link(), DCB: roceDCB(true), SL: 3, TrafficClass: 106})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Lossless || r.Trust != TrustDSCP || *r.Priority != 3 || *r.TC != 3 || !*r.PFC || *r.DSCP != 26 || *r.ECN != ECT0 {
		t.Fatalf("%+v", r)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings: %v", r.Warnings)
	}
	if *r.VLAN != 10 || *r.PCP != 3 || len(r.VLANChain) != 1 {
		t.Errorf("vlan %v pcp %v chain %+v", *r.VLAN, *r.PCP, r.VLANChain)
	}
}

func TestCheckMLX5PCPTrust(t *testing.T) {
	for sl := uint8(0); sl < 16; sl++ {
		r, err := Check(Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: mlx5Link(), DCB: roceDCB(false), SL: sl, TrafficClass: 106})
		if err != nil {
			t.Fatal(err)
		}
		want := Lossy
		if sl&7 == 3 {
			want = Lossless
		}
		if r.Verdict != want || r.Trust != TrustPCP || *r.Priority != sl&7 {
			t.Errorf("sl %d: verdict %s priority %v, want %s %d", sl, r.Verdict, *r.Priority, want, sl&7)
		}
		if want == Lossy && !hasWarning(r, "has no PFC") {
			t.Errorf("sl %d: no PFC warning: %v", sl, r.Warnings)
		}
	}
}

func TestCheckUntaggedUnderPCPTrust(t *testing.T) {
	r, _ := Check(Flow{GIDIndex: 0, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5,
		Link: Link{Netdev: "ens1f0", Real: "ens1f0"}, DCB: roceDCB(false), SL: 3, TrafficClass: 106})
	if r.Verdict != Lossy || r.VLAN != nil || r.PCP != nil || *r.Priority != 0 {
		t.Fatalf("%+v", r)
	}
	if !hasWarning(r, "untagged traffic under PCP trust") || !hasWarning(r, "priority 0 has no PFC") {
		t.Errorf("warnings %v", r.Warnings)
	}
}

func TestCheckDSCPMissingAndECN(t *testing.T) {
	r, _ := Check(Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: mlx5Link(), DCB: roceDCB(true), SL: 3, TrafficClass: 184}) // DSCP 46, Not-ECT
	if r.Verdict != Unknown || r.Priority != nil {
		t.Fatalf("%+v", r)
	}
	if !hasWarning(r, "DSCP 46 has no entry") || !hasWarning(r, "Not-ECT") {
		t.Errorf("warnings %v", r.Warnings)
	}
	r, _ = Check(Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: mlx5Link(), DCB: roceDCB(true), SL: 3, TrafficClass: 107}) // CE
	if !hasWarning(r, "CE") {
		t.Errorf("CE not flagged: %v", r.Warnings)
	}
}

func TestCheckRXELabNoDCB(t *testing.T) {
	// The lab: rxe0 on veth0, GID on veth0.100 with egress map {0:3 ...}; veth has no DCB.
	r, err := Check(Flow{Device: "rxe0", Port: 1, GIDIndex: 2, GIDType: gid.TypeRoCEv2, Driver: DriverRXE, Link: labVLAN100(),
		DCB: &DCB{Netdev: "veth0", Reason: "veth0 has no DCB support"}, SL: 5, TrafficClass: 104})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Unknown || r.Trust != TrustUnknown || *r.PCP != 3 || *r.DSCP != 26 || *r.ECN != NotECT {
		t.Fatalf("%+v", r)
	}
	if !hasWarning(r, "sl 5 is ignored by rxe") || !hasWarning(r, "Not-ECT") {
		t.Errorf("warnings %v", r.Warnings)
	}
	if len(r.Reasons) == 0 || !strings.Contains(r.Reasons[0], "no DCB") {
		t.Errorf("reasons %v", r.Reasons)
	}
	b, _ := json.Marshal(r)
	for _, key := range []string{`"device":"rxe0"`, `"port":1`, `"index":2`, `"netdev":"veth0.100"`, `"driver":"rxe"`, `"vlan":100`, `"pcp":3`,
		`"vlan_chain":[{"id":100,"tpid":33024,"pcp":3,"netdev":"veth0.100"}]`, `"dscp":26`, `"ecn":0`, `"ecn_name":"Not-ECT"`, `"trust":null`, `"priority":null`, `"tc":null`, `"pfc_enabled":null`, `"verdict":"unknown"`, `"warnings":[`, `"steps":[{"step":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
}

// On a QinQ netdev the frame's PCP and VLAN are the outermost tag's: the
// first switch classifies on the 802.1ad tag and never sees the inner one.
// rxe sends with skb priority 0 and each VLAN device inserts its own tag
// with the PCP of its own egress map (vlan_dev_hard_start_xmit,
// vlan_dev_get_egress_qos_mask): in the lab (internal/lab/topology.go)
// veth0.q1000.10 maps 0:2 and veth0.q1000 has no map, so the wire carries
// outer 1000 / PCP 0 and inner 10 / PCP 2. With PFC on priority 2 only,
// PCP trust makes the flow lossy: the inner tag's PCP would wrongly say
// lossless.
func TestCheckQinQOutermostTag(t *testing.T) {
	dcb := roceDCB(false)
	dcb.PFC.Enabled = 1 << 2
	r, err := Check(Flow{Device: "rxe0", Port: 1, GIDIndex: 10, GIDType: gid.TypeRoCEv2, Driver: DriverRXE, Link: labQinQ(), DCB: dcb, TrafficClass: 106})
	if err != nil {
		t.Fatal(err)
	}
	if r.VLAN == nil || *r.VLAN != 1000 || r.PCP == nil || *r.PCP != 0 || r.Priority == nil || *r.Priority != 0 || r.Verdict != Lossy {
		t.Fatalf("vlan %v pcp %v priority %v verdict %s, want 1000 0 0 lossy: %+v", r.VLAN, r.PCP, r.Priority, r.Verdict, r)
	}
	b, _ := json.Marshal(r)
	want := `"vlan":1000,"pcp":0,"vlan_chain":[{"id":1000,"tpid":34984,"pcp":0,"netdev":"veth0.q1000"},{"id":10,"tpid":33024,"pcp":2,"netdev":"veth0.q1000.10"}]`
	if !strings.Contains(string(b), want) {
		t.Errorf("JSON lacks %s: %s", want, b)
	}
}

func TestCheckRDMACM(t *testing.T) {
	// ToS 106 on the lab VLAN: priority 2, SL = egress map[2] = 5, tclass 106.
	dcb := roceDCB(false)
	dcb.PFC.Enabled = 1 << 5
	link := labVLAN100()
	link.Netdev, link.Tags[0].Netdev = "ens1f0.100", "ens1f0.100"
	r, err := Check(Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: link, DCB: dcb, RDMACM: true, TOS: 106})
	if err != nil {
		t.Fatal(err)
	}
	if r.SL != 5 || r.TrafficClass != 106 || r.Path != PathConnectedQP || *r.PCP != 5 || r.Verdict != Lossless || *r.TOS != 106 {
		t.Fatalf("%+v", r)
	}
	// ToS 0x60 gives priority 0; a map without an entry for 0 warns.
	link.Tags[0].EgressQoS = map[uint32]uint32{2: 5}
	r, _ = Check(Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: link, DCB: dcb, RDMACM: true, TOS: 0x60})
	if r.SL != 0 || !hasWarning(r, "does not map") {
		t.Errorf("sl %d warnings %v", r.SL, r.Warnings)
	}
}

func TestCheckBadInput(t *testing.T) {
	if _, err := Check(Flow{SL: 16, GIDType: gid.TypeRoCEv2}); err == nil || !strings.Contains(err.Error(), "0..15") {
		t.Errorf("sl 16: %v", err)
	}
	if _, err := Check(Flow{Path: "bogus", GIDType: gid.TypeRoCEv2}); err == nil {
		t.Error("bogus path accepted")
	}
	r, err := Check(Flow{GIDType: gid.TypeIB})
	if err != nil || r.Verdict != Unknown {
		t.Errorf("IB GID: %v %v", r.Verdict, err)
	}
}

// The steps name the primary source of the rules they cite (the kernel or
// rdma-core file and the version read), never a document outside this
// repository. The expected sources are written here by hand; docs/sources.md
// lists them.
func TestStepsNameSources(t *testing.T) {
	why := func(steps []Step, name string) string {
		for _, s := range steps {
			if s.Step == name {
				return s.Why
			}
		}
		return ""
	}
	in := WireInput{Path: PathUserAH, SL: 3, TrafficClass: 106, GIDType: gid.TypeRoCEv2}
	rxeIn, mlx5In := in, in
	rxeIn.Link, mlx5In.Link = labVLAN100(), mlx5Link()
	cm, err := Check(Flow{GIDIndex: 3, GIDType: gid.TypeRoCEv2, Driver: DriverMLX5, Link: mlx5Link(), DCB: roceDCB(false), RDMACM: true, TOS: 106})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what  string
		steps []Step
		step  string
		want  []string
	}{
		{"rxe", Predict(DriverRXE, rxeIn).Steps, "sl", []string{"rxe_av_from_attr", "drivers/infiniband/sw/rxe/rxe_av.c", "Linux 6.1"}},
		{"mlx5", Predict(DriverMLX5, mlx5In).Steps, "priority", []string{"drivers/infiniband/hw/mlx5/ah.c, create_ib_ah", "qp.c, mlx5_set_path", "Linux 6.1", "providers/mlx5/verbs.c, mlx5_create_ah", "rdma-core v64.0"}},
		{"hns", Predict(DriverHNS, mlx5In).Steps, "ip tos", []string{"providers/hns/hns_roce_u_verbs.c, get_tclass", "rdma-core v64.0"}},
		{"rdma_cm", cm.Steps, "skb priority", []string{"include/net/route.h", "net/ipv4/route.c", "Linux 6.1"}},
		{"rdma_cm", cm.Steps, "sl", []string{"iboe_tos_to_sl", "drivers/infiniband/core/cma.c", "Linux 6.1"}},
	} {
		w := why(c.steps, c.step)
		for _, s := range c.want {
			if !strings.Contains(w, s) {
				t.Errorf("%s step %q: why %q does not name %q", c.what, c.step, w, s)
			}
		}
	}
	// No step of any driver, path or GID type cites a document that is not in
	// this repository.
	for _, d := range []Driver{DriverMLX5, DriverRXE, DriverBNXTRE, DriverIRDMA, DriverHNS, DriverERDMA, DriverUnknown} {
		for _, p := range []Path{PathUserAH, PathKernelAH, PathConnectedQP} {
			for _, g := range []gid.Type{gid.TypeRoCEv1, gid.TypeRoCEv2} {
				for _, rdmacm := range []bool{false, true} {
					r, err := Check(Flow{GIDIndex: 3, GIDType: g, Driver: d, Path: p, Link: labVLAN100(), DCB: roceDCB(true), RDMACM: rdmacm, TOS: 106, SL: 3, TrafficClass: 106})
					if err != nil {
						t.Fatalf("%s %s %v rdma_cm %v: %v", d, p, g, rdmacm, err)
					}
					for _, s := range r.Steps {
						for _, f := range strings.Fields(s.Why) {
							if strings.Contains(f, ".md") && !strings.HasPrefix(strings.TrimLeft(f, "(`'\""), "docs/") {
								t.Errorf("%s %s %v rdma_cm %v: step %q cites %q, not a document of this repository: %s", d, p, g, rdmacm, s.Step, f, s.Why)
							}
						}
						if strings.Contains(s.Why, "§") {
							t.Errorf("%s %s %v rdma_cm %v: step %q cites a section without its document: %s", d, p, g, rdmacm, s.Step, s.Why)
						}
					}
				}
			}
		}
	}
}
