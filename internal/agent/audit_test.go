package agent

import (
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/collect"
)

// The audit's metrics over two reads of an mlx5 host between which an
// application sent 2000000 RoCE packets on priority 0 while its RoCE
// priority is 3 (audit/testdata/README.md): the packets are off on
// priority 0, and every other priority and "unknown" read 0. Before the
// second read there is no interval, and no series.
func TestAuditMetrics(t *testing.T) {
	cfg := testConfig()
	cfg.Flows = nil
	cfg.Interval = time.Hour // the second read comes from a link change
	ta, fc := startFixtureAgent(t, cfg, "../../audit/testdata/mlx5-prio0-before", "../../audit/testdata/mlx5-prio0-after")
	eventually(t, 5*time.Second, "first read", func() bool { _, ok := value(gather(t, ta.Registry()), metricRDMAStatistic); return ok })
	if _, ok := value(gather(t, ta.Registry()), metricAuditOff); ok {
		t.Fatal("an audit series after one read")
	}
	ta.watch.send(collect.Change{Kind: collect.ChangeLink, Netdev: "enp1s0f0", Ifindex: 2})
	eventually(t, 10*time.Second, "second read", func() bool { _, ok := value(gather(t, ta.Registry()), metricAuditOff); return ok })
	f := gather(t, ta.Registry())
	if got, ok := value(f, metricAuditRDMA, "netdev", "enp1s0f0"); !ok || got != 2000000 {
		t.Errorf("%s = %v (%v), want 2000000", metricAuditRDMA, got, ok)
	}
	for _, p := range auditPrios {
		want := 0.0
		if p == "0" {
			want = 2000000
		}
		if got, ok := value(f, metricAuditOff, "netdev", "enp1s0f0", "prio", p); !ok || got != want {
			t.Errorf("%s{prio=%q} = %v (%v), want %v", metricAuditOff, p, got, ok, want)
		}
	}
	if n := len(f[metricAuditOff].GetMetric()); n != 9 {
		t.Errorf("%d %s series, want 9 (priorities 0..7 and unknown of enp1s0f0)", n, metricAuditOff)
	}
	fc.mu.Lock()
	reads := fc.n
	fc.mu.Unlock()
	if reads != 2 {
		t.Errorf("%d reads, want 2", reads)
	}
}
