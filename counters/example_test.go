package counters_test

import (
	"fmt"
	"time"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/qos"
)

// Two samples of an mlx5 port one second apart: the rates, and what they
// say about a host whose RoCE priority 3 has PFC on.
func ExampleAnalyze() {
	t0 := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	sample := func(t time.Time, oos, pause uint64) *counters.Sample {
		return &counters.Sample{Time: t,
			RDMA:    []counters.RDMAPort{{Device: "mlx5_0", Port: 1, Source: counters.SourceNetlink, HWCounters: map[string]uint64{"out_of_sequence": oos}}},
			Ethtool: []counters.Ethtool{{Netdev: "enp1s0f0", Driver: "mlx5_core", Stats: map[string]uint64{"rx_prio3_pause": pause}}},
		}
	}
	dcb := &qos.DCB{Supported: true, PFC: &qos.PFC{Enabled: 1 << 3}}
	r := counters.Analyze(counters.Input{
		Prev:    sample(t0, 100, 7),
		Cur:     sample(t0.Add(time.Second), 130, 9),
		Ports:   []counters.PortInfo{{Device: "mlx5_0", Port: 1, Driver: "mlx5", Netdev: "enp1s0f0", Real: "enp1s0f0"}},
		Netdevs: []counters.NetdevInfo{{Netdev: "enp1s0f0", DCB: dcb}},
	})
	c := r.Ports[0].Counters["out_of_sequence"]
	fmt.Println("out_of_sequence:", c.Value, *c.Rate, "/s,", *c.Meaning)
	p3 := r.Priorities[3]
	fmt.Println("priority 3 rx_pause:", p3.Values[counters.PrioRxPause].Value, *p3.Values[counters.PrioRxPause].Rate, "/s from", p3.Values[counters.PrioRxPause].Counter)
	for _, f := range r.Findings {
		fmt.Println(f.Severity, f.Code)
	}
	// Output:
	// out_of_sequence: 130 30 /s, out_of_sequence
	// priority 3 rx_pause: 9 2 /s from rx_prio3_pause
	// error loss_on_lossless
}
