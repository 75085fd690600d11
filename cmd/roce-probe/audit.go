package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/audit"
	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/agent"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce/capture"
)

func init() { register(newAuditCmd) }

// auditSections are what audit reads: counters' sections (the settings
// give rdma_cm defaults and traffic class overrides to the flows) and,
// from a snapshot, the QP census (live, it is read after each wire
// sample).
const auditSections = countersSections | collect.SectionCensus

// auditFlags are audit's flags.
type auditFlags struct {
	src       hostFlags
	then      string
	format    string
	interval  time.Duration
	watch     bool
	count     int
	tclass    int
	sl        int
	tos       int
	rdmaCM    bool
	flows     []string
	pcap      string
	noWire    bool
	maxFrames int
}

func newAuditCmd() *cobra.Command {
	f := &auditFlags{}
	c := &cobra.Command{
		Use:   "audit [--interval DUR] [--watch] [--tclass T [--sl S] | --tos T | --rdma-cm | --flow SPEC...] [--from FILE [--then FILE]] [--pcap FILE] [-o table|json|ndjson]",
		Short: "Check that the host's RDMA traffic leaves on its RoCE priorities with the markings it should carry",
		Long: `audit checks the applications' own RDMA traffic, which configuration checks
and probes do not see: over --interval (default 1s) it compares

  counters  the RDMA packets each real netdev sent (mlx5's vport RDMA counters,
            the TX packets of rxe's and bnxt_re's hw_counters) with the packets
            its expected priorities sent (per-priority counters of mlx5_core and
            bnxt_en): RDMA traffic they cannot account for is off its priority,
            and the priority that grew by as much is named;
  the wire  where the kernel sees the RDMA traffic (rxe; an mlx5 port only
            through the offloaded-traffic sniffer, from a capture: --pcap), a
            bounded sample of the RoCE frames leaving the host: each QP's VLAN,
            PCP, DSCP and ECN, the priority the port's DCB classifies them into,
            joined to the QP census so that a finding names the process.

The expected markings are the flows' (as check and the agent take them):
--tclass T [--sl S] (verbs), --tos T or --rdma-cm (rdma_cm), --flow SPEC (the
agent's flow syntax, repeatable: name=...,netdev=...,tclass=...,sl=...); each
is checked from the GID entries it applies to, with rdma_cm's configfs default
and the mlx5 traffic class override applied. Without them, RDMA traffic is
expected on the host's RoCE priorities (as 'roce-probe counters' finds them).

The wire sample needs CAP_NET_RAW; without it the audit says so and checks
the counters only. --no-wire leaves it out. --from FILE audits a snapshot
('roce-probe collect'): one counters sample, counted since the counters were
reset (findings are information), or two with --then FILE (a later snapshot
of the same host: the interval between them). --watch audits every
--interval until Ctrl-C (or --count audits).

Exit status: 0 all RDMA traffic on its priorities with its markings, 1
findings (not with --watch), 2 bad input.`,
		Example: `  roce-probe audit --tclass 106
  roce-probe audit --interval 5s --flow name=rdma,netdev=eth0,tclass=106,sl=3 -o json
  roce-probe audit --rdma-cm --tos 106 --watch
  tcpdump -i mlx5_0 -w sniff.pcap & sleep 1; kill %1; roce-probe audit --tclass 106 --pcap sniff.pcap
  roce-probe audit --from node1-a.json.gz --then node1-b.json.gz`,
		Args: noArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if fl.Changed("sl") && !fl.Changed("tclass") {
				return usagef("--sl %d goes with --tclass: an rdma_cm flow's sl comes from its ToS", f.sl)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return runAudit(cmd, f) },
	}
	fl := c.Flags()
	f.src.add(c, hostFlagSet{})
	fl.StringVar(&f.then, "then", "", "with --from, a later snapshot of the same host: the counters' interval is between the two")
	durationVar(fl, &f.interval, "interval", time.Second, 100*time.Millisecond, time.Hour, false, "time between the two counter samples, and the longest wire sample (100ms..1h)")
	fl.BoolVar(&f.watch, "watch", false, "audit every --interval until Ctrl-C or SIGTERM")
	intVar(fl, &f.count, "count", 0, 0, 1<<30, "with --watch, stop after this many audits (0: until interrupted)")
	intVar(fl, &f.tclass, "tclass", 0, 0, 255, "expected: the traffic class verbs applications set (grh.traffic_class), 0..255")
	intVar(fl, &f.sl, "sl", 0, 0, 15, "expected, with --tclass: the service level, 0..15")
	intVar(fl, &f.tos, "tos", 0, 0, 255, "expected: the ToS rdma_cm applications set, 0..255")
	fl.BoolVar(&f.rdmaCM, "rdma-cm", false, "expected: rdma_cm applications that set no ToS (the port's default_roce_tos)")
	fl.StringArrayVar(&f.flows, "flow", nil, "expected: a flow, KEY=VALUE,... with name, netdev, family, device, port, gid_index, tclass, sl, rdma_cm, tos (repeatable; the agent's syntax)")
	fl.StringVar(&f.pcap, "pcap", "", "take the wire sample from this pcap/pcapng capture (the mlx5 offloaded-traffic sniffer's: tcpdump -i mlx5_0 -w FILE) instead of capturing")
	fl.BoolVar(&f.noWire, "no-wire", false, "take no wire sample: counters only")
	intVar(fl, &f.maxFrames, "max-frames", audit.DefaultLimits.Frames, 1, 1000000, "most frames in the wire sample (1..1000000)")
	outputVar(fl, &f.format, "table", "json", ndjson)
	flagsExclusive(c, "tclass", "tos", "flow")
	flagsExclusive(c, "tclass", "rdma-cm")
	flagsExclusive(c, "flow", "rdma-cm")
	flagsExclusive(c, "pcap", "no-wire")
	return c
}

