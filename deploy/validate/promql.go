package validate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// promqlParser is Prometheus's own PromQL parser with its default
// functions, as a Prometheus server without feature flags parses.
var promqlParser = parser.NewParser(parser.Options{})

// CheckExpr parses a PromQL expression with Prometheus's parser and checks
// it against docs/metrics.md: every selector names a listed metric, every
// label matcher and every label of by/without, on/ignoring, group_left/
// group_right, label_replace and label_join is one the series reaching
// that point can carry (the metric's labels from docs/metrics.md, the
// target labels, and those the expression itself adds: count_values',
// label_replace's). The errors name the metric or label and what is
// allowed.
func (d *MetricsDoc) CheckExpr(expr string) error {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return fmt.Errorf("does not parse: %w", err)
	}
	c := &exprChecker{doc: d}
	c.labels(e)
	return errors.Join(c.errs...)
}

type exprChecker struct {
	doc  *MetricsDoc
	errs []error
}

// set is the labels an expression's result can carry; scalar is true for
// a scalar or string (no labels, matches every series).
type set struct {
	l      map[string]bool
	scalar bool
}

func (c *exprChecker) errorf(format string, a ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, a...))
}

// need reports a label the expression uses that s cannot carry.
func (c *exprChecker) need(s set, label, where string) {
	if s.scalar || s.l == nil || s.l[label] {
		return
	}
	c.errorf("%s: label %q is not a label of the series there (docs/metrics.md lists %s)", where, label, strings.Join(sortedKeys(s.l), ", "))
}

func copySet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func (c *exprChecker) labels(n parser.Expr) set {
	switch e := n.(type) {
	case *parser.VectorSelector:
		name := e.Name
		for _, m := range e.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			c.errorf("%s: a selector without a metric name", e)
			return set{}
		}
		ls, ok := c.doc.Labels(name)
		if !ok {
			c.errorf("metric %s is not in docs/metrics.md", name)
			return set{}
		}
		for _, m := range e.LabelMatchers {
			if m.Name != labels.MetricName {
				c.need(set{l: ls}, m.Name, name+"'s matcher "+m.String())
			}
		}
		return set{l: ls}
	case *parser.MatrixSelector:
		return c.labels(e.VectorSelector)
	case *parser.SubqueryExpr:
		return c.labels(e.Expr)
	case *parser.ParenExpr:
		return c.labels(e.Expr)
	case *parser.UnaryExpr:
		return c.labels(e.Expr)
	case *parser.StepInvariantExpr:
		return c.labels(e.Expr)
	case *parser.NumberLiteral, *parser.StringLiteral, *parser.DurationExpr:
		return set{scalar: true}
	case *parser.Call:
		return c.call(e)
	case *parser.AggregateExpr:
		in := c.labels(e.Expr)
		if e.Param != nil {
			c.labels(e.Param)
		}
		where := e.Op.String() + " by/without"
		for _, l := range e.Grouping {
			c.need(in, l, where)
		}
		switch {
		case e.Op == parser.TOPK || e.Op == parser.BOTTOMK || e.Op == parser.LIMITK || e.Op == parser.LIMIT_RATIO:
			return in
		case e.Without:
			out := copySet(in.l)
			for _, l := range e.Grouping {
				delete(out, l)
			}
			in.l = out
		default:
			out := map[string]bool{}
			for _, l := range e.Grouping {
				out[l] = true
			}
			in.l = out
		}
		if e.Op == parser.COUNT_VALUES {
			if s, ok := e.Param.(*parser.StringLiteral); ok {
				in.l[s.Val] = true
			}
		}
		return in
	case *parser.BinaryExpr:
		return c.binary(e)
	default:
		c.errorf("%T: an expression the check does not know", n)
		return set{}
	}
}

func (c *exprChecker) binary(e *parser.BinaryExpr) set {
	l, r := c.labels(e.LHS), c.labels(e.RHS)
	if l.scalar {
		return r
	}
	if r.scalar {
		return l
	}
	m := e.VectorMatching
	if m == nil {
		return l
	}
	for _, lb := range m.MatchingLabels {
		if m.On {
			c.need(l, lb, "on() of "+e.Op.String()+" (left)")
			c.need(r, lb, "on() of "+e.Op.String()+" (right)")
		} else if !l.l[lb] && !r.l[lb] && l.l != nil && r.l != nil {
			c.need(l, lb, "ignoring() of "+e.Op.String())
		}
	}
	switch m.Card {
	case parser.CardManyToOne:
		out := copySet(l.l)
		for _, lb := range m.Include {
			c.need(r, lb, "group_left() of "+e.Op.String())
			out[lb] = true
		}
		return set{l: out}
	case parser.CardOneToMany:
		out := copySet(r.l)
		for _, lb := range m.Include {
			c.need(l, lb, "group_right() of "+e.Op.String())
			out[lb] = true
		}
		return set{l: out}
	case parser.CardManyToMany:
		if e.Op == parser.LOR {
			out := copySet(l.l)
			for k := range r.l {
				out[k] = true
			}
			return set{l: out}
		}
		return l
	}
	// One to one: a comparison without bool keeps the left series as they
	// are; otherwise on() keeps only its labels, ignoring() drops its.
	if e.Op.IsComparisonOperator() && !e.ReturnBool {
		return l
	}
	if m.On {
		out := map[string]bool{}
		for _, lb := range m.MatchingLabels {
			out[lb] = true
		}
		return set{l: out}
	}
	out := copySet(l.l)
	for _, lb := range m.MatchingLabels {
		delete(out, lb)
	}
	return set{l: out}
}

func (c *exprChecker) call(e *parser.Call) set {
	args := make([]set, len(e.Args))
	for i, a := range e.Args {
		args[i] = c.labels(a)
	}
	str := func(i int) string {
		if i < len(e.Args) {
			if s, ok := e.Args[i].(*parser.StringLiteral); ok {
				return s.Val
			}
		}
		return ""
	}
	switch e.Func.Name {
	case "label_replace":
		// label_replace(v, dst, replacement, src, regex)
		if src := str(3); src != "" {
			c.need(args[0], src, "label_replace's source label")
		}
		out := copySet(args[0].l)
		out[str(1)] = true
		return set{l: out}
	case "label_join":
		// label_join(v, dst, separator, src...)
		for i := 3; i < len(e.Args); i++ {
			c.need(args[0], str(i), "label_join's source label")
		}
		out := copySet(args[0].l)
		out[str(1)] = true
		return set{l: out}
	case "histogram_quantile", "histogram_fraction":
		// The last argument is the histogram; the result has no le.
		h := args[len(args)-1]
		c.need(h, "le", e.Func.Name)
		out := copySet(h.l)
		delete(out, "le")
		return set{l: out}
	case "vector", "time", "scalar", "pi":
		if e.Func.Name == "vector" {
			return set{l: map[string]bool{}}
		}
		return set{scalar: true}
	}
	if e.Func.ReturnType == parser.ValueTypeScalar {
		return set{scalar: true}
	}
	for i, t := range e.Func.ArgTypes {
		if (t == parser.ValueTypeVector || t == parser.ValueTypeMatrix) && i < len(args) {
			return args[i]
		}
	}
	return set{scalar: true}
}
