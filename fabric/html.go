package fabric

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/roce-probe/roce-probe/gid"
)

// HTMLInput is what WriteHTML shows: a report (Analyze) and what it was
// made from.
type HTMLInput struct {
	Report *Report
	// Hosts are the hosts the report compared: each one's usable GID
	// index per network and its switch (ToR) come from them.
	Hosts []Host
	// Pairs are one window's probe results and Suspects what Localize
	// made of them; nil when the source has no probe results (snapshots;
	// agents without /pairs; Prometheus without the agents' probe series).
	Pairs    []PairObservation
	Suspects []Suspect
	// Title heads the page; "" for "roce-probe fabric report".
	Title string
}

// MaxMatrixSide is the most rows (and columns) the HTML report's matrix
// shows: beyond it, only the ToRs (or hosts) of pairs that lost probes or
// saw them remarked are shown, and the page says so.
const MaxMatrixSide = 64

// Symbols of the HTML report's cells: each state has a symbol and a
// word, so that colour is never the only signal (docs/fabric.md).
const (
	symbolOK      = "✓" // probed, nothing lost or remarked
	symbolLost    = "✗" // probes lost
	symbolRemark  = "⚑" // probes arrived with DSCP remarked
	symbolOdd     = "≠" // a value (a GID index) other than most hosts'
	symbolNoProbe = "·" // not probed
)

