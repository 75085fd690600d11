package main

import (
	"encoding/json"
	"strings"
	"testing"
)

const countersFixture = "../../host/testdata/mlx5-counters.json"

// One value of the counters JSON: {value, rate, meaning} or {value, rate,
// counter}.
type counterJSON struct {
	Value   uint64   `json:"value"`
	Rate    *float64 `json:"rate"`
	Meaning *string  `json:"meaning"`
	Counter string   `json:"counter"`
}

type countersDoc struct {
	Time     string   `json:"time"`
	Interval *float64 `json:"interval_s"`
	Ports    []struct {
		Device   string                 `json:"device"`
		Port     int                    `json:"port"`
		Netdev   *string                `json:"netdev"`
		Source   string                 `json:"source"`
		Counters map[string]counterJSON `json:"counters"`
	} `json:"ports"`
	Netdevs []struct {
		Netns    *string                `json:"netns"`
		Netdev   string                 `json:"netdev"`
		Driver   *string                `json:"kernel_driver"`
		Counters map[string]counterJSON `json:"counters"`
	} `json:"netdevs"`
	Priorities     []map[string]json.RawMessage `json:"priorities"`
	RoCEPriorities []struct {
		Netns   *string  `json:"netns"`
		PFC     *bool    `json:"pfc_enabled"`
		Netdev  string   `json:"netdev"`
		Prio    int      `json:"prio"`
		Assumed bool     `json:"assumed"`
		Why     []string `json:"why"`
	} `json:"roce_priorities"`
	Findings []struct {
		Severity string `json:"severity"`
		Code     string `json:"code"`
		Message  string `json:"message"`
	} `json:"findings"`
}

func decodeCounters(t *testing.T, s string) countersDoc {
	t.Helper()
	var d countersDoc
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%v\n%.300s", err, s)
	}
	return d
}

