package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/trace"
)

func init() { register(newTraceCmd) }

type traceFlags struct {
	sendFlags
	gidIndexArg string
	tos         int
	paths       int
	maxPorts    int
	minPorts    int
	flowLabel   int
	cmPorts     string
	tries       int
	rate        float64
}

func newTraceCmd() *cobra.Command {
	var f traceFlags
	c := &cobra.Command{
		Use:   "trace --dst ADDR (--dev D --gid-index I|auto | --netdev N)",
		Short: "Find the hop where DSCP or ECN changes, and which ECMP path a UDP source port or flow label takes",
		Long: `trace sends real RoCE v2 probes (the frames 'send' builds: BTH, DETH, valid ICRC)
to --dst with TTL / hop limit 1, 2, 3, ..., every probe of a path with the same
5-tuple, and reads the ICMP / ICMPv6 Time Exceeded each router answers: its
quote shows the DSCP, ECN and TTL the probe arrived there with. A change
between two hops is located between them. The destination's own answer — a
'roce-probe listen' or agent there — gives every marking that arrived, VLAN
and PCP included (routers' quotes have no Ethernet header).

--paths N varies the UDP source port (the ports of flow labels 1, 2, 3, ...)
to find up to N distinct ECMP paths; the search stops when enough ports in a
row found no new path (5 after 1 path, 8 after 2: a coupon collector's bound,
95% sure with even hashing; not before --min-ports) or after --max-ports. --flow-label L traces the
port an address handle with flow label L gets (the kernel's and rdma-core's
rdma_flow_label_to_udp_sport), --sport P a port, --rdma-cm-ports C:S the port
rdma_cm gives a connection from rdma_cm port C to S (flow label (C*31+S) &
0xfffff, cma_get_roce_udp_flow_label). See docs/trace.md.

Probes are bounded: at most --rate per second, --tries per hop (each waiting
twice as long as the one before, so a router's ICMP rate limit refills),
--hop-limit hops. Hops that do not answer are shown as silent and the trace
goes on past them. Nothing is sent but probes to --dst. Needs CAP_NET_RAW.
Exit status: 0 no marking changed and every path reached --dst, 1 a change or
a path that did not reach it, 2 bad usage or no raw socket. A congested
queue's ECN CE mark (ECT → CE) is a change too (as send's ecn-ce finding),
marked as no remark.`,
		Example: `  roce-probe trace --netdev eth0 --dst 192.0.2.2 --tclass 106
  roce-probe trace --dev mlx5_0 --gid-index 3 --dst 192.0.2.2 --tclass 106 --paths 8 -o json
  roce-probe trace --netdev eth0 --dst fd00::2 --flow-label 0x12345`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fl := cmd.Flags()
			if fl.Changed("tos") && (fl.Changed("tclass") || fl.Changed("sl")) {
				return usagef("--tos cannot be used with --tclass or --sl: an rdma_cm connection's traffic class is its ToS and its sl comes from the ToS (iboe_tos_to_sl)")
			}
			return runTrace(cmd, f, fl.Changed("tos"), fl.Changed("max-ports"))
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.dst, "dst", "", "destination IP address or GID (where 'roce-probe listen' or the agent runs, ideally)")
	fl.StringVar(&f.dev, "dev", "", "RDMA device whose GID is the source (with --gid-index)")
	fl.StringVar(&f.gidIndexArg, "gid-index", "", "GID index on --dev (a RoCE v2 GID), 0..255, or auto")
	intVar(fl, &f.port, "port", 1, 1, 255, "port of --dev (1..255)")
	fl.StringVar(&f.netdev, "netdev", "", "netdev to send from (instead of --dev/--gid-index)")
	intVar(fl, &f.tclass, "tclass", 0, 0, 255, "traffic class byte: DSCP << 2 | ECN (0..255; 106 = DSCP 26 + ECT(0))")
	intVar(fl, &f.sl, "sl", 0, 0, 15, "service level 0..15 (the PCP of tagged frames, as send)")
	intVar(fl, &f.tos, "tos", 0, 0, 255, "rdma_cm ToS 0..255: traffic class = ToS, sl from it as rdma_cm does (iboe_tos_to_sl)")
	intVar(fl, &f.hop, "hop-limit", 16, 1, trace.MaxMaxHops, fmt.Sprintf("the highest TTL / hop limit tried (1..%d)", trace.MaxMaxHops))
	intVar(fl, &f.paths, "paths", 1, 1, trace.MaxPaths, fmt.Sprintf("find up to this many distinct ECMP paths by varying the UDP source port (1..%d)", trace.MaxPaths))
	intVar(fl, &f.maxPorts, "max-ports", 0, 1, trace.MaxMaxPorts, fmt.Sprintf("the most UDP source ports a --paths search tries (1..%d; default 8 per path asked for)", trace.MaxMaxPorts))
	intVar(fl, &f.minPorts, "min-ports", 0, 0, trace.MaxMaxPorts, fmt.Sprintf("the UDP source ports a --paths search traces before it may stop for finding no new path (0..%d; default 0)", trace.MaxMaxPorts))
	intVar(fl, &f.flowLabel, "flow-label", 0, 1, ah.MaxFlowLabel, "trace the UDP source port of this flow label (1..0xfffff)")
	intVar(fl, &f.sport, "sport", 0, 1, 65535, "trace this UDP source port (1..65535; default: one random port in 0xC000..0xFFFF)")
	fl.StringVar(&f.cmPorts, "rdma-cm-ports", "", "trace the UDP source port rdma_cm gives a connection between these rdma_cm ports: CLIENT:SERVER")
	intVar(fl, &f.tries, "tries", 3, 1, trace.MaxTries, fmt.Sprintf("probes per hop at most (1..%d)", trace.MaxTries))
	durationVar(fl, &f.timeout, "timeout", 500*time.Millisecond, time.Millisecond, time.Minute, false, "how long the first probe of a hop waits for an answer; each further try waits twice as long (1ms..1m)")
	floatVar(fl, &f.rate, "rate", 50, 0.1, trace.MaxRate, fmt.Sprintf("probes per second at most (0.1..%d)", trace.MaxRate))
	outputVar(fl, &f.output, "table", "json")
	durationVar(fl, &f.resolveWait, "resolve-timeout", 2*time.Second, 0, time.Minute, true, "how long to wait for the next hop's MAC address (at most 1m)")
	sourceFlagGroups(c)
	flagsExclusive(c, "flow-label", "sport", "rdma-cm-ports", "paths")
	for _, x := range []string{"flow-label", "sport", "rdma-cm-ports"} {
		flagsExclusive(c, x, "max-ports")
		flagsExclusive(c, x, "min-ports")
	}
	return c
}

