package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// mlx5-lag.json is a RoCE LAG host (host/testdata/README.md): mlx5_bond_0
// over bond0 (802.3ad) with slaves enp1s0f0np0 and enp1s0f1np1, both
// trusting DSCP with 26 → 3 and PFC on priority 3; its port records the
// first slave as netdev, as sysfs's device/net (and snapshots read from
// it) show it. mlx5-lag-differ.json has PFC off on enp1s0f1np1.

// The port's netdev is the bond, whose slave the snapshot recorded.
func TestLAGPortNetdevIsTheBond(t *testing.T) {
	out, errOut, code := runCLI(t, "", append([]string{"gids", "-o", "json"}, fromArgs("mlx5-lag")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Ports []struct {
			Device  string `json:"device"`
			Netdev  string `json:"netdev"`
			Matches bool   `json:"matches"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err, out)
	}
	// matches: the table is the one the kernel builds for a port whose
	// netdev is a bond slave (the default GID and addresses of the bond:
	// roce_gid_mgmt.c, is_eth_port_of_netdev_filter and the bond's
	// default-GID rule), predicted here from the bond.
	if len(doc.Ports) != 1 || doc.Ports[0].Device != "mlx5_bond_0" || doc.Ports[0].Netdev != "bond0" || !doc.Ports[0].Matches {
		t.Errorf("ports %+v, want mlx5_bond_0 on bond0, matching the predicted table", doc.Ports)
	}
}

// check judges the flow (DSCP 26) on both slaves: lossless on the host
// whose two ports are both configured, lossy with a finding where one
// slave lacks PFC on priority 3.
func TestLAGCheck(t *testing.T) {
	args := []string{"check", "--dev", "mlx5_bond_0", "--gid-index", "3", "--tclass", "106", "--sl", "3", "-o", "json"}
	out, errOut, code := runCLI(t, "", append(args, fromArgs("mlx5-lag")...)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0 (lossless): %s %s", code, out, errOut)
	}
	var r struct {
		Verdict string `json:"verdict"`
		Bond    struct {
			Netdev string `json:"netdev"`
			Mode   string `json:"bond_mode"`
			Slaves []struct {
				Netdev   string `json:"netdev"`
				Priority int    `json:"priority"`
				PFC      bool   `json:"pfc_enabled"`
				Verdict  string `json:"verdict"`
			} `json:"slaves"`
		} `json:"bond"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Verdict != "lossless" || r.Bond.Netdev != "bond0" || r.Bond.Mode != "802.3ad" || len(r.Bond.Slaves) != 2 {
		t.Fatalf("verdict %s bond %+v", r.Verdict, r.Bond)
	}
	for i, want := range []string{"enp1s0f0np0", "enp1s0f1np1"} {
		s := r.Bond.Slaves[i]
		if s.Netdev != want || s.Priority != 3 || !s.PFC || s.Verdict != "lossless" {
			t.Errorf("slave %d = %+v, want %s lossless on priority 3 with PFC", i, s, want)
		}
	}

	out, _, code = runCLI(t, "", append(args[:len(args)-2], fromArgs("mlx5-lag-differ")...)...)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (lossy)", code)
	}
	for _, want := range []string{"verdict:            LOSSY", "slave enp1s0f1np1:  trust dscp, priority 3, tc 1, pfc off: lossy",
		"warning: the slaves of bond0 judge the flow differently"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

// qos shows the bond (no DCB) and then each slave's DCB.
func TestLAGQoS(t *testing.T) {
	out, errOut, code := runCLI(t, "", append([]string{"qos", "-o", "json"}, fromArgs("mlx5-lag-differ")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rs []struct {
		Netdev  string  `json:"netdev"`
		SlaveOf *string `json:"slave_of"`
		PFC     []int   `json:"pfc_priorities"`
	}
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || rs[0].Netdev != "bond0" || rs[0].SlaveOf != nil || rs[1].Netdev != "enp1s0f0np0" || rs[2].Netdev != "enp1s0f1np1" ||
		rs[1].SlaveOf == nil || *rs[1].SlaveOf != "bond0" || len(rs[1].PFC) != 1 || rs[1].PFC[0] != 3 || len(rs[2].PFC) != 0 {
		t.Errorf("reports %s", out)
	}
}

// collect --sysfs: bad directories are refused with the flag named; a
// copy of the mlx5-lag tree gives a snapshot the commands read, with what
// the copy cannot hold marked as not collected.
func TestCollectSysfsFlag(t *testing.T) {
	_, errOut, code := runCLI(t, "", "collect", "--sysfs", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "--sysfs") || !strings.Contains(errOut, "no class/ directory") {
		t.Errorf("collect --sysfs EMPTY: exit %d, %s", code, errOut)
	}
	_, errOut, code = runCLI(t, "", "collect", "--proc", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "--proc") {
		t.Errorf("collect --proc alone: exit %d, %s", code, errOut)
	}
	out, errOut, code := runCLI(t, "", "collect", "--sysfs", sysfsTestdata+"mlx5-lag/sys")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Hostname *string `json:"hostname"`
		RDMA     struct {
			Devices []struct {
				Name string `json:"device"`
			} `json:"devices"`
		} `json:"rdma"`
		Errors []struct {
			Source string `json:"source"`
			Error  string `json:"error"`
		} `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Hostname != nil || len(doc.RDMA.Devices) != 1 || doc.RDMA.Devices[0].Name != "mlx5_bond_0" {
		t.Errorf("hostname %v devices %+v", doc.Hostname, doc.RDMA.Devices)
	}
	found := false
	for _, e := range doc.Errors {
		found = found || (e.Source == "counters" && strings.Contains(e.Error, "not collected: read from a copy of /sys"))
	}
	if !found {
		t.Errorf("errors %+v: want counters not collected", doc.Errors)
	}
}
