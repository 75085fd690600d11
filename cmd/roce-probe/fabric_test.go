package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/host"
)

const hostFixtures = hostTestdata

// fabricDoc is the part of the fabric -o json document (docs/json.md,
// fabric_report) these tests look at; decodeFabric checks the whole
// document against the dictionary first.
type fabricDoc struct {
	Source string `json:"source"`
	Hosts  []struct {
		Host     string   `json:"host"`
		Origin   string   `json:"origin"`
		Networks []string `json:"network_names"`
	} `json:"hosts"`
	Networks []struct {
		Network   string `json:"network"`
		HostCount int    `json:"host_count"`
		PortCount int    `json:"port_count"`
	} `json:"networks"`
	Checks []struct {
		Check     string  `json:"check"`
		Available bool    `json:"available"`
		Reason    *string `json:"reason"`
	} `json:"checks"`
	Findings []struct {
		Check   string  `json:"check"`
		Network string  `json:"network"`
		Family  string  `json:"family"`
		Type    *string `json:"type"`
		Message string  `json:"message"`
		Groups  []struct {
			Index *int         `json:"index"`
			Ports []fabricPort `json:"ports"`
		} `json:"groups"`
		Unknown []fabricPort `json:"unknown"`
	} `json:"findings"`
}

type fabricPort struct {
	Host       string  `json:"host"`
	Netdev     *string `json:"netdev"`
	RealNetdev *string `json:"real_netdev"`
}

func decodeFabric(t *testing.T, s string) fabricDoc {
	t.Helper()
	checkOutput(t, "fabric -o json", s)
	var d fabricDoc
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		t.Fatalf("%v\n%.400s", err, s)
	}
	return d
}

// A fleet of the mlx5-counters snapshot, one host of four with its
// enp1s0f0.100 GID pair moved (its lowest usable entries on 10.100.0.0/16
// are then mv0's 8 and 9, host/testdata/README.md).
func writeFabricFleet(t *testing.T, n int, odd func(i int, s *host.Snapshot)) string {
	t.Helper()
	base, err := os.ReadFile(hostFixtures + "mlx5-counters.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := fabrictest.WriteFleet(dir, base, n, odd); err != nil {
		t.Fatal(err)
	}
	return dir
}

func moveGIDs(i int, s *host.Snapshot) {
	if i != 2 {
		return
	}
	p := &s.RDMA.Devices[0].Ports[0]
	for j := range p.GIDs {
		if p.GIDs[j].Index == 4 || p.GIDs[j].Index == 5 {
			p.GIDs[j].Index += 10
		}
	}
}

