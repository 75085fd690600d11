package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestQoSNetdevJSON(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"qos", "--netdev", "enp1s0f0.100", "-o", "json"}, fromArgs("mlx5-dscp")...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r []struct {
		Netdev   string                   `json:"netdev"`
		Real     string                   `json:"real_netdev"`
		Trust    string                   `json:"trust"`
		DSCPPrio map[string][]int         `json:"dscp_prio"`
		PrioTC   []int                    `json:"prio_tc"`
		PFC      []int                    `json:"pfc_priorities"`
		DCBX     *int                     `json:"dcbx"`
		DCBXName *string                  `json:"dcbx_name"`
		DCBError *string                  `json:"dcb_error"`
		VLANs    []map[string]any         `json:"vlan_devices"`
		DCB      struct{ Supported bool } `json:"dcb"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// DCBX 9 = DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE (include/uapi/linux/dcbnl.h).
	if len(r) != 1 || r[0].Netdev != "enp1s0f0.100" || r[0].Real != "enp1s0f0" || r[0].Trust != "dscp" || r[0].DSCPPrio["26"][0] != 3 ||
		r[0].PrioTC[3] != 1 || len(r[0].PFC) != 1 || r[0].PFC[0] != 3 || r[0].DCBX == nil || *r[0].DCBX != 9 ||
		r[0].DCBXName == nil || *r[0].DCBXName != "host,ieee" || !r[0].DCB.Supported ||
		r[0].DCBError != nil {
		t.Fatalf("%+v", r)
	}
	if len(r[0].VLANs) != 1 || r[0].VLANs[0]["netdev"] != "enp1s0f0.100" || r[0].VLANs[0]["egress_qos_map"].(map[string]any)["0"] != float64(3) ||
		r[0].VLANs[0]["tpid"] != float64(0x8100) {
		t.Errorf("vlans %+v", r[0].VLANs)
	}
	if !strings.Contains(out, `"dcb_error": null`) {
		t.Errorf("dcb_error is not there as null:\n%s", out)
	}
}

func TestQoSDeviceTable(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"qos", "--dev", "mlx5_0"}, fromArgs("mlx5-dscp")...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"mlx5_0 port 1: enp1s0f0, driver mlx5", "trust:", "dscp", "26:3", "prio-pfc:", "3:on", "delay 4096", "enp1s0f0.100", "egress-qos-map 0:3", "pfc requests:", "3:12", "3:34",
		// Port 2's netdev has no DCB state in the snapshot.
		"mlx5_0 port 2: enp1s0f1, driver mlx5"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "not read: not read") {
		t.Errorf("stutter in the DCB line:\n%s", out)
	}
}

// A netdev without DCB support (veth: no dcbnl_ops, the kernel answers
// RTM_GETDCB with EOPNOTSUPP, as recorded in the rxe snapshot) is not an
// error: qos says "no DCB" and why, exit 0; dcbx is null (unknown), not "".
func TestQoSNoDCBIsNotAnError(t *testing.T) {
	out, stderr, code := runCLI(t, "", append([]string{"qos", "--netdev", "veth0.100"}, fromArgs("rxe")...)...)
	if code != exitOK || !strings.Contains(out, "no DCB: veth0 has no DCB support") || !strings.Contains(out, "veth0.100 (real device veth0)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	out, _, code = runCLI(t, "", append([]string{"qos", "--netdev", "veth0", "-o", "json"}, fromArgs("rxe")...)...)
	var r []map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK || len(r) != 1 {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	// Unknown is null: dcbx and dcbx_name (not reported) and trust (no
	// DCB to decide it); dcb_error null because DCB was read (and is not
	// supported).
	for _, k := range []string{"dcbx", "dcbx_name", "trust", "dcb_error"} {
		if v, ok := r[0][k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
}

func TestQoSBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		// Neither flag is fine (every port): at most one of them.
		{[]string{"qos", "--netdev", "x", "--dev", "y"}, []string{"--dev and --netdev cannot be used together", "at most one of --netdev or --dev"}},
		{[]string{"qos", "--netdev", "x", "--port", "1"}, []string{"--netdev and --port cannot be used together"}},
		{append([]string{"qos", "--netdev", "no-such-netdev0"}, fromArgs("mlx5")...), []string{`--netdev "no-such-netdev0": no such network device`}},
		{append([]string{"qos", "--dev", "nope0"}, fromArgs("mlx5")...), []string{`--dev "nope0": no such RDMA device: want one of mlx5_0`}},
		{[]string{"qos", "-o", "xml"}, []string{`-o "xml" is not known: want table or json`}},
	} {
		out, stderr, code := runCLI(t, "", c.args...)
		for _, w := range c.want {
			if code != exitUsage || !strings.Contains(stderr, w) || out != "" {
				t.Errorf("%v: exit %d, stderr %q, stdout %q; want 2 naming %q", c.args, code, stderr, out, w)
			}
		}
	}
}
