package validate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Dashboard is the part of a Grafana dashboard's JSON model (schema of
// Grafana 11 and 12) that the checks read; Grafana's other fields are
// kept in the file and ignored here.
type Dashboard struct {
	UID           string   `json:"uid"`
	Title         string   `json:"title"`
	Tags          []string `json:"tags"`
	SchemaVersion int      `json:"schemaVersion"`
	Templating    struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel `json:"panels"`
}

// Variable is a dashboard variable (templating.list[]).
type Variable struct {
	Name       string      `json:"name"`
	Type       string      `json:"type"`
	Query      any         `json:"query"` // a string, or {"query": "..."} for Prometheus query variables
	Datasource *Datasource `json:"datasource"`
	Options    []struct {
		Value string `json:"value"`
	} `json:"options"`
	Current struct {
		Value any `json:"value"`
	} `json:"current"`
}

// Panel is a dashboard panel; a row's collapsed panels are in Panels.
type Panel struct {
	ID          int         `json:"id"`
	Title       string      `json:"title"`
	Type        string      `json:"type"`
	Description string      `json:"description"`
	Datasource  *Datasource `json:"datasource"`
	Targets     []Target    `json:"targets"`
	Panels      []Panel     `json:"panels"`
}

// Target is a panel's query.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Datasource is a panel's, target's or variable's data source reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// LoadDashboard decodes a dashboard's JSON and checks that it is in the
// form the repository keeps: two-space indented, one newline at the end
// (so that the wrappers embed it unchanged and diffs stay readable).
func LoadDashboard(b []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	var want bytes.Buffer
	if err := json.Indent(&want, bytes.TrimSpace(b), "", "  "); err != nil {
		return nil, err
	}
	want.WriteByte('\n')
	if !bytes.Equal(want.Bytes(), b) {
		return nil, errors.New("not indented as json.Indent with two spaces and one final newline (jq --indent 2 . formats it so)")
	}
	return &d, nil
}

// AllPanels returns the panels of d, rows' collapsed panels included.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// grafanaBuiltins are the values Grafana's own variables are replaced
// with before parsing (any valid value of the right kind will do).
var grafanaBuiltins = map[string]string{
	"__rate_interval": "5m", "__interval": "1m", "__range": "1h",
	"__interval_ms": "60000", "__range_ms": "3600000", "__range_s": "3600",
}

