package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/host"
)

func init() { register(newCountersCmd) }

// countersSections are what counters reads live: the ports and netdevs,
// DCB (RoCE priorities, PFC), the counters and the settings.
const countersSections = collect.SectionRDMA | collect.SectionNet | collect.SectionDCB | collect.SectionCounters | collect.SectionSettings

func newCountersCmd() *cobra.Command {
	var src hostFlags
	var netdev, format string
	var interval time.Duration
	var watch bool
	var count int
	c := &cobra.Command{
		Use:   "counters [--dev D] [--port P] [--netdev N] [--interval DUR] [--watch [--count N]] [--from FILE] [-o table|json|ndjson]",
		Short: "Show RDMA and per-priority Ethernet counters with rates, and what they say about RoCE traffic",
		Long: `counters reads every RDMA port's counters (RDMA netlink, what 'rdma statistic
show' prints, or sysfs hw_counters/ and counters/), the 'ethtool -S' set of the
real netdev below each RoCE netdev (SIOCETHTOOL, per priority for mlx5, bnxt_en
and ice) and DCB's PFC frame counters, twice --interval apart (default 1s), and
shows each counter's value, rate per second and meaning, then the findings:
pauses on a priority without RoCE, RoCE on a priority without PFC while frames
drop, long or storming pauses, sequence errors, retransmissions or ACK timeouts
on a class meant to be lossless, ECN marks without CNPs, CNPs on an unprotected
priority, DCQCN off, and traffic class overrides.

The RoCE priorities of a netdev are the ones its configuration sets up for
RoCE: PFC on, DSCP 26 or rdma_cm's default ToS under DSCP trust, an APP entry
for RoCE, DCQCN enabled (docs/counters.md). Names are the driver's; a counter
the driver does not have is absent, never 0.

--watch prints a report every --interval until Ctrl-C (or --count reports):
a refreshed table; with -o json one JSON document, the array of the reports
(each written as it is taken, the array closed when the watch ends); with -o
ndjson one JSON object per line. --from FILE
analyses the one sample 'roce-probe collect' recorded (no rates). --interval 0
takes one sample. Exit status: 0, 1 when a finding is an error (not with
--watch), 2 bad input. Needs no privileges.`,
		Example: `  roce-probe counters
  roce-probe counters --dev mlx5_0 --interval 5s -o json
  roce-probe counters --netdev enp1s0f0 --watch
  roce-probe counters --from node1.json.gz`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if src.from != "" {
				for _, f := range []string{"watch", "interval", "count"} {
					if fl.Changed(f) {
						return usagef("--%s needs the live host: --from %q holds one sample (analyse it without --%s)", f, src.from, f)
					}
				}
			}
			if fl.Changed("count") && !watch {
				return usagef("--count %d is for --watch: add --watch", count)
			}
			if watch && interval == 0 {
				return usagef("--interval 0 takes one sample: --watch needs an interval, e.g. --interval 1s")
			}
			if src.port != 0 && src.dev == "" {
				return usagef("--port %d needs --dev: name the RDMA device", src.port)
			}
			opt := collect.Options{Sections: countersSections, Tool: version()}
			if src.netns != "" {
				opt.Netns = []string{src.netns}
			}
			if netdev != "" {
				opt.Netdevs = []string{netdev}
			}
			var s *host.Snapshot
			var err error
			if src.from != "" {
				if s, err = src.snapshot(countersSections); err != nil {
					return err
				}
				if s.Counters == nil {
					return usagef("--from %q: the snapshot has no counters section: take it with 'roce-probe collect' (which records one sample)", src.from)
				}
			} else if s, err = collect.Collect(opt); err != nil {
				return liveError(src.netns, err)
			}
			v, err := src.viewOf(s)
			if err != nil {
				return err
			}
			if err := src.checkDev(v); err != nil {
				return err
			}
			var real string // --netdev's real netdev
			if netdev != "" {
				d, err := v.NS.Describe(netdev)
				if err != nil {
					return usagef("--netdev %q: no such network device in %s", netdev, v.NS.What())
				}
				real = d.Real
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if v.Predicted {
				fmt.Fprintf(errw, "roce-probe: %s: showing the Ethernet counters of the netdevs Soft-RoCE could run on.\n", src.noRDMA())
			}
			noteErrors(errw, s.Errors)
			// --watch -o json: one document, the array of the reports,
			// closed when the watch ends; -o ndjson: one report per line.
			var arr *jsonArray // set below, once the watch starts
			emit := func(prev, cur *counters.Sample) counters.Report {
				r := counters.Analyze(v.CountersInput(prev, cur).Select(src.dev, src.port, real))
				switch {
				case arr != nil:
					arr.add(r)
				case format == "json" || format == ndjson:
					writeJSON(out, r)
				default:
					printCounters(out, r)
				}
				return r
			}
			if src.from != "" || interval == 0 {
				r := emit(nil, s.Counters)
				return errorFindings(r)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			smp, err := collect.NewSampler(s, opt)
			if err != nil {
				return liveError(src.netns, err)
			}
			defer smp.Close()
			if watch && format == "json" {
				arr = newJSONArray(out)
				defer func() { arr.end(); fmt.Fprintln(out) }()
			}
			prev := s.Counters
			clear := format == "table" && watch && isTerminal(out)
			for n := 0; ; n++ {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(interval):
				}
				cur, errs := smp.Sample()
				noteErrors(errw, errs)
				if clear {
					fmt.Fprint(out, "\033[H\033[2J")
				} else if watch && format == "table" && n > 0 {
					fmt.Fprintln(out)
				}
				r := emit(prev, cur)
				prev = cur
				if !watch {
					return errorFindings(r)
				}
				if count > 0 && n+1 >= count {
					return nil
				}
			}
		},
	}
	fl := c.Flags()
	src.add(c, hostFlagSet{dev: true, port: true, devUsage: "only this RDMA device's ports (and the netdevs below them)"})
	fl.StringVar(&netdev, "netdev", "", "only this netdev's real device (its ethtool and PFC counters) and the RDMA ports on it")
	durationVar(fl, &interval, "interval", time.Second, 0, time.Hour, false, "time between two samples (rates are per second over it); 0 takes one sample")
	fl.BoolVar(&watch, "watch", false, "print a report every --interval until Ctrl-C or SIGTERM")
	intVar(fl, &count, "count", 0, 0, 1<<30, "with --watch, stop after this many reports (0: until interrupted)")
	outputVar(fl, &format, "table", "json", ndjson)
	flagsExclusive(c, "netdev", "dev")
	return c
}

