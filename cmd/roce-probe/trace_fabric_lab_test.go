//go:build lab && linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/roce"
)

// traceDoc is what the lab tests read of `trace -o json`.
type traceDoc struct {
	Paths []struct {
		UDPSport   int      `json:"udp_sport"`
		UDPSports  []int    `json:"udp_sports"`
		FlowLabels []uint32 `json:"flow_labels"`
		Reached    bool     `json:"reached"`
		Hops       []struct {
			Status  string  `json:"status"`
			Address *string `json:"address"`
			DSCP    *int    `json:"dscp"`
			ECN     *int    `json:"ecn"`
			Arrived *struct {
				DSCP int `json:"dscp"`
				ECN  int `json:"ecn"`
			} `json:"arrived"`
		} `json:"hops"`
		Changes []struct {
			Field     string `json:"field"`
			From      int    `json:"from_value"`
			To        int    `json:"to_value"`
			BeforeTTL int    `json:"before_ttl"`
			AtTTL     int    `json:"at_ttl"`
		} `json:"changes"`
	} `json:"paths"`
	PortsTried int    `json:"ports_tried"`
	Stop       string `json:"stop"`
}

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
// destination. The flow label trace names for each spine is the one
// whose RC traffic (perftest --flow_label, rxe's QP modified to RTR with
// it) crosses that spine, captured on both spines.
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

	check := func(t *testing.T, d traceDoc, silentSpine string) map[string]uint32 {
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
		return labels
	}

	var labels map[string]uint32
	t.Run("IPv4", func(t *testing.T) {
		d := labTrace(t, h5.Name, exitFinding, "--dev", h5.RDMADevice, "--gid-index", "auto", "--dst", h7.IP4.Addr().String(), "--tclass", "106", "--paths", "4", "--min-ports", "16", "--timeout", "1s")
		labels = check(t, d, "")
	})
	t.Run("IPv6", func(t *testing.T) {
		check(t, labTrace(t, h6.Name, exitFinding, "--netdev", lab.HostNIC, "--dst", h8.IP6.Addr().String(), "--tclass", "106", "--paths", "4", "--min-ports", "16", "--timeout", "1s"), "")
	})
	t.Run("FlowLabel", func(t *testing.T) {
		if len(labels) != 2 {
			t.Skip("the IPv4 trace did not name a flow label per spine")
		}
		ci, err := lab.GIDIndex(h5.RDMADevice, h5.IP4.Addr(), lab.HostNIC)
		if err != nil {
			t.Fatal(err)
		}
		si, err := lab.GIDIndex(h7.RDMADevice, h7.IP4.Addr(), lab.HostNIC)
		if err != nil {
			t.Fatal(err)
		}
		for i, sp := range lab.Spines {
			fl := labels[sp]
			// trace --flow-label predicts the path...
			d := labTrace(t, h5.Name, exitFinding, "--netdev", lab.HostNIC, "--dst", h7.IP4.Addr().String(), "--tclass", "106", "--flow-label", fmt.Sprint(fl), "--timeout", "1s")
			if len(d.Paths) != 1 || d.Paths[0].Hops[1].Address == nil || spineOfAddr(ls, *d.Paths[0].Hops[1].Address) != sp {
				t.Fatalf("trace --flow-label %#x: %+v, want the path through %s", fl, d.Paths, sp)
			}
			sport := roce.FlowLabelToUDPSourcePort(fl)
			if d.Paths[0].UDPSport != int(sport) {
				t.Errorf("trace --flow-label %#x traced port %d, want %d", fl, d.Paths[0].UDPSport, sport)
			}
			// ... and rxe's RC traffic with that flow label takes it.
			caps := map[string]*lab.Capture{}
			for _, s := range lab.Spines {
				caps[s] = ls.Router(s).Port(h7.Leaf).Capture()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			lab.Perftest("ib_write_bw", h5.Host, h7.Host, ci, si, 23100+i, 5, 1024, fmt.Sprintf("--flow_label=%d", fl)).Run(t, ctx)
			cancel()
			seen := map[string]map[uint16]int{}
			for s, c := range caps {
				seen[s] = rcPorts(c.Stop(), h5.IP4.Addr(), h7.IP4.Addr())
			}
			if seen[sp][sport] == 0 {
				t.Errorf("flow label %#x: no RC frame h5 → h7 from port %d crossed %s; RC frames by spine and port: %v", fl, sport, sp, seen)
			}
			for s, ports := range seen {
				for p := range ports {
					if p != sport || s != sp {
						t.Errorf("flow label %#x: RC frames from port %d crossed %s, want only port %d through %s: %v", fl, p, s, sport, sp, seen)
					}
				}
			}
		}
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
