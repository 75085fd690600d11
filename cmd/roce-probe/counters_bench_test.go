package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/roce-probe/roce-probe/host"
)

var (
	bigCountersOnce sync.Once
	bigCountersPath string
	bigCountersErr  error
)

// bigCountersSnapshot writes, once per run, the mlx5 counters fixture
// grown to 16 devices × 2 ports on 32 netdevs (enp1s0f0 ... enp16s0f1):
// every port with mlx5's 31 hw_counters (Linux 6.1 names) and 4 PMA
// counters, every netdev with its DCB, DCQCN, PFC counters and an
// ethtool set of the fixture's 83 per-priority and port names plus 170
// other port-level ones (about 250 statistics: the size of a ConnectX
// ethtool -S set without the per-queue statistics, which the collector
// leaves out).
func bigCountersSnapshot(tb testing.TB) string {
	bigCountersOnce.Do(func() {
		bigCountersPath, bigCountersErr = writeBigCounters()
	})
	if bigCountersErr != nil {
		tb.Fatal(bigCountersErr)
	}
	return bigCountersPath
}

func writeBigCounters() (string, error) {
	raw, err := os.ReadFile(countersFixture)
	if err != nil {
		return "", err
	}
	var d map[string]any
	if err := json.Unmarshal(raw, &d); err != nil {
		return "", err
	}
	clone := func(v any) any {
		b, _ := json.Marshal(v)
		var c any
		json.Unmarshal(b, &c)
		return c
	}
	ns := d["namespaces"].([]any)[0].(map[string]any)
	links := ns["links"].([]any)
	var phys map[string]any
	for _, l := range links {
		if l.(map[string]any)["name"] == "enp1s0f1" {
			phys = l.(map[string]any)
		}
	}
	rdma := d["rdma"].(map[string]any)
	dev0 := rdma["devices"].([]any)[0].(map[string]any)
	port2 := dev0["ports"].([]any)[1]
	dcb0 := d["dcb"].([]any)[0]
	cnt := d["counters"].(map[string]any)
	rp := cnt["rdma"].([]any)[0]
	eth := cnt["ethtool"].([]any)[0].(map[string]any)
	stats := eth["stats"].(map[string]any)
	for i := 0; i < 170; i++ {
		// Size filler: the other port-level statistics of a ConnectX
		// set (software, vport, physical, PCIe), without the per-queue
		// ones the collector leaves out.
		stats[fmt.Sprintf("port_stat_%03d", i)] = 0
	}
	pfc := cnt["pfc"].([]any)[0]
	st := d["settings"].(map[string]any)
	cm, tc, dq := st["rdma_cm_defaults"].([]any)[0], st["traffic_class_overrides"].([]any)[0], st["dcqcn"].([]any)[0]
	var devs, dcbs, rports, eths, pfcs, cms, tcs, dqs []any
	idx := 100
	for i := 0; i < 16; i++ {
		dev := fmt.Sprintf("mlx5_%d", i)
		var ports []any
		for p := 1; p <= 2; p++ {
			nd := fmt.Sprintf("enp%ds0f%d", i+1, p-1)
			if i > 0 {
				l := clone(phys).(map[string]any)
				l["name"], l["ifindex"], l["addrs"] = nd, idx, []any{}
				idx++
				links = append(links, l)
			}
			po := clone(port2).(map[string]any)
			po["port"], po["netdev"], po["state"] = p, nd, "ACTIVE"
			ports = append(ports, po)
			x := clone(dcb0).(map[string]any)
			x["netdev"] = nd
			dcbs = append(dcbs, x)
			r := clone(rp).(map[string]any)
			r["device"], r["port"] = dev, p
			rports = append(rports, r)
			e := clone(eth).(map[string]any)
			e["netdev"] = nd
			eths = append(eths, e)
			f := clone(pfc).(map[string]any)
			f["netdev"] = nd
			pfcs = append(pfcs, f)
			for _, s := range []struct {
				src  any
				dst  *[]any
				port bool
			}{{cm, &cms, true}, {tc, &tcs, true}, {dq, &dqs, false}} {
				c := clone(s.src).(map[string]any)
				if s.port {
					c["device"], c["port"] = dev, p
				} else {
					c["netdev"] = nd
				}
				*s.dst = append(*s.dst, c)
			}
		}
		dv := clone(dev0).(map[string]any)
		dv["device"], dv["ports"] = dev, ports
		devs = append(devs, dv)
	}
	ns["links"], rdma["devices"], d["dcb"] = links, devs, dcbs
	cnt["rdma"], cnt["ethtool"], cnt["pfc"] = rports, eths, pfcs
	st["rdma_cm_defaults"], st["traffic_class_overrides"], st["dcqcn"] = cms, tcs, dqs
	dir, err := os.MkdirTemp("", "roce-counters-bench")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "counters-16x2.json")
	b, _ := json.Marshal(d)
	if _, err := host.Decode(bytes.NewReader(b)); err != nil {
		return "", fmt.Errorf("the grown fixture is not a valid snapshot: %w", err)
	}
	return p, os.WriteFile(p, b, 0o644)
}

// The grown fixture is what the benchmark says it is.
func TestBigCountersFixture(t *testing.T) {
	s, err := host.Load(bigCountersSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RDMA.Devices) != 16 || len(s.Counters.RDMA) != 32 || len(s.Counters.Ethtool) != 32 || len(s.Counters.Ethtool[31].Stats) != 253 {
		t.Fatalf("%d devices, %d ports, %d netdevs, %d stats", len(s.RDMA.Devices), len(s.Counters.RDMA), len(s.Counters.Ethtool), len(s.Counters.Ethtool[31].Stats))
	}
	out, stderr, code := runCLI(t, "", "counters", "--from", bigCountersSnapshot(t), "--output", "json")
	d := decodeCounters(t, out)
	if code != exitOK || len(d.Ports) != 32 || len(d.Netdevs) != 32 || len(d.Priorities) != 256 {
		t.Fatalf("exit %d (%s): %d ports, %d netdevs, %d priorities", code, strings.TrimSpace(stderr), len(d.Ports), len(d.Netdevs), len(d.Priorities))
	}
}

// BenchmarkCountersFrom16x2 is `roce-probe counters --from FILE -o json`
// in-process on 16 devices × 2 ports and 32 netdevs: decode and validate
// the snapshot, normalize, analyze, write the JSON (docs/performance.md).
func BenchmarkCountersFrom16x2(b *testing.B) {
	f := bigCountersSnapshot(b)
	var out, errb bytes.Buffer
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out.Reset()
		errb.Reset()
		if code := run([]string{"counters", "--from", f, "--output", "json"}, strings.NewReader(""), &out, &errb); code != exitOK {
			b.Fatalf("exit %d: %s", code, errb.String())
		}
	}
}

// BenchmarkCountersLoad16x2 is the part of BenchmarkCountersFrom16x2
// that reads the snapshot (host.Load: decode and validate), for the
// breakdown in docs/performance.md.
func BenchmarkCountersLoad16x2(b *testing.B) {
	f := bigCountersSnapshot(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := host.Load(f); err != nil {
			b.Fatal(err)
		}
	}
}
