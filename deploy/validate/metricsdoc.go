package validate

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// MetricsDoc is what docs/metrics.md lists: every metric the agent serves
// with its labels, and the labels Prometheus adds to every series it
// scrapes from an agent (the target labels). It is the one list the
// dashboards and their tests read; nothing else keeps metric names.
type MetricsDoc struct {
	// Metrics maps a series' metric name to its labels. A histogram is
	// listed under the series names Prometheus stores for it: NAME_bucket
	// (with le), NAME_sum and NAME_count.
	Metrics map[string]map[string]bool
	// Types maps a metric name (as listed) to its type: counter, gauge,
	// histogram.
	Types map[string]string
	// TargetLabels are the labels every series carries from its scrape
	// target (job, instance, ...).
	TargetLabels map[string]bool
}

var (
	docName  = regexp.MustCompile("^`([a-zA-Z_:][a-zA-Z0-9_:]*)`$")
	docLabel = regexp.MustCompile("`([a-zA-Z_][a-zA-Z0-9_]*)`")
)

// ParseMetricsDoc reads docs/metrics.md: the rows of every table whose
// first column is headed "metric" (| `name` | type | `label`, ... |
// meaning |) and of every table whose first column is headed "label"
// (| `label` | ... |: the target labels). A row whose name is not one
// backquoted metric name, an unknown type or a metric listed twice is an
// error naming the line.
func ParseMetricsDoc(b []byte) (*MetricsDoc, error) {
	d := &MetricsDoc{Metrics: map[string]map[string]bool{}, Types: map[string]string{}, TargetLabels: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	table := "" // "metric", "label" or "" (another table or none)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			table = ""
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case strings.HasPrefix(cells[0], "---"):
			continue
		case cells[0] == "metric" || cells[0] == "label":
			table = cells[0]
			continue
		}
		switch table {
		case "metric":
			if len(cells) < 4 {
				return nil, fmt.Errorf("metrics.md:%d: a metric row has %d columns, want 4 (metric, type, labels, meaning)", n, len(cells))
			}
			m := docName.FindStringSubmatch(cells[0])
			if m == nil {
				return nil, fmt.Errorf("metrics.md:%d: metric %q is not one `name`", n, cells[0])
			}
			name := m[1]
			typ, _, _ := strings.Cut(cells[1], " ")
			switch typ {
			case "counter", "gauge", "histogram":
			default:
				return nil, fmt.Errorf("metrics.md:%d: %s: type %q (want counter, gauge or histogram)", n, name, cells[1])
			}
			labels := map[string]bool{}
			for _, l := range docLabel.FindAllStringSubmatch(cells[2], -1) {
				labels[l[1]] = true
			}
			if _, dup := d.Types[name]; dup {
				return nil, fmt.Errorf("metrics.md:%d: %s is listed twice", n, name)
			}
			d.Types[name] = typ
			if typ != "histogram" {
				d.Metrics[name] = labels
			} else {
				// A classic histogram (client_golang's) is stored as
				// these series only.
				bucket := map[string]bool{"le": true}
				for l := range labels {
					bucket[l] = true
				}
				d.Metrics[name+"_bucket"] = bucket
				d.Metrics[name+"_sum"] = labels
				d.Metrics[name+"_count"] = labels
			}
		case "label":
			m := docName.FindStringSubmatch(cells[0])
			if m == nil {
				return nil, fmt.Errorf("metrics.md:%d: label %q is not one `name`", n, cells[0])
			}
			d.TargetLabels[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(d.Metrics) == 0 {
		return nil, fmt.Errorf("metrics.md: no metric table (| metric | type | labels | meaning |)")
	}
	return d, nil
}

// Labels returns the labels a series of the metric can carry (its own and
// the target labels), or false when docs/metrics.md does not list it.
func (d *MetricsDoc) Labels(metric string) (map[string]bool, bool) {
	own, ok := d.Metrics[metric]
	if !ok {
		return nil, false
	}
	all := map[string]bool{}
	for l := range own {
		all[l] = true
	}
	for l := range d.TargetLabels {
		all[l] = true
	}
	return all, true
}

// sortedKeys returns a set's members in order (for messages).
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// AddAlerts lists ALERTS and ALERTS_FOR_STATE, the series Prometheus makes
// of the alerting rules of groups (deploy/prometheus/rules.yml), with the
// labels an alert can carry: alertname, alertstate, the rules' own labels,
// the target labels and the labels of each rule's expression (as CheckExpr
// finds them; an expression over metrics docs/metrics.md does not list,
// such as up, adds none).
func (d *MetricsDoc) AddAlerts(groups []monitoringv1.RuleGroup) {
	ls := map[string]bool{"alertname": true, "alertstate": true}
	for l := range d.TargetLabels {
		ls[l] = true
	}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			for l := range r.Labels {
				ls[l] = true
			}
			if e, err := promqlParser.ParseExpr(r.Expr.String()); err == nil {
				c := &exprChecker{doc: d}
				for l := range c.labels(e).l {
					ls[l] = true
				}
			}
		}
	}
	d.Metrics["ALERTS"] = ls
	d.Types["ALERTS"] = "gauge"
	d.Metrics["ALERTS_FOR_STATE"] = ls
	d.Types["ALERTS_FOR_STATE"] = "gauge"
}
