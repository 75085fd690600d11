//go:build !linux

package main

import (
	"runtime"

	"github.com/spf13/cobra"
)

func init() { register(newLabCmd) }

// newLabCmd is the lab command of builds for other systems: the lab is
// Soft-RoCE in a Linux kernel.
func newLabCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "lab",
		Short:   "Create or remove a Soft-RoCE lab (Linux only)",
		Example: `  roce-probe lab up        # on Linux`,
		Args:    subcommandArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("lab needs Linux (this is %s): the lab is Soft-RoCE (rdma_rxe) in a Linux kernel", runtime.GOOS)
		},
	}
}