// expectations are the flags' expected markings.
func (f *auditFlags) expectations(cmd *cobra.Command) ([]audit.Expectation, error) {
	fl := cmd.Flags()
	switch {
	case fl.Changed("tclass"):
		return []audit.Expectation{{GIDIndex: -1, Params: host.FlowParams{TrafficClass: uint8(f.tclass), SL: uint8(f.sl)}}}, nil
	case fl.Changed("tos"):
		t := uint8(f.tos)
		return []audit.Expectation{{GIDIndex: -1, Params: host.FlowParams{RDMACM: true, TOS: &t}}}, nil
	case f.rdmaCM:
		return []audit.Expectation{{GIDIndex: -1, Params: host.FlowParams{RDMACM: true}}}, nil
	case fl.Changed("flow"):
		cfg := agent.Default()
		for i, s := range f.flows {
			fc, err := agent.ParseFlow(s)
			if err != nil {
				return nil, usagef("--flow %q (flow %d): %v", s, i+1, err)
			}
			if fc.Name == "" {
				fc.Name = fmt.Sprintf("flow%d", i+1)
			}
			cfg.Flows = append(cfg.Flows, fc)
		}
		if err := cfg.Validate(); err != nil {
			var ce *agent.ConfigError
			if errors.As(err, &ce) {
				if i, key, ok := flowIndex(ce.Field); ok && i < len(f.flows) {
					if key == "" {
						return nil, usagef("--flow %q (flow %d): %s", f.flows[i], i+1, ce.Msg)
					}
					return nil, usagef("--flow %q (flow %d): %s: %s", f.flows[i], i+1, key, ce.Msg)
				}
			}
			return nil, usagef("--flow: %v", err)
		}
		var out []audit.Expectation
		for _, fc := range cfg.Flows {
			out = append(out, fc.Expectation())
		}
		return out, nil
	}
	return nil, nil
}

