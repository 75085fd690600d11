package agent

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/fleet"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/trace"
	"github.com/roce-probe/roce-probe/vlan"
)

// fleetAddr is peer i (0-based) of a large simulated fleet: 10.16.0.0/12
// upwards, so 100,000 peers fit (the fake host's eth0 is a /8).
func fleetAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{10, byte(16 + i>>16), byte(i >> 8), byte(i)})
}

// fleetMAC is fleetAddr(i)'s MAC.
func fleetMAC(a netip.Addr) net.HardwareAddr {
	b := a.As4()
	return net.HardwareAddr{0x02, 0x10, b[0], b[1], b[2], b[3]}
}

// fleetNet is a fakeNet whose every address of the fleet answers (a
// simulated peer made at its first probe), except those down, and whose
// path to some rewrites DSCP.
func fleetNet(down, remark func(netip.Addr) bool) *fakeNet {
	n := newFakeNet()
	n.lazy = func(a netip.Addr) *simPeer {
		r, err := probe.NewResponder(probe.ResponderConfig{LocalMACs: []net.HardwareAddr{fleetMAC(a)}, LocalAddrs: []netip.Addr{a}})
		if err != nil {
			panic(err)
		}
		p := &simPeer{addr: a, mac: fleetMAC(a), resp: r}
		p.dscp.Store(-1)
		p.ecn.Store(-1)
		if remark(a) {
			p.dscp.Store(0)
		}
		p.down.Store(down(a))
		return p
	}
	return n
}

// fleetPeersFile writes a peers file of n peers in ToRs of perToR, with
// this host (agentIP) as the first NIC of the first ToR.
func fleetPeersFile(t testing.TB, n, perToR int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "self=%s tor=leaf0\n", agentIP)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "n%d=%s tor=leaf%d\n", i, fleetAddr(i), i/perToR)
	}
	path := filepath.Join(t.TempDir(), "peers")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleetHost is the fake host with a /8 on eth0 and a neighbour for each
// of the n peers of the fleet.
func fleetHost(n int) *fakeHost {
	h := &fakeHost{prefix: 8}
	for i := 1; i < n; i++ {
		a := fleetAddr(i)
		h.extra = append(h.extra, vlan.Neighbor{IP: a, Dev: "eth0", Ifindex: 2, MAC: vlan.MAC(fleetMAC(a)), State: vlan.NUDReachable})
	}
	return h
}

// probeSeries counts the series of the probe and plan metrics in an
// exposition, as Prometheus stores them (a histogram: its buckets, sum
// and count).
func probeSeries(t testing.TB, reg *prometheus.Registry) (int, map[string]int) {
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	total := 0
	for _, f := range fams {
		name := f.GetName()
		if !strings.HasPrefix(name, "roce_probe_") || hostMetric[name] {
			continue
		}
		n := 0
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h != nil {
				n += len(h.GetBucket()) + 3 // the buckets, +Inf, sum, count
			} else {
				n++
			}
		}
		by[name] = n
		total += n
	}
	return total, by
}

// hostMetric are the metrics of the host's own state (its GID tables,
// counters, flows), whose number depends on the host, not the fleet.
var hostMetric = map[string]bool{
	metricBuildInfo: true, metricGIDInfo: true, metricGIDIndex: true, metricGIDIndexChanges: true, metricFlowVerdict: true,
	metricFlowWarnings: true, metricFlowSource: true, metricRDMAStatistic: true, metricPrioPackets: true, metricPrioBytes: true,
	metricPrioPauseFrames: true, metricPrioPauseSeconds: true, metricPrioDiscards: true, metricRoCEPriority: true,
	metricSnapshotErrorsNow: true, metricReadErrors: true, metricLastRead: true, metricNetlinkChanges: true,
	metricAuditOff: true, metricAuditRDMA: true,
}

// fleetToR is the ToR of an address of the fleet of fleetPeersFile with
// ToRs of 64: this host's (agentIP) is 0.
func fleetToR(a netip.Addr) int {
	if a == netip.MustParseAddr(agentIP) {
		return 0
	}
	b := a.As4()
	return (int(b[1]-16)<<16 | int(b[2])<<8 | int(b[3])) / 64
}

