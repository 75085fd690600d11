package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fixtures: the GID tables of gid/testdata (mlx5_0: index 3 RoCE v2 on
// enp1s0f0, index 5 RoCE v2 on enp1s0f0.100 with egress-qos-map 0:3;
// rxe0: the lab topology) and DCB states in testdata/.
const (
	mlx5Sysfs = "../../gid/testdata/mlx5/sys"
	mlx5Links = "../../gid/testdata/mlx5/links.json"
	rxeSysfs  = "../../gid/testdata/rxe/sys"
	rxeLinks  = "../../gid/testdata/rxe/links.json"
)

type checkJSON struct {
	Device    string `json:"device"`
	Port      int    `json:"port"`
	Index     int    `json:"index"`
	Netdev    string `json:"netdev"`
	Driver    string `json:"driver"`
	VLAN      *int   `json:"vlan"`
	PCP       *int   `json:"pcp"`
	VLANChain []struct {
		ID    int    `json:"id"`
		Proto string `json:"proto"`
		PCP   *int   `json:"pcp"`
	} `json:"vlan_chain"`
	DSCP     *int     `json:"dscp"`
	ECN      *string  `json:"ecn"`
	Trust    string   `json:"trust"`
	Priority *int     `json:"priority"`
	TC       *int     `json:"tc"`
	PFC      *bool    `json:"pfc"`
	Verdict  string   `json:"verdict"`
	Warnings []string `json:"warnings"`
	Steps    []struct {
		Step, Value, Why string
	} `json:"steps"`
}

func runCheck(t *testing.T, args ...string) (checkJSON, string, int) {
	t.Helper()
	out, stderr, code := runCLI(t, "", append([]string{"check", "-o", "json"}, args...)...)
	var r checkJSON
	if code != exitUsage {
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("output is not JSON: %v\n%s\n%s", err, out, stderr)
		}
	}
	return r, stderr, code
}

func TestCheckMLX5Lossless(t *testing.T) {
	r, stderr, code := runCheck(t, "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dcb", "testdata/dcb-mlx5-dscp.json",
		"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3")
	if code != exitOK {
		t.Fatalf("exit %d, want 0: %s %+v", code, stderr, r)
	}
	if r.Device != "mlx5_0" || r.Port != 1 || r.Index != 5 || r.Netdev != "enp1s0f0.100" || r.Driver != "mlx5" ||
		*r.VLAN != 100 || *r.PCP != 3 || *r.DSCP != 26 || *r.ECN != "ECT(0)" || r.Trust != "dscp" ||
		*r.Priority != 3 || *r.TC != 1 || !*r.PFC || r.Verdict != "lossless" || len(r.Warnings) != 0 || len(r.Steps) == 0 {
		t.Errorf("%+v", r)
	}
	if len(r.VLANChain) != 1 || r.VLANChain[0].ID != 100 || r.VLANChain[0].Proto != "802.1Q" || *r.VLANChain[0].PCP != 3 {
		t.Errorf("vlan_chain %+v", r.VLANChain)
	}
}

