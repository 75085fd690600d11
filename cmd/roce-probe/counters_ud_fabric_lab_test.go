//go:build lab && ibverbs && cgo

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/verbs"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
)

// UD counters between fabric hosts (7.x): h1's rxe1 sends UD SENDs through
// the library's cgo UD path (internal/verbs) to a UD QP on h2's rxe2, on
// VLAN 100 (IPv4), untagged (IPv6) and the QinQ network (IPv4), payloads
// of 13 to 1000 bytes, each one received; and `roce-probe send` puts 3
// probes (raw UD SENDs to QP probe.DefaultDestQP, which rxe2 does not
// have) on the wire from h1 to h2 on VLAN 100. With each host's NIC
// captured, between `roce-probe counters --netns hN --dev rxeN -o json`
// before and after:
//
//   - rxe1's sent_pkts rose by exactly the UD SENDs its NIC sent, not the
//     probes (sent from a raw socket: rxe_xmit_packet never sees them), and
//     its rcvd_pkts by nothing;
//   - rxe2's rcvd_pkts rose by exactly the UD SENDs its NIC received, not
//     the probes that arrived with them (rxe_rcv drops a packet for a QP
//     that does not exist before counting it), and its sent_pkts by
//     nothing;
//   - sent_bytes and rcvd_bytes (7.x) by exactly those SENDs' IP
//     datagrams' lengths; the reports equal sysfs (checkCounterSet).
func TestFabricCountersUD(t *testing.T) {
	sw := lab.UseFabric(t)
	from, to := sw.Host("h1"), sw.Host("h2")
	base, _ := lab.FabricNetByName("untagged")
	vlan100, _ := lab.FabricNetByName("vlan100")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	rctx, err := verbs.Open(to.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer rctx.Close()
	rx, err := rctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: cntQKey})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	sctx, err := verbs.Open(from.RDMADevice)
	if err != nil {
		t.Fatal(err)
	}
	defer sctx.Close()
	tx, err := sctx.NewUDConfig(verbs.UDConfig{Port: 1, QKey: cntQKey})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()

	c1, c2 := sw.CaptureHost(from.Name), sw.CaptureHost(to.Name)
	b1, b2 := readCounters(t, from.Name, from.RDMADevice), readCounters(t, to.Name, to.RDMADevice)

	sends := []struct {
		net  string
		v6   bool
		size int
	}{{"vlan100", false, 1000}, {"untagged", true, 13}, {"qinq1000.10", false, 300}}
	for i, s := range sends {
		n, err := lab.FabricNetByName(s.net)
		if err != nil {
			t.Fatal(err)
		}
		src, dst := from.Addr(n, s.v6), to.Addr(n, s.v6)
		ah, err := tx.CreateAH(verbs.AHAttr{IsGlobal: true, Port: 1, SGIDIndex: uint8(gidIdx(t, from, src, n.Netdev)), DGID: dst.As16(), HopLimit: 64})
		if err != nil {
			t.Fatal(err)
		}
		payload := bytes.Repeat([]byte{byte('A' + i)}, s.size)
		copy(payload, fmt.Sprintf("cnt-fabric-ud-%d-", i))
		err = tx.Send(ah, rx.QPN(), cntQKey, payload, 5*time.Second)
		ah.Close()
		if err != nil {
			t.Fatal(err)
		}
		wc, err := rx.Recv(10 * time.Second)
		if err != nil {
			t.Fatalf("send %d (%s): %s received nothing: %v", i, s.net, to.RDMADevice, err)
		}
		if wc.Status != verbs.WCSuccess || wc.SrcQP != tx.QPN() || !bytes.Contains(wc.Payload, payload) {
			t.Fatalf("send %d (%s): completion status %d (%s) from QP %#x: want success from %#x with the payload", i, s.net, wc.Status, wc.StatusText, wc.SrcQP, tx.QPN())
		}
	}

	// Probes: frames rxe does not send and does not accept.
	const probes = 3
	rp, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	psrc := from.IPv4(vlan100).Addr()
	cmd := exec.CommandContext(ctx, rp, "send", "--dev", from.RDMADevice, "--gid-index", fmt.Sprint(gidIdx(t, from, psrc, vlan100.Netdev)),
		"--dst", to.IPv4(vlan100).Addr().String(), "--count", fmt.Sprint(probes), "--interval", "10ms", "--timeout", "200ms", "-o", "ndjson")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.StartIn(from.Name, cmd); err != nil {
		t.Fatal(err)
	}
	// No listener answers: exit 1 (loss), never 2.
	if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != exitFinding {
		t.Fatalf("send in %s: %v: %s\n%s", from.Name, err, errb.String(), out.String())
	}

	sentinel(t, from.Name, to.IPv4(base).Addr(), c1, c2)
	a1, a2 := readCounters(t, from.Name, from.RDMADevice), readCounters(t, to.Name, to.RDMADevice)
	checkCounterSet(t, a1, from.RDMADevice)
	checkCounterSet(t, a2, to.RDMADevice)
	f1, f2 := c1.Stop(), c2.Stop()
	_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), "counters-ud-h1.pcapng"), lab.HostNIC, f1)
	_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), "counters-ud-h2.pcapng"), lab.HostNIC, f2)

	isProbe := func(p *roce.Packet) bool { return p.BTH.DestQP == probe.DefaultDestQP }
	ud := func(h lab.Host, out bool) func(p *roce.Packet) bool {
		return func(p *roce.Packet) bool {
			a := p.Dst
			if out {
				a = p.Src
			}
			return !isProbe(p) && isHostAddr(h, a)
		}
	}
	tx1, rx1 := countRoCE(f1, ud(from, true)), countRoCE(f1, ud(from, false))
	tx2, rx2 := countRoCE(f2, ud(to, true)), countRoCE(f2, ud(to, false))
	p1, p2 := countRoCE(f1, isProbe), countRoCE(f2, isProbe)
	if tx1.pkts != uint64(len(sends)) || tx1.opcodes[roce.OpcodeUDSendOnly] != len(sends) || rx2.pkts != tx1.pkts || rx2.ipBytes != tx1.ipBytes {
		t.Fatalf("h1's NIC sent %v, h2's received %v: want the %d UD SENDs", tx1, rx2, len(sends))
	}
	if p1.pkts != probes || p2.pkts != probes {
		t.Fatalf("probes: %v on h1's NIC, %v on h2's: want %d", p1, p2, probes)
	}
	t.Logf("probes (not counted by rxe): %v", p1)
	checkCounted(t, b1, a1, from.RDMADevice, tx1, rx1)
	checkCounted(t, b2, a2, to.RDMADevice, tx2, rx2)
}

// isHostAddr reports whether a is one of host h's addresses on a fabric
// network.
func isHostAddr(h lab.Host, a netip.Addr) bool {
	for _, n := range lab.FabricNets {
		if h.Addr(n, false) == a || h.Addr(n, true) == a {
			return true
		}
	}
	return false
}
