package ah

import (
	"net/netip"
	"testing"

	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

// benchNet is one namespace with n reachable IPv4 neighbours in 10.64/10
// on veth0, 100 more-specific routes and the lab routes, frozen.
func benchNet(tb testing.TB, n int) (*vlan.Namespace, []Attr) {
	nt := labNet(tb)
	nt.Routes = append(nt.Routes, vlan.Route{Table: vlan.TableMain, Type: vlan.RouteUnicast, Dst: pfx("10.64.0.0/10"), Dev: "veth0", Ifindex: 2})
	for i := 0; i < 100; i++ {
		nt.Routes = append(nt.Routes, vlan.Route{Table: vlan.TableMain, Type: vlan.RouteUnicast, Dst: netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 16, byte(i), 0}), 24), Gateway: ip("10.0.0.253"), Dev: "veth0", Ifindex: 2})
	}
	attrs := make([]Attr, n)
	for i := 0; i < n; i++ {
		a := netip.AddrFrom4([4]byte{10, 64 + byte(i>>16), byte(i >> 8), byte(i)})
		nt.Neighbors = append(nt.Neighbors, vlan.Neighbor{IP: a, Dev: "veth0", Ifindex: 2, MAC: vlan.MAC{2, 0, 0, byte(i >> 16), byte(i >> 8), byte(i)}, State: vlan.NUDReachable})
		attrs[i] = Attr{IsGlobal: true, PortNum: 1, SL: uint8(i & 7), GRH: GlobalRoute{SGIDIndex: 1, DGID: gid.FromAddr(a), HopLimit: 64, TrafficClass: uint8(i) & 0xFC, FlowLabel: uint32(i) & 0xFFFFF}}
	}
	nt.Freeze() // building the index is part of reading the snapshot
	return nt, attrs
}

// BenchmarkResolve100k resolves 100,000 distinct destinations against one
// snapshot of routes and neighbours (no netlink traffic): one op is all
// 100,000. Target: under 1 s per op (docs/performance.md).
func BenchmarkResolve100k(b *testing.B) {
	nt, attrs := benchNet(b, 100000)
	table := labTable()
	b.ReportAllocs()
	cpu0, haveCPU := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := NewResolver(table, nt, ResolveOptions{Driver: qos.DriverRXE, SrcQPN: 17})
		for _, a := range attrs {
			if _, err := r.Resolve(a); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e9, "s/100k")
	// CPU time of the process (all threads, GC included): the figure that
	// does not depend on how busy the machine's other processes keep it.
	if cpu1, _ := cpuTime(); haveCPU {
		b.ReportMetric((cpu1-cpu0).Seconds()/float64(b.N), "cpu-s/100k")
	}
}

// The benchmark's destinations must resolve to their own neighbours.
func TestBenchNetResolves(t *testing.T) {
	nt, attrs := benchNet(t, 1000)
	r := NewResolver(labTable(), nt, ResolveOptions{Driver: qos.DriverRXE})
	res, err := r.Resolve(attrs[999])
	if err != nil || res.Wire.DMAC.String() != "02:00:00:00:03:e7" {
		t.Fatalf("%v %v", res, err)
	}
}
