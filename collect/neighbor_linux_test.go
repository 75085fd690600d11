package collect

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/netnstest"
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

// SolicitNeighbor returns at once, and the kernel resolves the next hop:
// the neighbour table of the namespace soon holds the peer's MAC.
func TestSolicitNeighbor(t *testing.T) {
	netnstest.RequireRoot(t)
	a, b := netnstest.New(t, "a"), netnstest.New(t, "b")
	netnstest.Veth(t, a, "sa0", "02:00:00:80:00:01", b, "sb0", "02:00:00:80:00:02")
	netnstest.Run(t, "ip", "-n", a, "addr", "add", "10.80.0.1/24", "dev", "sa0")
	netnstest.Run(t, "ip", "-n", b, "addr", "add", "10.80.0.2/24", "dev", "sb0")
	var ifindex int
	fmt.Sscanf(netnstest.Run(t, "ip", "-n", a, "-o", "link", "show", "sa0"), "%d:", &ifindex)
	rr := vlan.RouteResult{NextHop: netip.MustParseAddr("10.80.0.2"), Dev: "sa0", Ifindex: ifindex}
	start := time.Now()
	if err := netnstest.Do(a, func() error {
		return SolicitNeighbor(netip.MustParseAddr("10.80.0.1"), rr.NextHop, rr)
	}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("SolicitNeighbor took %v: it must not wait", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(netnstest.Run(t, "ip", "-n", a, "neigh", "show", "10.80.0.2"), "lladdr 02:00:00:80:00:02") {
		if time.Now().After(deadline) {
			t.Fatalf("no neighbour entry for 10.80.0.2 after 5s: %q", netnstest.Run(t, "ip", "-n", a, "neigh"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := SolicitNeighbor(netip.Addr{}, rr.NextHop, vlan.RouteResult{Local: true}); err == nil {
		t.Error("soliciting a local destination succeeded")
	}
}