// parseCMPorts parses --rdma-cm-ports CLIENT:SERVER.
func parseCMPorts(s string) (uint16, uint16, error) {
	a, b, ok := strings.Cut(s, ":")
	if ok {
		c, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
		d, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
		if err1 == nil && err2 == nil && c > 0 && d > 0 {
			return uint16(c), uint16(d), nil
		}
	}
	return 0, 0, usagef("--rdma-cm-ports %q: want CLIENT:SERVER, two rdma_cm port numbers 1..65535 (e.g. 37619:7471, as 'rdma resource show cm_id' shows them)", s)
}

// CMFlowLabel is the flow label rdma_cm gives a RoCE v2 connection
// between rdma_cm ports sport and dport when the application sets none
// (cma_get_roce_udp_flow_label, drivers/infiniband/core/cma.c: an IPv6
// source's sin6_flowinfo when non-zero, otherwise (sport * 31 + dport) &
// 0xfffff, the ports in host order).
func cmFlowLabel(sport, dport uint16) uint32 { return (uint32(sport)*31 + uint32(dport)) & 0xfffff }

func runTrace(cmd *cobra.Command, f traceFlags, rdmaCM, maxPortsSet bool) error {
	out := cmd.OutOrStdout()
	g, err := parseDst(f.dst)
	if err != nil {
		return err
	}
	dst := g.Addr().Unmap()
	if err := probe.CheckDestination(dst); err != nil {
		return usagef("--dst %q is %v: want the address of the one host to trace to", f.dst, err)
	}
	if maxPortsSet && f.minPorts > f.maxPorts {
		return usagef("--min-ports %d is more than --max-ports %d: want at most as many", f.minPorts, f.maxPorts)
	}
	byGID := f.dev != ""
	var notes []string
	// The port(s) to trace.
	var sports []uint16
	switch {
	case f.flowLabel != 0:
		p := roce.FlowLabelToUDPSourcePort(uint32(f.flowLabel))
		sports = []uint16{p}
		notes = append(notes, fmt.Sprintf("flow label %#x → UDP source port %d (%#x): rdma_flow_label_to_udp_sport, include/rdma/ib_verbs.h; rdma-core ibv_flow_label_to_udp_sport", f.flowLabel, p, p))
	case f.sport != 0:
		sports = []uint16{uint16(f.sport)}
	case f.cmPorts != "":
		c, s, err := parseCMPorts(f.cmPorts)
		if err != nil {
			return err
		}
		l := cmFlowLabel(c, s)
		p := roce.FlowLabelToUDPSourcePort(l)
		sports = []uint16{p}
		notes = append(notes, fmt.Sprintf("rdma_cm ports %d:%d → flow label %#x ((%d*31 + %d) & 0xfffff, cma_get_roce_udp_flow_label) → UDP source port %d (%#x), unless an IPv6 application sets sin6_flowinfo", c, s, l, c, s, p, p))
	}
	if rdmaCM && f.cmPorts == "" {
		notes = append(notes, "rdma_cm: the connection's UDP source port folds the flow label (client port*31 + server port) & 0xfffff of its rdma_cm ports (cma_get_roce_udp_flow_label): predictable once both ports are known ('rdma resource show cm_id'), but the client's port is random unless the application binds one: give --rdma-cm-ports C:S or --paths N")
	}
	byIndex := f.gidIndexArg
	if byGID {
		if byIndex != "auto" {
			v, err := parseInt("--gid-index", byIndex, 0, 255, false, "or auto")
			if err != nil {
				return err
			}
			f.gidIndex = int(v)
		}
	}
	sport := probe.RandomSport()
	if len(sports) > 0 {
		sport = sports[0]
	}

	snap, ns, err := liveSource(f.sendFlags)
	if err != nil {
		return err
	}
	tclass, sl := uint8(f.tclass), uint8(f.sl)
	if rdmaCM {
		tclass = uint8(f.tos)
	}
	netdev, netdevFlag := f.netdev, "--netdev"
	var src netip.Addr
	var base probe.Markings
	if byGID {
		if byIndex == "auto" {
			if f.gidIndex, err = autoIndex(snap, f, g); err != nil {
				return err
			}
			notes = append(notes, fmt.Sprintf("--gid-index auto: GID index %d", f.gidIndex))
		}
		sf := f.sendFlags
		sf.tclass, sf.sl = int(tclass), int(sl)
		res, _, _, err := resolveAH(snap, sf, g, sport)
		if err != nil {
			return err
		}
		if rdmaCM {
			link, err := qos.LinkFromNamespace(ns, res.Wire.Netdev)
			if err != nil {
				return usageError{err}
			}
			sf.sl = int(qos.TOSToSL(link, tclass))
		}
		res, m, n, err := resolveAHSource(snap, sf, g, dst, sport)
		if err != nil {
			return err
		}
		netdev, src, base = res.Wire.Netdev, res.Wire.Src, m
		netdevFlag = fmt.Sprintf("GID index %d's netdev", f.gidIndex)
		notes = append(notes, n...)
	} else {
		if rdmaCM {
			link, err := qos.LinkFromNamespace(ns, netdev)
			if err != nil {
				return usageError{err}
			}
			sl = qos.TOSToSL(link, tclass)
		}
		base = probe.BaseMarkings(sl, tclass, uint8(f.hop), sport)
	}
	ep, err := resolveEndpoint(ns, netdev, netdevFlag, src, dst, f.resolveWait)
	if err != nil {
		return err
	}
	if err := probe.CheckRawSocket(ep.Wire); err != nil {
		return rawSocketError("trace", err)
	}
	cfg := trace.Config{Endpoint: ep, Base: base, Sports: sports, MaxHops: f.hop, Tries: f.tries, Timeout: f.timeout, Rate: f.rate}
	if len(sports) == 0 && f.paths <= 1 {
		cfg.Sports = []uint16{sport}
	}
	if f.paths > 1 {
		cfg.Paths = f.paths
		if maxPortsSet {
			cfg.MaxPorts = f.maxPorts
		}
		cfg.MinPorts = f.minPorts
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.output == "table" {
		fmt.Fprintf(out, "tracing %s → %s from %s (%s): %s, up to %d hops\n", ep.Src, ep.Dst, ep.Netdev, wireDesc(ep), sentText(base, len(ep.Tags) > 0), f.hop)
		for _, n := range notes {
			fmt.Fprintln(out, "note:", n)
		}
	}
	res, err := trace.Run(ctx, cfg)
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		return rawSocketError("trace", err)
	}
	if f.output == "json" {
		writeJSON(out, traceDocJSON(res, ep, notes))
	} else {
		printTrace(out, res)
	}
	if interrupted {
		return findingError{"interrupted"}
	}
	// Every change counts, a congested queue's CE mark too (shown as no
	// remark: trace.Change.Remark), as send's ecn-ce finding does: the
	// exit status says what the wire showed, the message what it means.
	changed, remarked, lost := false, false, false
	for _, p := range res.Paths {
		ch := res.PathChanges(p)
		changed = changed || len(ch) > 0
		remarked = remarked || slices.ContainsFunc(ch, trace.Change.Remark)
		lost = lost || !trace.Reached(p.Hops)
	}
	what := "a marking was remarked on the way"
	if !remarked {
		what = "a congested queue marked ECN CE on the way (no remark)"
	}
	switch {
	case changed && lost:
		return findingError{what + ", and a path did not reach " + ep.Dst.String()}
	case changed:
		return findingError{what}
	case lost:
		return findingError{"a path did not reach " + ep.Dst.String()}
	}
	return nil
}

