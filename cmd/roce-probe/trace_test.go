package main

import (
	"net/netip"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
)

// trace's bad input: exit 2, one line naming the flag, the value and what
// is allowed, nothing on stdout, before any host read or socket.
func TestTraceBadInput(t *testing.T) {
	base := []string{"trace", "--dst", "192.0.2.2", "--netdev", "no-such-netdev0"}
	with := func(args ...string) []string { return append(append([]string{}, base...), args...) }
	for _, c := range []struct {
		args []string
		want []string
	}{
		{with("--paths", "0"), []string{"--paths 0", "1..64"}},
		{with("--paths", "65"), []string{"--paths 65", "1..64"}},
		{with("--hop-limit", "65"), []string{"--hop-limit 65", "1..64"}},
		{with("--flow-label", "0x100000"), []string{"--flow-label 0x100000", "1..0xfffff"}},
		{with("--flow-label", "0"), []string{"--flow-label 0", "1..0xfffff"}},
		{with("--sport", "0"), []string{"--sport 0", "1..65535"}},
		{with("--tries", "11"), []string{"--tries 11", "1..10"}},
		{with("--rate", "0"), []string{"--rate 0", "0.1..1000"}},
		{with("--timeout", "0s"), []string{"--timeout 0s", "1ms..1m"}},
		{with("--max-ports", "0"), []string{"--max-ports 0", "1..1024"}},
		{with("--min-ports", "-1"), []string{"--min-ports -1", "0..1024"}},
		{with("--paths", "2", "--min-ports", "30", "--max-ports", "20"), []string{"--min-ports 30", "--max-ports 20"}},
		{with("--sport", "49153", "--min-ports", "3"), []string{"--sport", "--min-ports", "cannot be used together"}},
		{with("--tos", "256"), []string{"--tos 256", "0..255"}},
		{with("--tos", "106", "--tclass", "106"), []string{"--tos cannot be used with --tclass or --sl"}},
		{with("--flow-label", "1", "--sport", "49153"), []string{"--flow-label", "--sport", "cannot be used together"}},
		{with("--paths", "4", "--flow-label", "1"), []string{"--flow-label", "--paths", "cannot be used together"}},
		{with("--rdma-cm-ports", "abc"), []string{`--rdma-cm-ports "abc"`, "CLIENT:SERVER", "1..65535"}},
		{with("--rdma-cm-ports", "0:7471"), []string{`--rdma-cm-ports "0:7471"`, "CLIENT:SERVER"}},
		{with("-o", "ndjson"), []string{`-o "ndjson"`, "table or json"}},
		{base, []string{`--netdev "no-such-netdev0"`, "no such network device"}},
		{[]string{"trace", "--dst", "224.0.0.1", "--netdev", "lo"}, []string{`--dst "224.0.0.1"`, "unicast"}},
		{[]string{"trace", "--dst", "x", "--netdev", "lo"}, []string{`--dst "x"`, "IP address or GID"}},
		{[]string{"trace", "--dst", "192.0.2.2", "--dev", "mlx5_0", "--gid-index", "x"}, []string{`--gid-index "x"`, "0..255", "or auto"}},
		{[]string{"trace", "--dst", "192.0.2.2", "--dev", "mlx5_0"}, []string{"--dev and --gid-index go together"}},
		{[]string{"trace", "--netdev", "lo"}, []string{"--dst is required"}},
	} {
		checkUsageError(t, c.args, c.want)
	}
}

// rdma_cm's flow label of a connection (cma_get_roce_udp_flow_label:
// (sport * 31 + dport) & 0xfffff), computed by hand: 37619*31 + 7471 =
// 1173660 = 0x11e89c, & 0xfffff = 0x1e89c.
func TestCMFlowLabel(t *testing.T) {
	if got := cmFlowLabel(37619, 7471); got != 0x1e89c {
		t.Errorf("cmFlowLabel(37619, 7471) = %#x, want 0x1e89c", got)
	}
	if got := cmFlowLabel(1, 2); got != 33 {
		t.Errorf("cmFlowLabel(1, 2) = %d, want 33", got)
	}
}

// vocabularyTrace checks trace -o json's document, built from a result
// without sockets by the function the command uses: a path with a remark,
// a silent hop, a short quote and a listener's answer, and a path that did
// not reach the destination. TestTraceJSON runs the command (root).
func vocabularyTrace(t *testing.T) {
	t.Helper()
	a := netip.MustParseAddr
	sent := probe.Markings{DSCP: 26, ECN: 2, TTL: 16, Sport: 0xc001}
	arrived := probe.Markings{DSCP: 0, ECN: 2, TTL: 1, Sport: 0xc001}
	q := &trace.Quote{Kind: trace.TimeExceeded, Len: 28, HasTOS: true, DSCP: 26, ECN: 2, HasTTL: true, TTL: 1}
	short := &trace.Quote{Kind: trace.TimeExceeded, Len: 1}
	reached := trace.Path{Sport: 0xc001, Sports: []uint16{0xc001, 0xc003}, Hops: []trace.Hop{
		{TTL: 1, Status: trace.HopTimeExceeded, Address: a("10.1.0.254"), RTT: time.Millisecond, Tries: 1, Quote: q, ReplyTTL: 64},
		{TTL: 2, Status: trace.HopSilent, Tries: 3},
		{TTL: 3, Status: trace.HopTimeExceeded, Address: a("10.3.1.2"), RTT: time.Millisecond, Tries: 1, Quote: short, ReplyTTL: 62},
		{TTL: 4, Status: trace.HopDestination, Address: a("10.4.0.1"), RTT: time.Millisecond, Tries: 1, Arrived: &arrived, ReplyTTL: 61},
	}}
	lost := trace.Path{Sport: 0xc002, Sports: []uint16{0xc002}, Hops: []trace.Hop{{TTL: 1, Status: trace.HopSilent, Tries: 3}}}
	res := trace.Result{Src: a("10.1.0.1"), Dst: a("10.4.0.1"), Sent: sent, Paths: []trace.Path{reached, lost}, PortsTried: 3, Stop: "tried the most ports (3)", Probes: 12}
	ep := probe.Endpoint{Netdev: "s0", Wire: "s0", Src: res.Src, Dst: res.Dst}
	checkValue(t, "trace", traceDocJSON(res, ep, []string{"a note"}))
	checkValue(t, "trace", traceDocJSON(trace.Result{Src: res.Src, Dst: res.Dst, Sent: sent, Stop: "interrupted"}, ep, nil))
}
