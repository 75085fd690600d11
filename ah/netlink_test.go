package ah

import (
	"net/netip"
	"testing"
)

// ReadNet on this machine's own namespace needs no privileges and must
// see the loopback device and its local route.
func TestReadNetOwnNamespace(t *testing.T) {
	n, err := ReadNet("")
	if err != nil {
		t.Fatal(err)
	}
	lo, ok := n.Link("lo")
	if !ok || lo.Index == 0 {
		t.Fatalf("no lo link in %d links", len(n.Links.Links))
	}
	r, err := n.RouteTo(netip.MustParseAddr("127.0.0.1"), "lo", 0)
	if err != nil || !r.Local {
		t.Fatalf("route to 127.0.0.1 via lo: %+v, %v; want a local route", r, err)
	}
	if n.DefaultTTL < 1 || n.DefaultTTL > 255 {
		t.Errorf("net.ipv4.ip_default_ttl = %d", n.DefaultTTL)
	}
}
