package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/topology"
)

// suspectFleet serves 12 fake agents on loopback, 4 NICs under each of
// the ToRs leaf-a, leaf-b, leaf-c (host i is node-i, address 10.0.0.(1+i)
// on 10.0.0.0/16: fabrictest.Host moves the rxe snapshot's addresses by
// i). Every agent probes its 3 ToR-mates (100 probes each) and the 8 NICs
// of the other ToRs (20 each), as docs/json.md's "agent_pairs" shows
// them. lost(src, dst, scope, probes) injects the faults. The first half
// of the agents say their ToR in their snapshot (topology.tor), the
// others only through their peers' pair detail (the ToR their probe
// replies carried). It returns the agents' URLs.
func suspectFleet(t *testing.T, lost func(src, dst int, probes uint64) uint64) []string {
	t.Helper()
	base, err := os.ReadFile(hostFixtures + "rxe.json")
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	tor := func(i int) string { return []string{"leaf-a", "leaf-b", "leaf-c"}[i/4] }
	addr := func(i int) string { return fmt.Sprintf("10.0.0.%d", 1+i) }
	var urls []string
	for i := 0; i < n; i++ {
		s, err := fabrictest.Host(base, fmt.Sprintf("node-%d", i), i)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			s.Topology = &host.Topology{Attachments: []topology.Attachment{{Netdev: "veth0", Switch: tor(i), Source: topology.SourceConfig, Age: -1}}}
		}
		snap, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var pairs []map[string]any
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			probes, scope := uint64(20), "inter_tor"
			if tor(i) == tor(j) {
				probes, scope = 100, "tor"
			}
			l := lost(i, j, probes)
			marks := map[string]any{"vlan": nil, "pcp": nil, "vlan_chain": nil, "dscp": 26, "ecn": 2, "ecn_name": "ECT(0)", "ttl": 64, "udp_sport": 49152}
			var received any = marks
			var rtt any = 42.0
			if l == probes {
				received, rtt = nil, nil
			}
			pairs = append(pairs, map[string]any{"peer": fmt.Sprintf("node-%d", j), "address": addr(j), "tor": tor(j), "flow": "rdma", "scope": scope,
				"rate": float64(probes) / 20, "sports": 8, "probes": probes, "answered": probes - l, "lost": l,
				"loss_ratio": float64(l) / float64(probes), "rtt_us": rtt, "sent": marks, "received": received, "error": nil})
		}
		body, err := json.Marshal(map[string]any{"round": 88600000, "probe_scale": 1, "pairs": pairs})
		if err != nil {
			t.Fatal(err)
		}
		srv := fabrictest.AgentWithPairs(snap, body)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls
}

