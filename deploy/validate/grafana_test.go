package validate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var grafanaDir = filepath.Join("..", "grafana")

// metricsDoc parses docs/metrics.md (with text replaced by edit, when
// given) and adds the alerts of rules.yml.
func metricsDoc(t *testing.T, edit func(string) string) *MetricsDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		b = []byte(edit(string(b)))
	}
	d, err := ParseMetricsDoc(b)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile(filepath.Join("..", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	groups, err := DecodeRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	d.AddAlerts(groups)
	return d
}

type dashboardFile struct {
	name string // NAME of deploy/grafana/NAME.json
	raw  []byte
	d    *Dashboard
}

func dashboards(t *testing.T) []dashboardFile {
	t.Helper()
	files, err := DashboardFiles(grafanaDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []dashboardFile
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := LoadDashboard(raw)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, dashboardFile{strings.TrimSuffix(filepath.Base(f), ".json"), raw, d})
	}
	return out
}

// Every dashboard's every query parses and reads only metrics and labels
// docs/metrics.md lists; the uids are unique; each is templated on the
// data source, cluster, job and ToR.
func TestDashboards(t *testing.T) {
	doc := metricsDoc(t, nil)
	uids := map[string]string{}
	targets := 0
	for _, f := range dashboards(t) {
		if err := doc.CheckDashboard(f.d); err != nil {
			t.Errorf("%s.json:\n%v", f.name, err)
		}
		if other, dup := uids[f.d.UID]; dup {
			t.Errorf("%s.json: uid %q is also %s.json's", f.name, f.d.UID, other)
		}
		uids[f.d.UID] = f.name
		vars := map[string]string{}
		for _, v := range f.d.Templating.List {
			vars[v.Name] = v.Type
		}
		for name, typ := range map[string]string{"datasource": "datasource", "cluster": "query", "job": "query", "tor": "query"} {
			if vars[name] != typ {
				t.Errorf("%s.json: variable %s is %q, want a %s variable", f.name, name, vars[name], typ)
			}
		}
		for _, p := range f.d.AllPanels() {
			targets += len(p.Targets)
			if p.Type != "row" && p.Type != "text" && p.Description == "" {
				t.Errorf("%s.json: panel %q has no description (what it shows, which metric)", f.name, p.Title)
			}
		}
	}
	if len(uids) < 3 || targets < 30 {
		t.Errorf("%d dashboards, %d queries: want the fabric, host and pair dashboards", len(uids), targets)
	}
}

// Every dashboard decodes strictly into Grafana's dashboard schema, as
// grafana-foundation-sdk generates it from Grafana's own schema with every
// panel type's options and the Prometheus query: an unknown field (a
// typo), a required one missing, a value of the wrong type is an error
// naming its path.
func TestDashboardsGrafanaSchema(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	for _, f := range dashboards(t) {
		var d dashboard.Dashboard
		if err := strictGrafana(d.UnmarshalJSONStrict(f.raw)); err != nil {
			t.Errorf("%s.json:\n%v", f.name, err)
		}
	}
	// The check sees a misspelt panel option.
	f := dashboards(t)[0]
	var d dashboard.Dashboard
	bad := bytes.Replace(f.raw, []byte(`"showHeader"`), []byte(`"showHeadr"`), 1)
	if bytes.Equal(bad, f.raw) {
		t.Fatalf("%s.json has no table panel: change the test", f.name)
	}
	if err := strictGrafana(d.UnmarshalJSONStrict(bad)); err == nil || !strings.Contains(err.Error(), "showHeadr") {
		t.Errorf("a misspelt option: %v", err)
	}
}

// strictGrafana is the SDK's error, nil when it holds none (the SDK returns
// an empty list of build errors for success).
func strictGrafana(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}

