package fabric_test

import (
	"bytes"
	"context"
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

// The HTML report of htmlFixture's fabric in a real browser: the DOM
// Chromium builds from the page names the suspect (node-2's NIC), marks
// the bad pairs' matrix cells (leaf1 → leaf1 lost, leaf1 → leaf0 lost and
// remarked) with a class and a symbol and word, and shows node-2's odd
// GID index; the screenshot is a picture of it (kept, its path logged).
func TestWriteHTMLChromium(t *testing.T) {
	var b bytes.Buffer
	if err := fabric.WriteHTML(&b, htmlFixture(t)); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "fabric.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, page, "--dump-dom"))

	// Each table as the browser built it (with the tbody it adds): what
	// the parser moved out of a table would not be in it.
	table := func(class string) string {
		m := regexp.MustCompile(`(?s)<table class="` + class + `">\s*<tbody>.*?</tbody></table>`).FindString(dom)
		if m == "" {
			t.Fatalf("no table %s in the rendered DOM:\n%s", class, dom)
		}
		return m
	}
	suspects := regexp.MustCompile(`(?s)<h2 id="suspects">.*?</table>`).FindString(dom)
	if !strings.Contains(suspects, `<tr class="suspect" data-kind="nic"><td>nic</td><td class="name">node-2</td>`) {
		t.Errorf("the suspect node-2 (nic) is not named in the rendered DOM:\n%s", suspects)
	}
	matrix := table("matrix")
	for _, want := range []string{
		`<td class="lost" title="leaf1 → leaf1: 120 sent, 90 lost, 0 remarked" data-cell="leaf1 → leaf1: 120 sent, 90 lost, 0 remarked"><span class="sym">✗</span>lost 90/120</td>`,
		`<td class="lost remark" title="leaf1 → leaf0: 60 sent, 30 lost, 30 remarked" data-cell="leaf1 → leaf0: 60 sent, 30 lost, 30 remarked"><span class="sym">✗⚑</span>lost 30/60, remarked 30</td>`,
		`<td class="ok" title="leaf0 → leaf0: 30 sent, 0 lost, 0 remarked" data-cell="leaf0 → leaf0: 30 sent, 0 lost, 0 remarked"><span class="sym">✓</span>0/30</td>`,
	} {
		if !strings.Contains(matrix, want) {
			t.Errorf("the rendered matrix lacks %s:\n%s", want, matrix)
		}
	}
	gids := table("gid-index")
	row := regexp.MustCompile(`(?s)<tr data-host="node-2">.*?</tr>`).FindString(gids)
	if !strings.Contains(row, `<td class="odd" title="node-2 on 10.100.0.0/16"><span class="sym">≠</span>mlx5_0/1 v2 9 (differs), mlx5_0/1 v1 8 (differs)</td>`) {
		t.Errorf("node-2's odd GID index is not shown in the rendered DOM: %q", row)
	}

	shot := filepath.Join(os.TempDir(), "roce-probe-fabric-report.png")
	os.Remove(shot)
	chromium(t, page, "--hide-scrollbars", "--window-size=1100,1500", "--screenshot="+shot)
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
	if bd.Dx() != 1100 || bd.Dy() != 1500 || len(colours) < 16 {
		t.Errorf("screenshot %s: %v, %d colours", shot, bd, len(colours))
	}
	t.Logf("screenshot: %s", shot)
}
