package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func init() { register(newVersionCmd) }

// versionJSON is what `version -o json` prints.
type versionJSON struct {
	Version string `json:"roce_probe_version"`
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func newVersionCmd() *cobra.Command {
	var format string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the roce-probe version",
		Example: `  roce-probe version
  roce-probe version -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versionJSON{Version: version(), Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
			if format == "json" {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "roce-probe", v.Version)
			return nil
		},
	}
	outputVar(c.Flags(), &format, "table", "json")
	return c
}
