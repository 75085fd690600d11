package topology_test

import (
	"fmt"
	"time"

	"github.com/roce-probe/roce-probe/topology"
)

// lldpd's table, as `lldpcli -f json show neighbors` prints it, and the
// attachment of each netdev decided from it and the configuration.
func Example() {
	out := []byte(`{"lldp": {"interface": {"eth2": {"via": "LLDP", "rid": "1", "age": "0 day, 00:00:12",
	  "chassis": {"leaf-07": {"id": {"type": "mac", "value": "d2:31:68:05:c7:9b"}}},
	  "port": {"id": {"type": "ifname", "value": "Ethernet12"}, "ttl": "120"}}}}}`)
	table, err := topology.ParseLLDPCli(out)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range topology.Attach([]string{"eth2", "eth3"}, topology.Observations{Now: time.Now(), LLDPD: table,
		Config: map[string]string{"eth3": "leaf-08"}}) {
		fmt.Println(a.Netdev, a.Switch, a.SwitchPort, a.Source, a.Age)
	}
	// Output:
	// eth2 leaf-07 Ethernet12 lldpd 12s
	// eth3 leaf-08  config -1ns
}
