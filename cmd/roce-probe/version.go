package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// versionJSON is what `version -o json` prints: the build's own record
// (runtime/debug.ReadBuildInfo), null where the build did not record it
// (docs/json.md, "version").
type versionJSON struct {
	Version string `json:"roce_probe_version"`
	// Module is the main module's path.
	Module *string `json:"module"`
	// VCSRevision, VCSTime and VCSModified are the build settings
	// vcs.revision, vcs.time and vcs.modified that `go build` records
	// in a version-control checkout (-buildvcs).
	VCSRevision *string `json:"vcs_revision"`
	VCSTime     *string `json:"vcs_time"`
	VCSModified *bool   `json:"vcs_modified"`
	Go          string  `json:"go"`
	// BuildTags are the -tags the binary was built with (empty: none).
	BuildTags []string `json:"build_tags"`
	OS        string   `json:"os"`
	Arch      string   `json:"arch"`
}

// buildVersion reads the binary's build information.
func buildVersion() versionJSON {
	v := versionJSON{Version: version(), Go: runtime.Version(), BuildTags: []string{}, OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Path != "" {
		v.Module = &bi.Main.Path
	}
	if bi.GoVersion != "" {
		v.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.VCSRevision = &s.Value
		case "vcs.time":
			v.VCSTime = &s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.VCSModified = &m
		case "-tags":
			for _, t := range strings.Split(s.Value, ",") {
				if t = strings.TrimSpace(t); t != "" {
					v.BuildTags = append(v.BuildTags, t)
				}
			}
		}
	}
	return v
}

// writeVersionTable writes the table form: the version, then one line
// per field ("unknown" where the build did not record it).
func writeVersionTable(w io.Writer, v versionJSON) error {
	str := func(p *string) string {
		if p == nil {
			return "unknown"
		}
		return *p
	}
	modified := "unknown"
	if v.VCSModified != nil {
		modified = fmt.Sprint(*v.VCSModified)
	}
	tags := strings.Join(v.BuildTags, ",")
	if tags == "" {
		tags = "none"
	}
	fmt.Fprintln(w, "roce-probe", v.Version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range [][2]string{
		{"module", str(v.Module)},
		{"vcs revision", str(v.VCSRevision)},
		{"vcs time", str(v.VCSTime)},
		{"vcs modified", modified},
		{"go", v.Go},
		{"build tags", tags},
		{"os/arch", v.OS + "/" + v.Arch},
	} {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

func newVersionCmd() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the roce-probe version and how it was built",
		Long: `version prints the roce-probe version and what the Go toolchain recorded in
the binary: the module, the version-control revision, its time and whether the
checkout had changes (vcs.revision, vcs.time, vcs.modified: recorded by 'go
build' in a git checkout, not by 'go install MODULE@VERSION'), the Go version,
the build tags and the OS/architecture. 'roce-probe --version' prints the same
table. Unknown fields are "unknown" (null in JSON).`,
		Example: `  roce-probe version
  roce-probe --version
  roce-probe version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := buildVersion()
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return writeVersionTable(cmd.OutOrStdout(), v)
		},
	}
	outputVar(c.Flags(), &format, "table", "json")
	return c
}

// addVersionTemplate adds the versionTable template function once.
var addVersionTemplate sync.Once

// setVersionFlag gives the root command --version, which prints the
// version table (read when asked: the template calls versionTable).
func setVersionFlag(root *cobra.Command) {
	root.Version = version()
	// cobra's template functions are one global map: added once, not per
	// root command (tests build roots on several goroutines at once).
	addVersionTemplate.Do(func() {
		cobra.AddTemplateFunc("versionTable", func() string {
			var b strings.Builder
			writeVersionTable(&b, buildVersion())
			return b.String()
		})
	})
	root.SetVersionTemplate("{{versionTable}}")
	// cobra prints the template when --version is given; defined here,
	// not at Execute, so that help and the examples' check see it, and
	// without cobra's -v shorthand.
	root.Flags().Bool("version", false, "print the version and how it was built (as 'roce-probe version')")
}