// A dead NIC (node-1, under leaf-a: every probe to or from it lost) and
// a lossy uplink of leaf-c (3 in 20 of the probes between leaf-c's NICs
// and the other ToRs' lost) are named — exactly those two suspects, the
// NIC by its address —, and fabric exits 1.
func TestFabricSuspects(t *testing.T) {
	urls := suspectFleet(t, func(src, dst int, probes uint64) uint64 {
		switch {
		case src == 1 || dst == 1:
			return probes
		case (src/4 == 2) != (dst/4 == 2):
			return 3
		}
		return 0
	})
	suspects := fabricSuspects(t, "--agents", strings.Join(urls, ","))
	var got []string
	for _, s := range suspects {
		got = append(got, fmt.Sprintf("%s nic=%s tor=%s spine=%s", s.Kind, strOrNull(s.NIC), strOrNull(s.ToR), strOrNull(s.Spine)))
		if s.Evidence == "" || s.Pairs == 0 {
			t.Errorf("%+v: no evidence", s)
		}
	}
	want := []string{"link nic=null tor=leaf-c spine=null", "nic nic=10.0.0.2 tor=leaf-a spine=null"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("suspects:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The NIC lost every probe with its 11 peers (3 of them ToR-mates).
	for _, s := range suspects {
		if s.Kind == "nic" && s.Pairs != 11 {
			t.Errorf("nic suspect: %d pairs, want 11", s.Pairs)
		}
	}
	tout, _, code := runCLI(t, "", "fabric", "--agents", strings.Join(urls, ","))
	if code != exitFinding || !strings.Contains(tout, "suspects: 2") || !strings.Contains(tout, "10.0.0.2") || !strings.Contains(tout, "leaf-c") {
		t.Errorf("table: exit %d\n%s", code, tout)
	}
	hout, _, code := runCLI(t, "", "fabric", "--agents", strings.Join(urls, ","), "-o", "html")
	if code != exitFinding || !strings.Contains(hout, `data-kind="nic"`) || !strings.Contains(hout, `data-kind="link"`) {
		t.Errorf("html: exit %d, no nic and link suspects\n%.3000s", code, hout)
	}
}

// Without loss there are no suspects: an empty list, and (the hosts
// agreeing) exit 0.
func TestFabricNoSuspects(t *testing.T) {
	urls := suspectFleet(t, func(src, dst int, probes uint64) uint64 { return 0 })
	out, stderr, code := runCLI(t, "", "fabric", "--agents", strings.Join(urls, ","), "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d, want 0: %s", code, stderr)
	}
	if !strings.Contains(out, `"suspects": []`) {
		t.Errorf("want an empty suspects list:\n%.2000s", out)
	}
	// The table says so, and the HTML page alike.
	out, _, _ = runCLI(t, "", "fabric", "--agents", strings.Join(urls, ","))
	if !strings.Contains(out, "\nno suspect: no probe was lost or remarked\n") {
		t.Errorf("table: want \"no suspect: no probe was lost or remarked\":\n%.2000s", out)
	}
	out, _, _ = runCLI(t, "", "fabric", "--agents", strings.Join(urls, ","), "-o", "html")
	if !strings.Contains(out, `<p id="no-suspect">No suspect: no probe was lost or remarked.</p>`) {
		t.Errorf("html: want the same sentence:\n%.2000s", out)
	}
	// One probe lost between one pair, nothing else: loss at random, no
	// rule names anything, and the table says how many pairs lost.
	urls = suspectFleet(t, func(src, dst int, probes uint64) uint64 {
		if src == 0 && dst == 1 {
			return 1
		}
		return 0
	})
	out, stderr, code = runCLI(t, "", "fabric", "--agents", strings.Join(urls, ","))
	if code != exitOK || !strings.Contains(out, "\nno single suspect: 1 pair lost probes and 0 pairs saw them remarked, but none of localisation's rules") {
		t.Errorf("one probe lost: exit %d, want 0 and \"no single suspect: 1 pair lost probes\":\n%.2000s%s", code, out, stderr)
	}
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// fabric --prometheus names the suspects of the agents' probe series as
// --agents does of their /pairs: a fake Prometheus holding 12 agents with
// a dead NIC (10.0.1.2, leaf-a) and a lossy ToR (leaf-c) injected
// (fabric/testdata/README.md): exactly those two, exit 1, in the JSON,
// the table and the HTML page (suspects and matrix).
func TestFabricPrometheusSuspects(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile("../../fabric/testdata/" + name + ".prom")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	prom, err := fabrictest.Prometheus([]fabrictest.Target{{Metrics: read("faults"), Before: read("faults-before")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prom.Close)
	var got []string
	for _, s := range fabricSuspects(t, "--prometheus", prom.URL, "--host-label", "node") {
		got = append(got, fmt.Sprintf("%s nic=%s tor=%s pairs=%d", s.Kind, strOrNull(s.NIC), strOrNull(s.ToR), s.Pairs))
	}
	want := []string{"nic nic=10.0.1.2 tor=leaf-a pairs=9", "tor nic=null tor=leaf-c pairs=12"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("suspects:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	tout, _, code := runCLI(t, "", "fabric", "--prometheus", prom.URL, "--host-label", "node")
	if code != exitFinding || !strings.Contains(tout, "suspects: 2") || !strings.Contains(tout, "10.0.1.2") {
		t.Errorf("table: exit %d\n%s", code, tout)
	}
	hout, _, code := runCLI(t, "", "fabric", "--prometheus", prom.URL, "--host-label", "node", "-o", "html")
	if code != exitFinding || !strings.Contains(hout, `data-kind="nic"`) || !strings.Contains(hout, `data-kind="tor"`) ||
		!strings.Contains(hout, `title="leaf-b → leaf-a: 1200 sent, 60 lost, 0 remarked"`) {
		t.Errorf("html: exit %d, no nic and tor suspects or matrix cell\n%.3000s", code, hout)
	}
}

// jsonSuspect is a suspect of `fabric -o json` (docs/json.md, fabric_suspect).
type jsonSuspect struct {
	Kind     string  `json:"kind"`
	NIC      *string `json:"nic"`
	ToR      *string `json:"tor"`
	Spine    *string `json:"spine"`
	Pairs    int     `json:"pair_count"`
	Evidence string  `json:"evidence"`
}

// fabricSuspects runs `fabric ARGS -o json`, which must exit 1 (suspects
// are findings) with output in the vocabulary, and returns its suspects.
func fabricSuspects(t *testing.T, args ...string) []jsonSuspect {
	t.Helper()
	out, stderr, code := runCLI(t, "", append(append([]string{"fabric"}, args...), "-o", "json")...)
	if code != exitFinding {
		t.Fatalf("fabric %v: exit %d, want 1: %s", args, code, stderr)
	}
	checkOutput(t, "fabric -o json", out)
	var doc struct {
		Suspects []jsonSuspect `json:"suspects"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Suspects
}
