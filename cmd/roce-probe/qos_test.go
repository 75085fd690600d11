package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestQoSNetdevJSON(t *testing.T) {
	out, stderr, code := runCLI(t, "", "qos", "--links", mlx5Links, "--dcb", "testdata/dcb-mlx5-dscp.json", "--netdev", "enp1s0f0.100", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r []struct {
		Netdev   string                   `json:"netdev"`
		Real     string                   `json:"real_netdev"`
		Trust    string                   `json:"trust"`
		DSCPPrio map[string][]int         `json:"dscp_prio"`
		PrioTC   []int                    `json:"prio_tc"`
		PFC      []int                    `json:"pfc_enabled"`
		DCBX     string                   `json:"dcbx"`
		VLANs    []map[string]any         `json:"vlans"`
		DCB      struct{ Supported bool } `json:"dcb"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(r) != 1 || r[0].Netdev != "enp1s0f0.100" || r[0].Real != "enp1s0f0" || r[0].Trust != "dscp" || r[0].DSCPPrio["26"][0] != 3 ||
		r[0].PrioTC[3] != 1 || len(r[0].PFC) != 1 || r[0].PFC[0] != 3 || r[0].DCBX != "host,ieee" || !r[0].DCB.Supported {
		t.Fatalf("%+v", r)
	}
	if len(r[0].VLANs) != 1 || r[0].VLANs[0]["netdev"] != "enp1s0f0.100" || r[0].VLANs[0]["egress_qos"].(map[string]any)["0"] != float64(3) {
		t.Errorf("vlans %+v", r[0].VLANs)
	}
}

func TestQoSDeviceTable(t *testing.T) {
	out, stderr, code := runCLI(t, "", "qos", "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dcb", "testdata/dcb-mlx5-dscp.json", "--dev", "mlx5_0")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"mlx5_0 port 1: enp1s0f0, driver mlx5", "trust:", "dscp", "26:3", "prio-pfc:", "3:on", "delay 4096", "enp1s0f0.100", "egress-qos-map 0:3", "pfc requests:", "3:12", "3:34"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestQoSNoDCBIsNotAnError(t *testing.T) {
	// lo has no dcbnl_ops: the real kernel answers EOPNOTSUPP.
	out, stderr, code := runCLI(t, "", "qos", "--netdev", "lo")
	if code != exitOK || !strings.Contains(out, "no DCB") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestQoSBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"qos", "--netdev", "x", "--dev", "y"}, "give one or neither"},
		{[]string{"qos", "--netdev", "no-such-netdev0"}, `--netdev "no-such-netdev0": no such network device`},
		{[]string{"qos", "--sysfs", mlx5Sysfs, "--links", mlx5Links, "--dev", "nope0"}, `--dev "nope0": no such RDMA device: want one of mlx5_0`},
		{[]string{"qos", "-o", "xml"}, `-o "xml" is not a known output format`},
	} {
		_, stderr, code := runCLI(t, "", c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %q", c.args, code, stderr, c.want)
		}
	}
}
