package fabrictest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
)

// Target is one scraped agent of a fake Prometheus: its exposition
// (Prometheus text format, as an agent serves /metrics) and the labels a
// scrape adds to its series (instance, job, node, ...).
type Target struct {
	Metrics string
	Labels  map[string]string
	// Before is the exposition a window earlier (empty: none): what
	// increase() over that window subtracts.
	Before string
}

// Series is one series parsed from an exposition: name{labels} value.
type Series struct {
	Name   string
	Labels map[string]string
	Value  string
}

// ParseExposition parses the series lines of a Prometheus text exposition
// (comments and blank lines skipped). It reads what roce-probe's tests
// write: name{label="value",...} value, label values with \", \\ and \n
// escapes, no timestamps.
func ParseExposition(text string) ([]Series, error) {
	var out []Series
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		s := Series{Labels: map[string]string{}}
		i := strings.IndexAny(line, "{ ")
		if i <= 0 {
			return nil, fmt.Errorf("line %d: %q: want name{labels} value", n, line)
		}
		s.Name, line = line[:i], line[i:]
		if line[0] == '{' {
			line = line[1:]
			for {
				line = strings.TrimLeft(line, " ,")
				if strings.HasPrefix(line, "}") {
					line = line[1:]
					break
				}
				eq := strings.Index(line, "=\"")
				if eq <= 0 {
					return nil, fmt.Errorf("line %d: a label without =\"value\"", n)
				}
				k := line[:eq]
				line = line[eq+2:]
				var v strings.Builder
				closed := false
				for j := 0; j < len(line); j++ {
					c := line[j]
					if c == '\\' && j+1 < len(line) {
						j++
						switch line[j] {
						case 'n':
							v.WriteByte('\n')
						default:
							v.WriteByte(line[j])
						}
						continue
					}
					if c == '"' {
						line, closed = line[j+1:], true
						break
					}
					v.WriteByte(c)
				}
				if !closed {
					return nil, fmt.Errorf("line %d: label %s: unterminated value", n, k)
				}
				s.Labels[k] = v.String()
			}
		}
		s.Value = strings.TrimSpace(line)
		if _, err := strconv.ParseFloat(s.Value, 64); err != nil {
			return nil, fmt.Errorf("line %d: value %q is not a number", n, s.Value)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// Prometheus starts a fake Prometheus server whose /api/v1/query answers
// the instant queries fabric asks (fabric.ProbeQueries), as Prometheus's
// HTTP API writes an instant vector, over the targets' series, each with
// its target's labels added and, as Prometheus stores them, without its
// empty labels (deploy/validate checks its answers against Prometheus's
// own engine):
//
//	NAME
//	NAME{label="value",label!="value"}
//	increase(SELECTOR[DURATION])            (now minus Before; a counter
//	                                         that went down counts from 0;
//	                                         a series not in Before: none)
//	increase(SELECTOR[DURATION]) > 0
//	sum by (label, ...) (increase(SELECTOR[DURATION]))
//	QUERY and (QUERY)                       (the left's series with a
//	                                         right one of the same labels)
//
// Any other query gets Prometheus's bad_data error. The caller closes the
// server.
func Prometheus(targets []Target) (*httptest.Server, error) {
	type series struct {
		labels map[string]string
		value  float64
	}
	var now, before []series
	key := func(l map[string]string) string {
		b, _ := json.Marshal(l) // sorted keys
		return string(b)
	}
	for _, t := range targets {
		for i, text := range []string{t.Metrics, t.Before} {
			ss, err := ParseExposition(text)
			if err != nil {
				return nil, err
			}
			for _, s := range ss {
				m := map[string]string{"__name__": s.Name}
				for _, ls := range []map[string]string{s.Labels, t.Labels} {
					for k, v := range ls {
						if v != "" { // Prometheus stores no empty label
							m[k] = v
						}
					}
				}
				v, _ := strconv.ParseFloat(s.Value, 64)
				if i == 0 {
					now = append(now, series{m, v})
				} else {
					before = append(before, series{m, v})
				}
			}
		}
	}
	var query func(q string) ([]series, error)
	query = func(q string) ([]series, error) {
		if l, r, ok := strings.Cut(q, " and ("); ok && strings.HasSuffix(r, ")") {
			// The left side's series that have a series of the same
			// labels (but the name) on the right.
			left, err := query(l)
			if err != nil {
				return nil, err
			}
			right, err := query(strings.TrimSuffix(r, ")"))
			if err != nil {
				return nil, err
			}
			unnamed := func(l map[string]string) string {
				m := map[string]string{}
				for k, v := range l {
					if k != "__name__" {
						m[k] = v
					}
				}
				return key(m)
			}
			has := map[string]bool{}
			for _, s := range right {
				has[unnamed(s.labels)] = true
			}
			var out []series
			for _, s := range left {
				if has[unnamed(s.labels)] {
					out = append(out, s)
				}
			}
			return out, nil
		}
		var by []string
		if rest, ok := strings.CutPrefix(q, "sum by ("); ok {
			ls, inner, ok := strings.Cut(rest, ") (")
			if !ok || !strings.HasSuffix(inner, ")") {
				return nil, fmt.Errorf("not a query the fake answers: %q", q)
			}
			for _, l := range strings.Split(ls, ",") {
				by = append(by, strings.TrimSpace(l))
			}
			q = strings.TrimSuffix(inner, ")")
		}
		positive := false
		if r, ok := strings.CutSuffix(q, " > 0"); ok {
			q, positive = r, true
		}
		increase := false
		if r, ok := strings.CutPrefix(q, "increase("); ok {
			sel, _, ok := strings.Cut(r, "[")
			if !ok || !strings.HasSuffix(r, "])") {
				return nil, fmt.Errorf("not a query the fake answers: %q", q)
			}
			q, increase = sel, true
		}
		name, matchers, _ := strings.Cut(q, "{")
		if name == "" || strings.ContainsAny(name, "()[] ") {
			return nil, fmt.Errorf("not a query the fake answers: %q", q)
		}
		type matcher struct {
			label, value string
			not          bool
		}
		var ms []matcher
		if matchers != "" {
			body, ok := strings.CutSuffix(matchers, "}")
			if !ok {
				return nil, fmt.Errorf("not a query the fake answers: %q", q)
			}
			for _, m := range strings.Split(body, ",") {
				l, v, ok := strings.Cut(m, "=")
				if !ok {
					return nil, fmt.Errorf("not a matcher the fake answers: %q", m)
				}
				not := strings.HasSuffix(l, "!")
				ms = append(ms, matcher{strings.TrimSpace(strings.TrimSuffix(l, "!")), strings.Trim(strings.TrimSpace(v), `"`), not})
			}
		}
		match := func(l map[string]string) bool {
			if l["__name__"] != name {
				return false
			}
			for _, m := range ms {
				if (l[m.label] == m.value) == m.not {
					return false
				}
			}
			return true
		}
		var out []series
		if !increase {
			for _, s := range now {
				if match(s.labels) {
					out = append(out, s)
				}
			}
		} else {
			was := map[string]float64{}
			for _, s := range before {
				if match(s.labels) {
					was[key(s.labels)] = s.value
				}
			}
			for _, s := range now {
				b, ok := was[key(s.labels)]
				if !match(s.labels) || !ok {
					continue
				}
				v := s.value - b
				if v < 0 {
					v = s.value // a reset
				}
				l := map[string]string{}
				for k, x := range s.labels {
					if k != "__name__" {
						l[k] = x
					}
				}
				out = append(out, series{l, v})
			}
		}
		if positive {
			kept := out[:0]
			for _, s := range out {
				if s.value > 0 {
					kept = append(kept, s)
				}
			}
			out = kept
		}
		if by != nil {
			sums := map[string]*series{}
			var order []string
			for _, s := range out {
				l := map[string]string{}
				for _, b := range by {
					if v, ok := s.labels[b]; ok {
						l[b] = v
					}
				}
				k := key(l)
				if sums[k] == nil {
					sums[k] = &series{labels: l}
					order = append(order, k)
				}
				sums[k].value += s.value
			}
			out = out[:0]
			for _, k := range order {
				out = append(out, *sums[k])
			}
		}
		return out, nil
	}
	type result struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		ss, err := query(r.FormValue("query"))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": err.Error()})
			return
		}
		res := []result{}
		for _, s := range ss {
			res = append(res, result{Metric: s.labels, Value: [2]any{1700000000.5, strconv.FormatFloat(s.value, 'g', -1, 64)}})
		}
		json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": res}})
	})
	return httptest.NewServer(mux), nil
}

// Agent starts a fake agent that serves the file at path as its
// /snapshot (and 404 for anything else). The caller closes the server.
func Agent(path string) (*httptest.Server, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/snapshot", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	})
	return httptest.NewServer(mux), nil
}

// AgentWithPairs starts a fake agent that serves snapshot as its
// /snapshot and pairs as its /pairs (docs/json.md, "agent_pairs"), and
// 404 for anything else. The caller closes the server.
func AgentWithPairs(snapshot, pairs []byte) *httptest.Server {
	mux := http.NewServeMux()
	for path, b := range map[string][]byte{"/snapshot": snapshot, "/pairs": pairs} {
		mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
		})
	}
	return httptest.NewServer(mux)
}
