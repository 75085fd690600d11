package counters

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The scanner agrees with encoding/json on everything it accepts, and
// whatever it declines goes to encoding/json.
func FuzzStats(f *testing.F) {
	for _, s := range []string{`{"rx_prio3_pause": 5, "tx_priority_3_xoff.nic":18446744073709551615}`, `{}`, `null`, ` { "a" : 0 } `,
		`{"a":1,"a":2}`, `{"a":01}`, `{"a":1.5}`, `{"a\u0062":1}`, `{"a":18446744073709551616}`, `{"a":1,}`, `[1]`, `{"é":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var std map[string]uint64
		stdErr := json.Unmarshal(b, &std)
		var s Stats
		err := s.UnmarshalJSON(b)
		if m, ok := scanStats(b); ok {
			if stdErr != nil {
				t.Fatalf("scanStats accepted %q, encoding/json: %v", b, stdErr)
			}
			if !reflect.DeepEqual(map[string]uint64(m), std) {
				t.Fatalf("%q: scan %v, encoding/json %v", b, m, std)
			}
		}
		if (err == nil) != (stdErr == nil) {
			t.Fatalf("%q: UnmarshalJSON %v, encoding/json %v", b, err, stdErr)
		}
	})
}