// fabric --from: the odd host is named with its index, the others with
// theirs; exit 1; JSON as docs/json.md defines it.
func TestFabricFromFindings(t *testing.T) {
	dir := writeFabricFleet(t, 4, moveGIDs)
	out, stderr, code := runCLI(t, "", "fabric", "--from", dir, "-o", "json")
	if code != exitFinding {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	d := decodeFabric(t, out)
	if d.Source != "files" || len(d.Hosts) != 4 || d.Hosts[2].Host != "node-00002" || d.Hosts[2].Origin != filepath.Join(dir, "node-00002.json") {
		t.Errorf("hosts %+v", d.Hosts)
	}
	if len(d.Networks) != 3 || d.Networks[0].Network != "10.100.0.0/16" || d.Networks[0].HostCount != 4 || d.Networks[0].PortCount != 4 {
		t.Errorf("networks %+v", d.Networks)
	}
	if len(d.Checks) != 13 {
		t.Errorf("%d checks", len(d.Checks))
	}
	for _, c := range d.Checks {
		if !c.Available || c.Reason != nil {
			t.Errorf("from files: %+v", c)
		}
	}
	if len(d.Findings) != 2 {
		t.Fatalf("findings %+v", d.Findings)
	}
	for i, f := range d.Findings {
		want := map[int][2]int{0: {4, 8}, 1: {5, 9}}[i]
		if f.Check != "gid_index" || f.Network != "10.100.0.0/16" || f.Family != "ipv4" || *f.Type != []string{"RoCE v1", "RoCE v2"}[i] ||
			f.Groups[0].Index == nil || *f.Groups[0].Index != want[0] || f.Groups[1].Index == nil || *f.Groups[1].Index != want[1] || len(f.Groups[0].Ports) != 3 ||
			f.Groups[1].Ports[0].Host != "node-00002" || *f.Groups[1].Ports[0].Netdev != "mv0" || *f.Groups[0].Ports[0].Netdev != "enp1s0f0.100" ||
			len(f.Unknown) != 0 {
			t.Errorf("finding %d: %+v", i, f)
		}
	}
	// The table names the same.
	out, _, code = runCLI(t, "", "fabric", "--from", filepath.Join(dir, "node-00000.json"), filepath.Join(dir, "node-00001.json"), filepath.Join(dir, "node-00002.json"))
	if code != exitFinding {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"3 hosts from files, 3 networks", "gid_index 10.100.0.0/16 RoCE v2 ipv4", "node-00002 mlx5_0/1 (mv0)", "findings: 2",
		"the usable GID index is 5 on node-00000, node-00001; 9 on node-00002"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// fabric -o html: the same findings as one page, the odd host's index
// marked, exit 1; the matrix says the snapshots carry no probe results.
func TestFabricHTML(t *testing.T) {
	dir := writeFabricFleet(t, 4, moveGIDs)
	out, stderr, code := runCLI(t, "", "fabric", "--from", dir, "-o", "html")
	if code != exitFinding {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{"<!DOCTYPE html>", `<p id="summary">4 hosts from files, 3 networks; findings: 2.</p>`,
		`<tr data-host="node-00002">`, "mlx5_0/1 v2 9 (differs)", `<td class="odd"><span class="sym">≠</span>9</td>`,
		"No probe results in this source"} {
		if !strings.Contains(out, want) {
			t.Errorf("page lacks %q:\n%s", want, out)
		}
	}
}

// A consistent fleet: exit 0, and the table says so.
func TestFabricConsistent(t *testing.T) {
	dir := writeFabricFleet(t, 3, nil)
	out, stderr, code := runCLI(t, "", "fabric", "--from", dir)
	if code != exitOK || !strings.Contains(out, "no findings") {
		t.Errorf("exit %d: %s%s", code, out, stderr)
	}
}

// Bad input exits 2 naming the file, the agent or the duplicate host.
func TestFabricBadInput(t *testing.T) {
	dir := t.TempDir()
	notSnap := filepath.Join(dir, "x.json")
	os.WriteFile(notSnap, []byte(`{"format":"pcap"}`), 0o644)
	empty := t.TempDir()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", hostFixtures + "rxe.json", filepath.Join(dir, "missing.json")}, "missing.json: no such file or directory: want a host snapshot written by 'roce-probe collect --out FILE'"},
		{[]string{"--from", hostFixtures + "rxe.json", notSnap}, notSnap + `: snapshot: not a roce-probe snapshot: format "pcap"`},
		{[]string{"--from", hostFixtures + "mlx5-dscp.json", hostFixtures + "mlx5-counters.json"}, `duplicate host: "fixture-mlx5-dscp" is the name of ../../host/testdata/mlx5-dscp.json and of ../../host/testdata/mlx5-counters.json`},
		{[]string{"--from", empty}, "a directory without snapshot files"},
		{[]string{"--agents", down.URL}, "agent " + down.URL + "/snapshot: dial tcp"},
		{[]string{"--agents", "ftp://x"}, `agent "ftp://x": scheme "ftp": want http or https`},
		{[]string{"--prometheus", "prometheus:9090"}, "want the server's URL"},
		{[]string{}, "one of --from, --agents or --prometheus is required"},
		{[]string{"--from", "a", "--agents", "b"}, "cannot be used together"},
		{[]string{hostFixtures + "rxe.json"}, "one of --from, --agents or --prometheus is required"},
		{[]string{"--prometheus", "http://h:9090", "http://i:9090"}, `argument "http://i:9090": --prometheus takes one URL`},
		{[]string{"--from", ""}, `--from "" is empty`},
		{[]string{"--from", hostFixtures + "rxe.json", "--host-label", "node"}, "--host-label \"node\" is for --prometheus"},
		{[]string{"--from", hostFixtures + "rxe.json", "--concurrency", "3"}, "--concurrency 3 is for --agents"},
		{[]string{"--from", hostFixtures + "rxe.json", "--timeout", "3s"}, "--timeout 3s is for --agents and --prometheus"},
		{[]string{"--agents", "h:1", "--concurrency", "0"}, "--concurrency 0 is out of range: want 1..1024"},
		{[]string{"--prometheus", "http://h:9090", "--prometheus", "http://i:9090"}, "--prometheus"},
	} {
		_, stderr, code := runCLI(t, "", append([]string{"fabric"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("fabric %q: exit %d, stderr %q, want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// rxeAgentsAndPrometheus serves the rxe and rxe-churned hosts as fake
// agents (their /snapshot) and a fake Prometheus scraping their GID
// metrics (fabric/testdata, labelled instance, job and node as
// deploy/'s scrape configurations do); all closed when t ends.
func rxeAgentsAndPrometheus(t *testing.T) ([]string, *httptest.Server) {
	t.Helper()
	var urls []string
	var targets []fabrictest.Target
	for i, f := range []string{"rxe", "rxe-churned"} {
		srv, err := fabrictest.Agent(hostFixtures + f + ".json")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
		b, err := os.ReadFile("../../fabric/testdata/" + f + ".prom")
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, fabrictest.Target{Metrics: string(b), Labels: map[string]string{"instance": []string{"10.0.0.1:9469", "10.0.0.2:9469"}[i], "job": "roce-probe", "node": "fixture-" + f}})
	}
	prom, err := fabrictest.Prometheus(targets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prom.Close)
	return urls, prom
}

// --agents and --prometheus against fake servers of the same two hosts
// (the rxe snapshots; their GID metrics written from the contract,
// fabric/testdata): the same finding, the same hosts; Prometheus
// says which checks it cannot make.
func TestFabricAgentsAndPrometheus(t *testing.T) {
	urls, prom := rxeAgentsAndPrometheus(t)

	aout, stderr, code := runCLI(t, "", "fabric", "--agents", urls[0]+","+strings.TrimPrefix(urls[1], "http://"), "--timeout", "5s", "--concurrency", "2", "-o", "json")
	if code != exitFinding {
		t.Fatalf("agents: exit %d: %s", code, stderr)
	}
	pout, stderr, code := runCLI(t, "", "fabric", "--prometheus", prom.URL, "--host-label", "node", "-o", "json")
	if code != exitFinding {
		t.Fatalf("prometheus: exit %d: %s", code, stderr)
	}
	a, p := decodeFabric(t, aout), decodeFabric(t, pout)
	if a.Source != "agents" || p.Source != "prometheus" || len(a.Findings) != 1 || len(p.Findings) != 1 {
		t.Fatalf("agents %+v\nprometheus %+v", a.Findings, p.Findings)
	}
	af, pf := a.Findings[0], p.Findings[0]
	if af.Message != pf.Message || af.Network != "10.0.0.0/24" || *pf.Groups[0].Index != 1 || *pf.Groups[1].Index != 13 ||
		pf.Groups[1].Ports[0].Host != "fixture-rxe-churned" || *pf.Groups[1].Ports[0].Netdev != "veth0" || pf.Groups[1].Ports[0].RealNetdev != nil {
		t.Errorf("agents %+v\nprometheus %+v", af, pf)
	}
	unavailable := 0
	for _, c := range p.Checks {
		if !c.Available {
			unavailable++
			if c.Reason == nil || !strings.Contains(*c.Reason, "--agents") {
				t.Errorf("%+v", c)
			}
		}
	}
	if unavailable != 10 {
		t.Errorf("%d checks unavailable from Prometheus, want 10 (all but gid_index, roce_version, vlan)", unavailable)
	}
	tout, _, _ := runCLI(t, "", "fabric", "--prometheus", prom.URL)
	if !strings.Contains(tout, "not compared (the agents' metrics do not carry it") || !strings.Contains(tout, "10.0.0.2:9469 rxe0/1 (veth0)") {
		t.Errorf("table from Prometheus:\n%s", tout)
	}
}

// docs/fabric.md's example is what fabric prints for its fleet
// (fabricgen -vary example): the table, and the JSON group it shows.
func TestFabricDocExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/fabric.md")
	if err != nil {
		t.Fatal(err)
	}
	_, ex, ok := strings.Cut(string(doc), "### An example\n")
	if !ok {
		t.Fatal("docs/fabric.md has no \"### An example\"")
	}
	block := func(fence string) string {
		_, rest, ok := strings.Cut(ex, fence+"\n")
		if !ok {
			t.Fatalf("the example has no %s block", fence)
		}
		b, _, _ := strings.Cut(rest, "```\n")
		return b
	}
	dir := writeFabricFleet(t, 4, fabrictest.VaryExample)
	out, stderr, code := runCLI(t, "", "fabric", "--from", dir)
	if code != exitFinding {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := block("```"); out != want {
		t.Errorf("docs/fabric.md's example table is not what fabric prints:\n%s\nwant (docs):\n%s", out, want)
	}
	jout, _, _ := runCLI(t, "", "fabric", "--from", dir, "-o", "json")
	var rep struct {
		Findings []struct {
			Check   string `json:"check"`
			Network string `json:"network"`
			Groups  []any  `json:"groups"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(jout), &rep); err != nil {
		t.Fatal(err)
	}
	var want any
	if err := json.Unmarshal([]byte(block("```json")), &want); err != nil {
		t.Fatalf("the example's JSON: %v", err)
	}
	found := false
	for _, f := range rep.Findings {
		if f.Check == "pfc" && f.Network == "10.100.0.0/16" && len(f.Groups) == 2 {
			found = true
			if !reflect.DeepEqual(f.Groups[1], want) {
				t.Errorf("docs/fabric.md's JSON group is not what fabric prints:\n%#v\nwant (docs):\n%#v", f.Groups[1], want)
			}
		}
	}
	if !found {
		t.Errorf("no pfc finding on 10.100.0.0/16 with two groups:\n%s", jout)
	}
}

// The port list of a finding's group: host, device/port and netdev, at
// most max, then how many more ("and N more", as the host lists say it).
func TestPortList(t *testing.T) {
	ps := []fabric.PortRef{
		{Host: "node-1", Device: "mlx5_0", Port: 1, Netdev: "enp1s0f0.100"},
		{Host: "node-2", Device: "mlx5_0", Port: 1},
		{Host: "node-3", Device: "mlx5_1", Port: 2, Netdev: "eth1"},
	}
	if got, want := portList(ps, 5), "node-1 mlx5_0/1 (enp1s0f0.100), node-2 mlx5_0/1, node-3 mlx5_1/2 (eth1)"; got != want {
		t.Errorf("portList(3 ports, 5) = %q, want %q", got, want)
	}
	if got, want := portList(ps, 2), "node-1 mlx5_0/1 (enp1s0f0.100), node-2 mlx5_0/1 and 1 more"; got != want {
		t.Errorf("portList(3 ports, 2) = %q, want %q", got, want)
	}
}