func runAudit(cmd *cobra.Command, f *auditFlags) error {
	fl := cmd.Flags()
	if f.src.from != "" {
		for _, n := range []string{"watch", "interval", "count"} {
			if fl.Changed(n) {
				return usagef("--%s needs the live host: --from %q is a snapshot (give a later one with --then FILE for an interval)", n, f.src.from)
			}
		}
	}
	if f.then != "" && f.src.from == "" {
		return usagef("--then %q goes with --from: it is the later of two snapshots", f.then)
	}
	if fl.Changed("count") && !f.watch {
		return usagef("--count %d is for --watch: add --watch", f.count)
	}
	expect, err := f.expectations(cmd)
	if err != nil {
		return err
	}
	out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var arr *jsonArray
	emit := func(r audit.Report) {
		switch {
		case arr != nil:
			arr.add(r)
		case f.format == "json" || f.format == ndjson:
			writeJSON(out, r)
		default:
			printAudit(out, r)
		}
	}
	if f.src.from != "" {
		r, err := f.auditSnapshots(expect)
		if err != nil {
			return err
		}
		emit(r)
		return auditExit(r)
	}
	opt := collect.Options{Sections: countersSections, Tool: version(), SysfsRoot: liveSysfs}
	if f.src.netns != "" {
		opt.Netns = []string{f.src.netns}
	}
	s, err := collect.Collect(opt)
	if err != nil {
		return liveError(f.src.netns, err)
	}
	v, err := f.src.viewOf(s)
	if err != nil {
		return err
	}
	noteErrors(errw, s.Errors)
	smp, err := collect.NewSampler(s, opt)
	if err != nil {
		return liveError(f.src.netns, err)
	}
	defer smp.Close()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.watch && f.format == "json" {
		arr = newJSONArray(out)
		defer func() { arr.end(); fmt.Fprintln(out) }()
	}
	prev := s.Counters
	clear := f.format == "table" && f.watch && isTerminal(out)
	warned := false
	for n := 0; ; n++ {
		in := audit.Input{View: v, Expect: expect}
		// The wire sample runs during the interval, bounded by it.
		wireDone := make(chan struct{})
		go func() {
			defer close(wireDone)
			in.Wire, in.WireReason = f.wireSample(ctx, v)
		}()
		select {
		case <-ctx.Done():
			<-wireDone
			return nil
		case <-time.After(f.interval):
		}
		<-wireDone
		if in.Wire != nil {
			// The QPs as they are after the sample: the ones that sent it
			// (a QP destroyed meanwhile is not named).
			if c, err := collect.Census(collect.CensusOptions{}); err == nil {
				in.Owners = audit.OwnersOf(c)
			} else if !warned {
				fmt.Fprintf(errw, "roce-probe: the QP census could not be read (%v): the wire sample's QPs are not named\n", err)
			}
		}
		if in.Wire == nil && !warned && f.format == "table" {
			fmt.Fprintf(errw, "roce-probe: no wire sample: %s\n", in.WireReason)
			warned = true
		}
		cur, errs := smp.Sample()
		noteErrors(errw, errs)
		in.Prev, in.Cur = prev, cur
		r := audit.Audit(in)
		prev = cur
		if clear {
			fmt.Fprint(out, "\033[H\033[2J")
		} else if f.watch && f.format == "table" && n > 0 {
			fmt.Fprintln(out)
		}
		emit(r)
		if !f.watch {
			return auditExit(r)
		}
		if f.count > 0 && n+1 >= f.count {
			return nil
		}
	}
}

