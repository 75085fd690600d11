package fabric_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/fabric"
	"github.com/roce-probe/roce-probe/internal/testenv"
)

// chromium runs headless Chromium (Debian package chromium) on a file
// with args, within a minute, and returns its standard output. Its
// profile is a fresh directory; networking is not needed.
func chromium(t *testing.T, page string, args ...string) []byte {
	t.Helper()
	bin := testenv.Tool(t, "chromium")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND"}, args...)
	all = append(all, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, all...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.String())
	}
	return out.Bytes()
}

// renderChromium writes in's page to a file, and returns the DOM headless
// Chromium builds from it and the path of its screenshot (width × height
// pixels, kept as name in a new directory of $TMPDIR, its path logged), checked to be a
// picture: that size, more than a few colours.
func renderChromium(t *testing.T, in fabric.HTMLInput, name string, width, height int) (dom, shot string) {
	t.Helper()
	var b bytes.Buffer
	if err := fabric.WriteHTML(&b, in); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "fabric.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom = string(chromium(t, page, "--dump-dom"))

	dir, err := os.MkdirTemp("", "roce-probe-fabric-report-")
	if err != nil {
		t.Fatal(err)
	}
	shot = filepath.Join(dir, name)
	chromium(t, page, "--hide-scrollbars", fmt.Sprintf("--window-size=%d,%d", width, height), "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	// A page drawn, not a blank one: more than a few colours.
	colours := map[uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 3 {
		for x := bd.Min.X; x < bd.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|b>>8] = true
		}
	}
	if bd.Dx() != width || bd.Dy() != height || len(colours) < 16 {
		t.Errorf("screenshot %s: %v, %d colours", shot, bd, len(colours))
	}
	t.Logf("screenshot: %s", shot)
	return dom, shot
}

