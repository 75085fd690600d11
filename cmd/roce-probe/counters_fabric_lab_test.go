//go:build lab

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// RC counters between fabric hosts (7.x): ibv_rc_pingpong from h1 to h2,
// on VLAN 100 over IPv4 and untagged over IPv6 (5 round trips of 4096-byte
// SENDs, 4 packets each, and their ACKs), with each host's NIC captured.
// Between `roce-probe counters --netns hN --dev rxeN -o json` before and
// after, each device's sent_pkts and rcvd_pkts rose by exactly the RoCE
// frames its NIC sent and received, sent_bytes and rcvd_bytes by exactly
// their IP datagrams' lengths (20-byte IPv4 and 40-byte IPv6 headers
// included); the reports equal sysfs (checkCounterSet), and what h1 sent
// is what h2 received.
func TestFabricCountersRC(t *testing.T) {
	sw := lab.UseFabric(t)
	cl, srv := sw.Host("h1"), sw.Host("h2")
	base, _ := lab.FabricNetByName("untagged")
	for i, c := range []struct {
		net string
		v6  bool
	}{{"vlan100", false}, {"untagged", true}} {
		t.Run(fmt.Sprintf("%s-v6=%v", c.net, c.v6), func(t *testing.T) {
			n, _ := lab.FabricNetByName(c.net)
			caddr, saddr := cl.Addr(n, c.v6), srv.Addr(n, c.v6)
			ci, si := gidIdx(t, cl, caddr, n.Netdev), gidIdx(t, srv, saddr, n.Netdev)
			c1, c2 := sw.CaptureHost(cl.Name), sw.CaptureHost(srv.Name)
			b1, b2 := readCounters(t, cl.Name, cl.RDMADevice), readCounters(t, srv.Name, srv.RDMADevice)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			lab.RCPingpong(cl, srv, ci, si, 21500+i, 5).Run(t, ctx)
			sentinel(t, cl.Name, srv.IPv4(base).Addr(), c1, c2)
			a1, a2 := readCounters(t, cl.Name, cl.RDMADevice), readCounters(t, srv.Name, srv.RDMADevice)
			checkCounterSet(t, a1, cl.RDMADevice)
			checkCounterSet(t, a2, srv.RDMADevice)
			f1, f2 := c1.Stop(), c2.Stop()
			_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), fmt.Sprintf("counters-rc-%s-h1.pcapng", c.net)), lab.HostNIC, f1)
			_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), fmt.Sprintf("counters-rc-%s-h2.pcapng", c.net)), lab.HostNIC, f2)
			tx1, rx1 := countRoCE(f1, fromAddr(caddr)), countRoCE(f1, toAddr(caddr))
			tx2, rx2 := countRoCE(f2, fromAddr(saddr)), countRoCE(f2, toAddr(saddr))
			if tx1.pkts == 0 || tx1.pkts != rx2.pkts || tx2.pkts != rx1.pkts || tx1.ipBytes != rx2.ipBytes {
				t.Fatalf("h1 sent %v, h2 received %v; h2 sent %v, h1 received %v", tx1, rx2, tx2, rx1)
			}
			checkCounted(t, b1, a1, cl.RDMADevice, tx1, rx1)
			checkCounted(t, b2, a2, srv.RDMADevice, tx2, rx2)
		})
	}
}