// auditSnapshots audits --from (and --then): one sample, or the interval
// between the two snapshots; the wire sample only from --pcap.
func (f *auditFlags) auditSnapshots(expect []audit.Expectation) (audit.Report, error) {
	s, err := f.src.snapshot(auditSections)
	if err != nil {
		return audit.Report{}, err
	}
	if s.Counters == nil && (f.pcap == "" || f.then != "") {
		return audit.Report{}, usagef("--from %q: the snapshot has no counters section: take it with 'roce-probe collect' (which records one sample), or give only a wire sample (--pcap FILE)", f.src.from)
	}
	v, err := f.src.viewOf(s)
	if err != nil {
		return audit.Report{}, err
	}
	in := audit.Input{View: v, Expect: expect, Cur: s.Counters, Owners: auditOwners(s),
		WireReason: "a snapshot holds no frames: give a capture with --pcap FILE"}
	if f.then != "" {
		later := hostFlags{from: f.then, netns: f.src.netns, cmd: f.src.cmd}
		s2, err := later.snapshot(auditSections)
		if err != nil {
			return audit.Report{}, err
		}
		if s2.Counters == nil {
			return audit.Report{}, usagef("--then %q: the snapshot has no counters section: take it with 'roce-probe collect'", f.then)
		}
		if !s2.Counters.Time.After(s.Counters.Time) {
			return audit.Report{}, usagef("--then %q: its counters were read at %s, not after --from's (%s): want the later snapshot", f.then,
				s2.Counters.Time.Format(time.RFC3339), s.Counters.Time.Format(time.RFC3339))
		}
		if v, err = later.viewOf(s2); err != nil {
			return audit.Report{}, err
		}
		in.View, in.Prev, in.Cur, in.Owners = v, s.Counters, s2.Counters, auditOwners(s2)
	}
	if f.pcap != "" {
		in.Wire, in.WireReason, err = f.pcapSample(v)
		if err != nil {
			return audit.Report{}, err
		}
	}
	r := audit.Audit(in)
	if in.Cur == nil {
		r.Time = s.Time
	}
	return r, nil
}

// wireSample takes the live wire sample (or reads --pcap), or says why
// there is none.
func (f *auditFlags) wireSample(ctx context.Context, v *host.View) (*audit.Wire, string) {
	if f.noWire {
		return nil, "left out (--no-wire)"
	}
	if f.pcap != "" {
		w, why, err := f.pcapSample(v)
		if err != nil {
			return nil, err.Error()
		}
		return w, why
	}
	nds, offloaded := audit.CaptureNetdevs(v)
	if len(nds) == 0 {
		switch {
		case v.Predicted:
			return nil, "the host has no RDMA device: no RDMA traffic to sample"
		case len(offloaded) > 0:
			return nil, fmt.Sprintf("%s offload their RDMA traffic: the kernel sees none of it; on mlx5 capture it with the offloaded-traffic sniffer (tcpdump -i %s -w FILE) and give the file with --pcap FILE (docs/audit.md, \"The wire\")", strings.Join(offloaded, ", "), offloaded[0])
		}
		return nil, "no Soft-RoCE port has a netdev in this namespace to capture on"
	}
	local, _ := probe.LocalAddresses(v.NS)
	lim := audit.DefaultLimits
	lim.Frames, lim.Duration = f.maxFrames, f.interval
	w, err := audit.Capture(ctx, nds, local, lim)
	var pe *probe.PermissionError
	switch {
	case errors.As(err, &pe):
		return nil, fmt.Sprintf("capturing on %s needs CAP_NET_RAW, which this process lacks: the counters alone were checked (run as root, or give the binary cap_net_raw)", strings.Join(nds, ", "))
	case err != nil:
		return nil, fmt.Sprintf("capturing on %s failed: %v: the counters alone were checked", strings.Join(nds, ", "), err)
	}
	return w, ""
}

// pcapSample reads --pcap into a wire sample of v's addresses.
func (f *auditFlags) pcapSample(v *host.View) (*audit.Wire, string, error) {
	fh, err := os.Open(f.pcap)
	if err != nil {
		return nil, "", usagef("--pcap %q: %v: want a pcap or pcapng capture", f.pcap, err)
	}
	defer fh.Close()
	rd, err := capture.NewReader(fh)
	if err != nil {
		return nil, "", usagef("--pcap %q: %v", f.pcap, err)
	}
	defer rd.Close()
	local, _ := probe.LocalAddresses(v.NS)
	w := audit.NewWire(local, audit.Limits{Frames: f.maxFrames})
	if err := w.ReadFrom(rd, f.pcap); err != nil {
		return nil, "", usagef("--pcap %q: %v", f.pcap, err)
	}
	return w, "", nil
}