// A metric renamed or a label dropped in docs/metrics.md breaks the
// dashboards' check, naming the metric: the dashboards cannot drift from
// the agent's documented metrics.
func TestDashboardsBreakOnRename(t *testing.T) {
	for name, c := range map[string]struct {
		old, new string // in docs/metrics.md
		want     string // in the check's errors
	}{
		"metric renamed":  {"`roce_probe_flow_verdict`", "`roce_probe_flow_state`", "metric roce_probe_flow_verdict is not in docs/metrics.md"},
		"histogram":       {"`roce_probe_probe_rtt_seconds`", "`roce_probe_probe_round_trip_seconds`", "metric roce_probe_probe_rtt_seconds_bucket is not in docs/metrics.md"},
		"label renamed":   {"| `netdev`, `prio`, `reason` |", "| `netdev`, `priority`, `reason` |", `label "prio" is not a label of the series there`},
		"topology switch": {"`netdev`, `switch`, `switch_port`, `source`", "`netdev`, `tor`, `switch_port`, `source`", `label "switch"`},
	} {
		t.Run(name, func(t *testing.T) {
			doc := metricsDoc(t, func(s string) string {
				if !strings.Contains(s, c.old) {
					t.Fatalf("docs/metrics.md has no %s: the test's premise changed", c.old)
				}
				return strings.ReplaceAll(s, c.old, c.new)
			})
			var errs []string
			for _, f := range dashboards(t) {
				if err := doc.CheckDashboard(f.d); err != nil {
					errs = append(errs, err.Error())
				}
			}
			if all := strings.Join(errs, "\n"); !strings.Contains(all, c.want) {
				t.Errorf("errors %q: want %q", all, c.want)
			}
		})
	}
}

