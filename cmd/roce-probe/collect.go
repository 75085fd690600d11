package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/collect"
)

func init() { register(newCollectCmd) }

func newCollectCmd() *cobra.Command {
	var netns, out, output, hostname, sysfsDir, procDir string
	var allNetns bool
	var lldpWait time.Duration
	c := &cobra.Command{
		Use:   "collect [--out FILE] [--hostname NAME] [--netns NAME | --all-netns] [--lldp-wait DUR]",
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
configfs default ToS, mlx5 traffic class overrides, DCQCN); the QP census
(every QP and rdma_cm ID with the process that owns it, docs/qps.md); and the
switch and switch port each RoCE netdev is plugged into ("topology": from an
LLDP frame heard on the netdev within --lldp-wait, default 2s, 0 to not
listen; or from lldpd's table, 'lldpcli -f json show neighbors', when lldpd
runs), or why it is not known. Sources that could not be read are listed
under "errors".

Give the file to any command with --from FILE, on any machine (Linux, macOS,
Windows): it reads nothing from the machine it runs on and answers as it
would have on the host that was collected.

--out FILE (-f FILE) writes the snapshot there (gzip-compressed when FILE ends
in .gz; written to a temporary file and renamed, never half-written); without
it, to standard output. -o is the output format, as in every command: json
(the only one; the default). (-o FILE, which earlier versions took for the
file, still writes FILE when FILE has a '.' or '/' in it, with a note on
standard error; use --out.) --hostname NAME records NAME as the host's name
instead of this machine's: 'roce-probe fabric' tells hosts apart by it, so two
snapshots taken on one machine (of two namespaces, before and after a change)
need two names. --lldp-wait DUR listens that long on every RoCE netdev at
once (a raw socket: root or CAP_NET_RAW; without it the reason says so);
switches send LLDP every 30 s by default, so --lldp-wait 31s hears every one
that sends (docs/snapshot.md, "Topology"). --netns NAME reads that network namespace instead of this
one; --all-netns reads this one and every named one (both need root). Reads
need no privileges otherwise. The format is in docs/snapshot.md.

--sysfs DIR reads a copy of /sys (from a support bundle) instead of the live
kernel: RDMA devices, GID tables, the links of class/net and the settings;
what only the live kernel answers (addresses, routes, DCB, counters, RDMA
netlink) is listed under "errors" as not collected. --proc DIR adds a copy of
/proc holding net/vlan/ (VLAN IDs and QoS maps). docs/snapshot.md says how to
make a usable copy.`,
		Example: `  roce-probe collect --out node1.json.gz
  roce-probe collect | gzip > node1.json.gz
  roce-probe gids --from node1.json.gz
  roce-probe check --from node1.json.gz --dev mlx5_0 --gid-index 3 --tclass 106 --sl 3
  roce-probe collect --netns blue --hostname node1-blue --out node1-blue.json
  roce-probe collect --sysfs bundle/sys --proc bundle/proc --hostname node7 --out node7.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			flag := "--out"
			switch {
			case output == "" || strings.EqualFold(output, "json"):
			case output == "-" || strings.ContainsAny(output, "./"):
				// -o FILE, as earlier versions took it.
				if out != "" {
					return usagef("--out %q and -o %q both name where to write: give --out alone (-o is the output format, json)", out, output)
				}
				out, flag = output, "-o"
			default:
				return usagef("-o %q is not known: want json (collect's only format; write a file with --out FILE)", output)
			}
			if hostname != "" {
				if err := checkHostname(hostname); err != nil {
					return err
				}
			}
			if out != "" && out != "-" {
				if err := checkOutputDir(flag, out); err != nil {
					return err
				}
			}
			if lldpWait < 0 || lldpWait > maxLLDPWait {
				return usagef("--lldp-wait %v is out of range: want 0 (do not listen) to %v", lldpWait, maxLLDPWait)
			}
			opt := collect.Options{AllNetns: allNetns, Tool: version(), SysfsRoot: liveSysfs, LLDPWait: lldpWait}
			if netns != "" {
				opt.Netns = []string{netns}
			}
			if sysfsDir != "" {
				if fi, err := os.Stat(filepath.Join(sysfsDir, "class")); err != nil || !fi.IsDir() {
					return usagef("--sysfs %q: no class/ directory in it: want a copy of /sys (docs/snapshot.md, \"Snapshots from a copy of /sys\")", sysfsDir)
				}
				if procDir != "" {
					if fi, err := os.Stat(procDir); err != nil || !fi.IsDir() {
						return usagef("--proc %q: not a directory: want a copy of /proc holding net/vlan/", procDir)
					}
				}
				opt = collect.Options{Tool: version(), SysfsRoot: sysfsDir, SysfsCopy: true, ProcRoot: procDir}
			} else if procDir != "" {
				return usagef("--proc %q goes with --sysfs: the live /proc is read without it", procDir)
			}
			s, err := collect.Collect(opt)
			if err != nil {
				return liveError(netns, err)
			}
			if hostname != "" {
				s.Hostname = hostname
			}
			if out == "" || out == "-" {
				return s.Encode(cmd.OutOrStdout())
			}
			if err := s.Save(out); err != nil {
				return usagef("%s %q: %v", flag, out, pathErr(err))
			}
			if flag == "-o" {
				fmt.Fprintf(cmd.ErrOrStderr(), "roce-probe: collect -o FILE is deprecated: -o is the output format (json) in every command; write the file with --out %s\n", out)
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVarP(&out, "out", "f", "", "write the snapshot to this file (.gz: gzip-compressed; - standard output); default standard output")
	fl.StringVarP(&output, "output", "o", "", "output format: json (the default and only one; -o FILE of earlier versions: use --out)")
	fl.StringVar(&hostname, "hostname", "", "record this as the host's name instead of this machine's (fabric tells hosts apart by it)")
	fl.StringVar(&netns, "netns", "", "read this network namespace (a name from 'ip netns list'; needs root) instead of this one")
	fl.BoolVar(&allNetns, "all-netns", false, "read this network namespace and every named one (needs root)")
	fl.StringVar(&sysfsDir, "sysfs", "", "read this copy of /sys (a support bundle's) instead of the live kernel; what only the live kernel answers is recorded as not collected")
	fl.DurationVar(&lldpWait, "lldp-wait", 2*time.Second, "how long to listen for an LLDP frame on each RoCE netdev (0: do not listen; switches send one every 30s by default)")
	fl.StringVar(&procDir, "proc", "", "with --sysfs: a copy of /proc holding net/vlan/ (VLAN IDs and QoS maps)")
	flagsExclusive(c, "netns", "all-netns")
	flagsExclusive(c, "sysfs", "netns")
	flagsExclusive(c, "sysfs", "all-netns")
	_ = c.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return []cobra.Completion{"json"}, cobra.ShellCompDirectiveNoFileComp
	})
	return c
}

// maxLLDPWait bounds collect --lldp-wait: LLDP's longest default
// transmit interval is 30 s, its TTL 120 s.
const maxLLDPWait = 2 * time.Minute

// checkHostname accepts a host name for the snapshot: 1..253 bytes of
// UTF-8 without spaces or control characters (what fabric prints and
// compares; a DNS name is at most 253 characters).
func checkHostname(name string) error {
	if len(name) > 253 || !utf8.ValidString(name) || strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return usagef("--hostname %q: want a host name of 1..253 characters without spaces or control characters (e.g. node1, node1-blue)", name)
	}
	return nil
}