// isTerminal reports whether w is a terminal (the watch table is redrawn
// in place there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// errorFindings makes the command exit 1 when a finding is an error.
func errorFindings(r counters.Report) error {
	if r.HasError() {
		return findingError{}
	}
	return nil
}

// noteErrors prints, once each, the counter sources that could not be read.
func noteErrors(w io.Writer, errs []host.SourceError) {
	for _, e := range host.CountersErrors(errs) {
		fmt.Fprintf(w, "roce-probe: %s: %s\n", e.Source, e.Error)
	}
}

// printCounters writes one report as tables, in one write.
func printCounters(out io.Writer, r counters.Report) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	iv := "one sample: no rates"
	if r.Interval != nil {
		iv = fmt.Sprintf("rates over %.3gs", *r.Interval)
	}
	fmt.Fprintf(w, "%s (%s)\n", r.Time.Format("2006-01-02 15:04:05.000 MST"), iv)
	cell := func(v uint64, rate *float64) string {
		if rate == nil {
			return fmt.Sprint(v)
		}
		return fmt.Sprintf("%d (%s/s)", v, fmtRate(*rate))
	}
	for _, p := range r.Ports {
		fmt.Fprintf(w, "\n%s port %d", p.Device, p.Port)
		if p.Netdev != nil {
			fmt.Fprintf(w, " on %s", *p.Netdev)
		}
		fmt.Fprintf(w, " (%s)\n", p.Source)
		printCounterTable(w, p.Counters, "no counters", cell, func(m string) string { return counters.Meaning(m).Text() })
	}
	for _, n := range r.Netdevs {
		fmt.Fprintf(w, "\n%s (%s): port counters\n", n.Netdev, ptrOr(n.Driver, "driver unknown", str))
		printCounterTable(w, n.Counters, "none with a known meaning", cell, func(m string) string { return counters.PortCounter(m).Text() })
	}
	last := ""
	var tw *tabwriter.Writer
	for _, p := range r.Priorities {
		if p.Netdev != last {
			if tw != nil {
				tw.Flush()
			}
			last = p.Netdev
			fmt.Fprintf(w, "\n%s: per priority\n", p.Netdev)
			tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  PRIO\tPFC\tROCE\tRX PKTS\tTX PKTS\tRX PAUSE\tTX PAUSE\tPAUSED µs\tDISCARDS\tECN MARKED\tPFC REQ/IND")
		}
		pv := func(c counters.PrioCounter) string {
			v := p.Values[c]
			if v == nil {
				return "-"
			}
			return cell(v.Value, v.Rate)
		}
		disc := "-"
		if d := p.Discards(); d != nil {
			disc = cell(d.Value, d.Rate)
		}
		req := "-"
		if p.PFCRequests != nil {
			req = cell(p.PFCRequests.Value, p.PFCRequests.Rate) + " / " + cell(p.PFCIndications.Value, p.PFCIndications.Rate)
		}
		pfc := "-"
		if p.PFC != nil {
			pfc = map[bool]string{true: "on", false: "off"}[*p.PFC]
		}
		roce := map[bool]string{true: "yes", false: "-"}[p.RoCE]
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Prio, pfc, roce, pv(counters.PrioRxPackets), pv(counters.PrioTxPackets),
			pv(counters.PrioRxPause), pv(counters.PrioTxPause), pv(counters.PrioRxPauseDuration), disc, pv(counters.PrioRxECNMarked), req)
	}
	if tw != nil {
		tw.Flush()
	}
	if len(r.RoCEPriorities) > 0 {
		fmt.Fprintln(w, "\nRoCE priorities")
		for _, p := range r.RoCEPriorities {
			fmt.Fprintf(w, "  %s priority %d: %s\n", p.Netdev, p.Prio, strings.Join(p.Why, "; "))
		}
	}
	fmt.Fprintln(w, "\nfindings")
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "  %-7s %s: %s\n", f.Severity, f.Code, f.Message)
	}
}

// printCounterTable writes counters by name: value (rate) and what the
// counter means, in words (text of its meaning; the meaning itself when
// there are none).
func printCounterTable(w io.Writer, cs map[string]counters.Value, none string, cell func(uint64, *float64) string, text func(meaning string) string) {
	if len(cs) == 0 {
		fmt.Fprintln(w, "  "+none)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  COUNTER\tVALUE\tMEANING")
	for _, n := range sortedKeys(cs) {
		c := cs[n]
		meaning := "-"
		if c.Meaning != nil {
			if meaning = text(*c.Meaning); meaning == "" {
				meaning = *c.Meaning
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", n, cell(c.Value, c.Rate), meaning)
	}
	tw.Flush()
}

func fmtRate(r float64) string {
	switch {
	case r == float64(int64(r)):
		return fmt.Sprint(int64(r))
	case r >= 100:
		return fmt.Sprintf("%.0f", r)
	default:
		return fmt.Sprintf("%.3g", r)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