// seriesBound is docs/metrics.md's bound on an agent's probe series ("How
// many series"): with F flows, M ToR-mates, r and s marking fields
// received and sent, e and e' the mates' and the ToRs' marking events,
// T = metrics.tors, S scopes, K = metrics.worst_pairs and t the traced
// faulty ports' series,
//
//	F·M·(3 + r + s + e) + F·T·(3 + e') + F·S·14 + 2·K + F + 32 + t
func seriesBound(f, m, r, s, e, tors, e2, scopes, k, t int) int {
	return f*m*(3+r+s+e) + f*tors*(3+e2) + f*scopes*14 + 2*k + f + 32 + t
}

// TestSeriesBounded runs the agent in a fleet of 10,000 and of 100,000
// peers in ToRs of 64 NICs (this host the first of leaf0) with the
// default metrics settings, and counts its probe series against
// docs/metrics.md's bound for one untagged flow (r = s = 3), 63 mates
// whose paths change nothing (e = 0), 16 ToRs whose only marking event is
// DSCP remarked (e' = 1), two scopes (every peer has a ToR), 10 worst
// pairs: 63·9 + 16·4 + 2·14 + 20 + 33 + t, and under 1,000, whatever the
// fleet's size.
//
//   - rotating: the default plan but 1 s rounds, no traces (t = 0), the
//     NICs of every third ToR answering nothing and the paths to every
//     fifth ToR remarking DSCP, until it has probed more than
//     metrics.tors other ToRs.
//   - traced: the traced-fault series at their worst (t = 2 × 16): 20
//     other ToRs probed at once (more than metrics.tors) in one long
//     round, the NICs of every third ToR answering nothing, every other
//     path crossing one of 16 spines (fleetSpineOf), 8 of which lose
//     every probe and 8 of which remark DSCP, each to its own value; the
//     agent's own tracer, with a budget that lets it trace all 8 faulty
//     ports of every pair, over a fake trace.Run of that fabric
//     (fleetTrace). It waits until the pairs' detail (/pairs) holds more
//     than 16 label sets of each traced-fault metric — the pairs' traced
//     ports through their spines, and their remarks — so that only the
//     bound of 16 each keeps the series within the formula.
func TestSeriesBounded(t *testing.T) {
	for _, n := range []int{10000, 100000} {
		t.Run(fmt.Sprintf("%d/rotating", n), func(t *testing.T) {
			f := fleetNet(func(a netip.Addr) bool { return fleetToR(a)%3 == 1 }, func(a netip.Addr) bool { return fleetToR(a)%5 == 2 })
			cfg := testConfig()
			cfg.Interval = time.Minute
			cfg.Probe.Rotation = time.Second
			cfg.Probe.Rate, cfg.Probe.SampleRate = 10, 10
			cfg.Peers.File = fleetPeersFile(t, n, 64)
			ta := startAgent(t, cfg, fleetHost(n), f)
			eventually(t, 60*time.Second, "more than metrics.tors ToRs probed, lost and remarked", func() bool {
				_, by := probeSeries(t, ta.Registry())
				return by[metricToRProbesSent] >= 16 && by[metricWorstPairLoss] > 0 && by[metricToRMarkingEvents] > 0 &&
					by[metricProbesAnswered] == 63
			})
			time.Sleep(3 * time.Second) // more rounds: the bound holds as ToRs come and go
			total, by := probeSeries(t, ta.Registry())
			t.Logf("%d peers: %d probe series: %v", n, total, by)
			checkSeriesBound(t, total, by, 0)
			if by[metricTracedSports]+by[metricTracedRemarks] != 0 {
				t.Errorf("traced-fault series %d and %d without a tracer: want none", by[metricTracedSports], by[metricTracedRemarks])
			}
		})
		t.Run(fmt.Sprintf("%d/traced", n), func(t *testing.T) {
			f := fleetNet(func(a netip.Addr) bool { return fleetToR(a)%3 == 1 }, func(netip.Addr) bool { return false })
			f.path = func(src, dst netip.Addr, sport uint16) (bool, int) {
				switch s := fleetSpineOf(src, dst, sport); {
				case s == 0:
					return false, -1
				case s <= fleetSpines/2:
					return true, -1
				default:
					return false, s - fleetSpines/2
				}
			}
			cfg := testConfig()
			cfg.Interval = time.Minute
			cfg.Probe.Rotation = 24 * time.Hour // one round: the pairs and their faulty ports stay
			cfg.Probe.SampleToRs = 20
			cfg.Probe.Rate, cfg.Probe.SampleRate = 10, 10
			cfg.Peers.File = fleetPeersFile(t, n, 64)
			cfg.Trace.Ports = maxSportFaults
			cfg.Trace.MaxPerWindow = 1000
			cfg.Trace.Routers = map[string]string{}
			for s := 1; s <= fleetSpines; s++ {
				cfg.Trace.Routers[fmt.Sprintf("172.%d.0.0/16", 32+s)] = fmt.Sprintf("spine%d", s)
			}
			ta := startAgent(t, cfg, fleetHost(n), f, func(d *Deps) { d.Trace = fleetTrace })
			var sports, remarks int
			eventually(t, 60*time.Second, "more than 16 label sets of each traced-fault metric on /pairs", func() bool {
				sports, remarks = tracedLabelSets(getPairs(t, ta.url))
				return sports > 16 && remarks > 16 // docs/metrics.md: at most 16 label sets each
			})
			eventually(t, 30*time.Second, "more than metrics.tors ToRs probed, lost and remarked", func() bool {
				_, by := probeSeries(t, ta.Registry())
				return by[metricToRProbesSent] >= 16 && by[metricWorstPairLoss] > 0 && by[metricToRMarkingEvents] > 0 &&
					by[metricProbesAnswered] == 63
			})
			// The pairs' faulty ports and their traces only grow in the
			// round: /pairs had more than 16 of each before this scrape.
			total, by := probeSeries(t, ta.Registry())
			t.Logf("%d peers: %d probe series (/pairs: %d traced-port and %d traced-remark label sets): %v", n, total, sports, remarks, by)
			for _, m := range []string{metricTracedSports, metricTracedRemarks} {
				if by[m] == 0 || by[m] > 16 {
					t.Errorf("%s: %d series, want 1..16 (more label sets are on /pairs)", m, by[m])
				}
			}
			checkSeriesBound(t, total, by, 2*16)
		})
	}
}