func TestCheckMLX5UntaggedPCPTrust(t *testing.T) {
	r, _, code := runCheck(t, "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dcb", "testdata/dcb-mlx5-pcp.json",
		"--dev", "mlx5_0", "--gid-index", "3", "--tclass", "104", "--sl", "3")
	if code != exitFinding || r.Verdict != "lossy" || r.VLAN != nil || r.PCP != nil || r.Trust != "pcp" || *r.Priority != 0 || *r.PFC {
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
	r, _, code := runCheck(t, "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dcb", "testdata/dcb-mlx5-dscp.json",
		"--dev", "mlx5_0", "--gid-index", "5", "--tos", "106", "--rdma-cm")
	if code != exitOK || r.Verdict != "lossless" || *r.PCP != 0 || *r.Priority != 3 {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "does not map") {
		t.Errorf("no egress-map warning: %v", r.Warnings)
	}
}

func TestCheckRXENoDCB(t *testing.T) {
	r, _, code := runCheck(t, "--sysfs", rxeSysfs, "--links", rxeLinks, "--dev", "rxe0", "--gid-index", "10", "--tclass", "106", "--sl", "4")
	if code != exitFinding || r.Verdict != "unknown" || r.Driver != "rxe" || *r.VLAN != 1000 || *r.PCP != 0 ||
		len(r.VLANChain) != 2 || *r.VLANChain[1].PCP != 2 || r.VLANChain[0].Proto != "802.1ad" || *r.DSCP != 26 || r.Trust != "unknown" {
		t.Fatalf("exit %d: %+v", code, r)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "sl 4 is ignored by rxe") {
		t.Errorf("warnings %v", r.Warnings)
	}
	// The table form carries the same verdict.
	out, _, code := runCLI(t, "", "check", "--sysfs", rxeSysfs, "--links", rxeLinks, "--dev", "rxe0", "--gid-index", "3", "--tclass", "104", "--sl", "0")
	if code != exitFinding || !strings.Contains(out, "verdict:  UNKNOWN") || !strings.Contains(out, "802.1Q 100 pcp 3") {
		t.Errorf("table output (exit %d):\n%s", code, out)
	}
}

func TestCheckBadInput(t *testing.T) {
	base := []string{"check", "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dcb", "testdata/dcb-mlx5-dscp.json"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "16"}, "--sl 16 is out of range: want 0..15"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "256", "--sl", "3"}, "--tclass 256 is out of range: want 0..255"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tos", "300", "--rdma-cm"}, "--tos 300 is out of range: want 0..255"},
		{[]string{"--dev", "nope0", "--gid-index", "5", "--tclass", "106", "--sl", "3"}, `--dev "nope0": no such RDMA device: want one of mlx5_0`},
		{[]string{"--dev", "mlx5_0", "--gid-index", "14", "--tclass", "106", "--sl", "3"}, "--gid-index 14 is an empty GID slot"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "99", "--tclass", "106", "--sl", "3"}, "--gid-index 99 is out of range: mlx5_0 port 1 has GID indices 0..15"},
		{[]string{"--dev", "mlx5_0", "--port", "7", "--gid-index", "1", "--tclass", "106", "--sl", "3"}, "--port 7: no such port on mlx5_0: want one of mlx5_0 port 1, mlx5_0 port 2"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tos", "106"}, "--tos is for rdma_cm flows"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106"}, "give --tclass T --sl S"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--rdma-cm"}, "--rdma-cm takes --tos"},
		{[]string{"--dev", "mlx5_0", "--tclass", "106", "--sl", "3"}, "--gid-index is required"},
		{[]string{"--gid-index", "5", "--tclass", "106", "--sl", "3"}, "--dev is required"},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--dcb", "testdata/no-such.json"}, `--dcb "testdata/no-such.json": no such file or directory`},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--path", "bogus"}, `--path "bogus" is not known`},
		{[]string{"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "-o", "yaml"}, `-o "yaml" is not a known output format`},
	} {
		out, stderr, code := runCLI(t, "", append(base, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", c.args, code, stderr, out, c.want)
		}
	}
}

// A --dcb file with values the kernel never reports (APP priority 11, a
// traffic class 9) used to be followed through to "priority 11 … pfc off";
// it is bad input.
func TestCheckBadDCBFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "dcb.json")
	if err := os.WriteFile(f, []byte(`[{"netdev":"enp1s0f0","supported":true,"pfc":{"pfc_cap":8,"pfc_en":8},
		"app":[{"selector":5,"priority":11,"protocol":26}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, "", "check", "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dcb", f,
		"--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3")
	if code != exitUsage || out != "" || !strings.Contains(stderr, "app[0].priority 11 is out of range: want 0..7") {
		t.Errorf("exit %d, stderr %q, stdout %q; want exit 2 naming app[0].priority 11 and 0..7", code, stderr, out)
	}
}
