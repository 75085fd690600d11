package agent_test

import (
	"fmt"

	"github.com/roce-probe/roce-probe/internal/agent"
)

// A configuration file over the defaults, checked; a bad value names its
// line and field.
func ExampleParseConfig() {
	cfg := agent.Default()
	err := agent.ParseConfig([]byte(`
peers:
  dns: roce-probe.monitoring.svc.cluster.local
flows:
  - name: rdma
    select: {family: ipv4, netdev: eth0.100}
    tclass: 106
    sl: 3
`), "agent.yaml", &cfg)
	if err == nil {
		err = cfg.Validate()
	}
	fmt.Println(err, cfg.Listen, cfg.Interval, cfg.Probe.Rate, cfg.Flows[0].Select.RoCE, cfg.Flows[0].HopLimit)

	bad := agent.Default()
	err = agent.ParseConfig([]byte("probe:\n  timeout: 2\n"), "agent.yaml", &bad)
	fmt.Println(err)
	// Output:
	// <nil> :9469 15s 1 v2 64
	// agent.yaml:2: probe.timeout: "2" is not a duration: want a number with a unit, e.g. 15s, 500ms, 2m
}

// A flow given on the command line (--flow).
func ExampleParseFlow() {
	f, err := agent.ParseFlow("name=rdma,netdev=eth0,family=ipv4,tclass=106,sl=3")
	fmt.Println(f.Name, f.Select.Netdev, *f.TClass, *f.SL, err)
	// Output: rdma eth0 106 3 <nil>
}
