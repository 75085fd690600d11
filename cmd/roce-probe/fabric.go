package main

import (
	"bufio"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/fabric"
)

func init() { register(newFabricCmd) }

func newFabricCmd() *cobra.Command {
	var from, agents []string
	var prom, hostLabel, format string
	var timeout time.Duration
	var concurrency int
	c := &cobra.Command{
		Use:   "fabric (--from FILE... | --agents URL... | --prometheus URL) [-o table|json|html]",
		Short: "Compare many hosts' RoCE configuration and report what differs where it must not",
		Long: `fabric reads many hosts' facts and reports what differs across the hosts of a
network where it must not: the usable GID index of each (network, GID type,
family) — a single NCCL_IB_GID_INDEX or UCX_IB_GID_INDEX fails on the hosts of
the other value —, the RoCE versions, VLAN tags, MTU, DCB trust mode, PFC
priorities, DSCP to priority map, ETS, VLAN egress maps, rdma_cm's default ToS
and RoCE mode, MLNX_OFED traffic class overrides and DCQCN. Each finding names
the hosts (and RDMA ports) of each value.

A host's networks are the prefixes of the addresses its usable GIDs are (not
link-local, netdev up and in the collector's namespace, not stale); its facts
on a network come from the netdev of the lowest usable entry.

The hosts come from one source:
  --from FILE...     snapshots written by 'roce-probe collect' (.json, .json.gz;
                     a directory stands for the snapshots in it): every check
  --agents URL...    the agents' /snapshot (HOST:PORT or http://HOST:PORT),
                     --concurrency at a time, each within --timeout: every
                     check; and their /pairs (the pairs they probe): the
                     suspects of the probes lost (a NIC, a ToR, a ToR's
                     uplink, a spine, a noisy host), each with its evidence
  --prometheus URL   the agents' metrics queried back from Prometheus
                     (roce_probe_gid_index, roce_probe_gid_info): the GID index,
                     RoCE version and VLAN checks only; hosts are named by
                     --host-label (instance, or node with deploy/'s configs);
                     and their probe series over the last 5 minutes: the
                     suspects, as with --agents (docs/fabric.md)

Hosts are told apart by hostname (snapshots) or --host-label (Prometheus): a
host read twice is bad input. Exit status: 0 consistent, 1 findings or
suspects, 2 bad input (a file that is not a snapshot, an agent that does not
answer, a duplicate host: each named). docs/fabric.md explains the report.

-o html writes the same report as one self-contained HTML page (inline CSS,
no script, nothing fetched when opened; readable printed and on a phone):
the findings with each value's hosts and their switches, each host's usable
GID index per network; with --agents and --prometheus the loss matrix of
their probes and the suspects.`,
		Example: `  roce-probe fabric --from snapshots/
  roce-probe fabric --from node1.json.gz node2.json.gz node3.json.gz -o json
  roce-probe fabric --from snapshots/ -o html > fabric.html
  roce-probe fabric --agents 10.0.0.1:9469,10.0.0.2:9469,10.0.0.3:9469
  roce-probe fabric --prometheus http://prometheus:9090 --host-label node`,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if len(args) > 0 {
				switch {
				case fl.Changed("from"):
					from = append(from, args...)
				case fl.Changed("agents"):
					agents = append(agents, args...)
				default:
					return usagef("fabric: argument %q: --prometheus takes one URL; files and agents are listed after --from or --agents", args[0])
				}
			}
			for _, f := range []struct {
				name string
				vals []string
			}{{"--from", from}, {"--agents", agents}} {
				for _, v := range f.vals {
					if strings.TrimSpace(v) == "" {
						return usagef("%s \"\" is empty: give a file or URL", f.name)
					}
				}
			}
			if fl.Changed("host-label") && prom == "" {
				return usagef("--host-label %q is for --prometheus: snapshots name their host themselves", hostLabel)
			}
			if fl.Changed("concurrency") && len(agents) == 0 {
				return usagef("--concurrency %d is for --agents", concurrency)
			}
			if fl.Changed("timeout") && len(agents) == 0 && prom == "" {
				return usagef("--timeout %s is for --agents and --prometheus", timeout)
			}
			// Decoding snapshots makes short-lived garbage (some 170 KB
			// a snapshot) while the facts kept are small: collect less
			// often (docs/performance.md, "fabric": 2.9 -> 2.1 s for
			// 10,000 snapshots, 230 -> 430 MB peak).
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			var hosts []fabric.Host
			var pairs []fabric.AgentPairs // --agents: their pair detail
			var src fabric.Source
			var err error
			switch {
			case len(from) > 0:
				src = fabric.SourceFiles
				var paths []string
				if paths, err = fabric.ExpandPaths(from); err != nil {
					return usagef("--from %v", err)
				}
				hosts, err = fabric.ReadFiles(paths, 0)
			case len(agents) > 0:
				src = fabric.SourceAgents
				o := fabric.AgentOptions{Timeout: timeout, Concurrency: concurrency}
				if hosts, err = fabric.ReadAgents(cmd.Context(), agents, o); err == nil {
					pairs, err = fabric.ReadAgentPairs(cmd.Context(), agents, o)
				}
			default:
				src = fabric.SourcePrometheus
			}
			if err != nil {
				return usageError{err}
			}
			var obs fabric.LocalizeInput
			var suspects []fabric.Suspect
			localized := pairs != nil
			if pairs != nil {
				obs, suspects = fabric.LocalizeAgents(hosts, pairs) // before Analyze: it notes agents without pair detail
			}
			if src == fabric.SourcePrometheus {
				o := fabric.PrometheusOptions{HostLabel: hostLabel, Timeout: timeout}
				if hosts, err = fabric.ReadPrometheus(cmd.Context(), prom, o); err == nil {
					obs, localized, err = fabric.ReadPrometheusProbes(cmd.Context(), prom, hosts, o) // before Analyze: it notes hosts whose probes it cannot use
				}
				if err != nil {
					return usageError{err}
				}
				if localized {
					suspects = fabric.Localize(obs)
				}
			}
			r, err := fabric.Analyze(hosts, src)
			if err != nil {
				return usageError{err}
			}
			r.Suspects, r.Localized = suspects, localized
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				if err := writeJSONIndent(out, r); err != nil {
					return err
				}
			case "html":
				if err := fabric.WriteHTML(out, fabric.HTMLInput{Report: r, Hosts: hosts, Pairs: obs.Pairs, Suspects: r.Suspects}); err != nil {
					return err
				}
			default:
				printFabric(out, r, obs.Pairs)
			}
			if len(r.Findings) > 0 || len(r.Suspects) > 0 {
				return findingError{}
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.StringArrayVar(&from, "from", nil, "host snapshot files (roce-probe collect; .json or .json.gz) or directories of them; repeat, or list files after it")
	fl.StringSliceVar(&agents, "agents", nil, "agents to ask for their /snapshot: HOST:PORT or http://HOST:PORT, comma-separated or repeated, or listed after it")
	fl.StringVar(&prom, "prometheus", "", "the Prometheus server that scrapes the agents: http://HOST:9090 (with its path prefix, if any)")
	fl.StringVar(&hostLabel, "host-label", "instance", "with --prometheus, the label that names a host")
	durationVar(fl, &timeout, "timeout", 10*time.Second, 0, time.Hour, true, "with --agents, for each agent; with --prometheus, for each query")
	intVar(fl, &concurrency, "concurrency", 16, 1, 1024, "with --agents, how many agents are asked at once")
	outputVar(fl, &format, "table", "json", "html")
	flagsExclusive(c, "from", "agents", "prometheus")
	flagsOneRequired(c, "from", "agents", "prometheus")
	return c
}

// printFabric writes the report as text, in one write; pairs are the
// probe results localisation read (for what they hold when it named no
// suspect).
func printFabric(out io.Writer, r *fabric.Report, pairs []fabric.PairObservation) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	ports := 0
	for _, n := range r.Networks {
		ports += n.PortCount
	}
	fmt.Fprintf(w, "%d hosts from %s, %d networks\n", len(r.Hosts), r.Source, len(r.Networks))
	if len(r.Networks) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NETWORK\tFAMILY\tHOSTS\tPORTS")
		for _, n := range r.Networks {
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\n", n.Network, n.Family, n.HostCount, n.PortCount)
		}
		tw.Flush()
	}
	var noNet []string
	for _, h := range r.Hosts {
		if len(h.Networks) == 0 {
			noNet = append(noNet, h.Host)
		}
	}
	if len(noNet) > 0 {
		fmt.Fprintf(w, "hosts without a usable RoCE GID: %s\n", fabric.NameList(noNet, 10))
	}
	var off []string
	var why string // the first one's reason
	for _, c := range r.Checks {
		if !c.Available {
			if off == nil {
				why = c.Reason
			}
			off = append(off, c.Check)
		}
	}
	if len(off) > 0 {
		fmt.Fprintf(w, "not compared (%s): %s\n", why, strings.Join(off, ", "))
	}
	printSuspects(w, r, pairs)
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "\nno findings: the hosts of each network agree on everything compared")
		return
	}
	fmt.Fprintf(w, "\nfindings: %d\n", len(r.Findings))
	for _, f := range r.Findings {
		fmt.Fprintf(w, "\n%s %s", f.Check, f.Network)
		if f.PerType {
			fmt.Fprintf(w, " %s %s", f.Type, f.Family)
		}
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, g := range f.Groups {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", g.Text, plural(len(g.Ports), "port"), portList(g.Ports, 5))
		}
		if len(f.Unknown) > 0 {
			fmt.Fprintf(tw, "  unknown\t%s\t%s\n", plural(len(f.Unknown), "port"), portList(f.Unknown, 5))
		}
		tw.Flush()
		fmt.Fprintf(w, "  %s\n", f.Message)
	}
}

