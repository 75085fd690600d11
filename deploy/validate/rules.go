package validate

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
)

// templateLabel is a label an alert's template reads: {{ $labels.NAME }}.
var templateLabel = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)

// CheckRules checks the rules of groups (deploy/prometheus/rules.yml, the
// PrometheusRule's groups) against docs/metrics.md as CheckDashboard does
// the dashboards' queries: each rule's expression parses and reads only
// the metrics and labels listed (CheckExpr), and each label its labels
// and annotations read ({{ $labels.NAME }}) is one the expression's result
// carries. The errors name the rule (its alert or record).
func (d *MetricsDoc) CheckRules(groups []monitoringv1.RuleGroup) error {
	var errs []error
	for _, g := range groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			where := fmt.Sprintf("group %s, rule %s", g.Name, name)
			e, err := promqlParser.ParseExpr(r.Expr.String())
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: expr does not parse: %w", where, err))
				continue
			}
			c := &exprChecker{doc: d}
			out := c.labels(e)
			for _, err := range c.errs {
				errs = append(errs, fmt.Errorf("%s: expr: %w", where, err))
			}
			if out.scalar || out.l == nil {
				continue // no labels to read, or already an error
			}
			texts := map[string]string{}
			for k, v := range r.Annotations {
				texts["annotation "+k] = v
			}
			for k, v := range r.Labels {
				texts["label "+k] = v
			}
			keys := make([]string, 0, len(texts))
			for k := range texts {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				for _, m := range templateLabel.FindAllStringSubmatch(texts[k], -1) {
					if !out.l[m[1]] {
						errs = append(errs, fmt.Errorf("%s: %s reads $labels.%s, not a label of the expression's result (it has %s)", where, k, m[1], strings.Join(sortedKeys(out.l), ", ")))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}
