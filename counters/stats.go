package counters

import (
	"encoding/json"
	"fmt"
)

// Stats maps counter names to values. It decodes its JSON object with a
// scanner made for it — names without escapes, plain unsigned integers —
// and falls back to encoding/json for anything else; a snapshot holds tens
// of thousands of these (docs/performance.md).
type Stats map[string]uint64

// UnmarshalJSON reads {"name": value, ...}.
func (s *Stats) UnmarshalJSON(b []byte) error {
	m, ok := scanStats(b)
	if !ok {
		var w map[string]uint64
		if err := json.Unmarshal(b, &w); err != nil {
			return fmt.Errorf("counters: %w", err)
		}
		*s = w
		return nil
	}
	*s = m
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// scanStats decodes the common form; ok false sends the input to
// encoding/json (which also reports the errors).
func scanStats(b []byte) (Stats, bool) {
	i := 0
	skip := func() {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
	}
	skip()
	if i+4 <= len(b) && string(b[i:i+4]) == "null" {
		i += 4
		skip()
		return nil, i == len(b)
	}
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i++
	m := Stats{}
	skip()
	if i < len(b) && b[i] == '}' {
		i++
		skip()
		return m, i == len(b)
	}
	for {
		skip()
		if i >= len(b) || b[i] != '"' {
			return nil, false
		}
		i++
		start := i
		for i < len(b) && b[i] != '"' {
			if b[i] == '\\' || b[i] < 0x20 || b[i] >= 0x80 {
				return nil, false
			}
			i++
		}
		if i >= len(b) {
			return nil, false
		}
		name := string(b[start:i])
		i++
		skip()
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i++
		skip()
		if i >= len(b) || b[i] < '0' || b[i] > '9' || (b[i] == '0' && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9') {
			return nil, false
		}
		var v uint64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			d := uint64(b[i] - '0')
			if v > (1<<64-1-d)/10 {
				return nil, false
			}
			v = v*10 + d
			i++
		}
		if _, dup := m[name]; dup {
			return nil, false // encoding/json keeps the last: let it
		}
		m[name] = v
		skip()
		if i >= len(b) {
			return nil, false
		}
		if b[i] == ',' {
			i++
			continue
		}
		if b[i] != '}' {
			return nil, false
		}
		i++
		skip()
		return m, i == len(b)
	}
}
