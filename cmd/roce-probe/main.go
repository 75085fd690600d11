// Command roce-probe shows what RDMA traffic will look like on Ethernet —
// GID tables, VLANs, priorities, address handles — and checks it on the wire.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
