package census

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode: Decode never panics, and a census it accepts that
// validates survives its JSON form unchanged. Seeds: the hand-built
// replies and the dumps captured in the lab (testdata/*.nl).
func FuzzDecode(f *testing.F) {
	f.Add(qpReply())
	f.Add(DumpQPRaw.Request(1, 1))
	files, _ := filepath.Glob("testdata/*.nl")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if c == nil {
			t.Fatal("Decode returned no census")
		}
		if err != nil || c.Validate() != nil {
			return
		}
		j1, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back Census
		if err := json.Unmarshal(j1, &back); err != nil {
			t.Fatalf("%v\n%s", err, j1)
		}
		j2, err := json.Marshal(&back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(j1, j2) {
			t.Fatalf("JSON round trip differs:\n%s\n%s", j1, j2)
		}
	})
}