// checkSeriesBound checks a TestSeriesBounded agent's probe series by
// metric and in all against docs/metrics.md's bound, t the traced-fault
// series it allows.
func checkSeriesBound(t *testing.T, total int, by map[string]int, traced int) {
	t.Helper()
	// 63 ToR-mates, 3 counters and 3 received and 3 sent fields each.
	for _, m := range []string{metricProbesSent, metricProbesAnswered, metricProbesLost} {
		if by[m] != 63 {
			t.Errorf("%s: %d series, want the 63 ToR-mates'", m, by[m])
		}
	}
	if by[metricProbeReceived] != 63*3 || by[metricProbeSentMarking] != 63*3 {
		t.Errorf("markings: %d received, %d sent series, want 189 each", by[metricProbeReceived], by[metricProbeSentMarking])
	}
	for _, m := range []string{metricToRProbesSent, metricToRProbesAnswered, metricToRProbesLost} {
		if by[m] != 16 {
			t.Errorf("%s: %d series, want metrics.tors = 16", m, by[m])
		}
	}
	if by[metricToRMarkingEvents] > 16 {
		t.Errorf("%d ToR marking event series: more than the 16 ToRs held (one event kind each)", by[metricToRMarkingEvents])
	}
	if by[metricProbeRTT] > 2*14 {
		t.Errorf("%d RTT series, want at most 2 scopes × 14", by[metricProbeRTT])
	}
	if want := seriesBound(1, 63, 3, 3, 0, 16, 1, 2, 10, traced); total > want {
		t.Errorf("%d probe series, want at most %d (docs/metrics.md)", total, want)
	}
	if total > 1000 {
		t.Errorf("%d probe series, want at most 1,000", total)
	}
}