// auditOwners is the QP census of s as audit joins frames to it; nil
// without a census (a snapshot taken before roce-probe recorded one).
func auditOwners(s *host.Snapshot) audit.OwnerOf { return audit.OwnersOf(s.Census) }

func auditExit(r audit.Report) error {
	if r.HasFindings() {
		return findingError{}
	}
	return nil
}

// printAudit writes one audit as tables, in one write.
func printAudit(out io.Writer, r audit.Report) {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	iv := "one sample: counted since the counters were reset"
	if r.Interval != nil {
		iv = fmt.Sprintf("counters over %.3gs", *r.Interval)
	}
	fmt.Fprintf(w, "%s (%s)\n", r.Time.Format("2006-01-02 15:04:05.000 MST"), iv)
	num := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	fmt.Fprintln(w, "\ncounters")
	if len(r.Netdevs) == 0 {
		fmt.Fprintln(w, "  no netdev counts its RDMA traffic (no mlx5 vport counters, no TX packets in an RDMA port's hw_counters)")
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NETDEV\tEXPECTED PRIORITIES\tRDMA TX PKTS\tEXPECTED TX PKTS\tUNACCOUNTED\tCARRIERS\tNOTE")
		for _, n := range r.Netdevs {
			note := "-"
			if n.Reason != nil {
				note = *n.Reason
			}
			fmt.Fprintf(tw, "  %s\t%s (%s)\t%s\t%s\t%s\t%s\t%s\n", n.Netdev, u8list(n.Expected), n.ExpectedFrom, num(n.RDMATx), num(n.ExpectedTx), num(n.Unaccounted), u8list(n.Carriers), note)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\nwire")
	if !r.Wire.Sampled {
		fmt.Fprintf(w, "  not sampled: %s\n", ptrOr(r.Wire.Reason, "-", str))
	} else {
		fmt.Fprintf(w, "  %d frames leaving the host on %s", r.Wire.Frames, strings.Join(r.Wire.Netdevs, ", "))
		if r.Wire.Duration != nil {
			fmt.Fprintf(w, " in %.3gs", *r.Wire.Duration)
		}
		fmt.Fprintf(w, " (%d from other hosts, %d not RoCE, %d left out)\n", r.Wire.Foreign, r.Wire.Undecodable, r.Wire.LeftOut)
		if len(r.Wire.QPs) > 0 {
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "  PID\tCOMM\tQP\tDEVICE\tSRC → DST\tVLAN/PCP\tDSCP\tECN\tPRIORITY\tPACKETS\tEXPECTED\tVERDICT")
			for _, q := range r.Wire.QPs {
				qp := "-"
				if q.QPN != nil {
					qp = fmt.Sprintf("0x%x", *q.QPN)
				}
				tag := "untagged"
				if q.VLAN != nil {
					tag = fmt.Sprintf("%d/%d", *q.VLAN, *q.PCP)
				}
				exp := "-"
				if x := q.Expected; x != nil {
					exp = fmt.Sprintf("DSCP %s, PCP %s, priority %s", ptrOr(x.DSCP, "-", u8Text), ptrOr(x.PCP, "-", u8Text), ptrOr(x.Priority, "-", u8Text))
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s → %s\t%s\t%d\t%d\t%s\t%d\t%s\t%s\n", ptrOr(q.PID, "-", func(p int) string { return fmt.Sprint(p) }),
					ptrOr(q.Comm, "-", str), qp, ptrOr(q.Device, "-", str), q.Src, q.Dst, tag, q.DSCP, q.ECN, ptrOr(q.Priority, "-", u8Text), q.Packets, exp, q.Verdict)
			}
			tw.Flush()
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

func u8list(ps qos.Bytes) string {
	if len(ps) == 0 {
		return "-"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ",")
}