// autoIndex is the GID index --gid-index auto picks: what `ah
// --gid-index auto` picks (host.AHRequest.AutoIndex, the select rule).
func autoIndex(snap *host.Snapshot, f traceFlags, dst gid.GID) (int, error) {
	v, err := snap.View("")
	if err != nil {
		return 0, usageError{err}
	}
	if err := (&hostFlags{dev: f.dev, port: f.port}).checkDev(v); err != nil {
		return 0, err
	}
	a := ah.Attr{IsGlobal: true, PortNum: uint8(f.port), GRH: ah.GlobalRoute{DGID: dst}}
	res, rerr := v.ResolveAH(host.AHRequest{Device: f.dev, Attr: a, AutoIndex: true})
	switch {
	case errors.Is(rerr, gid.ErrNoEntry):
		return 0, findingError{fmt.Sprintf("--gid-index auto: %v (roce-probe select --dev %s --dst %s explains every entry)", rerr, f.dev, dst)}
	case res == nil || res.Selection == nil:
		return 0, usagef("--dev %s --gid-index auto: %v", f.dev, rerr)
	}
	return res.Selection.Entry.Index, nil
}

// sentText is what every probe is sent with ("dscp 26 ECT(0)", with the
// PCP of a tagged netdev).
func sentText(m probe.Markings, tagged bool) string {
	s := fmt.Sprintf("dscp %d %s", m.DSCP, qos.ECN(m.ECN))
	if tagged {
		s = fmt.Sprintf("pcp %d ", m.PCP) + s
	}
	return s
}

