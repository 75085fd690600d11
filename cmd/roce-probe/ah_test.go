package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

// ahArgs runs ah on rxe0 of the rxe snapshot with the lab's neighbour
// table (rxeWithNeighbours).
func ahArgs(t *testing.T, extra ...string) []string {
	t.Helper()
	return append([]string{"ah", "--dev", "rxe0", "--from", rxeWithNeighbours(t)}, extra...)
}

func TestAHJSONKeys(t *testing.T) {
	out, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "3", "--dst", "10.0.100.2", "--sl", "5", "--tclass", "0x6a", "--hop-limit", "8", "--src-qpn", "17", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Every key is always there; what does not apply is null.
	keys := []string{"attr", "predicted", "sgid_entry", "driver", "path", "wire", "route", "neighbor", "field_warnings", "problems", "steps",
		"error", "errno", "create", "pcap", "neighbor_probe"}
	if !sameKeys(doc, keys) {
		t.Errorf("keys %v, want exactly %v", keysOf(doc), keys)
	}
	for _, k := range []string{"error", "errno", "create", "pcap", "neighbor_probe"} {
		if doc[k] != nil {
			t.Errorf("%s = %v, want null", k, doc[k])
		}
	}
	if doc["predicted"] != false || doc["driver"] != "rxe" || doc["path"] != "user-ah" {
		t.Errorf("predicted %v driver %v path %v", doc["predicted"], doc["driver"], doc["path"])
	}
	if nb, _ := doc["neighbor"].(map[string]any); nb == nil || nb["ip"] != "10.0.100.2" || nb["state"] != "REACHABLE" {
		t.Errorf("neighbor = %v", doc["neighbor"])
	}
	attr := doc["attr"].(map[string]any)
	for _, k := range []string{"is_global", "port_num", "sl", "static_rate", "grh"} {
		if _, ok := attr[k]; !ok {
			t.Errorf("attr lacks %q", k)
		}
	}
	grh := attr["grh"].(map[string]any)
	for _, k := range []string{"dgid", "sgid_index", "flow_label", "hop_limit", "traffic_class"} {
		if _, ok := grh[k]; !ok {
			t.Errorf("attr.grh lacks %q", k)
		}
	}
	wire := doc["wire"].(map[string]any)
	for _, k := range []string{"smac", "dmac", "vlan", "pcp", "vlan_chain", "ip_version", "src", "dst", "dscp", "ecn", "ecn_name", "ttl", "flow_label", "udp_sport", "roce_version", "mtu"} {
		if _, ok := wire[k]; !ok {
			t.Errorf("wire lacks %q", k)
		}
	}
	// The lab topology's VLAN 100 (egress-qos-map 0:3), rxe: PCP 3 whatever the SL;
	// TTL 64 instead of the requested 8 (drivers/infiniband/core/verbs.c
	// ib_resolve_unicast_gid_dmac; the lab kernel does it: TestLabAHCommand);
	// QPN 17 → UDP source port 0xDF94, as rxe0 sent it from src-qp 0x11 in
	// the real capture roce/testdata/rxe-ud-send.pcapng (Example_decode: 57236).
	want := map[string]any{"smac": "02:00:00:00:00:01", "dmac": "02:00:00:00:00:02", "vlan": 100.0, "pcp": 3.0, "ip_version": 4.0,
		"src": "10.0.100.1", "dst": "10.0.100.2", "dscp": 26.0, "ecn": 2.0, "ecn_name": "ECT(0)", "ttl": 64.0, "udp_sport": float64(0xDF94), "roce_version": 2.0, "mtu": 1024.0}
	for k, v := range want {
		if wire[k] != v {
			t.Errorf("wire.%s = %v, want %v", k, wire[k], v)
		}
	}
	if !jsonIs(wire["vlan_chain"], `[{"id":100,"tpid":33024,"pcp":3,"netdev":"veth0.100"}]`) {
		t.Errorf("wire.vlan_chain = %v", wire["vlan_chain"])
	}
	if wire["flow_label"] != nil {
		t.Errorf("wire.flow_label = %v, want null for IPv4", wire["flow_label"])
	}
	ws := doc["field_warnings"].([]any)
	var fields []string
	for _, w := range ws {
		fields = append(fields, w.(map[string]any)["field"].(string))
	}
	if strings.Join(fields, ",") != "grh.hop_limit,sl" {
		t.Errorf("warnings for %v, want grh.hop_limit and sl", fields)
	}
}