// WriteHTML writes the report as one self-contained HTML page — inline
// CSS, no script, nothing fetched when it is opened, readable printed and
// on a phone —: the findings with the hosts (and their switches) of each
// value, the ToR×ToR matrix of probe loss and DSCP remarking (host×host
// when the ToRs are not known, which the page says), the suspects with
// their evidence, and each host's usable GID index per network. It
// formats in.Report as the table and JSON outputs do; it compares
// nothing itself. The page is built whole before anything is written.
func WriteHTML(w io.Writer, in HTMLInput) error {
	if in.Report == nil {
		return fmt.Errorf("fabric: WriteHTML needs a report")
	}
	p := buildPage(in)
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

type htmlPage struct {
	Title     string
	Report    *Report
	Findings  []htmlFinding
	Unchecked []CheckStatus
	Matrix    *htmlMatrix
	Suspects  []htmlSuspect
	// NoSuspect says, when localisation named no suspect, what the probe
	// results hold.
	NoSuspect string
	Networks  []string
	GIDRows   []htmlGIDRow
	Symbols   map[string]string
}

type htmlFinding struct {
	Finding Finding
	Title   string
	Groups  []htmlGroup
}

type htmlGroup struct {
	Text     string
	Ports    int
	Hosts    []string // "host (switch)"
	More     int
	Majority bool
}

type htmlMatrix struct {
	ByToR   bool
	Trimmed int // rows left out
	Labels  []string
	Rows    []htmlMatrixRow
}

type htmlMatrixRow struct {
	Label string
	Cells []htmlCell
}

type htmlCell struct {
	Class, Symbol, Text, Title string
}

type htmlSuspect struct {
	Suspect Suspect
	Name    string
}

type htmlGIDRow struct {
	Host   string
	Switch string
	Cells  []htmlCell
}

// maxGroupHosts is how many hosts of a finding's group the page names.
const maxGroupHosts = 50

func buildPage(in HTMLInput) htmlPage {
	r := in.Report
	p := htmlPage{Title: in.Title, Report: r, Symbols: map[string]string{
		"ok": symbolOK, "lost": symbolLost, "remark": symbolRemark, "odd": symbolOdd, "none": symbolNoProbe}}
	if p.Title == "" {
		p.Title = "roce-probe fabric report"
	}
	switchOf := map[string]string{}
	for _, h := range in.Hosts {
		for _, a := range h.Attachments {
			if a.Switch != "" && switchOf[h.Name] == "" {
				switchOf[h.Name] = a.Switch
			}
		}
	}
	for _, c := range r.Checks {
		if !c.Available {
			p.Unchecked = append(p.Unchecked, c)
		}
	}
	// odd[(host, network, type)]: the host's ports are in a group of a
	// gid_index finding other than the largest.
	type oddKey struct {
		host, network string
		t             gid.Type
	}
	odd := map[oddKey]bool{}
	for _, f := range r.Findings {
		hf := htmlFinding{Finding: f, Title: f.Check + " " + f.Network}
		if f.PerType {
			hf.Title += " " + f.Type.String() + " " + f.Family
		}
		for gi, g := range f.Groups {
			hg := htmlGroup{Text: g.Text, Ports: len(g.Ports), Majority: gi == 0}
			seen := map[string]bool{}
			for _, pr := range g.Ports {
				if f.Check == "gid_index" && gi > 0 {
					odd[oddKey{pr.Host, f.Network, f.Type}] = true
				}
				if seen[pr.Host] {
					continue
				}
				seen[pr.Host] = true
				if len(hg.Hosts) == maxGroupHosts {
					hg.More++
					continue
				}
				name := pr.Host
				if s := switchOf[pr.Host]; s != "" {
					name += " (" + s + ")"
				}
				hg.Hosts = append(hg.Hosts, name)
			}
			hf.Groups = append(hf.Groups, hg)
		}
		p.Findings = append(p.Findings, hf)
	}
	if in.Pairs != nil {
		p.Matrix = buildMatrix(in.Pairs)
	}
	for _, s := range in.Suspects {
		name := s.NIC
		switch s.Kind {
		case SuspectToR:
			name = s.ToR
		case SuspectSpine:
			name = s.Spine
		case SuspectRemark:
			if s.NIC != "" { // between a NIC and its ToR
				name = s.NIC + " – " + orText(s.ToR, "its ToR")
				break
			}
			if s.ToR == "" && s.Spine != "" { // between two hops past the ToRs (a deeper Clos): "a > b"
				name = s.Spine
				break
			}
			name = orText(s.ToR, "a ToR") + " – " + orText(s.Spine, "a spine")
		case SuspectLink:
			name = s.ToR + " – " + orText(s.Spine, "a spine")
		}
		p.Suspects = append(p.Suspects, htmlSuspect{Suspect: s, Name: name})
	}
	if p.Matrix != nil && len(in.Suspects) == 0 {
		why := NoSuspectReason(in.Pairs)
		p.NoSuspect = strings.ToUpper(why[:1]) + why[1:] + "."
	}
	for _, n := range r.Networks {
		p.Networks = append(p.Networks, n.Network)
	}
	hosts := append([]Host(nil), in.Hosts...)
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
	for _, h := range hosts {
		row := htmlGIDRow{Host: h.Name, Switch: switchOf[h.Name]}
		for _, n := range p.Networks {
			c := htmlCell{Class: "none", Symbol: "", Text: "—", Title: "no usable GID on " + n}
			var texts []string
			for _, a := range h.Attachments {
				if a.Network != n {
					continue
				}
				for _, t := range []gid.Type{gid.TypeRoCEv2, gid.TypeRoCEv1} {
					ix := a.indexOf(t)
					if ix == nil {
						continue
					}
					s := fmt.Sprintf("%s %d", shortType(t), *ix)
					if len(h.Attachments) > 1 {
						s = fmt.Sprintf("%s/%d %s", a.Device, a.Port, s)
					}
					if odd[oddKey{h.Name, n, t}] {
						c.Class, c.Symbol = "odd", symbolOdd
						s += " (differs)"
					}
					texts = append(texts, s)
				}
			}
			if len(texts) > 0 {
				if c.Class != "odd" {
					c.Class = "ok"
				}
				c.Text = joinComma(texts)
				c.Title = h.Name + " on " + n
			}
			row.Cells = append(row.Cells, c)
		}
		p.GIDRows = append(p.GIDRows, row)
	}
	return p
}

func shortType(t gid.Type) string {
	switch t {
	case gid.TypeRoCEv2:
		return "v2"
	case gid.TypeRoCEv1:
		return "v1"
	}
	return t.String()
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x)
	}
	return b.String()
}