// fleetSpines is the number of spines of TestSeriesBounded's traced run.
const fleetSpines = 16

// fleetSpineOf is the spine (1..fleetSpines) a probe from src to dst with
// port sport crosses by the fabric's ECMP hash (FNV-1a of the addresses
// and the port: nothing of the agent's); 0 between NICs of one ToR.
func fleetSpineOf(src, dst netip.Addr, sport uint16) int {
	if fleetToR(src) == fleetToR(dst) {
		return 0
	}
	h := fnv.New32a()
	s, d := src.As4(), dst.As4()
	h.Write(s[:])
	h.Write(d[:])
	h.Write([]byte{byte(sport >> 8), byte(sport)})
	return 1 + int(h.Sum32()%fleetSpines)
}

// fleetTrace is a fake trace.Run over the traced run's fabric: each
// port's hops are the source's ToR (172.16.<ToR>), its spine (answering
// from its port toward the source's ToR, 172.<32+spine>.<ToR>), the
// destination's ToR and the destination, each quoting the DSCP the probe
// arrived with there: a remarking spine's value from the far ToR on.
func fleetTrace(ctx context.Context, cfg trace.Config) (trace.Result, error) {
	src, dst := cfg.Endpoint.Src, cfg.Endpoint.Dst
	res := trace.Result{Src: src, Dst: dst, Sent: cfg.Base}
	quote := func(dscp uint8) *trace.Quote {
		return &trace.Quote{Kind: trace.TimeExceeded, HasTOS: true, DSCP: dscp, ECN: cfg.Base.ECN, HasTTL: true, TTL: 1}
	}
	tor := func(t int) netip.Addr { return netip.AddrFrom4([4]byte{172, 16, byte(t >> 8), byte(t)}) }
	for _, sport := range cfg.Sports {
		s := fleetSpineOf(src, dst, sport)
		if s == 0 {
			continue
		}
		after := cfg.Base.DSCP
		if s > fleetSpines/2 {
			after = uint8(s - fleetSpines/2)
		}
		arrived := cfg.Base
		arrived.DSCP = after
		st := fleetToR(src)
		res.Traces = append(res.Traces, trace.Trace{Sport: sport, Hops: []trace.Hop{
			{TTL: 1, Status: trace.HopTimeExceeded, Address: tor(st), Quote: quote(cfg.Base.DSCP)},
			{TTL: 2, Status: trace.HopTimeExceeded, Address: netip.AddrFrom4([4]byte{172, byte(32 + s), byte(st >> 8), byte(st)}), Quote: quote(cfg.Base.DSCP)},
			{TTL: 3, Status: trace.HopTimeExceeded, Address: tor(fleetToR(dst)), Quote: quote(after)},
			{TTL: 4, Status: trace.HopDestination, Address: dst, Arrived: &arrived},
		}})
		res.Probes += 4
	}
	return res, ctx.Err()
}

// tracedLabelSets counts, on an agent's /pairs, the label sets the
// traced-fault metrics would have without their bound (docs/metrics.md):
// roce_probe_traced_sports' (pair, spine, event) of the traced faulty
// ports with a spine, roce_probe_traced_remarks' (pair, spine, change) of
// the remarked ones whose trace saw a change.
func tracedLabelSets(d agentPairsDoc) (sports, remarks int) {
	sp, rm := map[string]bool{}, map[string]bool{}
	for _, p := range d.Pairs {
		for _, f := range p.SportFaults {
			if !f.Traced {
				continue
			}
			spine := ""
			if f.Spine != nil {
				spine = *f.Spine
				if f.Lost > 0 {
					sp[p.Address+" "+spine+" lost"] = true
				}
				if f.Remarked > 0 {
					sp[p.Address+" "+spine+" remarked"] = true
				}
			}
			if f.Remarked > 0 && len(f.Remark) > 0 && string(f.Remark) != "null" {
				rm[p.Address+" "+spine+" "+string(f.Remark)] = true
			}
		}
	}
	return len(sp), len(rm)
}

