package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

func init() { register(newSendCmd) }

type sendFlags struct {
	dst               string
	dev, netdev       string
	gidIndex, port    int
	gidIndexSet       bool // --gid-index was given
	tclass, sl, hop   int
	sport             int
	count             int
	interval, timeout time.Duration
	sweep             probe.SweepField
	output            string
	resolveWait       time.Duration
}

func newSendCmd() *cobra.Command {
	var f sendFlags
	c := &cobra.Command{
		Use:   "send --dst ADDR (--dev D --gid-index I | --netdev N)",
		Short: "Send RoCE v2 probes and report the markings that arrive at a listener",
		Long: `send builds real RoCE v2 UD SEND_ONLY frames (BTH opcode 0x64, DETH, valid ICRC)
carrying a probe signature, a sequence number and the markings they were sent
with, sends them raw from the netdev that owns the source address, and reports
for each probe what a 'roce-probe listen' on the destination saw arrive: VLAN
and PCP, DSCP, ECN, TTL. It flags remarking, tag stripping, ECN marking, routed
hops and loss. Frames are also captured leaving this host, so even with no
listener it tells whether they left with the intended markings.

The source is either an RDMA GID (--dev and --gid-index: its netdev, address
and VLAN) or a netdev (--netdev: its first address of the destination's
family). --tclass is the traffic class byte (DSCP << 2 | ECN) and --sl the
802.1p priority (PCP) of a tagged netdev, as a RoCE NIC applies them.
--sweep tries every DSCP (0..63) or PCP (0..7) value and prints the map the
path applies. A listener answers at most 100 probes per second per sender by
default (its --rate): keep --interval at 10ms or more. -o json prints one JSON document,
{"results": [...], "totals": {...}}, each probe written as it completes; -o
ndjson one JSON object per probe and line, then the summary's line.
Needs CAP_NET_RAW. Exit status: 0 nothing found, 1 findings
(remarking, loss, ...), 2 bad usage or no raw socket.`,
		Example: `  roce-probe send --netdev eth0 --dst 192.0.2.2 --tclass 106 --count 5
  roce-probe send --dev mlx5_0 --gid-index 3 --dst 192.0.2.2 --sweep dscp -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.gidIndexSet = cmd.Flags().Changed("gid-index")
			return runSend(cmd, f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.dst, "dst", "", "destination IP address or GID (where 'roce-probe listen' runs)")
	fl.StringVar(&f.dev, "dev", "", "RDMA device whose GID is the source (with --gid-index)")
	intVar(fl, &f.gidIndex, "gid-index", 0, 0, 255, "GID index on --dev (a RoCE v2 GID), 0..255")
	intVar(fl, &f.port, "port", 1, 1, 255, "port of --dev (1..255)")
	fl.StringVar(&f.netdev, "netdev", "", "netdev to send from (instead of --dev/--gid-index)")
	intVar(fl, &f.tclass, "tclass", 0, 0, 255, "traffic class byte: DSCP << 2 | ECN (0..255; 106 = DSCP 26 + ECT(0))")
	intVar(fl, &f.sl, "sl", 0, 0, 15, "service level 0..15: with --dev the driver's rule makes it a PCP; with --netdev tagged frames carry its low 3 bits as the PCP, as mlx5 does (sl & 7)")
	intVar(fl, &f.hop, "hop-limit", 64, 1, 255, "IPv4 TTL / IPv6 hop limit (1..255)")
	intVar(fl, &f.sport, "sport", 0, 0, 65535, "UDP source port (0: one random port in 0xC000..0xFFFF for the whole run)").note = "(0: random)"
	intVar(fl, &f.count, "count", 5, 1, 100000, "probes to send (per value with --sweep), 1..100000")
	durationVar(fl, &f.interval, "interval", 100*time.Millisecond, 0, time.Hour, false, "time between probes (0s..1h)")
	durationVar(fl, &f.timeout, "timeout", time.Second, 0, time.Hour, true, "how long to wait for each probe's reply (at most 1h)")
	enumVar(fl, &f.sweep, "sweep", "", "try every value of dscp or pcp and print the map the path applies",
		choice("dscp", probe.SweepDSCP), choice("pcp", probe.SweepPCP))
	outputVar(fl, &f.output, "table", "json", ndjson)
	durationVar(fl, &f.resolveWait, "resolve-timeout", 2*time.Second, 0, time.Minute, true, "how long to wait for the next hop's MAC address (at most 1m)")
	// One source: --netdev, or --dev with --gid-index (and --port).
	sourceFlagGroups(c)
	return c
}

func runSend(cmd *cobra.Command, f sendFlags) error {
	out := cmd.OutOrStdout()
	format := f.output
	g, err := parseDst(f.dst)
	if err != nil {
		return err
	}
	dst := g.Addr()
	if err := probe.CheckDestination(dst); err != nil {
		return usagef("--dst %q is %v: want the address of the one host where 'roce-probe listen' runs", f.dst, err)
	}
	// Which source (--netdev, or --dev with --gid-index) is checked by
	// the command's flag groups.
	byGID := f.dev != ""
	sweep := f.sweep
	sport := uint16(f.sport)
	if sport == 0 {
		sport = probe.RandomSport()
	}

	// One read of the host: the namespace the probes leave from and, with
	// --dev, the GID tables and DCB the address handle resolves against.
	snap, ns, err := liveSource(f)
	if err != nil {
		return err
	}
	netdev, netdevFlag := f.netdev, "--netdev"
	var src netip.Addr
	base := probe.BaseMarkings(uint8(f.sl), uint8(f.tclass), uint8(f.hop), sport)
	var notes []string
	if byGID {
		// The address handle the application would create: resolved by ah/
		// to the netdev, address and markings the RDMA stack puts on the wire.
		res, m, n, err := resolveAHSource(snap, f, g, dst, sport)
		if err != nil {
			return err
		}
		netdev, src, base = res.Wire.Netdev, res.Wire.Src, m
		netdevFlag = fmt.Sprintf("GID index %d's netdev", f.gidIndex)
		notes = append(notes, n...)
		for _, w := range res.Warnings {
			notes = append(notes, w.String())
		}
	}
	ep, err := resolveEndpoint(ns, netdev, netdevFlag, src, dst, f.resolveWait)
	if err != nil {
		return err
	}
	if sweep == probe.SweepPCP && len(ep.Tags) == 0 {
		return usagef("--sweep pcp needs a VLAN netdev: %s sends untagged frames, which carry no PCP", ep.Netdev)
	}

	if err := probe.CheckRawSocket(ep.Wire); err != nil {
		return rawSocketError("send", err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if format == "table" {
		fmt.Fprintf(out, "probing %s → %s from %s (%s), every %v, waiting %v for each reply\n",
			ep.Src, ep.Dst, ep.Netdev, wireDesc(ep), f.interval, f.timeout)
		if ep.NextHop != ep.Dst {
			fmt.Fprintf(out, "next hop %s (%s)\n", ep.NextHop, ep.DstMAC)
		}
		for _, n := range notes {
			fmt.Fprintln(out, "note:", n)
		}
		if len(ep.Tags) > 0 && f.sl > 7 && !byGID {
			fmt.Fprintf(out, "note: the PCP is 3 bits: --sl %d goes out as PCP %d (sl & 7, as mlx5 maps it)\n", f.sl, f.sl&7)
		}
		if len(ep.Tags) == 0 && f.sl != 0 {
			fmt.Fprintf(out, "note: %s is untagged, so --sl %d is not carried (no PCP without a VLAN tag)\n", ep.Netdev, f.sl)
		}
	}
	// Rows are printed as probes complete, so columns have fixed widths.
	const row = "%-5s  %-38s  %-38s  %-9s  %s\n"
	if format == "table" && sweep == "" {
		fmt.Fprintf(out, row, "SEQ", "SENT", "RECEIVED", "RTT", "FINDINGS")
	}
	// -o json: one document, {"results": [...], "totals": {...}}, the
	// probes written as they complete; -o ndjson: one line each, then
	// the summary's.
	doc := newJSONRun(out, "results")
	emit := func(r probe.Result) {
		switch format {
		case "json":
			doc.add(probeLineJSON(r))
			return
		case ndjson:
			writeJSON(out, probeLineJSON(r))
			return
		}
		fs := findingStrings(r.Findings())
		if sweep != "" {
			return // a sweep prints its map at the end
		}
		rtt := "-"
		if r.Received != nil {
			rtt = fmt.Sprintf("%.3fms", float64(r.RTT.Microseconds())/1000)
		}
		fstr := "-"
		if len(fs) > 0 {
			fstr = strings.Join(fs, "; ")
		}
		fmt.Fprintf(out, row, fmt.Sprint(r.Seq), markingsText(&r.Sent), markingsText(r.Received), rtt, fstr)
	}
	sum, err := probe.Send(ctx, probe.SendConfig{Endpoint: ep, Base: base, Count: f.count, Interval: f.interval,
		Timeout: f.timeout, Sweep: sweep}, emit)
	if err != nil && !errors.Is(err, context.Canceled) {
		return rawSocketError("send", err)
	}
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return err
	}
	switch format {
	case "json":
		if err := doc.end(summaryJSON(sum, ep)); err != nil {
			return err
		}
	case ndjson:
		writeJSON(out, summaryJSON(sum, ep))
	default:
		printSummary(out, sum, ep)
	}
	if interrupted {
		return findingError{"interrupted"}
	}
	if sum.Answered == 0 {
		return findingError{fmt.Sprintf("nothing answered: no reply from %s to %s", ep.Dst, plural(sum.Sent, "probe"))}
	}
	if len(sum.Findings) > 0 {
		return findingError{}
	}
	return nil
}

func wireDesc(ep probe.Endpoint) string {
	if len(ep.Tags) == 0 {
		return "untagged"
	}
	var parts []string
	for _, t := range ep.Tags {
		proto := "802.1Q"
		if t.TPID == 0x88a8 {
			proto = "802.1ad"
		}
		parts = append(parts, fmt.Sprintf("%s VLAN %d", proto, t.ID))
	}
	return strings.Join(parts, " + ") + " on " + ep.Wire
}

// markingsJSON is the JSON shape of markings (docs/json.md, "markings"):
// probe.MarkingsJSON, shared with the agent's /pairs.
type markingsJSON = probe.MarkingsJSON

// markingsOf is m in JSON (nil for nil) with the tags of the frame it was
// read from; tags nil with m tagged means the tags are not known (m came
// in a payload, which carries only the outermost tag's VLAN and PCP).
func markingsOf(m *probe.Markings, tags []roce.VLANTag) *markingsJSON {
	if m == nil {
		return nil
	}
	var chain []vlan.ChainTag
	if len(tags) > 0 {
		chain = frameChain(tags)
	}
	return m.JSON(chain)
}

// findingJSON is one finding of a probe (docs/json.md, "probe_finding"):
// its kind, as finding_counts counts it, and the line for people.
type findingJSON struct {
	Code    probe.FindingKind `json:"code"`
	Message string            `json:"message"`
}

func findingsJSON(fs []probe.Finding) []findingJSON {
	out := make([]findingJSON, 0, len(fs))
	for _, f := range fs {
		out = append(out, findingJSON{f.Kind, f.Message})
	}
	return out
}

// probeJSON is one result of `send -o json` and -o ndjson (docs/json.md, "send_probe").
type probeJSON struct {
	Seq       uint32        `json:"seq"`
	Sent      *markingsJSON `json:"sent"`
	Received  *markingsJSON `json:"received"`
	Egress    *markingsJSON `json:"egress"`
	RTTMicros *float64      `json:"rtt_us"`
	Findings  []findingJSON `json:"findings"`
}

func probeLineJSON(r probe.Result) probeJSON {
	return probeJSON{Seq: r.Seq, Sent: markingsOf(&r.Sent, r.SentTags), Received: markingsOf(r.Received, nil),
		Egress: markingsOf(r.Egress, r.EgressTags), RTTMicros: rttMicros(r), Findings: findingsJSON(r.Findings())}
}

func rttMicros(r probe.Result) *float64 {
	if r.Received == nil {
		return nil
	}
	v := float64(r.RTT.Nanoseconds()) / 1000
	return &v
}

func findingStrings(fs []probe.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, f.Message)
	}
	return out
}

func markingsText(m *probe.Markings) string {
	if m == nil {
		return "(no reply)"
	}
	tag := "untagged"
	if m.Tagged {
		tag = fmt.Sprintf("vlan %d pcp %d", m.VLAN, m.PCP)
	}
	return fmt.Sprintf("%s dscp %d %s ttl %d", tag, m.DSCP, qos.ECN(m.ECN), m.TTL)
}

// sweepEntryJSON is one value of a sweep (docs/json.md, "sweep_entry").
type sweepEntryJSON struct {
	Value          uint8  `json:"value"`
	ReceivedValues []int  `json:"received_values"`
	Untagged       int    `json:"untagged"`
	Lost           int    `json:"lost"`
	Status         string `json:"status"`
}

type sweepJSON struct {
	Field  string           `json:"field"`
	Map    []sweepEntryJSON `json:"map"`
	Counts map[string]int   `json:"counts"`
}

// sendSummaryJSON is the totals of `send -o json`, the last line of -o ndjson (docs/json.md,
// "send_summary").
type sendSummaryJSON struct {
	Summary       bool                      `json:"summary"`
	Src           string                    `json:"src"`
	Dst           string                    `json:"dst"`
	Netdev        string                    `json:"netdev"`
	RealNetdev    string                    `json:"real_netdev"`
	Sent          int                       `json:"probes"`
	Answered      int                       `json:"answered"`
	Lost          int                       `json:"lost"`
	EgressSeen    int                       `json:"egress_seen"`
	EgressAsSent  bool                      `json:"egress_as_intended"`
	RTTMinMicros  *float64                  `json:"rtt_min_us"`
	RTTAvgMicros  *float64                  `json:"rtt_avg_us"`
	RTTMaxMicros  *float64                  `json:"rtt_max_us"`
	Findings      map[probe.FindingKind]int `json:"finding_counts"`
	NothingAnswer bool                      `json:"nothing_answered"`
	Sweep         *sweepJSON                `json:"sweep"`
}

func micros(d time.Duration) *float64 {
	v := float64(d.Nanoseconds()) / 1000
	return &v
}

func summaryJSON(s probe.Summary, ep probe.Endpoint) sendSummaryJSON {
	j := sendSummaryJSON{Summary: true, Src: ep.Src.String(), Dst: ep.Dst.String(), Netdev: ep.Netdev, RealNetdev: ep.Wire,
		Sent: s.Sent, Answered: s.Answered, Lost: s.Lost, EgressSeen: s.EgressSeen,
		EgressAsSent: s.EgressSeen == s.Sent && s.EgressOff == 0,
		Findings:     s.Findings, NothingAnswer: s.Answered == 0}
	if j.Findings == nil {
		j.Findings = map[probe.FindingKind]int{}
	}
	if s.Answered > 0 {
		j.RTTMinMicros, j.RTTAvgMicros, j.RTTMaxMicros = micros(s.RTTMin), micros(s.RTTAvg), micros(s.RTTMax)
	}
	if s.Sweep != nil {
		sj := &sweepJSON{Field: string(s.Sweep.Field), Counts: s.Sweep.Counts(), Map: []sweepEntryJSON{}}
		for _, e := range s.Sweep.Entries {
			sj.Map = append(sj.Map, sweepEntryJSON{Value: e.Sent, ReceivedValues: ints(e.Received), Untagged: e.Untagged, Lost: e.Lost, Status: e.Status()})
		}
		j.Sweep = sj
	}
	return j
}

func printSummary(w io.Writer, s probe.Summary, ep probe.Endpoint) {
	if s.Sweep != nil {
		for _, l := range s.Sweep.Lines() {
			fmt.Fprintln(w, l)
		}
	}
	fmt.Fprintf(w, "%d sent, %d answered, %d lost", s.Sent, s.Answered, s.Lost)
	if s.Answered > 0 {
		fmt.Fprintf(w, "; rtt min/avg/max %.3f/%.3f/%.3f ms", ms(s.RTTMin), ms(s.RTTAvg), ms(s.RTTMax))
	}
	fmt.Fprintln(w)
	switch {
	case s.EgressSeen == s.Sent && s.EgressOff == 0:
		fmt.Fprintf(w, "egress: %s left %s with the intended markings\n", allOf(s.Sent, "probe"), ep.Wire)
	case s.EgressSeen < s.Sent:
		fmt.Fprintf(w, "egress: only %d of %s %s seen leaving %s\n", s.EgressSeen, plural(s.Sent, "probe"), wasWere(s.EgressSeen), ep.Wire)
	}
	if s.EgressOff > 0 {
		fmt.Fprintf(w, "egress: %s left %s with other markings than intended (this host changed them)\n", plural(s.EgressOff, "probe"), ep.Wire)
	}
	if s.Answered == 0 {
		fmt.Fprintf(w, "nothing answered: no reply from %s (is 'roce-probe listen' running there, and can its replies come back?)\n", ep.Dst)
	}
	if len(s.Findings) > 0 {
		var ks []string
		for k, n := range s.Findings {
			ks = append(ks, fmt.Sprintf("%s ×%d", k, n))
		}
		sort.Strings(ks)
		fmt.Fprintf(w, "findings: %s (see docs/probe.md)\n", strings.Join(ks, ", "))
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// liveHost reads this host once for the live commands send and listen:
// sections (collect.SectionNet at least: links, addresses, routes,
// neighbours), and this network namespace of the snapshot.
func liveHost(sections collect.Section) (*host.Snapshot, *vlan.Namespace, error) {
	snap, err := (&hostFlags{}).snapshot(sections)
	if err != nil {
		return nil, nil, err
	}
	ns, err := snap.Namespace("")
	if err != nil {
		return nil, nil, usageError{err}
	}
	return snap, ns, nil
}

// sourceFlagGroups makes the one source of send and trace: --netdev, or
// --dev with --gid-index (and --port).
func sourceFlagGroups(c *cobra.Command) {
	flagsTogether(c, "dev", "gid-index")
	flagsOneRequired(c, "netdev", "dev")
	for _, x := range []string{"dev", "gid-index", "port"} {
		flagsExclusive(c, "netdev", x)
	}
}

// liveSource is the one read of the host of send and trace: the namespace
// the probes leave from (--netdev checked in it) and, with --dev, the GID
// tables and DCB the address handle resolves against.
func liveSource(f sendFlags) (*host.Snapshot, *vlan.Namespace, error) {
	sections := collect.SectionNet
	if f.dev != "" {
		sections |= collect.SectionRDMA | collect.SectionDCB
	}
	snap, ns, err := liveHost(sections)
	if err != nil {
		return nil, nil, err
	}
	if f.netdev != "" {
		if err := checkNetdevIn(ns, "--netdev", f.netdev); err != nil {
			return nil, nil, err
		}
	}
	return snap, ns, nil
}

// resolveAHSource is resolveAH for a probe from --dev/--gid-index to dst:
// it also fails if the GID entry's address and dst are of different
// families, and its notes start with the markings the address handle
// gives.
func resolveAHSource(snap *host.Snapshot, f sendFlags, g gid.GID, dst netip.Addr, sport uint16) (*host.AHResult, probe.Markings, []string, error) {
	res, m, n, err := resolveAH(snap, f, g, sport)
	if err != nil {
		return nil, m, nil, err
	}
	if src := res.Wire.Src; src.Is4() != dst.Is4() {
		return nil, m, nil, usagef("--dst %s and GID index %d (%s) are of different families", dst, f.gidIndex, src)
	}
	notes := append([]string{fmt.Sprintf("markings from the %s address handle (driver %s): %s", f.dev, orDash(string(res.Driver)), markingsText(&m))}, n...)
	return res, m, notes, nil
}

// resolveEndpoint is probe.ResolveEndpoint with the CLI's errors: a
// neighbour that does not answer ARP/ND is a result (exit 1: nothing can
// be sent to it), not bad usage; a netdev error names netdevFlag, what
// chose the netdev.
func resolveEndpoint(ns *vlan.Namespace, netdev, netdevFlag string, src, dst netip.Addr, wait time.Duration) (probe.Endpoint, error) {
	ep, err := probe.ResolveEndpoint(ns, netdev, src, dst, wait)
	if errors.Is(err, probe.ErrNoNeighbor) {
		return ep, findingError{err.Error()}
	}
	if err != nil {
		return ep, netdevError(netdevFlag, err)
	}
	return ep, nil
}

// checkNetdevIn returns a usage error naming flag when namespace ns has no
// netdev called name.
func checkNetdevIn(ns *vlan.Namespace, flag, name string) error {
	if _, ok := ns.ByName(name); !ok {
		return usagef("%s %q: no such network device in %s (see 'ip link')", flag, name, ns.What())
	}
	return nil
}

// netdevError names what chose the netdev (the flag, or the GID entry) in
// the probe package's netdev errors ("is down", "has no IPv4 address").
func netdevError(what string, err error) error {
	var ne *probe.NetdevError
	if errors.As(err, &ne) {
		return usagef("%s %q: %v", what, ne.Netdev, ne.Err)
	}
	return usageError{err}
}

// rawSocketError turns a missing CAP_NET_RAW into one line that says what
// to do; other errors pass unchanged.
func rawSocketError(command string, err error) error {
	var perr *probe.PermissionError
	if errors.As(err, &perr) {
		return fmt.Errorf("%s needs CAP_NET_RAW to open a raw socket on %s: run as root or `setcap cap_net_raw+ep`", command, perr.Netdev)
	}
	return err
}

// resolveAH resolves the address handle {sgid_index, dgid, sl,
// traffic_class, hop_limit} on --dev/--port of this host (probe's
// AHResolver): the GID entry's netdev and address, and the markings the
// device's driver applies, with notes on what its profile does not know.
func resolveAH(snap *host.Snapshot, f sendFlags, dst gid.GID, sport uint16) (*host.AHResult, probe.Markings, []string, error) {
	var none probe.Markings
	v, err := snap.View("")
	if err != nil {
		return nil, none, nil, usageError{err}
	}
	if v.Predicted {
		return nil, none, nil, usagef("--dev %q: this host has no RDMA device: give --netdev N to probe from a netdev", f.dev)
	}
	// The --dev and --port errors of every command.
	if err := (&hostFlags{dev: f.dev, port: f.port}).checkDev(v); err != nil {
		return nil, none, nil, err
	}
	p, err := v.Port(f.dev, f.port)
	if err != nil {
		return nil, none, nil, usagef("--dev %q --port %d: %v", f.dev, f.port, err)
	}
	if e, ok := (ah.Table{Entries: p.Entries}).Lookup(f.gidIndex); !ok || e.Empty {
		return nil, none, nil, usagef("--gid-index %d: %s port %d has no GID there (see 'roce-probe gids --dev %s')", f.gidIndex, f.dev, p.Port, f.dev)
	} else if err := probe.SourceEntry(e); err != nil {
		return nil, none, nil, usagef("--gid-index %d of %s port %d %v", f.gidIndex, f.dev, p.Port, err)
	}
	r, err := probe.NewAHResolver(v, probe.AHFlow{Device: f.dev, Port: f.port, GIDIndex: f.gidIndex,
		SL: uint8(f.sl), TrafficClass: uint8(f.tclass), HopLimit: uint8(f.hop), Sport: sport})
	if err == nil {
		var res *host.AHResult
		var m probe.Markings
		var notes []string
		res, m, notes, err = r.Resolve(dst)
		if res != nil {
			// An unresolved neighbour is fine: ResolveEndpoint makes the
			// kernel resolve it.
			return res, m, notes, nil
		}
	}
	return nil, none, nil, usagef("--gid-index %d: the address handle does not resolve: %v", f.gidIndex, err)
}

// plural is "1 probe", "2 probes".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// allOf is "the probe" for one, "all 5 probes" for more.
func allOf(n int, noun string) string {
	if n == 1 {
		return "the " + noun
	}
	return fmt.Sprintf("all %d %ss", n, noun)
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
