package host

import (
	"errors"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/vlan"
)

// Probing over loopback: 127.0.0.1 → 127.0.0.2 through lo. lo does no
// ARP, so the kernel never creates a usable neighbour entry for it: the
// probe must time out with ETIMEDOUT rather than hang or succeed.
func TestProbeNeighborTimesOut(t *testing.T) {
	s, err := Collect(Options{Sections: SectionNet})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := s.Namespace("")
	lo, ok := n.ByName("lo")
	if !ok || !hasAddr(lo.Addrs, "127.0.0.1") {
		t.Skip("lo is missing or down (no 127.0.0.1): nothing to probe through")
	}
	rr := vlan.RouteResult{NextHop: netip.MustParseAddr("127.0.0.2"), Dev: "lo", Ifindex: lo.Index}
	start := time.Now()
	_, err = ProbeNeighbor(netip.MustParseAddr("127.0.0.1"), rr.NextHop, rr, 200*time.Millisecond)
	if !errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("ProbeNeighbor: %v, want ETIMEDOUT", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v with a 200 ms timeout", d)
	}
	if _, err := ProbeNeighbor(netip.Addr{}, rr.NextHop, vlan.RouteResult{Local: true}, time.Second); err == nil {
		t.Error("probing a local destination succeeded")
	}
}

func hasAddr(ps []netip.Prefix, a string) bool {
	for _, p := range ps {
		if p.Addr().String() == a {
			return true
		}
	}
	return false
}