// counters --from the mlx5 snapshot (one sample): the fixture's values
// with the driver's names, their meanings, no rates; the per-priority
// counters of mlx5's names; the RoCE priority; findings as information.
func TestCountersFrom(t *testing.T) {
	out, stderr, code := runCLI(t, "", "counters", "--from", countersFixture, "--output", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	d := decodeCounters(t, out)
	if d.Time != "2026-11-24T09:30:00.25Z" || d.Interval != nil {
		t.Errorf("time %q interval %v", d.Time, d.Interval)
	}
	if len(d.Ports) != 2 || d.Ports[0].Device != "mlx5_0" || *d.Ports[0].Netdev != "enp1s0f0" {
		t.Fatalf("ports %+v", d.Ports)
	}
	c := d.Ports[0].Counters
	if v := c["out_of_sequence"]; v.Value != 120 || v.Rate != nil || *v.Meaning != "out_of_sequence" {
		t.Errorf("out_of_sequence %+v", v)
	}
	if v := c["packet_seq_err"]; v.Value != 30 || *v.Meaning != "seq_err_nak_received" {
		t.Errorf("packet_seq_err %+v", v)
	}
	if v := c["port_xmit_data"]; v.Value != 4194304 || v.Meaning != nil {
		t.Errorf("port_xmit_data (sysfs counters/) %+v", v)
	}
	if _, ok := c["cc_rx_ce_pkts"]; ok {
		t.Error("an optional counter the sample lacks is shown")
	}
	if len(d.Priorities) != 8 {
		t.Fatalf("%d priorities, want the 8 of enp1s0f0", len(d.Priorities))
	}
	var p3, p0 struct {
		Prio      int          `json:"prio"`
		PFC       *bool        `json:"pfc_enabled"`
		RoCE      bool         `json:"roce"`
		RxPackets *counterJSON `json:"rx_packets"`
		RxPause   *counterJSON `json:"rx_pause"`
		TxPause   *counterJSON `json:"tx_pause"`
		Duration  *counterJSON `json:"rx_pause_duration_us"`
		PFCReq    *counterJSON `json:"pfc_requests"`
		PFCInd    *counterJSON `json:"pfc_indications"`
	}
	b3, _ := json.Marshal(d.Priorities[3])
	b0, _ := json.Marshal(d.Priorities[0])
	json.Unmarshal(b3, &p3)
	json.Unmarshal(b0, &p0)
	if p3.Prio != 3 || !*p3.PFC || !p3.RoCE || p3.RxPause.Value != 5 || p3.RxPause.Counter != "rx_prio3_pause" || p3.TxPause.Value != 7 ||
		p3.Duration.Value != 300 || p3.RxPackets.Value != 1000 || p3.PFCReq.Value != 12 || p3.PFCInd.Value != 34 {
		t.Errorf("priority 3: %s", b3)
	}
	if *p0.PFC || p0.RoCE || p0.RxPause != nil || p0.RxPackets.Counter != "rx_prio0_packets" {
		t.Errorf("priority 0 (PFC off: mlx5 has no pause counters for it): %s", b0)
	}
	if len(d.RoCEPriorities) != 1 || d.RoCEPriorities[0].Prio != 3 || !strings.Contains(strings.Join(d.RoCEPriorities[0].Why, ";"), "default_roce_tos 106") {
		t.Errorf("RoCE priorities %+v", d.RoCEPriorities)
	}
	got := map[string]string{}
	for _, f := range d.Findings {
		got[f.Code] = f.Severity
	}
	if got["loss_on_lossless"] != "info" || got["ecn_without_cnp"] != "info" || len(got) != 2 {
		t.Errorf("findings %+v", d.Findings)
	}

	// The table says the same.
	out, _, code = runCLI(t, "", "counters", "--from", countersFixture)
	for _, want := range []string{"(one sample: no rates)", "mlx5_0 port 1 on enp1s0f0 (sysfs)", // MEANING in words (counters.Meaning.Text), not the name again
		"out_of_sequence             120      requests received with a PSN beyond the expected one",
		"tx_pause_ctrl_phy              7      pause frames sent: this port asked the peer to stop sending",
		"enp1s0f0: per priority", "3     on   yes   1000     2000     5         7         300", "info    loss_on_lossless"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// --dev/--port and --netdev keep their ports and netdevs.
func TestCountersSelect(t *testing.T) {
	out, _, _ := runCLI(t, "", "counters", "--from", countersFixture, "--dev", "mlx5_0", "--port", "2", "--output", "json")
	d := decodeCounters(t, out)
	if len(d.Ports) != 1 || d.Ports[0].Port != 2 || len(d.Priorities) != 0 || len(d.Findings) != 0 {
		t.Errorf("--port 2: %d ports, %d priorities, findings %+v", len(d.Ports), len(d.Priorities), d.Findings)
	}
	out, _, _ = runCLI(t, "", "counters", "--from", countersFixture, "--netdev", "enp1s0f0.100", "--output", "json")
	d = decodeCounters(t, out)
	if len(d.Ports) != 1 || d.Ports[0].Port != 1 || len(d.Netdevs) != 1 || d.Netdevs[0].Netdev != "enp1s0f0" || len(d.Priorities) != 8 {
		t.Errorf("--netdev enp1s0f0.100 (on enp1s0f0): ports %+v netdevs %+v", d.Ports, d.Netdevs)
	}
}

func TestCountersBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", countersFixture, "--watch"}, `--watch needs the live host: --from "` + countersFixture + `" holds one sample`},
		{[]string{"--from", countersFixture, "--interval", "2s"}, "--interval needs the live host"},
		{[]string{"--from", "../../host/testdata/mlx5-dscp.json"}, "the snapshot has no counters section"},
		{[]string{"--from", "/nonexistent.json"}, `--from "/nonexistent.json": no such file or directory`},
		{[]string{"--interval", "-1s"}, "--interval -1s is out of range: want 0s..1h"},
		{[]string{"--interval", "soon"}, `--interval "soon" is not a duration`},
		{[]string{"--count", "3"}, "--count 3 is for --watch: add --watch"},
		{[]string{"--watch", "--count", "-1"}, "--count -1 is out of range"},
		{[]string{"--watch", "--interval", "0"}, "--watch needs an interval"},
		{[]string{"--from", countersFixture, "--dev", "mlx5_9"}, `--dev "mlx5_9": no such RDMA device`},
		{[]string{"--from", countersFixture, "--dev", "mlx5_0", "--port", "9"}, "--port 9"},
		{[]string{"--from", countersFixture, "--port", "1"}, "--port 1 needs --dev"},
		{[]string{"--from", countersFixture, "--netdev", "eth9"}, `--netdev "eth9": no such network device`},
		{[]string{"--from", countersFixture, "--netdev", "enp1s0f0", "--dev", "mlx5_0"}, "--dev and --netdev cannot be used together"},
		{[]string{"--from", countersFixture, "--output", "yaml"}, `"yaml"`},
		{[]string{"--from", countersFixture, "extra"}, "extra"},
	} {
		out, stderr, code := runCLI(t, "", append([]string{"counters"}, c.args...)...)
		if code != exitUsage || out != "" || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line naming %q", c.args, code, out, stderr, c.want)
		}
	}
}

