package ah

import (
	"testing"
)

// ReadNet on the own namespace needs no privileges. Every local route it
// returns must resolve, through its own device, as a local destination,
// and every link must be there by name.
func TestReadNetOwnNamespace(t *testing.T) {
	n, err := ReadNet("")
	if err != nil {
		t.Fatal(err)
	}
	if n.Links == nil || len(n.Links.Links) == 0 {
		t.Fatal("no links")
	}
	for _, l := range n.Links.Links {
		if got, ok := n.Link(l.Name); !ok || got.Index != l.Index {
			t.Errorf("Link(%q) = %v, %v", l.Name, got, ok)
		}
	}
	locals := 0
	for _, r := range n.Routes {
		if r.Type != RouteLocal || r.Table != TableLocal || r.Dst.Bits() != r.Dst.Addr().BitLen() {
			continue
		}
		locals++
		res, err := n.RouteTo(r.Dst.Addr(), r.Dev, r.Ifindex)
		if err != nil || !res.Local {
			t.Errorf("route to own address %s via %s: %+v, %v; want local", r.Dst.Addr(), r.Dev, res, err)
		}
	}
	if locals == 0 {
		t.Logf("no local routes (no interface with an address is up); %d routes read", len(n.Routes))
	}
	if n.DefaultTTL < 1 || n.DefaultTTL > 255 {
		t.Errorf("net.ipv4.ip_default_ttl = %d", n.DefaultTTL)
	}
}
