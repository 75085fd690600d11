package collect_test

import (
	"errors"
	"fmt"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
)

// Collect this host's RDMA section and list each device's ports with the
// netdev of each: the live read behind `roce-probe gids`. Without an RDMA
// device (or off Linux) it says so instead.
func ExampleCollect() {
	s, err := collect.Collect(collect.Options{Sections: collect.SectionRDMA})
	if errors.Is(err, collect.ErrNotLinux) {
		fmt.Println("not Linux: analyse a snapshot with package host instead")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	printPorts(s)
}

func printPorts(s *host.Snapshot) {
	if len(s.RDMA.Devices) == 0 {
		fmt.Println("no RDMA device")
	}
	for _, d := range s.RDMA.Devices {
		for _, p := range d.Ports {
			fmt.Println(d.Name, p.Port, p.Netdev)
		}
	}
}
