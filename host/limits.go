package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/roce-probe/roce-probe/internal/bound"
)

// The limits of a snapshot, the same for every reader of snapshots (a
// file, standard input, an agent's /snapshot, each file of fabric --from):
// a document past one of them is refused with an error wrapping
// ErrTooLarge before it costs more than about the limit (docs/snapshot.md,
// "Limits"). Real hosts are far below them: the lab host's snapshot is
// 11 KB and 120 objects and arrays; a host with 10,000 netdevs some 5 MB.
const (
	// MaxSnapshotBytes bounds both the bytes read (the file, the stream,
	// the HTTP body) and, for a gzip-compressed snapshot, the JSON they
	// decompress to.
	MaxSnapshotBytes = 64 << 20
	// MaxSnapshotDepth bounds the nesting of objects and arrays (the
	// format's deepest is 6).
	MaxSnapshotDepth = 32
	// MaxSnapshotObjects bounds the objects and arrays in all: the
	// devices, ports, GID slots, netdevs, routes, neighbours, DCB and
	// counter entries together, with the objects and arrays inside them.
	// Decoded, each costs up to some 250 bytes.
	MaxSnapshotObjects = 1 << 19
)

// ErrTooLarge is wrapped by the error of a snapshot past one of its
// limits (MaxSnapshotBytes, MaxSnapshotDepth, MaxSnapshotObjects); the
// same value as capture.ErrTooLarge.
var ErrTooLarge = bound.ErrTooLarge

// jsonError says what is wrong with the snapshot document b in its own
// terms: the key path (rdma.devices[0].ports[1].gids[3]) and JSON's words
// (a string, a number), never the Go types the decoder fills.
func jsonError(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		where := ""
		if p := bound.PathAt(b, se.Offset); p != "" {
			where = ", in " + p
		}
		return fmt.Errorf("%w: not JSON (%s at byte %d%s)", ErrNotSnapshot, strings.TrimPrefix(se.Error(), "json: "), se.Offset, where)
	case errors.As(err, &te):
		// The decoder names the keys without the array indices, and
		// with the names of embedded Go structs among them: the value
		// is the first of its kind at the longest tail of those keys.
		kind, literal, _ := strings.Cut(te.Value, " ")
		var keys []string
		if te.Field != "" {
			keys = strings.Split(te.Field, ".")
		}
		at := "the document"
		if len(keys) > 0 {
			at = keys[len(keys)-1]
		}
		for i := 0; i <= len(keys); i++ {
			if p, ok := bound.FindValue(b, keys[i:], kind, literal); ok {
				at = orTop(p)
				break
			}
		}
		return fmt.Errorf("%s: %s: want %s", at, te.Value, jsonKind(te.Type))
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	// An unknown key, or a value its type's parser refused: named by
	// the key or the value, which is found in the document when it is
	// there once.
	if m := quoted.FindStringSubmatch(msg); m != nil {
		needle := m[0]
		if strings.HasPrefix(msg, "unknown field") {
			msg = "unknown key " + m[0]
			needle += ":"
		}
		if p, ok := onlyPath(b, needle); ok {
			return fmt.Errorf("%s: %s", p, msg)
		}
	}
	return errors.New(msg)
}

// quoted matches a Go-quoted string in an error message.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// onlyPath returns the path of needle in b when it occurs exactly once.
func onlyPath(b []byte, needle string) (string, bool) {
	s := string(b)
	i := strings.Index(s, needle)
	if i < 0 || strings.Contains(s[i+1:], needle) {
		return "", false
	}
	if strings.HasSuffix(needle, ":") { // a key: its object's path
		return orTop(bound.PathAt(b, int64(i))), true
	}
	return orTop(bound.PathAt(b, int64(i+1))), true
}

func orTop(p string) string {
	if p == "" {
		return "the top level"
	}
	return p
}

// jsonKind says what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return fmt.Sprintf("an integer %d..%d", int64(-1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1)
	case reflect.Int64, reflect.Int:
		return "an integer"
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return fmt.Sprintf("an integer 0..%d", uint64(1)<<t.Bits()-1)
	case reflect.Uint64, reflect.Uint, reflect.Uintptr:
		return "an integer 0 or more"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another value"
}

var textUnmarshaler = reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
