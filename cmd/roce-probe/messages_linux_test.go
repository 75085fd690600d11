package main

import (
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// A destination on the link whose neighbour never answers ARP is a result
// (exit 1), said once, not bad usage (exit 2) with the reason twice.
func TestSendNeighbourSilent(t *testing.T) {
	netnstest.RequireRoot(t)
	nsS, _ := twoHosts(t, "")
	r := runIn(t, nsS, "send", "--netdev", "s0", "--dst", "10.78.0.99", "--count", "1", "--resolve-timeout", "300ms")
	// The state is INCOMPLETE while the kernel still asks (3 tries,
	// 1 s apart), FAILED after.
	head, tail := "roce-probe: probe: 10.78.0.99 on s0: the next hop did not answer ARP/ND within 300ms (neighbour state ", "): is 10.78.0.99 reachable on that netdev?\n"
	if r.code != exitFinding || !strings.HasPrefix(r.stderr, head) || !strings.HasSuffix(r.stderr, tail) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q\nwant exit %d, stderr %q...%q", r.code, r.stderr, exitFinding, head, tail)
	}
	if strings.Count(r.stderr, "answer") != 1 {
		t.Errorf("the reason is given %d times: %q", strings.Count(r.stderr, "answer"), r.stderr)
	}
}
