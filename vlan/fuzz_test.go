package vlan

import (
	"bytes"
	"os"
	"testing"
)

// Any snapshot DecodeSnapshot accepts can be described link by link
// without panicking, and chains never exceed the depth bound.
func FuzzDecodeSnapshot(f *testing.F) {
	if b, err := os.ReadFile("testdata/lab.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"links":[{"name":"a","ifindex":1,"kind":"vlan","link":1,"vlan":{"id":5,"proto":"802.1Q"}}]}`))
	f.Add([]byte(`{"links":[{"name":"a","ifindex":1,"kind":"macvlan","link":2},{"name":"b","ifindex":2,"kind":"macvlan","link":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, l := range s.Links {
			d, err := s.Describe(l.Name)
			if err == nil && len(d.Lowers) > maxDepth+1 {
				t.Fatalf("%s: %d lowers", l.Name, len(d.Lowers))
			}
			for _, o := range s.Links {
				s.IsUpper(l.Name, o.Name)
			}
		}
	})
}
