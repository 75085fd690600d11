package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// checkJSON is the report of `check -o json` (docs/json.md).
type checkJSON struct {
	Device    string `json:"device"`
	Predicted bool   `json:"predicted"`
	Port      int    `json:"port"`
	Index     int    `json:"index"`
	Netdev    string `json:"netdev"`
	Driver    string `json:"driver"`
	VLAN      *int   `json:"vlan"`
	PCP       *int   `json:"pcp"`
	VLANChain []struct {
		ID     int     `json:"id"`
		TPID   int     `json:"tpid"`
		PCP    *int    `json:"pcp"`
		Netdev *string `json:"netdev"`
	} `json:"vlan_chain"`
	DSCP     *int     `json:"dscp"`
	ECN      *int     `json:"ecn"`
	ECNName  *string  `json:"ecn_name"`
	Trust    *string  `json:"trust"`
	Priority *int     `json:"priority"`
	TC       *int     `json:"tc"`
	PFC      *bool    `json:"pfc_enabled"`
	Verdict  string   `json:"verdict"`
	Warnings []string `json:"warnings"`
	Steps    []struct {
		Step   string `json:"step"`
		Result string `json:"result"`
		Why    string `json:"why"`
	} `json:"steps"`
}

// runCheck runs `roce-probe check -o json ARGS...` and returns its
// report (the zero checkJSON on exit 2), stderr and exit status.
func runCheck(t *testing.T, args ...string) (checkJSON, string, int) {
	t.Helper()
	out, stderr, code := runCLI(t, "", append([]string{"check", "-o", "json"}, args...)...)
	var r checkJSON
	if code != exitUsage {
		r = decodeCheck(t, out, stderr)
	}
	return r, stderr, code
}

// decodeCheck reads what `check -o json` wrote (docs/json.md), failing t
// when it is not one report. The one place check's JSON is read.
func decodeCheck(t *testing.T, out, stderr string) checkJSON {
	t.Helper()
	var r checkJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("check output is not JSON: %v\n%s\n%s", err, out, stderr)
	}
	return r
}

// mlx5_0 index 5: 10.100.0.10 on enp1s0f0.100 (802.1Q 100, egress-qos-map
// 0:3), the port in DSCP trust with DSCP 26 → priority 3 → TC 1 and PFC
// on priority 3 (mlx5-dscp). mlx5 puts sl & 7 in the PCP (3) and the
// traffic class byte 106 on the wire as is: DSCP 26, ECT(0).
func TestCheckMLX5Lossless(t *testing.T) {
	r, stderr, code := runCheck(t, append(fromArgs("mlx5-dscp"), "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3")...)
	if code != exitOK {
		t.Fatalf("exit %d, want 0: %s %+v", code, stderr, r)
	}
	if r.Device != "mlx5_0" || r.Predicted || r.Port != 1 || r.Index != 5 || r.Netdev != "enp1s0f0.100" || r.Driver != "mlx5" ||
		*r.VLAN != 100 || *r.PCP != 3 || *r.DSCP != 26 || *r.ECN != 2 || *r.ECNName != "ECT(0)" || *r.Trust != "dscp" ||
		*r.Priority != 3 || *r.TC != 1 || !*r.PFC || r.Verdict != "lossless" || len(r.Warnings) != 0 || len(r.Steps) == 0 {
		t.Errorf("%+v", r)
	}
	if len(r.VLANChain) != 1 || r.VLANChain[0].ID != 100 || r.VLANChain[0].TPID != 0x8100 || *r.VLANChain[0].PCP != 3 ||
		r.VLANChain[0].Netdev == nil || *r.VLANChain[0].Netdev != "enp1s0f0.100" {
		t.Errorf("vlan_chain %+v", r.VLANChain)
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing", stderr)
	}
}

func TestCheckMLX5UntaggedPCPTrust(t *testing.T) {
	r, _, code := runCheck(t, append(fromArgs("mlx5-pcp"), "--dev", "mlx5_0", "--gid-index", "3", "--tclass", "104", "--sl", "3")...)
	if code != exitFinding || r.Verdict != "lossy" || r.VLAN != nil || r.PCP != nil || len(r.VLANChain) != 0 || *r.Trust != "pcp" || *r.Priority != 0 || *r.PFC {
		t.Fatalf("exit %d: %+v", code, r)
	}
	joined := strings.Join(r.Warnings, "\n")
	for _, w := range []string{"untagged traffic under PCP trust", "Not-ECT", "priority 0 has no PFC"} {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings lack %q: %s", w, joined)
		}
	}
}

func TestCheckRDMACMWithoutEgressEntry(t *testing.T) {
	// ToS 106 → skb priority 2; enp1s0f0.100 maps only 0:3, so the SL and
	// mlx5's PCP are 0 — but the port trusts DSCP 26 → 3, which has PFC.
	r, _, code := runCheck(t, append(fromArgs("mlx5-dscp"), "--dev", "mlx5_0", "--gid-index", "5", "--tos", "106", "--rdma-cm")...)
	if code != exitOK || r.Verdict != "lossless" || *r.PCP != 0 || *r.Priority != 3 {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "does not map") {
		t.Errorf("no egress-map warning: %v", r.Warnings)
	}
}