// TestExpositionPassesPromtool runs `promtool check metrics` (Debian's
// prometheus package; scripts/deps.sh installs it) on real expositions:
// an agent probing a small fleet with every kind of probe series present
// (ToR-mates, peer ToRs, marking events, worst pairs), and one on the
// mlx5-counters fixture (every host series: GID entries, RDMA statistics,
// per-priority counters).
func TestExpositionPassesPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (scripts/deps.sh installs it)")
	}
	check := func(name string, reg *prometheus.Registry) {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, mf := range fams {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(b.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: promtool check metrics: %v\n%s", name, err, out)
		}
	}
	f := fleetNet(func(a netip.Addr) bool { return a.As4()[3]%7 == 3 }, func(a netip.Addr) bool { return a.As4()[3]%2 == 0 })
	cfg := testConfig()
	cfg.Probe.Rotation = time.Second
	cfg.Peers.File = fleetPeersFile(t, 400, 8)
	ta := startAgent(t, cfg, fleetHost(400), f)
	eventually(t, 30*time.Second, "every kind of series", func() bool {
		_, by := probeSeries(t, ta.Registry())
		return by[metricToRMarkingEvents] > 0 && by[metricMarkingEvents] > 0 && by[metricWorstPairLoss] > 0 && by[metricProbeRTT] > 0
	})
	check("probing", ta.Registry())

	cfg = testConfig()
	cfg.Flows = nil
	fa, _ := startFixtureAgent(t, cfg, "mlx5-counters")
	eventually(t, 5*time.Second, "first read", func() bool { _, ok := value(gather(t, fa.Registry()), metricRDMAStatistic); return ok })
	check("mlx5-counters", fa.Registry())
}