// check --rdma-cm without --tos takes rdma_cm's configfs default_roce_tos
// (106 in the snapshot: DSCP 26 → priority 3, PFC on) and says so; the
// same flow with --tos 106 gets the same wire and verdict.
func TestCheckDefaultRoCEToS(t *testing.T) {
	base := []string{"check", "--from", countersFixture, "--dev", "mlx5_0", "--gid-index", "5", "--rdma-cm", "--output", "json"}
	type res struct {
		TOS      *int     `json:"tos"`
		DSCP     *int     `json:"dscp"`
		Priority *int     `json:"priority"`
		Verdict  string   `json:"verdict"`
		Warnings []string `json:"warnings"`
		Steps    []struct {
			Step, Result, Why string
		} `json:"steps"`
	}
	get := func(args ...string) res {
		out, stderr, _ := runCLI(t, "", args...)
		var r res
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %v\n%s%s", args, err, out, stderr)
		}
		return r
	}
	def := get(base...)
	exp := get(append(base, "--tos", "106")...)
	if def.TOS == nil || *def.TOS != 106 || *def.DSCP != 26 || *def.Priority != 3 || def.Verdict != "lossless" {
		t.Fatalf("default ToS: %+v", def)
	}
	if *exp.DSCP != *def.DSCP || exp.Verdict != def.Verdict || *exp.Priority != *def.Priority {
		t.Errorf("--tos 106 %+v differs from the default %+v", exp, def)
	}
	said := false
	for _, s := range def.Steps {
		if s.Step == "tos" && strings.Contains(s.Why, "default_roce_tos 106 (/sys/kernel/config/rdma_cm/mlx5_0/ports/1/default_roce_tos") {
			said = true
		}
	}
	if !said {
		t.Errorf("no step says the ToS is configfs' default: %+v", def.Steps)
	}
	// Port 2 has no configfs group: 0 is assumed, with a warning.
	p2 := get("check", "--from", countersFixture, "--dev", "mlx5_0", "--port", "2", "--gid-index", "1", "--rdma-cm", "--output", "json")
	if p2.TOS == nil || *p2.TOS != 0 || !strings.Contains(strings.Join(p2.Warnings, ";"), "default_roce_tos of mlx5_0 port 2 could not be read") {
		t.Errorf("port 2: %+v", p2)
	}
}

// An MLNX_OFED traffic class override replaces a connected QP's traffic
// class (96 → DSCP 24 instead of 106 → 26) with a warning; a user AH
// (UD) keeps its own.
func TestCheckTCOverride(t *testing.T) {
	fx := "../../host/testdata/mlx5-tcoverride.json"
	out, _, _ := runCLI(t, "", "check", "--from", fx, "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--path", "connected-qp", "--output", "json")
	var r struct {
		TrafficClass int      `json:"traffic_class"`
		DSCP         *int     `json:"dscp"`
		Warnings     []string `json:"warnings"`
	}
	json.Unmarshal([]byte(out), &r)
	if r.TrafficClass != 96 || r.DSCP == nil || *r.DSCP != 24 || !strings.Contains(strings.Join(r.Warnings, ";"), "overrides the traffic class: the flow asks for 106 (DSCP 26) but the NIC sends 96 (DSCP 24)") {
		t.Errorf("connected QP: %s", out)
	}
	out, _, _ = runCLI(t, "", "check", "--from", fx, "--dev", "mlx5_0", "--gid-index", "5", "--tclass", "106", "--sl", "3", "--output", "json")
	json.Unmarshal([]byte(out), &r)
	if r.TrafficClass != 106 || *r.DSCP != 26 {
		t.Errorf("user AH: %s", out)
	}
	// counters reports it too.
	out, _, _ = runCLI(t, "", "counters", "--from", fx, "--output", "json")
	if !strings.Contains(out, `"code":"traffic_class_override"`) {
		t.Errorf("counters: no traffic_class_override finding:\n%s", out)
	}
}

// qos shows DCQCN per priority and where it was read.
func TestQoSDCQCN(t *testing.T) {
	out, _, code := runCLI(t, "", "qos", "--from", countersFixture, "--netdev", "enp1s0f0", "--output", "json")
	var r []struct {
		DCQCN *struct {
			NP      []*bool `json:"np_enable"`
			CNPDSCP *int    `json:"cnp_dscp"`
			Source  string  `json:"source"`
		} `json:"dcqcn"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitOK || len(r) != 1 || r[0].DCQCN == nil {
		t.Fatalf("exit %d %v: %s", code, err, out)
	}
	d := r[0].DCQCN
	if !*d.NP[3] || *d.NP[0] || *d.CNPDSCP != 48 || d.Source != "/sys/class/net/enp1s0f0/ecn" {
		t.Errorf("dcqcn %+v", d)
	}
	out, _, _ = runCLI(t, "", "qos", "--from", countersFixture, "--netdev", "enp1s0f0")
	if !strings.Contains(out, "DCQCN np (CNP sent):  0:off 1:off 2:off 3:on") || !strings.Contains(out, "CNP:                  dscp 48, 802.1p priority 6 (/sys/class/net/enp1s0f0/ecn)") {
		t.Errorf("table:\n%s", out)
	}
}
