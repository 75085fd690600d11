package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// mlx5-pod.json is a pod's snapshot (host/testdata/README.md): net1, a
// macvlan whose lower device (ifindex 5) is in the host's namespace
// (parent_other_netns), with 192.168.50.10 at GID indices 4 and 5 of
// mlx5_0 port 1; the host's own entries show no netdev. From inside the
// pod the tags the host adds below net1, their PCP and the NIC's DCB are
// unknowable: every command says so, none says "untagged" or "not read".
const podBoundary = "the lower device of net1 is in another network namespace"

func TestPodGIDs(t *testing.T) {
	out, errOut, code := runCLI(t, "", append([]string{"gids", "-o", "json"}, fromArgs("mlx5-pod")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Ports []struct {
			Entries []map[string]any `json:"entries"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	e := doc.Ports[0].Entries[5]
	if e["netdev"] != "net1" || e["vlan"] != nil || e["vlan_chain"] != nil || e["real_netdev"] != nil ||
		!strings.Contains(e["netns_boundary"].(string), podBoundary) {
		t.Errorf("entry 5 = %v, want net1 with vlan, vlan_chain and real_netdev null and the boundary named", e)
	}
	out, _, _ = runCLI(t, "", append([]string{"gids"}, fromArgs("mlx5-pod")...)...)
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "net1") && (!strings.Contains(l, "unknown") || strings.Contains(l, "untagged")) {
			t.Errorf("row %q: want VLAN unknown", l)
		}
	}
}

func TestPodCheck(t *testing.T) {
	out, _, code := runCLI(t, "", append([]string{"check", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3"}, fromArgs("mlx5-pod")...)...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (unknown)", code)
	}
	for _, want := range []string{"verdict:  UNKNOWN", "because: " + podBoundary, "VLAN tags unknown, DSCP 26", "dcb           not visible"} {
		if !strings.Contains(out, want) {
			t.Errorf("check lacks %q:\n%s", want, out)
		}
	}
	for _, bad := range []string{"untagged", "was not read"} {
		if strings.Contains(out, bad) {
			t.Errorf("check says %q:\n%s", bad, out)
		}
	}
	out, _, _ = runCLI(t, "", append([]string{"check", "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "-o", "json"}, fromArgs("mlx5-pod")...)...)
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r["vlan_chain"] != nil || r["pcp"] != nil || r["vlan"] != nil || r["dscp"].(float64) != 26 || r["verdict"] != "unknown" {
		t.Errorf("check JSON vlan_chain %v pcp %v vlan %v dscp %v verdict %v", r["vlan_chain"], r["pcp"], r["vlan"], r["dscp"], r["verdict"])
	}
}

func TestPodAHAndQoS(t *testing.T) {
	out, _, _ := runCLI(t, "", append([]string{"ah", "--dev", "mlx5_0", "--gid-index", "5", "--dst", "192.168.50.20", "--sl", "3", "--tclass", "106", "-o", "json"}, fromArgs("mlx5-pod")...)...)
	var a struct {
		Wire map[string]any `json:"wire"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err, out)
	}
	if a.Wire["vlan_chain"] != nil || a.Wire["pcp"] != nil || !strings.Contains(a.Wire["netns_boundary"].(string), podBoundary) {
		t.Errorf("ah wire %v: want vlan_chain and pcp null, the boundary named", a.Wire)
	}
	out, _, code := runCLI(t, "", append([]string{"qos", "--netdev", "net1"}, fromArgs("mlx5-pod")...)...)
	if code != 0 || !strings.Contains(out, "DCB:           not visible: "+podBoundary) || strings.Contains(out, "DCB:           not read") {
		t.Errorf("qos --netdev net1 (exit %d):\n%s", code, out)
	}
}
