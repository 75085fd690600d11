package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/roce-probe/roce-probe/host"
)

// Writing a fleet of three hosts and reading one back.
func Example() {
	dir, _ := os.MkdirTemp("", "fabricgen")
	defer os.RemoveAll(dir)
	os.Args = []string{"fabricgen", "-n", "3", "-o", dir, "-base", "../../../host/testdata/mlx5-counters.json"}
	main()
	s, err := host.Load(filepath.Join(dir, "node-00002.json"))
	if err != nil {
		fmt.Println(err)
		return
	}
	l, _ := s.Namespaces[0].ByName("enp1s0f0")
	fmt.Println(s.Hostname, l.Addrs[0])
	// Output:
	// 3 snapshots: node-00000.json .. node-00002.json
	// node-00002 192.168.1.12/16
}