// domTable returns the table of class as the browser built it (with the
// tbody it adds): what the parser moved out of a table would not be in
// it.
func domTable(t *testing.T, dom, class string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<table class="` + class + `">\s*<tbody>.*?</tbody></table>`).FindString(dom)
	if m == "" {
		t.Fatalf("no table %s in the rendered DOM:\n%s", class, dom)
	}
	return m
}

// The HTML report of htmlFixture's fabric in a real browser: the DOM
// Chromium builds from the page names the suspect (node-2's NIC), marks
// the bad pairs' matrix cells (leaf1 → leaf1 lost, leaf1 → leaf0 lost and
// remarked) with a class and a symbol and word, and shows node-2's odd
// GID index. The lab's report (TestWriteHTMLChromiumLab) names the
// remarking hop, a suspect between a ToR and a spine.
func TestWriteHTMLChromium(t *testing.T) {
	dom, _ := renderChromium(t, htmlFixture(t), "fixture.png", 1100, 1500)
	suspects := regexp.MustCompile(`(?s)<h2 id="suspects">.*?</table>`).FindString(dom)
	if !strings.Contains(suspects, `<tr class="suspect" data-kind="nic"><td>nic</td><td class="name">node-2</td>`) {
		t.Errorf("the suspect node-2 (nic) is not named in the rendered DOM:\n%s", suspects)
	}
	matrix := domTable(t, dom, "matrix")
	for _, want := range []string{
		`<td class="lost" title="leaf1 → leaf1: 120 sent, 90 lost, 0 remarked" data-cell="leaf1 → leaf1: 120 sent, 90 lost, 0 remarked"><span class="sym">✗</span>lost 90/120</td>`,
		`<td class="lost remark" title="leaf1 → leaf0: 60 sent, 30 lost, 30 remarked" data-cell="leaf1 → leaf0: 60 sent, 30 lost, 30 remarked"><span class="sym">✗⚑</span>lost 30/60, remarked 30</td>`,
		`<td class="ok" title="leaf0 → leaf0: 30 sent, 0 lost, 0 remarked" data-cell="leaf0 → leaf0: 30 sent, 0 lost, 0 remarked"><span class="sym">✓</span>0/30</td>`,
	} {
		if !strings.Contains(matrix, want) {
			t.Errorf("the rendered matrix lacks %s:\n%s", want, matrix)
		}
	}
	gids := domTable(t, dom, "gid-index")
	row := regexp.MustCompile(`(?s)<tr data-host="node-2">.*?</tr>`).FindString(gids)
	if !strings.Contains(row, `<td class="odd" title="node-2 on 10.100.0.0/16"><span class="sym">≠</span>mlx5_0/1 v2 9 (differs), mlx5_0/1 v1 8 (differs)</td>`) {
		t.Errorf("node-2's odd GID index is not shown in the rendered DOM: %q", row)
	}
}

// labFixture is the report of the lab's leaf-spine (testdata/leafspine-lab,
// README.md) as roce-probe fabric --agents makes it: the four agents'
// /snapshot and /pairs while spine1's port toward leaf2 remarked DSCP 26
// to 0, h8's GID of fd32::/64 at another index than the others'.
func labFixture(t *testing.T) fabric.HTMLInput {
	t.Helper()
	var snaps []string
	var pairs []fabric.AgentPairs
	for _, h := range labHosts {
		snaps = append(snaps, filepath.Join("testdata/leafspine-lab", h+".snapshot.json.gz"))
		f, err := os.Open(filepath.Join("testdata/leafspine-lab", h+".pairs.json"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := fabric.DecodeAgentPairs(f, 0)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p)
	}
	hosts, err := fabric.ReadFiles(snaps, 1)
	if err != nil {
		t.Fatal(err)
	}
	obs, suspects := fabric.LocalizeAgents(hosts, pairs)
	r, err := fabric.Analyze(hosts, fabric.SourceAgents)
	if err != nil {
		t.Fatal(err)
	}
	r.Suspects, r.Localized = suspects, true
	return fabric.HTMLInput{Report: r, Hosts: hosts, Pairs: obs.Pairs, Suspects: suspects, Title: "roce-probe fabric report: the lab's leaf-spine, spine1 remarking toward leaf2"}
}

// labHosts are the lab leaf-spine's hosts and labLeaf their leaves
// (docs/lab.md, "The leaf-spine").
var (
	labHosts = []string{"h5", "h6", "h7", "h8"}
	labLeaf  = map[string]string{"h5": "leaf1", "h6": "leaf1", "h7": "leaf2", "h8": "leaf2"}
)

// The HTML report of the lab's leaf-spine (labFixture) in a real browser:
// the ToR × ToR matrix marks leaf1 → leaf2, the direction through the
// remarking port, remarked with ⚑ and the counts of the agents' /pairs
// (summed here from their JSON: probes, lost, and the probes each pair's
// faulty source ports saw remarked), and every other
// cell ✓; h8's GID index of fd32::/64 is marked ≠ (5, where the lab's
// sysfs had 4 for h5, h6, h7); the suspect is the remarking hop the
// agents' traces saw, leaf2 – spine1 (the port injected: spine1's toward
// leaf2), and nothing else. Its screenshot is docs/img/fabric-report.png.
func TestWriteHTMLChromiumLab(t *testing.T) {
	in := labFixture(t)
	type cell struct{ sent, lost, remarked uint64 }
	want := map[[2]string]*cell{}
	for _, h := range labHosts {
		b, err := os.ReadFile(filepath.Join("testdata/leafspine-lab", h+".pairs.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Pairs []struct {
				Peer           string
				Probes, Lost   uint64
				Sent, Received *struct{ DSCP int }
				SportFaults    []struct{ Remarked uint64 } `json:"sport_faults"`
			}
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		for _, p := range doc.Pairs {
			k := [2]string{labLeaf[h], labLeaf[p.Peer]}
			if want[k] == nil {
				want[k] = &cell{}
			}
			want[k].sent += p.Probes
			want[k].lost += p.Lost
			// The probes its faulty ports saw remarked (docs/json.md,
			// agent_sport_fault), else whether its last answered probe
			// arrived remarked (an agent without sport_faults).
			var rem uint64
			for _, f := range p.SportFaults {
				rem += f.Remarked
			}
			if rem == 0 && p.Sent != nil && p.Received != nil && p.Sent.DSCP != p.Received.DSCP {
				rem = 1
			}
			want[k].remarked += rem
		}
	}
	if c := want[[2]string{"leaf1", "leaf2"}]; c == nil || c.remarked == 0 {
		t.Fatalf("the fixture has no remarked leaf1 → leaf2 pair: %+v", c)
	}
	dom, _ := renderChromium(t, in, "lab.png", 1400, 1100)
	matrix := domTable(t, dom, "matrix")
	for k, c := range want {
		title := fmt.Sprintf("%s → %s: %d sent, %d lost, %d remarked", k[0], k[1], c.sent, c.lost, c.remarked)
		cls, text := `ok`, fmt.Sprintf(`<span class="sym">✓</span>0/%d`, c.sent)
		if c.lost != 0 {
			t.Errorf("%s → %s: the fixture lost %d probes: the remarking phase lost none", k[0], k[1], c.lost)
		}
		if k == [2]string{"leaf1", "leaf2"} {
			cls, text = `remark`, fmt.Sprintf(`<span class="sym">⚑</span>remarked %d/%d`, c.remarked, c.sent)
		} else if c.remarked != 0 {
			t.Errorf("%s → %s: %d pairs remarked in the fixture; only leaf1 → leaf2 crosses the remarking port", k[0], k[1], c.remarked)
		}
		cellHTML := fmt.Sprintf(`<td class="%s" title="%s" data-cell="%s">%s</td>`, cls, title, title, text)
		if !strings.Contains(matrix, cellHTML) {
			t.Errorf("the rendered matrix lacks %s:\n%s", cellHTML, matrix)
		}
	}
	suspects := regexp.MustCompile(`(?s)<h2 id="suspects">.*?<h2`).FindString(dom)
	rows := regexp.MustCompile(`<tr class="suspect" data-kind="([a-z_]+)"><td>[a-z_]+</td><td class="name">([^<]*)</td><td>\d+</td><td>([^<]*)</td>`).FindAllStringSubmatch(suspects, -1)
	if len(rows) != 1 || rows[0][1] != "remark" || rows[0][2] != "leaf2 – spine1" || !strings.Contains(rows[0][3], "dscp 26→0") {
		t.Errorf("the page's suspects %q, want the one remark leaf2 – spine1 (dscp 26→0): spine1's port toward leaf2 remarked\n%s", rows, suspects)
	}
	gids := domTable(t, dom, "gid-index")
	for h, w := range map[string]string{
		"h5": `<td class="ok" title="h5 on fd32::/64">rxe5/1 v2 4</td>`,
		"h8": `<td class="odd" title="h8 on fd32::/64"><span class="sym">≠</span>rxe8/1 v2 5 (differs)</td>`,
	} {
		row := regexp.MustCompile(`(?s)<tr data-host="` + h + `">.*?</tr>`).FindString(gids)
		if !strings.Contains(row, w) {
			t.Errorf("%s's GID index of fd32::/64 is not shown as %s in the rendered DOM: %q", h, w, row)
		}
	}
}