// printSuspects writes the suspects localisation named, one a line with
// its evidence, or what the probe results hold when it named none
// (nothing when the source has no pair detail).
func printSuspects(w io.Writer, r *fabric.Report, pairs []fabric.PairObservation) {
	if !r.Localized {
		return
	}
	if len(r.Suspects) == 0 {
		fmt.Fprintln(w, "\n"+fabric.NoSuspectReason(pairs))
		return
	}
	fmt.Fprintf(w, "\nsuspects: %d\n", len(r.Suspects))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  KIND\tNIC\tTOR\tSPINE\tPAIRS\tEVIDENCE")
	for _, s := range r.Suspects {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%s\n", s.Kind, orDash(s.NIC), orDash(s.ToR), orDash(s.Spine), s.Pairs, s.Evidence)
	}
	tw.Flush()
}

// portList names at most max ports, as fabric.NameList does names:
// "node-1 mlx5_0/1 (enp1s0f0.100), node-2 mlx5_0/1 and 3 more".
func portList(ps []fabric.PortRef, max int) string {
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		s := fmt.Sprintf("%s %s/%d", p.Host, p.Device, p.Port)
		if p.Netdev != "" {
			s += " (" + p.Netdev + ")"
		}
		names = append(names, s)
	}
	return fabric.NameList(names, max)
}
