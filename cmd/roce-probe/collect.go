package main

import (
	"github.com/roce-probe/roce-probe/collect"
	"github.com/spf13/cobra"
)

func init() { register(newCollectCmd) }

func newCollectCmd() *cobra.Command {
	var netns, out string
	var allNetns bool
	c := &cobra.Command{
		Use:   "collect [-o FILE] [--netns NAME | --all-netns]",
		Short: "Write the host snapshot: everything the read-only commands read, as one JSON document",
		Long: `collect reads, once, everything roce-probe's read-only commands (gids, select,
qos, check, ah) read from this host and writes it as one versioned JSON
document: RDMA devices with their driver, ports and GID tables (empty slots
are the ones not listed below gid_table_len); the network namespace's netdevs
with kind, VLAN tags, egress/ingress QoS maps, MACs, MTUs and addresses; its
routes, neighbours and TTL sysctls; and the DCB state (PFC, ETS, APP table,
trust, DCBX) of every real netdev; one sample of the RDMA ports' counters and of
the real netdevs' ethtool and PFC counters (what 'roce-probe counters --from'
analyses); and the settings applied behind the application's back (rdma_cm's
configfs default ToS, mlx5 traffic class overrides, DCQCN). Sources that could
not be read are listed under "errors".

Give the file to any command with --from FILE, on any machine (Linux, macOS,
Windows): it reads nothing from the machine it runs on and answers as it
would have on the host that was collected.

-o FILE writes the snapshot there (gzip-compressed when FILE ends in .gz;
written to a temporary file and renamed, never half-written); without it, to
standard output. --netns NAME reads that network namespace instead of this
one; --all-netns reads this one and every named one (both need root). Reads
need no privileges otherwise. The format is in docs/snapshot.md.`,
		Example: `  roce-probe collect -o node1.json.gz
  roce-probe gids --from node1.json.gz
  roce-probe check --from node1.json.gz --dev mlx5_0 --gid-index 3 --tclass 106 --sl 3`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out != "" && out != "-" {
				if err := checkOutputDir("-o", out); err != nil {
					return err
				}
			}
			opt := collect.Options{AllNetns: allNetns, Tool: version(), SysfsRoot: liveSysfs}
			if netns != "" {
				opt.Netns = []string{netns}
			}
			s, err := collect.Collect(opt)
			if err != nil {
				return liveError(netns, err)
			}
			if out == "" || out == "-" {
				return s.Encode(cmd.OutOrStdout())
			}
			if err := s.Save(out); err != nil {
				return usagef("-o %q: %v", out, pathErr(err))
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVarP(&out, "output", "o", "", "write the snapshot to this file (.gz: gzip-compressed); default standard output")
	fl.StringVar(&netns, "netns", "", "read this network namespace (a name from 'ip netns list'; needs root) instead of this one")
	fl.BoolVar(&allNetns, "all-netns", false, "read this network namespace and every named one (needs root)")
	flagsExclusive(c, "netns", "all-netns")
	return c
}
