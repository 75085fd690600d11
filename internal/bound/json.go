package bound

import (
	"bytes"
	"strconv"
	"strings"
)

// JSONLimits bound a JSON document's shape.
type JSONLimits struct {
	// Depth is the deepest nesting of objects and arrays.
	Depth int
	// Containers is how many objects and arrays the document holds in
	// all: what the decoded values cost is about that count times the
	// size of the largest element type.
	Containers int
}

// frame is one open object or array of the scan.
type frame struct {
	array   bool
	index   int    // array: the element's index
	key     []byte // object: the key of the value being read
	wantKey bool   // object: the next string is a key
}

// scanner walks a JSON document's structure: just enough to know the
// path of every byte. It does not validate: on bytes that are not JSON it
// stops or reports a path that means nothing, never panics; the decoder
// names the syntax error.
type scanner struct {
	stack []frame
}

// step handles b[i] and returns the index of the last byte it consumed.
// open is true when b[i] opened an object or array.
func (s *scanner) step(b []byte, i int) (next int, open bool) {
	switch c := b[i]; c {
	case '"':
		j := i + 1
		for {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				j = len(b) - 1
				break
			}
			j += k
			bs := 0
			for m := j - 1; m > i && b[m] == '\\'; m-- {
				bs++
			}
			if bs%2 == 0 {
				break
			}
			j++
		}
		if n := len(s.stack); n > 0 && !s.stack[n-1].array && s.stack[n-1].wantKey && j > i {
			s.stack[n-1].key, s.stack[n-1].wantKey = b[i+1:j], false
		}
		return j, false
	case '{', '[':
		s.stack = append(s.stack, frame{array: c == '[', wantKey: c == '{'})
		return i, true
	case '}', ']':
		if n := len(s.stack); n > 0 {
			s.stack = s.stack[:n-1]
		}
	case ',':
		if n := len(s.stack); n > 0 {
			if s.stack[n-1].array {
				s.stack[n-1].index++
			} else {
				s.stack[n-1].wantKey = true
			}
		}
	}
	return i, false
}

// path writes the scan's position as a JSON path: rdma.devices[0].ports[1].
func (s *scanner) path() string {
	var sb strings.Builder
	for _, f := range s.stack {
		if f.array {
			sb.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if f.key == nil || f.wantKey {
			continue // between a value and the next key
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.Write(f.key)
	}
	return sb.String()
}

// CheckJSON scans the document b and returns an *Error (What, the limit,
// the path where it was passed) when it nests deeper than l.Depth or
// holds more than l.Containers objects and arrays. It is a pre-scan, for
// a decoder to run before it allocates: it does not validate the JSON.
func CheckJSON(b []byte, l JSONLimits, what string) error {
	var s scanner
	containers := 0
	for i := 0; i < len(b); i++ {
		var open bool
		i, open = s.step(b, i)
		if !open {
			continue
		}
		containers++
		if len(s.stack) > l.Depth {
			s.stack = s.stack[:len(s.stack)-1]
			return &Error{What: what, Limit: int64(l.Depth), Unit: "levels of nesting", Where: orRoot(s.path())}
		}
		if containers > l.Containers {
			s.stack = s.stack[:len(s.stack)-1]
			return &Error{What: what, Limit: int64(l.Containers), Unit: "objects and arrays", Where: orRoot(s.path())}
		}
	}
	return nil
}

// PathAt returns the JSON path of the value the byte at offset belongs
// to ("" at the top level): what a decoder's error at that offset is
// about, in the document's own keys.
func PathAt(b []byte, offset int64) string {
	var s scanner
	if offset > int64(len(b)) {
		offset = int64(len(b))
	}
	for i := 0; i < int(offset); i++ {
		i, _ = s.step(b, i)
	}
	return s.path()
}

func orRoot(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// FindValue returns the path of the first value in b whose object keys,
// array indices left out, end with keys (e.g. "links", "ifindex" matches
// namespaces[0].links[3].ifindex), whose JSON kind is kind ("string",
// "number", "bool", "null", "object" or "array") and, when literal is not
// "", whose number or literal is literal: where a decoder's type error,
// which names only keys and a value, is in the document. ok is false when
// there is none.
func FindValue(b []byte, keys []string, kind, literal string) (path string, ok bool) {
	var s scanner
	for i := 0; i < len(b); i++ {
		c := b[i]
		var k string
		switch {
		case c == '"':
			k = "string"
		case c == '{':
			k = "object"
		case c == '[':
			k = "array"
		case c == 't' || c == 'f':
			k = "bool"
		case c == 'n':
			k = "null"
		case c == '-' || (c >= '0' && c <= '9'):
			k = "number"
		}
		isValue := k != "" && len(s.stack) > 0 && (s.stack[len(s.stack)-1].array || !s.stack[len(s.stack)-1].wantKey)
		if k == "bool" || k == "null" || k == "number" {
			start := i
			for i+1 < len(b) && !isDelim(b[i+1]) {
				i++
			}
			if isValue && k == kind && (literal == "" || string(b[start:i+1]) == literal) && s.keysEnd(keys) {
				return s.path(), true
			}
			continue
		}
		if isValue && k == kind && s.keysEnd(keys) {
			return s.path(), true
		}
		i, _ = s.step(b, i)
	}
	return "", false
}

// keysEnd reports whether the open objects' keys end with keys.
func (s *scanner) keysEnd(keys []string) bool {
	n := len(keys)
	for i := len(s.stack) - 1; i >= 0 && n > 0; i-- {
		f := s.stack[i]
		if f.array {
			continue
		}
		if f.wantKey || string(f.key) != keys[n-1] {
			return false
		}
		n--
	}
	return n == 0
}

func isDelim(c byte) bool {
	switch c {
	case ',', ']', '}', ' ', '\t', '\n', '\r', ':':
		return true
	}
	return false
}