// TestSelfProtection drives the agent's Governor with a fake clock and a
// fake CPU source: a period at 10 % of a core (budget 3 %) lowers the
// probe rate to a half and says so on /metrics, /healthz and in the log;
// three calm periods raise it again; a period with most wake-ups late
// lowers it too. The streams' periods follow the scale.
func TestSelfProtection(t *testing.T) {
	now := time.Unix(1800000000, 0)
	var cpu time.Duration
	a, err := New(testConfig(), Deps{Collect: (&fakeHost{}).collect, Open: newFakeNet().open, Now: func() time.Time { return now },
		CPU: func() time.Duration { return cpu }, Log: slog.New(slog.NewTextHandler(&syncBuf{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	a.log = slog.New(slog.NewTextHandler(logs, nil))
	a.govAt = now
	period := func(busy time.Duration, wakeups, late int64) {
		now = now.Add(governPeriod)
		cpu += busy
		a.mesh.wakeups.Store(wakeups)
		a.mesh.late.Store(late)
		a.govern()
	}
	health := func() healthJSON { h, _ := a.health(); return h }
	scale := func() float64 { v, _ := value(gather(t, a.Registry()), metricProbeScale); return v }

	period(time.Second, 100, 0) // 10 % of a core
	if h := health(); scale() != 0.5 || h.ProbeScale != 0.5 || h.Pressure == nil || *h.Pressure != "cpu" {
		t.Fatalf("after a busy period: scale %v, /healthz %+v; want 0.5 and pressure cpu", scale(), h)
	}
	if v, _ := value(gather(t, a.Registry()), metricPressure, "reason", "cpu"); v != 1 {
		t.Errorf("%s{reason=cpu} = %v, want 1", metricPressure, v)
	}
	if !strings.Contains(logs.String(), "probe rate lowered") || !strings.Contains(logs.String(), "pressure=cpu") {
		t.Errorf("log:\n%s", logs.String())
	}
	s := &stream{plan: fleet.Target{Rate: 2}}
	if got := a.mesh.streamPeriod(s); got != time.Second {
		t.Errorf("a 2/s stream's period at scale 0.5: %v, want 1s", got)
	}
	for range 3 {
		period(10*time.Millisecond, 100, 0) // 0.1 %
	}
	if h := health(); scale() != 1 || h.Pressure != nil {
		t.Fatalf("after three calm periods: scale %v, /healthz %+v; want 1 and no pressure", scale(), h)
	}
	period(10*time.Millisecond, 100, 60) // 60 % of the wake-ups late
	if h := health(); scale() != 0.5 || h.Pressure == nil || *h.Pressure != "late_wakeups" {
		t.Fatalf("after late wake-ups: scale %v, /healthz %+v; want 0.5 and late_wakeups", scale(), h)
	}
}

// cpuResolver is a resolver whose answer costs CPU on the test's fake
// CPU clock: a large peer list to parse.
type cpuResolver struct {
	fakeResolver
	cost func()
}

func (r *cpuResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.cost()
	return r.fakeResolver.LookupNetIP(ctx, network, host)
}

// TestSelfProtectionUpkeep drives the Governor with a fake CPU clock that
// host reads and the peer list advance: a start-up whose peer list costs
// 2 s of CPU in the first 10 s period, then host reads after netdev
// churn costing 0.9 s a period (9 % of a core, as in TestAgentNetdevChurn,
// against the budget of 3 %) leave the probe rate alone and show no
// pressure; the same CPU spent outside them (probing) lowers it at the
// first period and further at the next.
func TestSelfProtectionUpkeep(t *testing.T) {
	now := time.Unix(1800000000, 0)
	var cpu time.Duration
	h := &fakeHost{}
	read := func(o collect.Options) (*host.Snapshot, error) {
		cpu += 150 * time.Millisecond // a read of the host
		return h.collect(o)
	}
	a, err := New(testConfig(), Deps{Collect: read, Open: newFakeNet().open, Now: func() time.Time { return now },
		CPU: func() time.Duration { return cpu }, Log: slog.New(slog.NewTextHandler(&syncBuf{}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a.govAt, a.govCPU = now, cpu
	scale := func() float64 { v, _ := value(gather(t, a.Registry()), metricProbeScale); return v }
	pressure := func() float64 { v, _ := value(gather(t, a.Registry()), metricPressure, "reason", "cpu"); return v }

	// Start-up: the peer list (2 s of CPU), the first read and plan.
	res := &cpuResolver{fakeResolver: fakeResolver{addrs: []netip.Addr{netip.MustParseAddr("10.0.0.2")}},
		cost: func() { cpu += 2 * time.Second }}
	w, err := newPeerWatcher(PeersConfig{DNS: "peers.example", DNSInterval: time.Minute}, res, func(string, error) {}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	w.upkeep = a.upkeep
	w.refresh(context.Background(), true, false)
	a.peers = <-w.out
	a.read()
	now = now.Add(governPeriod)
	cpu += 50 * time.Millisecond // probing: 0.5 % of a core
	a.govern()
	if scale() != 1 || pressure() != 0 {
		t.Fatalf("after start-up: scale %v, cpu pressure %v; want 1 and 0", scale(), pressure())
	}
	// Churn: six reads a period.
	for p := range 5 {
		for range 6 {
			a.read()
		}
		now = now.Add(governPeriod)
		cpu += 50 * time.Millisecond
		a.govern()
		if scale() != 1 || pressure() != 0 {
			t.Fatalf("churn period %d: scale %v, cpu pressure %v; want 1 and 0", p, scale(), pressure())
		}
	}
	// Probing at 9 % of a core.
	for p, want := range []float64{0.5, 0.25} {
		a.read()
		now = now.Add(governPeriod)
		cpu += 900 * time.Millisecond
		a.govern()
		if scale() != want || pressure() != float64(p+1) {
			t.Fatalf("busy probing, period %d: scale %v, cpu pressure %v; want %v and %d", p, scale(), pressure(), want, p+1)
		}
	}
}