func printTrace(w io.Writer, r trace.Result) {
	for i, p := range r.Paths {
		labels := p.FlowLabels()
		fmt.Fprintf(w, "\npath %d: udp_sport %d", i+1, p.Sport)
		if len(labels) > 0 {
			fmt.Fprintf(w, " (flow label %#x)", labels[0])
		}
		if len(p.Sports) > 1 {
			fmt.Fprintf(w, "; %d ports take it: %s", len(p.Sports), sportList(p.Sports, 12))
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  %-4s %-28s %-10s %-5s %-8s %s\n", "TTL", "ADDRESS", "RTT", "DSCP", "ECN", "ARRIVED-TTL")
		changes := r.PathChanges(p)
		for _, h := range p.Hops {
			addr, rtt, dscp, ecn, ttl := "*", "*", "-", "-", "-"
			if h.Address.IsValid() {
				addr = h.Address.String()
				rtt = fmt.Sprintf("%.3fms", ms(h.RTT))
			}
			if h.Status == trace.HopSilent {
				addr = fmt.Sprintf("* (silent, %s)", plural(h.Tries, "try"))
			}
			if v, ok := h.DSCP(); ok {
				dscp = strconv.Itoa(int(v))
			}
			if v, ok := h.ECN(); ok {
				ecn = qos.ECN(v).String()
			}
			if v, ok := h.QuotedTTL(); ok {
				ttl = strconv.Itoa(int(v))
			}
			var tail []string
			switch h.Status {
			case trace.HopDestination:
				if h.Arrived != nil {
					tail = append(tail, "destination (listener: "+markingsText(h.Arrived)+")")
				} else {
					tail = append(tail, "destination (port unreachable: no listener there)")
				}
			case trace.HopUnreachable:
				tail = append(tail, fmt.Sprintf("unreachable (ICMP code %d)", h.Quote.Code))
			}
			if h.Quote != nil && h.Quote.Missing() != "" {
				tail = append(tail, h.Quote.Missing())
			}
			for _, c := range changes {
				if c.At == h.TTL {
					tail = append(tail, fmt.Sprintf("← %s %d→%d", c.Field, c.From, c.To))
				}
			}
			fmt.Fprintf(w, "  %-4d %-28s %-10s %-5s %-8s %-3s %s\n", h.TTL, addr, rtt, dscp, ecn, ttl, strings.Join(tail, "; "))
		}
		for _, c := range changes {
			fmt.Fprintln(w, "  change:", c)
		}
		if !trace.Reached(p.Hops) {
			fmt.Fprintln(w, "  did not reach the destination")
		}
	}
	fmt.Fprintf(w, "\n%s from %s, %s (%s)", plural(len(r.Paths), "path"), plural(r.PortsTried, "port"), plural(r.Probes, "probe"), r.Stop)
	if r.Unmatched > 0 {
		fmt.Fprintf(w, "; %d ICMP answers could not be matched to a probe", r.Unmatched)
	}
	fmt.Fprintln(w)
}

func sportList(ps []uint16, most int) string {
	var s []string
	for i, p := range ps {
		if i == most {
			s = append(s, fmt.Sprintf("… %d more", len(ps)-most))
			break
		}
		s = append(s, strconv.Itoa(int(p)))
	}
	return strings.Join(s, " ")
}

// traceJSON is `trace -o json` (docs/json.md, "trace").
type traceJSON struct {
	Src        string          `json:"src"`
	Dst        string          `json:"dst"`
	Netdev     string          `json:"netdev"`
	RealNetdev string          `json:"real_netdev"`
	Sent       *markingsJSON   `json:"sent"`
	Paths      []tracePathJSON `json:"paths"`
	PortsTried int             `json:"ports_tried"`
	Stop       string          `json:"stop"`
	Probes     int             `json:"probes"`
	Unmatched  int             `json:"unmatched"`
	Notes      []string        `json:"notes"`
}

// tracePathJSON is one path (docs/json.md, "trace_path").
type tracePathJSON struct {
	UDPSport   uint16         `json:"udp_sport"`
	UDPSports  []uint16       `json:"udp_sports"`
	FlowLabels []uint32       `json:"flow_labels"`
	Reached    bool           `json:"reached"`
	Hops       []traceHopJSON `json:"hops"`
	Changes    []trace.Change `json:"changes"` // docs/json.md, "trace_change" (trace.Change.MarshalJSON)
}

// traceHopJSON is one hop (docs/json.md, "trace_hop").
type traceHopJSON struct {
	TTL        int           `json:"ttl"`
	Status     string        `json:"status"`
	Address    *string       `json:"address"`
	RTTSeconds *float64      `json:"rtt_s"`
	Tries      int           `json:"tries"`
	DSCP       *uint8        `json:"dscp"`
	ECN        *uint8        `json:"ecn"`
	ECNName    *string       `json:"ecn_name"`
	TTLQuoted  *uint8        `json:"ttl_quoted"`
	QuoteBytes *int          `json:"quote_bytes"`
	ReplyTTL   *uint8        `json:"reply_ttl"`
	ReturnHops *int          `json:"return_hops"`
	Arrived    *markingsJSON `json:"arrived"`
	Note       *string       `json:"note"`
}

func addrOrNull(a netip.Addr) *string {
	if !a.IsValid() {
		return nil
	}
	s := a.String()
	return &s
}

func traceDocJSON(r trace.Result, ep probe.Endpoint, notes []string) traceJSON {
	sent := r.Sent
	j := traceJSON{Src: ep.Src.String(), Dst: ep.Dst.String(), Netdev: ep.Netdev, RealNetdev: ep.Wire, Sent: markingsOf(&sent, ep.Tags),
		Paths: []tracePathJSON{}, PortsTried: r.PortsTried, Stop: r.Stop, Probes: r.Probes, Unmatched: r.Unmatched, Notes: append([]string{}, notes...)}
	for _, p := range r.Paths {
		pj := tracePathJSON{UDPSport: p.Sport, UDPSports: p.Sports, FlowLabels: p.FlowLabels(), Reached: trace.Reached(p.Hops),
			Hops: []traceHopJSON{}, Changes: []trace.Change{}}
		for _, h := range p.Hops {
			pj.Hops = append(pj.Hops, traceHopOf(h))
		}
		for _, c := range r.PathChanges(p) {
			pj.Changes = append(pj.Changes, c)
		}
		j.Paths = append(j.Paths, pj)
	}
	return j
}

func traceHopOf(h trace.Hop) traceHopJSON {
	j := traceHopJSON{TTL: h.TTL, Status: string(h.Status), Address: addrOrNull(h.Address), Tries: h.Tries}
	if h.Status != trace.HopSilent {
		s := h.RTT.Seconds()
		j.RTTSeconds = &s
	}
	if v, ok := h.DSCP(); ok {
		j.DSCP = &v
	}
	if v, ok := h.ECN(); ok {
		n := qos.ECN(v).String()
		j.ECN, j.ECNName = &v, &n
	}
	if v, ok := h.QuotedTTL(); ok {
		j.TTLQuoted = &v
	}
	if h.Quote != nil {
		n := h.Quote.Len
		j.QuoteBytes = &n
		if m := h.Quote.Missing(); m != "" {
			j.Note = &m
		}
	}
	if h.ReplyTTL != 0 {
		v := h.ReplyTTL
		j.ReplyTTL = &v
	}
	if n, ok := h.ReturnHops(); ok {
		j.ReturnHops = &n
	}
	j.Arrived = markingsOf(h.Arrived, nil)
	return j
}