// The check itself, on a small list of metrics: what it refuses and what
// it lets through.
func TestCheckExpr(t *testing.T) {
	doc, err := ParseMetricsDoc([]byte("| metric | type | labels | meaning |\n|---|---|---|---|\n" +
		"| `m_total` | counter | `a`, `b` | x |\n" +
		"| `info` | gauge (1) | `a`, `c` | x |\n" +
		"| `h_seconds` | histogram | `a` | x |\n\n" +
		"| label | set by | meaning |\n|---|---|---|\n| `instance` | Prometheus | x |\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{
		`sum by (a, b) (rate(m_total{a="1", instance=~".*"}[5m]))`,
		`m_total * on (instance, a) group_left (c) info`,
		`sum by (c) (m_total * on (instance, a) group_left (c) info)`,
		`histogram_quantile(0.99, sum by (le, a) (rate(h_seconds_bucket[5m])))`,
		`rate(h_seconds_sum[5m]) / rate(h_seconds_count[5m])`,
		`count by (a, v) (count_values without () ("v", m_total))`,
		`sum by (z) (label_replace(m_total, "z", "$1", "a", "(.*)")) or sum by (c) (info)`,
		`topk(3, m_total) > 0`,
		`sum(m_total) / 2`,
	} {
		if err := doc.CheckExpr(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		`rate(m_total[5m]`:                               "does not parse",
		`rate(n_total[5m])`:                              "metric n_total is not in docs/metrics.md",
		`m_total{c="1"}`:                                 `label "c" is not a label of the series there`,
		`sum by (c) (m_total)`:                           `label "c"`,
		`sum by (b) (sum by (a) (m_total))`:              `label "b"`,
		`m_total * on (instance, a) group_left (b) info`: `group_left() of *: label "b"`,
		`m_total * on (c) info`:                          `on() of * (left): label "c"`,
		`histogram_quantile(0.9, sum by (a) (rate(h_seconds_bucket[5m])))`: `label "le"`,
		`h_seconds{a="1"}`: "metric h_seconds is not in docs/metrics.md",
		`{a="1"}`:          "without a metric name",
		`label_replace(m_total, "z", "", "c", "")`: `label_replace's source label: label "c"`,
	} {
		err := doc.CheckExpr(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", bad, err, want)
		}
	}
}

// Grafana's variables are replaced before parsing; an undefined one is an
// error.
func TestExpand(t *testing.T) {
	var d Dashboard
	if err := json.Unmarshal([]byte(`{"templating": {"list": [
		{"name": "tor", "type": "query"},
		{"name": "q", "type": "custom", "options": [{"value": "0.99"}]},
		{"name": "w", "type": "interval", "current": {"value": "10m"}}]}}`), &d); err != nil {
		t.Fatal(err)
	}
	got, err := d.Expand(`histogram_quantile($q, rate(x{switch=~"${tor:regex}", a="$tor"}[$__rate_interval])) + rate(x[$w]) + rate(x[${__range}])`)
	want := `histogram_quantile(0.99, rate(x{switch=~".*", a=".*"}[5m])) + rate(x[10m]) + rate(x[1h])`
	if err != nil || got != want {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := d.Expand(`x{a="$nope"}`); err == nil || !strings.Contains(err.Error(), "$nope is not defined") {
		t.Errorf("undefined variable: %v", err)
	}
	if _, err := d.Expand(`x{a="[[tor]]"}`); err == nil {
		t.Error("[[tor]] accepted")
	}
}

// The generated wrappers are what DashboardWrappers makes of the
// dashboards now (cmd/grafana-wrappers wrote them), and nothing else is in
// their directories.
func TestDashboardWrappersGenerated(t *testing.T) {
	want, err := DashboardWrappers(grafanaDir)
	if err != nil {
		t.Fatal(err)
	}
	for rel, b := range want {
		got, err := os.ReadFile(filepath.Join(grafanaDir, rel))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("deploy/grafana/%s is not generated from its dashboard (err %v): run go generate in deploy/validate", rel, err)
		}
	}
	for _, sub := range []string{SidecarDir, OperatorDir} {
		files, _ := filepath.Glob(filepath.Join(grafanaDir, sub, "*"))
		for _, f := range files {
			rel, _ := filepath.Rel(grafanaDir, f)
			if _, ok := want[rel]; !ok {
				t.Errorf("deploy/grafana/%s: no dashboard generates it", rel)
			}
		}
	}
}

// Each ConfigMap decodes strictly into the Kubernetes type, carries the
// sidecar's label and exactly its dashboard's JSON; each GrafanaDashboard
// (grafana-operator's types are not in this module: decoded as
// unstructured) has grafana-operator's apiVersion and kind, an instance
// selector, only fields the CRD has, and the same JSON.
func TestDashboardWrappersDecode(t *testing.T) {
	// GrafanaDashboard's spec fields (grafana-operator v5, api/v1beta1
	// grafanadashboard_types.go).
	specFields := map[string]bool{"allowCrossNamespaceImport": true, "configMapRef": true, "contentCacheDuration": true,
		"datasources": true, "envFrom": true, "envs": true, "folder": true, "folderRef": true, "folderUID": true,
		"grafanaCom": true, "gzipJson": true, "instanceSelector": true, "json": true, "jsonnet": true, "jsonnetLib": true,
		"plugins": true, "resyncPeriod": true, "suspend": true, "uid": true, "url": true, "urlAuthorization": true}
	for _, f := range dashboards(t) {
		b, err := os.ReadFile(filepath.Join(grafanaDir, SidecarDir, f.name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict(b, &cm); err != nil {
			t.Fatalf("%s ConfigMap: %v", f.name, err)
		}
		if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != f.name || cm.Labels["grafana_dashboard"] != "1" {
			t.Errorf("%s ConfigMap: %s %s %q labels %v: want v1 ConfigMap %q labelled grafana_dashboard: \"1\"", f.name, cm.APIVersion, cm.Kind, cm.Name, cm.Labels, f.name)
		}
		if len(cm.Data) != 1 || cm.Data[f.name+".json"] != string(f.raw) {
			t.Errorf("%s ConfigMap: data keys %v: want only %s.json, the dashboard's JSON unchanged", f.name, keys(cm.Data), f.name)
		}

		b, err = os.ReadFile(filepath.Join(grafanaDir, OperatorDir, f.name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSONStrict(b)
		if err != nil {
			t.Fatalf("%s GrafanaDashboard: %v", f.name, err)
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatalf("%s GrafanaDashboard: %v", f.name, err)
		}
		if u.GetAPIVersion() != "grafana.integreatly.org/v1beta1" || u.GetKind() != "GrafanaDashboard" || u.GetName() != f.name {
			t.Errorf("%s GrafanaDashboard: %s %s %q", f.name, u.GetAPIVersion(), u.GetKind(), u.GetName())
		}
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		for k := range spec {
			if !specFields[k] {
				t.Errorf("%s GrafanaDashboard: spec.%s is not a GrafanaDashboard field", f.name, k)
			}
		}
		sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "instanceSelector", "matchLabels")
		if len(sel) == 0 {
			t.Errorf("%s GrafanaDashboard: no spec.instanceSelector.matchLabels", f.name)
		}
		js, _, _ := unstructured.NestedString(u.Object, "spec", "json")
		if js != string(f.raw) {
			t.Errorf("%s GrafanaDashboard: spec.json is not the dashboard's JSON", f.name)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The provisioning file for a plain Grafana is a dashboard provider that
// reads the directory docs/dashboards.md copies the dashboards to.
func TestDashboardProvisioning(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(grafanaDir, "provisioning", "roce-probe.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Grafana's dashboard provider configuration (conf/provisioning/dashboards/sample.yaml).
	var p struct {
		APIVersion int `json:"apiVersion"`
		Providers  []struct {
			Name                  string `json:"name"`
			OrgID                 int    `json:"orgId"`
			Folder                string `json:"folder"`
			FolderUID             string `json:"folderUid"`
			Type                  string `json:"type"`
			DisableDeletion       bool   `json:"disableDeletion"`
			UpdateIntervalSeconds int    `json:"updateIntervalSeconds"`
			AllowUIUpdates        bool   `json:"allowUiUpdates"`
			Options               struct {
				Path                      string `json:"path"`
				FoldersFromFilesStructure bool   `json:"foldersFromFilesStructure"`
			} `json:"options"`
		} `json:"providers"`
	}
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		t.Fatal(err)
	}
	if p.APIVersion != 1 || len(p.Providers) != 1 || p.Providers[0].Type != "file" || p.Providers[0].Options.Path == "" {
		t.Fatalf("%+v: want apiVersion 1 and one file provider with a path", p)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dashboards.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(p.Providers[0].Options.Path)) {
		t.Errorf("docs/dashboards.md does not say to copy the dashboards to %s", p.Providers[0].Options.Path)
	}
}

// docs/dashboards.md names every panel of every dashboard (what it shows
// and which metric it reads).
func TestDashboardsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "dashboards.md"))
	if err != nil {
		t.Fatal(err)
	}
	varRef := regexp.MustCompile(`\$[a-z]+`)
	for _, f := range dashboards(t) {
		if !bytes.Contains(doc, []byte(f.name+".json")) {
			t.Errorf("docs/dashboards.md does not name %s.json", f.name)
		}
		for _, p := range f.d.AllPanels() {
			if p.Type == "row" || p.Type == "text" {
				continue
			}
			title := varRef.ReplaceAllString(p.Title, "")
			if !bytes.Contains(doc, []byte(title)) {
				t.Errorf("docs/dashboards.md does not describe %s's panel %q", f.name, p.Title)
			}
		}
	}
}

// Every alert rule's expression reads only metrics and labels
// docs/metrics.md lists, and its annotations only labels its result
// carries; a metric renamed, a label dropped in docs/metrics.md, or an
// annotation reading a label the expression aggregated away breaks the
// check, naming the rule.
func TestRulesAgainstMetricsDoc(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "prometheus", "rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	groups, err := DecodeRules(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := metricsDoc(t, nil).CheckRules(groups); err != nil {
		t.Errorf("deploy/prometheus/rules.yml:\n%v", err)
	}
	for name, c := range map[string]struct {
		old, new string // in docs/metrics.md
		want     string
	}{
		"metric renamed":    {"`roce_probe_tor_probes_lost_total`", "`roce_probe_tor_probes_dropped_total`", "rule RoCEProbeToRLoss: expr: metric roce_probe_tor_probes_lost_total is not in docs/metrics.md"},
		"label renamed":     {"`netdev`, `switch`, `switch_port`, `source`", "`netdev`, `tor`, `switch_port`, `source`", `rule RoCEProbeToRSuspect: expr: roce_probe_topology_info's matcher switch!="": label "switch" is not a label`},
		"up not documented": {"| `up` | gauge |", "| `scrape_up` | gauge |", "rule RoCEProbeDown: expr: metric up is not in docs/metrics.md"},
	} {
		t.Run(name, func(t *testing.T) {
			doc := metricsDoc(t, func(s string) string {
				if !strings.Contains(s, c.old) {
					t.Fatalf("docs/metrics.md has no %s: the test's premise changed", c.old)
				}
				return strings.ReplaceAll(s, c.old, c.new)
			})
			if err := doc.CheckRules(groups); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// An annotation that reads a label the expression does not keep.
	bad, err := DecodeRules([]byte(strings.Replace(string(raw), "Suspect ToR {{ $labels.peer_tor }}", "Suspect ToR {{ $labels.peer }}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if err := metricsDoc(t, nil).CheckRules(bad); err == nil || !strings.Contains(err.Error(), "rule RoCEProbeToRSuspect: annotation summary reads $labels.peer, not a label of the expression's result") {
		t.Errorf("annotation reading an aggregated-away label: %v", err)
	}
}
