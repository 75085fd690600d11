//go:build linux

package netnstest_test

import (
	"testing"

	"github.com/roce-probe/roce-probe/internal/netnstest"
)

// Two namespaces joined by a veth pair, as a test builds them. (It needs
// root, so it is compiled here but not run.)
func Example() {
	t := &testing.T{}
	netnstest.RequireRoot(t)
	a, b := netnstest.New(t, "a"), netnstest.New(t, "b")
	netnstest.Veth(t, a, "a0", "02:00:00:00:00:0a", b, "b0", "02:00:00:00:00:0b")
	netnstest.Run(t, "ip", "-n", a, "addr", "add", "10.99.0.1/24", "dev", "a0")
}