func TestAHTable(t *testing.T) {
	out, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "2", "--dst", "fd00::2", "--flow-label", "0xabcde", "--tclass", "184")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"ip_version    IPv6", "flow_label    0x0", "dscp          46", "rxe sends IPv6 with flow label 0", "udp_sport     unknown"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestAHBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--sl", "16"}, "--sl 16 is out of range: want 0..15"},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--tclass", "256"}, "--tclass 256 is out of range: want 0..255"},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--flow-label", "0x100000"}, "want 0..0xfffff"},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--static-rate", "1"}, "not an enum ibv_rate value"},
		{[]string{"--gid-index", "x", "--dst", "10.0.0.2"}, "--gid-index \"x\""},
		// A value that is not a number is not "out of range".
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--sl", "3.5"}, `--sl "3.5" is not an integer: want 0..15`},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--qkey", "x"}, `--qkey "x" is not an integer: want 0..0xffffffff (decimal or 0x hex)`},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--sl", "-1"}, `--sl -1 is out of range: want 0..15`},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--psn", "99999999999999999999999"}, `--psn 99999999999999999999999 is out of range: want 0..0xffffff`},
		{[]string{"--gid-index", "1"}, "--dst is required"},
		{[]string{"--dst", "10.0.0.2"}, "one of --gid-index or --from-wc is required"},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "-o", "xml"}, `-o "xml" is not known: want table or json`},
		// A misspelt driver used to be taken for a driver without a profile
		// (every field "unknown", exit 1); it is bad input.
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--driver", "mxl5"}, `--driver "mxl5" is not known: want rxe, mlx5, irdma, bnxt_re, hns, erdma, ionic or hiroce3`},
		{[]string{"--gid-index", "1", "--dst", "10.0.0.2", "--driver", "mlx5", "--driver", "rxe"}, `--driver given twice ("mlx5", then "rxe")`},
		{[]string{"--gid-index", "1", "--dst", "::1"}, `--dst "::1" is a loopback address`},
	} {
		_, stderr, code := runCLI(t, "", ahArgs(t, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
	_, stderr, code := runCLI(t, "", "ah", "--gid-index", "1", "--dst", "10.0.0.2")
	if code != exitUsage || !strings.Contains(stderr, "--dev is required") {
		t.Errorf("no --dev: exit %d %q", code, stderr)
	}
}

func TestAHFindings(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		// The rxe fixture has 16 slots, 13 used: 14 is empty, 16 is beyond the table.
		{"empty index", []string{"--gid-index", "14", "--dst", "10.0.0.2"}, []string{"grh.sgid_index", "ENODATA"}},
		{"beyond the table", []string{"--gid-index", "16", "--dst", "10.0.0.2"}, []string{"0..15", "EINVAL"}},
		{"family mismatch", []string{"--gid-index", "1", "--dst", "fd00::2"}, []string{"grh.dgid", "EINVAL"}},
		{"neighbour FAILED", []string{"--gid-index", "1", "--dst", "10.0.0.3"}, []string{"FAILED", "ETIMEDOUT", "10.0.0.0/24 dev veth0"}},
	} {
		out, stderr, code := runCLI(t, "", ahArgs(t, c.args...)...)
		if code != exitFinding {
			t.Errorf("%s: exit %d, want 1 (%s)", c.name, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(out+stderr, w) {
				t.Errorf("%s: output lacks %q:\n%s\n%s", c.name, w, out, stderr)
			}
		}
	}
}

func TestAHAutoIndex(t *testing.T) {
	out, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "auto", "--dst", "10.0.200.2", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Attr struct {
			GRH struct {
				SGIDIndex int `json:"sgid_index"`
			} `json:"grh"`
		} `json:"attr"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.Attr.GRH.SGIDIndex != 6 {
		t.Fatalf("auto picked %d (%v), want 6 (10.0.200.1 on veth0.200)", doc.Attr.GRH.SGIDIndex, err)
	}
}

// The --pcap file decodes in tshark (an independent dissector) with the
// predicted fields. (tshark does not check the ICRC: roce's known-answer
// vectors do, and in TestLabCountersUD the lab's Soft-RoCE counts frames
// built by roce.FrameSpec, which ah's frames come from too, and drops the
// one whose ICRC is broken.)
func TestAHPcapInTshark(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "ah.pcap")
	_, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "3", "--dst", "10.0.100.2", "--tclass", "0x6a", "--src-qpn", "0x11",
		"--dest-qpn", "0xbeef", "--qkey", "0x5ca1ab1e", "--psn", "0x123", "--payload", "hello", "--pcap", pcap)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(pcap); err != nil {
		t.Fatal(err)
	}
	tshark := testenv.Tool(t, "tshark")
	want := []struct{ field, value string }{
		{"vlan.id", "100"}, {"vlan.priority", "3"}, {"ip.dsfield", "0x6a"}, {"ip.ttl", "64"}, {"udp.srcport", "57236"},
		{"udp.dstport", "4791"}, {"infiniband.bth.opcode", "100"}, {"infiniband.bth.destqp", "0x00beef"},
		{"infiniband.bth.psn", "291"}, {"infiniband.deth.q_key", "0x000000005ca1ab1e"}, {"infiniband.deth.srcqp", "0x00000011"},
	}
	var fields []string
	for _, w := range want {
		fields = append(fields, w.field)
	}
	rows := testenv.TsharkFields(t, tshark, pcap, nil, fields...)
	if len(rows) != 1 {
		t.Fatalf("tshark printed %d lines for the one frame: %v", len(rows), rows)
	}
	for _, w := range want {
		if got := rows[0][w.field]; got != w.value {
			t.Errorf("tshark %s = %q, want %q", w.field, got, w.value)
		}
	}
}

// --resolve-neighbour and --create act on the live host's own namespace:
// with a snapshot (or another namespace) they would mix two hosts' facts.
func TestAHResolveNeighbourNeedsLiveTables(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{ahArgs(t, "--gid-index", "1", "--dst", "10.0.0.3", "--resolve-neighbour"), "--from and --resolve-neighbour cannot be used together"},
		{ahArgs(t, "--gid-index", "1", "--dst", "10.0.0.3", "--create"), "--create and --from cannot be used together"},
		{[]string{"ah", "--dev", "rxe0", "--netns", "x", "--gid-index", "1", "--dst", "10.0.0.3", "--resolve-neighbour"}, "--netns and --resolve-neighbour cannot be used together"},
	} {
		out, stderr, code := runCLI(t, "", c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// QinQ (index 10: 10.10.10.1 on veth0.q1000.10): the frame's first tag is
// 802.1ad 1000 from veth0.q1000 (no egress map: PCP 0), the second 802.1Q
// 10 from veth0.q1000.10 (egress-qos-map 0:2: PCP 2); rxe sends with skb
// priority 0. wire.vlan and wire.pcp are the outermost tag's, as in the
// real capture roce/testdata/rxe-ud-send.pcapng (frame 7: "vlan 1000 pcp 0
// vlan 10 pcp 2", see Example_decode).
func TestAHQinQOutermost(t *testing.T) {
	out, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "10", "--dst", "10.10.10.2", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	var doc struct {
		Wire map[string]any `json:"wire"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Wire["vlan"] != 1000.0 || doc.Wire["pcp"] != 0.0 || doc.Wire["netdev"] != "veth0.q1000.10" ||
		!jsonIs(doc.Wire["vlan_chain"], `[{"id":1000,"tpid":34984,"pcp":0,"netdev":"veth0.q1000"},{"id":10,"tpid":33024,"pcp":2,"netdev":"veth0.q1000.10"}]`) {
		t.Errorf("wire vlan %v pcp %v netdev %v vlan_chain %v", doc.Wire["vlan"], doc.Wire["pcp"], doc.Wire["netdev"], doc.Wire["vlan_chain"])
	}
	out, _, _ = runCLI(t, "", ahArgs(t, "--gid-index", "10", "--dst", "10.10.10.2")...)
	for _, want := range []string{"vlan          1000 (802.1ad, outermost)  pcp 0  veth0.q1000", "vlan          10 (802.1Q, inner)         pcp 2  veth0.q1000.10"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// --from-wc: the buffers are those of ah/fromwc_test.go (an IPv4 header
// checked with RFC 1071 behind stale IPv6 bytes; the header whose sum
// carries twice, which rdma-core's single fold takes for IPv6).
func TestAHFromWC(t *testing.T) {
	base := append([]string{"ah", "--dev", "rxe0"}, fromArgs("rxe")...)
	base = base[:len(base):len(base)] // each append below a copy
	stale := "6b81234500201140fd00" + "00000000000000000000"
	out, stderr, code := runCLI(t, "", append(base, "--from-wc", stale+"4568003c12344000401114130a0000020a000001", "-o", "json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		FromWC []struct {
			Behaviour string `json:"behaviour"`
			Attr      struct {
				GRH struct {
					DGID         string `json:"dgid"`
					SGIDIndex    int    `json:"sgid_index"`
					HopLimit     int    `json:"hop_limit"`
					TrafficClass int    `json:"traffic_class"`
					FlowLabel    int    `json:"flow_label"`
				} `json:"grh"`
			} `json:"attr"`
			Route *struct {
				Dev          string `json:"netdev"`
				HopLimit     int    `json:"hop_limit"`
				HopLimitFrom string `json:"hop_limit_from"`
			} `json:"route"`
			Error string `json:"error"`
		} `json:"from_wc"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.FromWC) != 2 {
		t.Fatalf("%v: %s", err, out)
	}
	k, r := doc.FromWC[0], doc.FromWC[1]
	// The kernel starts from hop_limit 0xFF and replaces it with the hop
	// limit of the route back to the sender: the snapshot has veth0's
	// connected route 10.0.0.0/24 (no hoplimit metric), so
	// net.ipv4.ip_default_ttl, 64.
	if k.Behaviour != "kernel" || k.Attr.GRH.DGID != "::ffff:10.0.0.2" || k.Attr.GRH.SGIDIndex != 1 || k.Attr.GRH.HopLimit != 64 || k.Attr.GRH.TrafficClass != 0xB8 ||
		k.Route == nil || k.Route.Dev != "veth0" || k.Route.HopLimit != 64 || k.Route.HopLimitFrom != "net.ipv4.ip_default_ttl" {
		t.Errorf("kernel: %+v route %+v", k, k.Route)
	}
	if r.Behaviour != "rdma-core" || r.Attr.GRH.DGID != "::ffff:10.0.0.2" || r.Attr.GRH.HopLimit != 64 || r.Attr.GRH.TrafficClass != 0x68 || r.Attr.GRH.FlowLabel != 0x12345 {
		t.Errorf("rdma-core: %+v", r)
	}
	// The double-carry header: rdma-core misreads it and finds no entry (exit 1).
	out, _, code = runCLI(t, "", append(base, "--from-wc", stale+"4568003cb9fb40004011feffc0a8fffec0a8fffd", "--behaviour", "rdma-core")...)
	if code != exitFinding || !strings.Contains(out, "carry folded once") || !strings.Contains(out, "not in the port's GID table") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	for _, bad := range [][]string{{"--from-wc", "abc"}, {"--from-wc", strings.Repeat("zz", 40)}, {"--from-wc", strings.Repeat("00", 40), "--wc", "grh,bogus"}, {"--from-wc", strings.Repeat("00", 40), "--behaviour", "bsd"}} {
		if _, stderr, code := runCLI(t, "", append(base, bad...)...); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}
