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
// an instant query that is a bare metric name with the targets' series of
// that name, each with its target's labels added, as Prometheus's HTTP API
// writes an instant vector. Any other query gets Prometheus's bad_data
// error. The caller closes the server.
func Prometheus(targets []Target) (*httptest.Server, error) {
	type result struct {
		Metric map[string]string `json:"metric"`
		Value  [2]any            `json:"value"`
	}
	byName := map[string][]result{}
	for _, t := range targets {
		series, err := ParseExposition(t.Metrics)
		if err != nil {
			return nil, err
		}
		for _, s := range series {
			m := map[string]string{"__name__": s.Name}
			for k, v := range s.Labels {
				m[k] = v
			}
			for k, v := range t.Labels {
				m[k] = v
			}
			byName[s.Name] = append(byName[s.Name], result{Metric: m, Value: [2]any{1700000000.5, s.Value}})
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		w.Header().Set("Content-Type", "application/json")
		if q == "" || strings.ContainsAny(q, "{}()[] ") {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": fmt.Sprintf("the fake Prometheus answers bare metric names only, not %q", q)})
			return
		}
		res := byName[q]
		if res == nil {
			res = []result{}
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
