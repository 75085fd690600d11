package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/vlan"
	"github.com/spf13/cobra"
)

func init() { register(newListenCmd) }

type listenFlags struct {
	netdev   string
	output   string
	rate     float64
	duration time.Duration
}

func newListenCmd() *cobra.Command {
	var f listenFlags
	c := &cobra.Command{
		Use:   "listen [--netdev N]",
		Short: "Answer roce-probe probes with the markings they arrived with",
		Long: `listen captures RoCE v2 frames (AF_PACKET, no cgo), checks their ICRC and
answers every valid probe from 'roce-probe send' with one frame, never larger
than the probe, reporting what arrived: VLAN ID and PCP (or untagged), DSCP,
ECN, TTL / hop limit and UDP source port. It answers only the probe's sender,
only probes sent to one of this host's addresses, at most --rate replies per
second per sender (1000 in all); everything else is counted and ignored, and
memory stays bounded under a flood.

Without --netdev it captures on every Ethernet netdev that is up (operstate
up or unknown) and neither enslaved (a bond or bridge is captured on instead
of its ports) nor stacked on a netdev of this namespace (VLAN, macvlan: their
frames are seen on the lower device, tags and PCP included); a macvlan, ipvlan
or VLAN whose lower device is in another namespace (a container's) is captured
on itself. A --netdev stacked on a netdev of this namespace (VLAN, macvlan,
ipvlan) is captured on the device at the bottom of its stack. Runs until
interrupted (or for --duration); prints the counters at the end. -o json
prints one JSON document, {"events": [...], "totals": {...}}, each event
written as it happens and the document closed when listen ends; -o ndjson one
JSON object per event and line, then the summary's line (for a long-running
listener read line by line). Needs CAP_NET_RAW.`,
		Example: `  roce-probe listen --netdev eth0
  roce-probe listen --duration 1m -o json
  roce-probe listen -o ndjson | jq -c 'select(.findings | length > 0)'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runListen(cmd, f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.netdev, "netdev", "", "netdev to listen on (default: every Ethernet netdev that is up, not enslaved, not stacked on another)")
	outputVar(fl, &f.output, "table", "json", ndjson)
	floatVar(fl, &f.rate, "rate", 100, 0.1, 10000, "replies per second per sender (0.1..10000)").note = "(replies per second per sender)"
	durationVar(fl, &f.duration, "duration", 0, 0, 0, false, "stop after this long (0: until interrupted)").note = "(0: until interrupted)"
	return c
}

func runListen(cmd *cobra.Command, f listenFlags) error {
	out := cmd.OutOrStdout()
	format := f.output
	var netdevs []string
	_, ns, err := liveHost(collect.SectionNet)
	if err != nil {
		return err
	}
	if f.netdev != "" {
		if err := checkNetdevIn(ns, "--netdev", f.netdev); err != nil {
			return err
		}
		wire, _, err := probe.WireDevice(ns, f.netdev)
		if err != nil {
			return netdevError("--netdev", err)
		}
		// Checked here, not only when the capture opens, so that nothing
		// is printed before the error.
		if l, ok := ns.ByName(wire); ok && vlan.OperNotUp(l.OperState) {
			fix := ""
			if l.OperState == "down" {
				fix = fmt.Sprintf(" (ip link set %s up)", wire)
			}
			if wire == f.netdev {
				return usagef("--netdev %q %s: want a netdev that is up%s", f.netdev, vlan.OperText(l.OperState), fix)
			}
			return usagef("--netdev %q: its lower device %s %s: want it up%s", f.netdev, wire, vlan.OperText(l.OperState), fix)
		}
		netdevs = []string{wire}
	} else if netdevs = probe.WireDevices(ns); len(netdevs) == 0 {
		return usagef("no Ethernet netdev is up to listen on: give --netdev")
	}
	addrs, macs := probe.LocalAddresses(ns)
	if err := probe.CheckRawSocket(netdevs[0]); err != nil {
		return rawSocketError("listen", err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	if format == "table" {
		fmt.Fprintf(out, "listening on %s for roce-probe probes (UDP 4791)\n", strings.Join(netdevs, ", "))
	}
	// -o json: one document, {"events": [...], "totals": {...}}, the
	// events written as they come; -o ndjson: one line each, then the
	// summary's.
	doc := newJSONRun(out, "events")
	onEvent := func(ev probe.Event) {
		switch format {
		case "json":
			doc.add(listenEventLine(ev))
			return
		case ndjson:
			writeJSON(out, listenEventLine(ev))
			return
		}
		fs := findingStrings(ev.Findings)
		fstr := ""
		if len(fs) > 0 {
			fstr = "  [" + strings.Join(fs, "; ") + "]"
		}
		fmt.Fprintf(out, "%s %s seq %d: sent %s, arrived %s, %s%s\n", ev.Time.Format("15:04:05.000"), ev.From, ev.Seq,
			markingsText(&ev.Sent), markingsText(&ev.Received), ev.Action, fstr)
	}
	r, err := probe.Listen(ctx, probe.ListenConfig{Netdevs: netdevs,
		Responder: probe.ResponderConfig{LocalAddrs: addrs, LocalMACs: macs, Rate: probe.RateConfig{Rate: f.rate}}}, onEvent)
	if err != nil {
		return rawSocketError("listen", err)
	}
	c := r.Counters.Snapshot()
	switch format {
	case "json":
		return doc.end(listenSummaryJSON{true, c, r.Limiter().Tracked(), r.Limiter().Capacity()})
	case ndjson:
		return writeJSON(out, listenSummaryJSON{true, c, r.Limiter().Tracked(), r.Limiter().Capacity()})
	}
	fmt.Fprintf(out, "%d frames: %d answered, %d rate-limited, %d not RoCE v2 UD, %d bad ICRC, %d without the probe signature, %d malformed probes, %d replies ignored, %d for other addresses, %d from bad sources\n",
		c.Frames, c.Answered, c.RateLimited, c.NotRoCE, c.BadICRC, c.Foreign, c.Malformed, c.Replies, c.NotForUs, c.BadSource)
	return nil
}

// listenEventJSON is one event of `listen -o json` and -o ndjson (docs/json.md,
// "listen_event").
type listenEventJSON struct {
	Time     string        `json:"time"`
	From     string        `json:"from"`
	FromMAC  string        `json:"from_mac"`
	To       string        `json:"to"`
	Session  string        `json:"session"`
	Seq      uint32        `json:"seq"`
	Sent     *markingsJSON `json:"sent"`
	Received *markingsJSON `json:"received"`
	Findings []findingJSON `json:"findings"`
	Action   string        `json:"action"`
}

// listenEventLine is ev in JSON: what was sent comes from the probe's
// payload (the outermost tag only), what arrived from the frame.
func listenEventLine(ev probe.Event) listenEventJSON {
	return listenEventJSON{Time: ev.Time.UTC().Format(time.RFC3339Nano), From: ev.From.String(), FromMAC: ev.FromMAC,
		To: ev.To.String(), Session: fmt.Sprintf("%016x", ev.Session), Seq: ev.Seq,
		Sent: markingsOf(&ev.Sent, nil), Received: markingsOf(&ev.Received, ev.ReceivedTags), Findings: findingsJSON(ev.Findings), Action: string(ev.Action)}
}

// listenSummaryJSON is the totals of `listen -o json`, the last line of -o ndjson (docs/json.md,
// "listen_summary").
type listenSummaryJSON struct {
	Summary  bool                  `json:"summary"`
	Counters probe.CounterSnapshot `json:"counters"`
	Senders  int                   `json:"senders_tracked"`
	Capacity int                   `json:"senders_capacity"`
}