// rxe0 index 10: 10.10.10.1 on veth0.q1000.10, 802.1ad 1000 (veth0.q1000,
// no egress map: PCP 0) outside 802.1Q 10 (egress-qos-map 0:2: PCP 2).
// rxe never sets skb->priority, so each tag carries its map's entry for
// priority 0. vlan and pcp are the outermost tag's: 1000 and 0.
func TestCheckRXENoDCB(t *testing.T) {
	r, _, code := runCheck(t, append(fromArgs("rxe"), "--dev", "rxe0", "--gid-index", "10", "--tclass", "106", "--sl", "4")...)
	if code != exitFinding || r.Verdict != "unknown" || r.Driver != "rxe" || *r.VLAN != 1000 || *r.PCP != 0 ||
		len(r.VLANChain) != 2 || *r.VLANChain[0].PCP != 0 || *r.VLANChain[1].PCP != 2 || r.VLANChain[0].TPID != 0x88a8 ||
		r.VLANChain[1].TPID != 0x8100 || r.VLANChain[0].ID != 1000 || r.VLANChain[1].ID != 10 ||
		*r.VLANChain[0].Netdev != "veth0.q1000" || *r.VLANChain[1].Netdev != "veth0.q1000.10" || *r.DSCP != 26 || r.Trust != nil {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "sl 4 is ignored by rxe") {
		t.Errorf("warnings %v", r.Warnings)
	}
	// The table form carries the same verdict.
	out, _, code := runCLI(t, "", append(append([]string{"check"}, fromArgs("rxe")...), "--dev", "rxe0", "--gid-index", "3", "--tclass", "104", "--sl", "0")...)
	if code != exitFinding || !strings.Contains(out, "verdict:  UNKNOWN") || !strings.Contains(out, "802.1Q 100 pcp 3") ||
		!strings.Contains(out, "no DCB on veth0") {
		t.Errorf("table output (exit %d):\n%s", code, out)
	}
}

func TestCheckBadInput(t *testing.T) {
	base := append([]string{"check"}, fromArgs("mlx5-dscp")...)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "16"}, []string{"--sl 16 is out of range: want 0..15"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "256", "--sl", "3"}, []string{"--tclass 256 is out of range: want 0..255"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tos", "300", "--rdma-cm"}, []string{"--tos 300 is out of range: want 0..255"}},
		{[]string{"--dev", "nope0", "--gid-index", "5", "--tclass", "106", "--sl", "3"}, []string{`--dev "nope0": no such RDMA device: want one of mlx5_0`}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "14", "--tclass", "106", "--sl", "3"}, []string{"--gid-index 14", "empty GID slot"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "99", "--tclass", "106", "--sl", "3"}, []string{"--gid-index 99", "is out of range: mlx5_0 port 1 has GID indices 0..15"}},
		{[]string{"--dev", "mlx5_0", "--port", "7", "--gid-index", "1", "--tclass", "106", "--sl", "3"}, []string{"--port 7: no such port on mlx5_0: want one of mlx5_0 port 1, mlx5_0 port 2"}},
		// The flag groups: --tos only with --rdma-cm, --tclass and --sl
		// together, --rdma-cm only with --tos, one of the two ways.
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tos", "106"}, []string{"--rdma-cm and --tos go together: --rdma-cm is missing"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106"}, []string{"--tclass and --sl go together: --sl is missing"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--sl", "3"}, []string{"--tclass and --sl go together: --tclass is missing"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--rdma-cm"}, []string{"--rdma-cm", "--tos"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--tos", "106", "--rdma-cm"}, []string{"--rdma-cm and --sl cannot be used together", "at most one of --rdma-cm or --sl"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5"}, []string{"one of --tclass or --rdma-cm is required"}},
		{[]string{"--dev", "mlx5_0", "--tclass", "106", "--sl", "3"}, []string{"--gid-index is required"}},
		{[]string{"--gid-index", "5", "--tclass", "106", "--sl", "3"}, []string{"--dev is required"}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--path", "bogus"}, []string{`--path "bogus" is not known`}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "-o", "yaml"}, []string{`-o "yaml" is not known: want table or json`}},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--sl", "4"}, []string{`--sl given twice ("3", then "4")`}},
	} {
		out, stderr, code := runCLI(t, "", append(append([]string{}, base...), c.args...)...)
		for _, w := range c.want {
			if code != exitUsage || !strings.Contains(stderr, w) || out != "" {
				t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", c.args, code, stderr, out, w)
			}
		}
	}
	_, stderr, code := runCLI(t, "", "check", "--from", "testdata/no-such.json", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3")
	if code != exitUsage || !strings.Contains(stderr, `--from "testdata/no-such.json": no such file or directory`) {
		t.Errorf("missing --from file: exit %d, stderr %q", code, stderr)
	}
}

// A snapshot whose DCB state has values the kernel never reports (APP
// priority 11: priorities are 3 bits) used to be followed through to
// "priority 11 … pfc off"; it is bad input.
func TestCheckBadDCBFile(t *testing.T) {
	f := snapshotVariant(t, "mlx5-dscp", func(doc map[string]any) {
		dcb := doc["dcb"].([]any)[0].(map[string]any)
		dcb["app"] = []any{map[string]any{"selector": 5, "priority": 11, "protocol": 26}}
	})
	out, stderr, code := runCLI(t, "", "check", "--from", f, "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3")
	if code != exitUsage || out != "" || !strings.Contains(stderr, "--from") || !strings.Contains(stderr, "app[0].priority 11 is out of range: want 0..7") {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit 2 naming --from, app[0].priority 11 and 0..7", code, stderr, out)
	}
}
