//go:build lab && linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/roce"
)

// spineOfAddr names the spine that owns address a ("" for none).
func spineOfAddr(ls *lab.LeafSpine, a string) string {
	for _, sp := range lab.Spines {
		for _, x := range ls.Router(sp).Addrs() {
			if x.String() == a {
				return sp
			}
		}
	}
	return ""
}

// labTrace runs `roce-probe trace ... -o json` in host ns and decodes it.
func labTrace(t *testing.T, ns string, want int, args ...string) traceDoc {
	t.Helper()
	r := runIn(t, ns, append(append([]string{"trace"}, args...), "-o", "json")...)
	if r.code != want {
		t.Fatalf("trace %v: exit %d, want %d:\n%s%s", args, r.code, want, r.stdout, r.stderr)
	}
	checkOutput(t, "trace -o json", r.stdout)
	var d traceDoc
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// On the leaf-spine (Linux 7.x), spine1's port toward leaf2 remarks DSCP
// 26 → 0 and spine2's bleaches ECN. trace from a host on leaf1 to one on
// leaf2, with roce-probe listen there, finds both spines and locates each
// change right after the spine that makes it (between hop 2, the spine,
// and hop 3, leaf2) on exactly the paths through it, over IPv4 (from the
// rxe GID, --gid-index auto) and IPv6 (from the netdev). With spine1
// answering no ICMP its hop is silent and the trace still reaches the
// destination. rxe's RC traffic (ibv_rc_pingpong, captured on both
// spines) takes the path trace --flow-label predicts for the flow label
// the kernel gave its QPs.
func TestTraceLeafSpine(t *testing.T) {
	ls := lab.UseLeafSpine(t)
	h5, h7, h6, h8 := ls.Host("h5"), ls.Host("h7"), ls.Host("h6"), ls.Host("h8")
	ls.Router(lab.Spine1).Port(h7.Leaf).RemarkDSCP(26, 0)
	ls.Router(lab.Spine2).Port(h7.Leaf).BleachECN()
	// IPv6 datagrams to 4791 reaching a namespaced rxe have crashed 7.3.4
	// (docs/lab.md): h8's listener sees the probes, its rxe does not.
	ls.ShieldRXE(h8.Name, roce.MinUDPSourcePort, 0xffff)
	startListener(t, h7.Name, 3*time.Minute, "--netdev", lab.HostNIC)
	startListener(t, h8.Name, 3*time.Minute, "--netdev", lab.HostNIC)

	check := func(t *testing.T, d traceDoc, silentSpine string) {
		t.Helper()
		labels := map[string]uint32{}
		for _, p := range d.Paths {
			if !p.Reached || len(p.Hops) != 4 || p.Hops[3].Arrived == nil {
				t.Errorf("path of port %d: reached %v, %d hops: want 4 hops to the listener: %+v", p.UDPSport, p.Reached, len(p.Hops), p.Hops)
				continue
			}
			sp, before := "", 2
			if a := p.Hops[1].Address; a != nil {
				sp = spineOfAddr(ls, *a)
			} else if silentSpine != "" && p.Hops[1].Status == "silent" {
				// The change is located across the silent spine.
				sp, before = silentSpine, 1
			}
			var want []string
			switch sp {
			case lab.Spine1:
				want = []string{fmt.Sprintf("dscp 26→0 %d→3", before)}
			case lab.Spine2:
				want = []string{fmt.Sprintf("ecn 2→0 %d→3", before)}
			default:
				t.Errorf("path of port %d: hop 2 is %v: want a spine", p.UDPSport, p.Hops[1].Address)
				continue
			}
			var got []string
			for _, c := range p.Changes {
				got = append(got, fmt.Sprintf("%s %d→%d %d→%d", c.Field, c.From, c.To, c.BeforeTTL, c.AtTTL))
			}
			if !slices.Equal(got, want) {
				t.Errorf("path through %s: changes %v, want %v", sp, got, want)
			}
			if _, ok := labels[sp]; ok {
				t.Errorf("two paths through %s", sp)
			}
			labels[sp] = p.FlowLabels[0]
		}
		if len(labels) != 2 {
			t.Errorf("paths through %v: want both spines (%d ports tried: %s)", labels, d.PortsTried, d.Stop)
		}
	}

	t.Run("IPv4", func(t *testing.T) {
		check(t, labTrace(t, h5.Name, exitFinding, "--dev", h5.RDMADevice, "--gid-index", "auto", "--dst", h7.IP4.Addr().String(), "--tclass", "106", "--paths", "4", "--min-ports", "16", "--timeout", "1s"), "")
	})
	t.Run("Table", func(t *testing.T) {
		// The table names the hop; docs/trace.md shows this output.
		r := runIn(t, h5.Name, "trace", "--netdev", lab.HostNIC, "--dst", h7.IP4.Addr().String(), "--tclass", "106", "--paths", "4", "--min-ports", "16", "--timeout", "1s")
		if r.code != exitFinding || !strings.Contains(r.stdout, "change: dscp 26→0 between hop 2 (10.31.11.2) and hop 3") || !strings.Contains(r.stdout, "change: ecn 2→0 between hop 2 (10.31.12.2) and hop 3") {
			t.Errorf("exit %d, want %d and both changes located after their spine:\n%s%s", r.code, exitFinding, r.stdout, r.stderr)
		}
		t.Logf("roce-probe trace --netdev eth0 --dst %s --tclass 106 --paths 4 --min-ports 16\n%s", h7.IP4.Addr(), r.stdout)
	})
	t.Run("IPv6", func(t *testing.T) {
		check(t, labTrace(t, h6.Name, exitFinding, "--netdev", lab.HostNIC, "--dst", h8.IP6.Addr().String(), "--tclass", "106", "--paths", "4", "--min-ports", "16", "--timeout", "1s"), "")
	})
	t.Run("FlowLabel", func(t *testing.T) {
		// The RC QPs of ibv_rc_pingpong set no flow label: the kernel
		// gives the connection rdma_calc_flow_label(qpn, dest_qpn)
		// (rdma_get_udp_sport, rxe_modify_qp), a label roce-probe
		// computes from the two QP numbers the program prints. (The
		// lab's perftest 4.5 has no --flow_label.)
		ci, err := lab.GIDIndex(h5.RDMADevice, h5.IP4.Addr(), lab.HostNIC)
		if err != nil {
			t.Fatal(err)
		}
		si, err := lab.GIDIndex(h7.RDMADevice, h7.IP4.Addr(), lab.HostNIC)
		if err != nil {
			t.Fatal(err)
		}
		crossed := map[string]bool{}
		for i := 0; i < 4 && len(crossed) < 2; i++ {
			caps := map[string]*lab.Capture{}
			for _, s := range lab.Spines {
				caps[s] = ls.Router(s).Port(h7.Leaf).Capture()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			_, cli := lab.RCPingpong(h5.Host, h7.Host, ci, si, 23100+i, 5).Run(t, ctx)
			cancel()
			m := qpnRE.FindAllStringSubmatch(cli.Output(), -1)
			if len(m) != 2 {
				t.Fatalf("ibv_rc_pingpong printed %d QPNs, want 2 (local, remote):\n%s", len(m), cli.Output())
			}
			var qpn [2]uint64
			for j := range qpn {
				qpn[j], _ = strconv.ParseUint(m[j][1], 16, 32)
			}
			fl := roce.FlowLabelFromQPNs(uint32(qpn[0]), uint32(qpn[1]))
			sport := roce.FlowLabelToUDPSourcePort(fl)
			seen := map[string]map[uint16]int{}
			spine := ""
			for s, c := range caps {
				seen[s] = rcPorts(c.Stop(), h5.IP4.Addr(), h7.IP4.Addr())
				for p := range seen[s] {
					if p != sport || spine != "" {
						t.Errorf("QPNs %#x, %#x (flow label %#x, port %d): RC frames h5 → h7 by spine and port %v: want port %d through one spine", qpn[0], qpn[1], fl, sport, seen, sport)
					}
					spine = s
				}
			}
			if spine == "" {
				t.Fatalf("no RC frame h5 → h7 crossed a spine: %v", seen)
			}
			crossed[spine] = true
			d := labTrace(t, h5.Name, exitFinding, "--netdev", lab.HostNIC, "--dst", h7.IP4.Addr().String(), "--tclass", "106", "--flow-label", fmt.Sprint(fl), "--timeout", "1s")
			if len(d.Paths) != 1 || d.Paths[0].UDPSport != int(sport) || len(d.Paths[0].Hops) < 2 || d.Paths[0].Hops[1].Address == nil {
				t.Fatalf("trace --flow-label %#x: %+v, want one path of port %d", fl, d.Paths, sport)
			}
			if got := spineOfAddr(ls, *d.Paths[0].Hops[1].Address); got != spine {
				t.Errorf("trace --flow-label %#x predicts %s, the RC traffic with that flow label crossed %s", fl, got, spine)
			}
			t.Logf("QPNs %#x, %#x: flow label %#x, port %d: RC traffic and trace through %s", qpn[0], qpn[1], fl, sport, spine)
		}
	})
	t.Run("RDMACM", func(t *testing.T) {
		// An rdma_cm connection (ucmatose, ToS 106): its flow label is
		// (client port * 31 + server port) & 0xfffff of the rdma_cm
		// ports (cma_get_roce_udp_flow_label); the client's port is in
		// the CM REQ's private data (the CMA header), captured on the
		// spines with the data frames.
		caps := map[string]*lab.Capture{}
		for _, s := range lab.Spines {
			caps[s] = ls.Router(s).Port(h7.Leaf).Capture()
		}
		const serverPort = 7471
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		lab.Ucmatose(h5.Host, h7.Host, h7.IP4.Addr(), serverPort, 2, 106).Run(t, ctx)
		cancel()
		client, spine, dataPorts := 0, "", map[uint16]string{}
		for s, c := range caps {
			frames := c.Stop()
			if p, ok := cmReqClientPort(frames, h5.IP4.Addr(), h7.IP4.Addr()); ok {
				client = int(p)
			}
			for p := range rcPorts(frames, h5.IP4.Addr(), h7.IP4.Addr()) {
				dataPorts[p], spine = s, s
			}
		}
		if client == 0 || len(dataPorts) != 1 {
			t.Fatalf("CM REQ client port %d, RC data ports %v: want the REQ and one port", client, dataPorts)
		}
		fl := (uint32(client)*31 + serverPort) & 0xfffff
		sport := roce.FlowLabelToUDPSourcePort(fl)
		if dataPorts[sport] == "" {
			t.Errorf("rdma_cm ports %d:%d: flow label %#x gives port %d, the connection's data left from %v", client, serverPort, fl, sport, dataPorts)
		}
		d := labTrace(t, h5.Name, exitFinding, "--netdev", lab.HostNIC, "--dst", h7.IP4.Addr().String(), "--tos", "106", "--rdma-cm-ports", fmt.Sprintf("%d:%d", client, serverPort), "--timeout", "1s")
		if len(d.Paths) != 1 || d.Paths[0].UDPSport != int(sport) || len(d.Paths[0].Hops) < 2 || d.Paths[0].Hops[1].Address == nil {
			t.Fatalf("trace --rdma-cm-ports %d:%d: %+v, want one path of port %d", client, serverPort, d.Paths, sport)
		}
		if got := spineOfAddr(ls, *d.Paths[0].Hops[1].Address); got != spine {
			t.Errorf("trace --rdma-cm-ports %d:%d predicts %s, the connection's data crossed %s", client, serverPort, got, spine)
		}
		t.Logf("rdma_cm ports %d:%d: flow label %#x, port %d: data and trace through %s", client, serverPort, fl, sport, spine)
	})
	t.Run("NoICMP", func(t *testing.T) {
		ls.Router(lab.Spine1).NoICMP()
		d := labTrace(t, h5.Name, exitFinding, "--netdev", lab.HostNIC, "--dst", h7.IP4.Addr().String(), "--tclass", "106", "--paths", "4", "--min-ports", "16", "--timeout", "300ms", "--tries", "2")
		silent := 0
		for _, p := range d.Paths {
			if len(p.Hops) > 1 && p.Hops[1].Status == "silent" {
				silent++
			}
		}
		if silent != 1 {
			t.Errorf("%d paths with a silent hop 2, want 1 (spine1's)", silent)
		}
		check(t, d, lab.Spine1)
	})
}

// qpnRE finds the QP numbers ibv_rc_pingpong prints ("local address:
// LID 0x0000, QPN 0x000011, ..." then the remote's).
var qpnRE = regexp.MustCompile(`QPN 0x([0-9a-fA-F]+)`)

// cmReqClientPort returns the rdma_cm port of the client in a CM REQ
// (QP1, management class 0x07, attribute 0x0010) src → dst of a capture:
// the port of the CMA header that opens the REQ's private data (IBTA
// CM REQ: private data at bytes 140..231 of the MAD's data, after the
// 24-byte MAD header; drivers/infiniband/core/cma.c cma_format_hdr:
// version, IP version, then the source port).
func cmReqClientPort(frames []lab.Frame, src, dst netip.Addr) (uint16, bool) {
	d := roce.NewDecoder()
	var p roce.Packet
	for _, f := range frames {
		if d.Decode(f.Data, &p) != nil || p.Version != 2 || p.Src != src || p.Dst != dst || p.BTH.DestQP != 1 {
			continue
		}
		mad := d.Layers().Payload.Data
		if len(mad) < 168 || mad[1] != 0x07 || mad[16] != 0 || mad[17] != 0x10 {
			continue
		}
		return uint16(mad[166])<<8 | uint16(mad[167]), true
	}
	return 0, false
}

// rcPorts counts the RC frames (BTH opcode below 0x20: RC) from src to dst
// of a capture by UDP source port.
func rcPorts(frames []lab.Frame, src, dst netip.Addr) map[uint16]int {
	out := map[uint16]int{}
	d := roce.NewDecoder()
	var p roce.Packet
	for _, f := range frames {
		if d.Decode(f.Data, &p) != nil || p.Version != 2 || p.Src != src || p.Dst != dst || uint8(p.BTH.Opcode) >= 0x20 {
			continue
		}
		out[p.SrcPort]++
	}
	return out
}
