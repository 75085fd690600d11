package fabric_test

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/topology"
)

// htmlFixture is a fabric of five mlx5-counters copies (docs/fabric.md's
// example fleet, fabrictest.VaryExample): node-2's enp1s0f0.100 GID pair
// moved from indexes 4 and 5 to 14 and 15 (its usable RoCE v2 index there
// becomes mv0's 9), node-3 PFC on priorities 3 and 4. node-0 and node-1
// are plugged into leaf0, node-2, node-3 and node-4 into leaf1. The probe
// window: node-2's NIC loses every probe with every peer (its ToR-mates
// node-3 and node-4 among them, who lose nothing between themselves), node-3's probes to node-0 arrive remarked, every other
// pair probed loses nothing.
func htmlFixture(t testing.TB) fabric.HTMLInput {
	t.Helper()
	base, err := os.ReadFile("../host/testdata/mlx5-counters.json")
	if err != nil {
		t.Fatal(err)
	}
	var hosts []fabric.Host
	for i, tor := range []string{"leaf0", "leaf0", "leaf1", "leaf1", "leaf1"} {
		name := "node-" + string(rune('0'+i))
		s, err := fabrictest.Host(base, name, i)
		if err != nil {
			t.Fatal(err)
		}
		fabrictest.VaryExample(i, s)
		s.Topology = &host.Topology{Attachments: []topology.Attachment{{Netdev: "enp1s0f0", Switch: tor, Source: topology.SourceConfig, Age: -1}}}
		h, err := fabric.FromSnapshot(s, name+".json")
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	r, err := fabric.Analyze(hosts, fabric.SourceFiles)
	if err != nil {
		t.Fatal(err)
	}
	pair := func(src, dst, srcToR, dstToR string, lost, remarked uint64) fabric.PairObservation {
		return fabric.PairObservation{Src: src, Dst: dst, SrcToR: srcToR, DstToR: dstToR, Sent: 30, Lost: lost, Remarked: remarked}
	}
	pairs := []fabric.PairObservation{
		pair("node-2", "node-3", "leaf1", "leaf1", 30, 0),
		pair("node-3", "node-2", "leaf1", "leaf1", 30, 0),
		pair("node-2", "node-4", "leaf1", "leaf1", 30, 0),
		pair("node-4", "node-3", "leaf1", "leaf1", 0, 0),
		pair("node-2", "node-0", "leaf1", "leaf0", 30, 0),
		pair("node-1", "node-2", "leaf0", "leaf1", 30, 0),
		pair("node-0", "node-1", "leaf0", "leaf0", 0, 0),
		pair("node-0", "node-3", "leaf0", "leaf1", 0, 0),
		pair("node-3", "node-0", "leaf1", "leaf0", 0, 30),
	}
	return fabric.HTMLInput{Report: r, Hosts: hosts, Pairs: pairs, Suspects: fabric.Localize(fabric.LocalizeInput{Pairs: pairs})}
}

// external matches what would make a browser fetch something: a URL in
// src or href, CSS @import or url(), a script, a linked resource.
var external = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//|@import|url\s*\(|<script|<link|<iframe|<object|<embed`)

func TestWriteHTML(t *testing.T) {
	in := htmlFixture(t)
	var b bytes.Buffer
	if err := fabric.WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if m := external.FindString(page); m != "" {
		t.Errorf("the page is not self-contained: %q", m)
	}
	for _, want := range []string{
		`<meta name="viewport"`,
		`@media print`,
		`class="scroll"`,
		// The suspect: node-2's NIC, from the construction.
		`<tr class="suspect" data-kind="nic"><td>nic</td><td class="name">node-2</td>`,
		// The matrix, by ToR (every pair's ToRs are known): leaf1→leaf1
		// lost node-2's 90 of 120; leaf1→leaf0 lost node-2's 30 of 60
		// and node-3's 30 remarked; leaf0→leaf0 lost nothing of 30.
		`<td class="lost" title="leaf1 → leaf1: 120 sent, 90 lost, 0 remarked" data-cell="leaf1 → leaf1: 120 sent, 90 lost, 0 remarked"><span class="sym">✗</span>lost 90/120</td>`,
		`<td class="lost remark" title="leaf1 → leaf0: 60 sent, 30 lost, 30 remarked"`,
		`<span class="sym">✗⚑</span>lost 30/60, remarked 30</td>`,
		`<td class="ok" title="leaf0 → leaf0: 30 sent, 0 lost, 0 remarked" data-cell="leaf0 → leaf0: 30 sent, 0 lost, 0 remarked"><span class="sym">✓</span>0/30</td>`,
		`ToR × ToR`,
		// The findings: gid_index with node-2 (leaf1) alone, pfc with
		// node-3 (leaf1) alone.
		`data-check="gid_index"`,
		`data-check="pfc"`,
		`node-0 (leaf0), node-1 (leaf0), node-3 (leaf1)`,
		`node-2 (leaf1)`,
		// The GID index table: node-2's odd index 9 (mv0's entry) marked.
		`<tr data-host="node-2"><th scope="row">node-2</th><td>leaf1</td>`,
		`<span class="sym">≠</span>`,
		`v2 9 (differs)`,
		`<span class="sym">✓</span>probed, nothing lost or remarked`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("page:\n%s", page)
	}
}

// Without topology the matrix is per host, and the page says so.
func TestWriteHTMLHostMatrix(t *testing.T) {
	in := htmlFixture(t)
	for i := range in.Pairs {
		in.Pairs[i].SrcToR, in.Pairs[i].DstToR = "", ""
	}
	in.Suspects = nil
	var b bytes.Buffer
	if err := fabric.WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		// No suspect, but pairs that lost (node-2's 5) and one remarked
		// (node-3 → node-0): not "nothing to blame".
		`<p id="no-suspect">No single suspect: 5 pairs lost probes and 1 pair saw them remarked`,
		`Host × host: the ToRs of some hosts are not known`,
		`<td class="lost" title="node-2 → node-3: 30 sent, 30 lost, 0 remarked"`,
		`<td class="remark" title="node-3 → node-0: 30 sent, 0 lost, 30 remarked"`,
		`<td class="none" title="node-0 → node-2: not probed"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// Nothing lost or remarked: said so.
	healthy := append([]fabric.PairObservation(nil), in.Pairs...)
	for i := range healthy {
		healthy[i].Lost, healthy[i].Remarked = 0, 0
	}
	b.Reset()
	if err := fabric.WriteHTML(&b, fabric.HTMLInput{Report: in.Report, Hosts: in.Hosts, Pairs: healthy}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<p id="no-suspect">No suspect: no probe was lost or remarked.</p>`) {
		t.Errorf("a healthy window must say nothing was lost or remarked")
	}
	// No probe results at all: no matrix, said so.
	in.Pairs = nil
	b.Reset()
	if err := fabric.WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "No probe results in this source") || strings.Contains(b.String(), `class="matrix"`) {
		t.Errorf("without pairs the page must say there are no probe results and show no matrix")
	}
}

// A remarking hop between two hops past the ToRs (a Clos of three
// tiers: no ToR, the hops "agg1 > spine2") is named by those hops alone,
// not "a ToR – agg1 > spine2"; one between a ToR and a spine by both.
func TestWriteHTMLRemarkNames(t *testing.T) {
	in := htmlFixture(t)
	in.Suspects = []fabric.Suspect{
		{Kind: fabric.SuspectRemark, Spine: "agg1 > spine2", Pairs: 2, Evidence: "e1"},
		{Kind: fabric.SuspectRemark, ToR: "leaf1", Spine: "spine1", Pairs: 2, Evidence: "e2"},
	}
	var b bytes.Buffer
	if err := fabric.WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<td class="name">agg1 &gt; spine2</td>`,
		`<td class="name">leaf1 – spine1</td>`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

func TestWriteHTMLNoReport(t *testing.T) {
	var b bytes.Buffer
	if err := fabric.WriteHTML(&b, fabric.HTMLInput{}); err == nil || b.Len() != 0 {
		t.Errorf("WriteHTML without a report: err %v, %d bytes written", err, b.Len())
	}
}