var grafanaVar = regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}|([A-Za-z_][A-Za-z0-9_]*))|\[\[`)

// Expand replaces the Grafana variables of a query ($name, ${name},
// ${name:format}, Grafana's own $__rate_interval, $__interval, $__range
// ...) with a value of their kind: a custom or interval variable's first
// option, a constant's query, any other variable (a data source, a query's
// label values) ".*", the value of "All" (every variable of roce-probe's
// dashboards is used in a regular expression matcher). A variable the dashboard does not define and the
// deprecated [[name]] form are errors.
func (d *Dashboard) Expand(q string) (string, error) {
	vals := map[string]string{}
	for _, v := range d.Templating.List {
		val := ".*"
		switch v.Type {
		case "custom", "interval":
			if len(v.Options) > 0 {
				val = v.Options[0].Value
			} else if s, ok := v.Current.Value.(string); ok {
				val = s
			}
		case "constant":
			if s, ok := v.Query.(string); ok {
				val = s
			}
		}
		vals[v.Name] = val
	}
	var errs []error
	out := grafanaVar.ReplaceAllStringFunc(q, func(m string) string {
		if m == "[[" {
			errs = append(errs, errors.New("the deprecated [[variable]] form"))
			return m
		}
		sm := grafanaVar.FindStringSubmatch(m)
		name := sm[1] + sm[2]
		if v, ok := grafanaBuiltins[name]; ok {
			return v
		}
		if v, ok := vals[name]; ok {
			return v
		}
		errs = append(errs, fmt.Errorf("variable $%s is not defined in the dashboard's templating", name))
		return m
	})
	return out, errors.Join(errs...)
}

var (
	labelValuesQuery = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	queryResultQuery = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)
)

// promDS is the reference every panel, target and query variable uses: the
// dashboard's datasource variable.
var promDS = Datasource{Type: "prometheus", UID: "${datasource}"}

// CheckDashboard checks a dashboard against docs/metrics.md: it has a uid,
// a title and the roce-probe tag; its data source is the variable
// datasource (type datasource, Prometheus); every panel and query variable
// reads that variable; panel ids are unique; every target's expression,
// once its variables are expanded (Expand), parses and uses only the
// metrics and labels docs/metrics.md lists (CheckExpr); every query
// variable is label_values(selector, label) or query_result(expr) over the
// same. Each error names the panel or variable.
func (m *MetricsDoc) CheckDashboard(d *Dashboard) error {
	var errs []error
	add := func(where string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
	}
	if d.UID == "" || len(d.UID) > 40 {
		add("uid", fmt.Errorf("%q: want 1 to 40 characters (Grafana's limit)", d.UID))
	}
	if d.Title == "" {
		add("title", errors.New("empty"))
	}
	tagged := false
	for _, t := range d.Tags {
		tagged = tagged || t == "roce-probe"
	}
	if !tagged {
		add("tags", fmt.Errorf("%q: want roce-probe among them", d.Tags))
	}
	if d.SchemaVersion < 39 {
		add("schemaVersion", fmt.Errorf("%d: want 39 (Grafana 11) or later", d.SchemaVersion))
	}
	haveDS := false
	for _, v := range d.Templating.List {
		where := "variable " + v.Name
		switch v.Type {
		case "datasource":
			if v.Name == "datasource" && v.Query == "prometheus" {
				haveDS = true
			}
		case "query":
			if v.Datasource == nil || *v.Datasource != promDS {
				add(where, fmt.Errorf("datasource %+v: want %+v", v.Datasource, promDS))
			}
			q, _ := v.Query.(string)
			if o, ok := v.Query.(map[string]any); ok {
				q, _ = o["query"].(string)
			}
			x, err := d.Expand(q)
			if err != nil {
				add(where, err)
				continue
			}
			if lv := labelValuesQuery.FindStringSubmatch(x); lv != nil {
				add(where, m.CheckExpr(fmt.Sprintf("count by (%s) (%s)", lv[2], lv[1])))
			} else if qr := queryResultQuery.FindStringSubmatch(x); qr != nil {
				add(where, m.CheckExpr(qr[1]))
			} else {
				add(where, fmt.Errorf("query %q: want label_values(selector, label) or query_result(expr)", q))
			}
		}
	}
	if !haveDS {
		add("templating", errors.New(`no variable "datasource" of type datasource with query "prometheus"`))
	}
	ids := map[int]string{}
	for _, p := range d.AllPanels() {
		where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if other, dup := ids[p.ID]; dup {
			add(where, fmt.Errorf("id %d also has panel %q", p.ID, other))
		}
		ids[p.ID] = p.Title
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != promDS {
			add(where, fmt.Errorf("datasource %+v: want %+v", p.Datasource, promDS))
		}
		if len(p.Targets) == 0 {
			add(where, errors.New("no targets"))
		}
		for _, t := range p.Targets {
			tw := where + " target " + t.RefID
			if t.Datasource != nil && *t.Datasource != promDS {
				add(tw, fmt.Errorf("datasource %+v: want %+v", t.Datasource, promDS))
			}
			if strings.TrimSpace(t.Expr) == "" {
				add(tw, errors.New("no expr"))
				continue
			}
			x, err := d.Expand(t.Expr)
			if err != nil {
				add(tw, err)
				continue
			}
			add(tw, m.CheckExpr(x))
		}
	}
	return errors.Join(errs...)
}

// Where the generated wrappers go, below deploy/grafana.
const (
	SidecarDir  = "kube-prometheus-stack"
	OperatorDir = "grafana-operator"
)

// DashboardFiles returns the dashboards of dir (deploy/grafana/*.json),
// sorted.
func DashboardFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.json dashboards", dir)
	}
	sort.Strings(files)
	return files, nil
}

// DashboardWrappers generates, for every dashboard of dir
// (deploy/grafana/NAME.json), a ConfigMap labelled grafana_dashboard: "1"
// for kube-prometheus-stack's Grafana sidecar (SidecarDir/NAME.yaml) and a
// grafana-operator GrafanaDashboard (OperatorDir/NAME.yaml), each carrying
// the dashboard's JSON unchanged; keyed by path relative to dir. The
// dashboards are the source; cmd/grafana-wrappers writes these files and
// the tests check that the files are what this returns.
func DashboardWrappers(dir string) (map[string][]byte, error) {
	files, err := DashboardFiles(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if _, err := LoadDashboard(b); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		body := indentBlock(b, "    ")
		out[filepath.Join(SidecarDir, name+".yaml")] = []byte(fmt.Sprintf(sidecarTemplate, name, name, name+".json", body))
		out[filepath.Join(OperatorDir, name+".yaml")] = []byte(fmt.Sprintf(operatorTemplate, name, name, body))
	}
	return out, nil
}

// indentBlock indents every line of b for a YAML literal block.
func indentBlock(b []byte, indent string) string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = indent + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

const sidecarTemplate = `# Generated from deploy/grafana/%s.json by 'go generate' in deploy/validate (cmd/grafana-wrappers): do not edit.
# kube-prometheus-stack's Grafana sidecar loads every ConfigMap labelled grafana_dashboard: "1" from Grafana's own
# namespace (or those of grafana.sidecar.dashboards.searchNamespace): kubectl apply -n <that namespace> -f this file.
# The grafana_folder annotation names the folder when grafana.sidecar.dashboards.folderAnnotation is grafana_folder.
apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
  labels:
    app.kubernetes.io/name: roce-probe
    app.kubernetes.io/component: dashboard
    grafana_dashboard: "1"
  annotations:
    grafana_folder: roce-probe
data:
  %s: |
%s`

const operatorTemplate = `# Generated from deploy/grafana/%s.json by 'go generate' in deploy/validate (cmd/grafana-wrappers): do not edit.
# grafana-operator (grafana.integreatly.org/v1beta1) imports it into every Grafana whose labels match
# spec.instanceSelector: set them to your Grafana resource's, and apply in that Grafana's namespace (or set
# spec.allowCrossNamespaceImport: true).
apiVersion: grafana.integreatly.org/v1beta1
kind: GrafanaDashboard
metadata:
  name: %s
  labels:
    app.kubernetes.io/name: roce-probe
    app.kubernetes.io/component: dashboard
spec:
  instanceSelector:
    matchLabels:
      dashboards: grafana
  folder: roce-probe
  json: |
%s`