// buildMatrix sums the pairs by (source ToR, destination ToR), or by
// (source, destination) when any pair's ToRs are not known.
func buildMatrix(pairs []PairObservation) *htmlMatrix {
	m := &htmlMatrix{ByToR: true}
	for _, pr := range pairs {
		if pr.SrcToR == "" || pr.DstToR == "" {
			m.ByToR = false
			break
		}
	}
	type cell struct{ sent, lost, remarked uint64 }
	cells := map[[2]string]*cell{}
	bad := map[string]bool{}
	all := map[string]bool{}
	for _, pr := range pairs {
		k := [2]string{pr.Src, pr.Dst}
		if m.ByToR {
			k = [2]string{pr.SrcToR, pr.DstToR}
		}
		c := cells[k]
		if c == nil {
			c = &cell{}
			cells[k] = c
		}
		c.sent += pr.Sent
		c.lost += pr.Lost
		c.remarked += pr.Remarked
		all[k[0]], all[k[1]] = true, true
		if pr.Lost > 0 || pr.Remarked > 0 {
			bad[k[0]], bad[k[1]] = true, true
		}
	}
	keep := all
	if len(all) > MaxMatrixSide {
		keep = bad
		m.Trimmed = len(all) - len(bad)
	}
	m.Labels = sortedKeys(keep)
	if len(m.Labels) > MaxMatrixSide {
		m.Trimmed += len(m.Labels) - MaxMatrixSide
		m.Labels = m.Labels[:MaxMatrixSide]
	}
	for _, src := range m.Labels {
		row := htmlMatrixRow{Label: src}
		for _, dst := range m.Labels {
			c := cells[[2]string{src, dst}]
			hc := htmlCell{Class: "none", Symbol: symbolNoProbe, Text: "", Title: src + " → " + dst + ": not probed"}
			if c != nil {
				hc.Title = fmt.Sprintf("%s → %s: %d sent, %d lost, %d remarked", src, dst, c.sent, c.lost, c.remarked)
				switch {
				case c.lost > 0 && c.remarked > 0:
					hc.Class, hc.Symbol = "lost remark", symbolLost+symbolRemark
					hc.Text = "lost " + strconv.FormatUint(c.lost, 10) + "/" + strconv.FormatUint(c.sent, 10) + ", remarked " + strconv.FormatUint(c.remarked, 10)
				case c.lost > 0:
					hc.Class, hc.Symbol = "lost", symbolLost
					hc.Text = "lost " + strconv.FormatUint(c.lost, 10) + "/" + strconv.FormatUint(c.sent, 10)
				case c.remarked > 0:
					hc.Class, hc.Symbol = "remark", symbolRemark
					hc.Text = "remarked " + strconv.FormatUint(c.remarked, 10) + "/" + strconv.FormatUint(c.sent, 10)
				default:
					hc.Class, hc.Symbol = "ok", symbolOK
					hc.Text = "0/" + strconv.FormatUint(c.sent, 10)
				}
			}
			row.Cells = append(row.Cells, hc)
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

var pageTemplate = template.Must(template.New("fabric").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:1em;color:#111;background:#fff;line-height:1.35}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em;border-bottom:1px solid #999}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;max-width:100%}
table{border-collapse:collapse;font-size:.9em}
th,td{border:1px solid #bbb;padding:.2em .4em;text-align:left;vertical-align:top}
th{background:#eee}
td.ok{background:#e3f4e3}td.lost{background:#f8d0d0;font-weight:bold}td.remark{background:#fde9b8;font-weight:bold}
td.lost.remark{background:#f3b6a0}td.odd{background:#f8d0d0;font-weight:bold}td.none{color:#666}
.sym{font-weight:bold;margin-right:.2em}
.legend span{display:inline-block;margin-right:1em}
.note{color:#444;font-style:italic}
@media print{body{margin:0;font-size:9pt}.scroll{overflow:visible}h2{break-after:avoid}tr{break-inside:avoid}
td.ok,td.lost,td.remark,td.odd,th{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p id="summary">{{len .Report.Hosts}} hosts from {{.Report.Source}}, {{len .Report.Networks}} networks; findings: {{len .Report.Findings}}{{if .Suspects}}; suspects: {{len .Suspects}}{{end}}.</p>
<p class="legend" id="legend">Legend:
<span><span class="sym">{{.Symbols.ok}}</span>probed, nothing lost or remarked</span>
<span><span class="sym">{{.Symbols.lost}}</span>probes lost</span>
<span><span class="sym">{{.Symbols.remark}}</span>DSCP remarked on the way</span>
<span><span class="sym">{{.Symbols.odd}}</span>differs from most hosts' value (GID index, finding)</span>
<span><span class="sym">{{.Symbols.none}}</span>not probed</span></p>
{{if .Unchecked}}<p class="note">Not compared from this source: {{range $i, $c := .Unchecked}}{{if $i}}, {{end}}{{$c.Check}}{{end}} ({{(index .Unchecked 0).Reason}}).</p>{{end}}

<h2 id="suspects">Suspects</h2>
{{if .Suspects}}<div class="scroll"><table>
<tr><th>kind</th><th>suspect</th><th>pairs explained</th><th>evidence</th></tr>
{{range .Suspects}}<tr class="suspect" data-kind="{{.Suspect.Kind}}"><td>{{.Suspect.Kind}}</td><td class="name">{{.Name}}</td><td>{{.Suspect.Pairs}}</td><td>{{.Suspect.Evidence}}</td></tr>
{{end}}</table></div>
{{else if .Matrix}}<p id="no-suspect">{{.NoSuspect}}</p>
{{else}}<p class="note">No probe results in this source: nothing to localise.</p>{{end}}

<h2 id="matrix">Probe loss and remarking</h2>
{{with .Matrix}}<p>{{if .ByToR}}ToR × ToR: rows are the probing hosts' ToRs, columns the probed hosts'; each cell sums the pairs between them.{{else}}Host × host: the ToRs of some hosts are not known (no topology), so the matrix is per host: rows probe, columns are probed.{{end}}{{if .Trimmed}} {{.Trimmed}} more without loss or remarking are left out.{{end}}</p>
<div class="scroll"><table class="matrix">
<tr><th>from \ to</th>{{range .Labels}}<th scope="col">{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr><th scope="row">{{.Label}}</th>{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}" data-cell="{{.Title}}"><span class="sym">{{.Symbol}}</span>{{.Text}}</td>{{end}}</tr>
{{end}}</table></div>
{{else}}<p class="note">No probe results in this source (snapshots carry none; agents without /pairs and Prometheus without the agents' probe series neither).</p>{{end}}

<h2 id="findings">Findings</h2>
{{if not .Findings}}<p>None: the hosts of each network agree on everything compared.</p>{{end}}
{{range .Findings}}<section class="finding" data-check="{{.Finding.Check}}">
<h3>{{.Title}}</h3>
<p>{{.Finding.Message}}</p>
<div class="scroll"><table>
<tr><th>value</th><th>ports</th><th>hosts (switch)</th></tr>
{{range .Groups}}<tr><td{{if not .Majority}} class="odd"{{end}}>{{if not .Majority}}<span class="sym">{{$.Symbols.odd}}</span>{{end}}{{.Text}}</td><td>{{.Ports}}</td><td>{{range $i, $h := .Hosts}}{{if $i}}, {{end}}{{$h}}{{end}}{{if .More}} and {{.More}} more{{end}}</td></tr>
{{end}}{{if .Finding.Unknown}}<tr><td>unknown</td><td>{{len .Finding.Unknown}}</td><td></td></tr>{{end}}
</table></div>
</section>
{{end}}

<h2 id="gid-index">GID index per host and network</h2>
<p>The usable GID index (NCCL_IB_GID_INDEX, UCX_IB_GID_INDEX) of each host on each network, RoCE v2 first.</p>
<div class="scroll"><table class="gid-index">
<tr><th>host</th><th>switch</th>{{range .Networks}}<th scope="col">{{.}}</th>{{end}}</tr>
{{range .GIDRows}}<tr data-host="{{.Host}}"><th scope="row">{{.Host}}</th><td>{{if .Switch}}{{.Switch}}{{else}}unknown{{end}}</td>{{range .Cells}}<td class="{{.Class}}" title="{{.Title}}">{{if .Symbol}}<span class="sym">{{.Symbol}}</span>{{end}}{{.Text}}</td>{{end}}</tr>
{{end}}</table></div>
</body>
</html>
`))
