package vlan

import (
	"bytes"
	"os"
	"testing"
)

// Any namespace Decode accepts can be described link by link, and routed
// to, without panicking, and chains never exceed the depth bound.
func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("testdata/lab.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"links":[{"name":"a","ifindex":1,"kind":"vlan","parent_ifindex":1,"tag":{"id":5,"tpid":33024}}]}`))
	f.Add([]byte(`{"links":[{"name":"a","ifindex":1,"kind":"macvlan","parent_ifindex":2},{"name":"b","ifindex":2,"kind":"macvlan","parent_ifindex":1}]}`))
	f.Add([]byte(`{"links":[{"name":"a","ifindex":1,"addrs":["10.0.0.1/24"]}],"routes":[{"table":254,"type":"throw","dst":"10.0.0.0/8"},{"table":254,"type":"unicast","dst":"10.0.0.0/24","netdev":"a","gateway":"10.0.0.9"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range s.Routes {
			s.RouteGet(r.Dst.Addr())
			for _, l := range s.Links {
				s.RouteTo(r.Dst.Addr(), l.Name, l.Index)
			}
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
