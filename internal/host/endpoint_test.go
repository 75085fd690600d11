package host

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// The lab topology of the rxe fixture: probes leave through veth0, with
// the tags of each stack outermost first (internal/lab/topology.go).
func TestWireDevice(t *testing.T) {
	ns, err := fixture(t, "rxe").Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		netdev string
		tags   []roce.VLANTag
	}{
		{"veth0", []roce.VLANTag{}},
		{"veth0.100", []roce.VLANTag{{TPID: 0x8100, ID: 100}}},
		{"veth0.q1000.10", []roce.VLANTag{{TPID: 0x88a8, ID: 1000}, {TPID: 0x8100, ID: 10}}},
	} {
		wire, tags, err := WireDevice(ns, c.netdev)
		if err != nil || wire != "veth0" || len(tags) != len(c.tags) {
			t.Errorf("%s: %s %v %v, want veth0 %v", c.netdev, wire, tags, err, c.tags)
			continue
		}
		for i := range tags {
			if tags[i] != c.tags[i] {
				t.Errorf("%s: tag %d = %+v, want %+v", c.netdev, i, tags[i], c.tags[i])
			}
		}
	}
	var ne *probe.NetdevError
	if _, _, err := WireDevice(ns, "eth9"); !errors.As(err, &ne) || ne.Netdev != "eth9" {
		t.Errorf("missing netdev: %v", err)
	}
	if _, _, err := WireDevice(ns, "lo"); err == nil || !strings.Contains(err.Error(), "want Ethernet") {
		t.Errorf("lo: %v", err)
	}
	if got := WireDevices(ns); strings.Join(got, ",") != "veth0" {
		t.Errorf("WireDevices = %v, want [veth0] (VLAN devices are captured on their lower device)", got)
	}
	ips, macs := LocalAddresses(ns)
	if len(macs) == 0 || !containsAddr(ips, "10.10.10.1") || !containsAddr(ips, "fd00:100::1") {
		t.Errorf("LocalAddresses = %v %v", ips, macs)
	}
}

func containsAddr(as []netip.Addr, s string) bool {
	for _, a := range as {
		if a.String() == s {
			return true
		}
	}
	return false
}

// With the next hop's MAC in the namespace's neighbour table, the
// endpoint resolves from the snapshot alone (no datagram is sent): source
// address from the netdev, next hop from the route, MAC from the table.
func TestResolveEndpointFromNamespace(t *testing.T) {
	ns, err := fixture(t, "rxe").Namespace("")
	if err != nil {
		t.Fatal(err)
	}
	ns.Neighbors = append(ns.Neighbors, vlan.Neighbor{IP: netip.MustParseAddr("10.10.10.2"), Dev: "veth0.q1000.10", Ifindex: 7,
		MAC: vlan.MAC{2, 0, 0, 0, 0, 2}, State: vlan.NUDReachable})
	ns.Freeze()
	e, err := ResolveEndpoint(ns, "veth0.q1000.10", netip.Addr{}, netip.MustParseAddr("10.10.10.2"), time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if e.Wire != "veth0" || len(e.Tags) != 2 || e.Src.String() != "10.10.10.1" || e.NextHop.String() != "10.10.10.2" ||
		e.DstMAC.String() != "02:00:00:00:00:02" || e.SrcMAC.String() != "02:00:00:00:00:01" {
		t.Errorf("endpoint = %+v", e)
	}
	if _, err := ResolveEndpoint(ns, "veth0.100", netip.Addr{}, netip.MustParseAddr("fd00:1010::9"), time.Millisecond); err == nil {
		t.Errorf("IPv6 destination with no route through veth0.100 resolved")
	}
	if _, err := ResolveEndpoint(ns, "veth0.q1000", netip.Addr{}, netip.MustParseAddr("10.0.0.2"), time.Millisecond); err == nil || !strings.Contains(err.Error(), "has no IPv4 address") {
		t.Errorf("a netdev without an IPv4 address: %v", err)
	}
}
