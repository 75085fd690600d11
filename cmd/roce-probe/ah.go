package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/null"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

func init() { register(newAHCmd) }

// ahJSON is the document `ah -o json` prints. Every key is always there;
// what does not apply or is not known is null.
type ahJSON struct {
	Attr      ah.Attr           `json:"attr"`
	Predicted bool              `json:"predicted"`
	Source    *gid.Entry        `json:"sgid_entry"`
	Driver    *string           `json:"driver"`
	Path      *string           `json:"path"`
	Wire      *ah.Wire          `json:"wire"`
	Route     *vlan.RouteResult `json:"route"`
	Neighbor  *vlan.Neighbor    `json:"neighbor"`
	Warnings  []ah.Warning      `json:"field_warnings"`
	Problems  []ah.Problem      `json:"problems"`
	Steps     []qos.Step        `json:"steps"`
	Error     *string           `json:"error"`
	Errno     *string           `json:"errno"`
	Create    *ahCreateJSON     `json:"create"`
	Pcap      *ahPcapJSON       `json:"pcap"`
	Probe     *ahProbeJSON      `json:"neighbor_probe"`
}

type ahCreateJSON struct {
	OK    bool    `json:"ok"`
	Errno *string `json:"errno"`
	Error *string `json:"error"`
	QPN   *uint32 `json:"qpn"`
}

// ahProbeJSON reports --resolve-neighbour.
type ahProbeJSON struct {
	NextHop string  `json:"next_hop"`
	Dev     string  `json:"netdev"`
	State   string  `json:"state"`
	Error   *string `json:"error"`
}

type ahPcapJSON struct {
	File  string `json:"file"`
	Bytes int    `json:"bytes"`
}

// createJSON reports ibv_create_ah's result: the UD QP number it used, or
// the error and its errno.
func createJSON(qpn uint32, err error) *ahCreateJSON {
	cj := &ahCreateJSON{OK: err == nil}
	if err != nil {
		e, en := err.Error(), ah.ErrnoOf(err)
		cj.Error, cj.Errno = &e, null.String(en)
	} else {
		cj.QPN = &qpn
	}
	return cj
}

// neighborProbeJSON reports --resolve-neighbour: the next hop of route,
// the neighbour state seen afterwards and the probe's error, if any.
func neighborProbeJSON(route vlan.RouteResult, nb vlan.Neighbor, err error) *ahProbeJSON {
	p := &ahProbeJSON{NextHop: route.NextHop.String(), Dev: route.Dev, State: nb.State.String()}
	if err != nil {
		e := err.Error()
		p.Error = &e
	}
	return p
}

// ahFlags are the flags that build the address handle; --from-wc takes
// none of them.
var ahFlags = []string{"dst", "gid-index", "sl", "tclass", "flow-label", "hop-limit", "static-rate", "pcap",
	"src-qpn", "dest-qpn", "qkey", "psn", "ip-id", "payload", "driver", "path", "resolve-neighbour", "create", "dmac"}

func newAHCmd() *cobra.Command {
	var src hostFlags
	var gidIndex, dst, format, pcapFile, payload string
	var driver qos.Driver
	var path qos.Path
	var a ah.Attr
	var d ah.Datagram
	var create, probeNeigh bool
	var fromWC, wcFlags, dmac string
	var behaviour string
	c := &cobra.Command{
		Use:   "ah --dev D [--port P] (--gid-index I | --gid-index auto) --dst ADDR|GID [--sl S] [--tclass T] [--flow-label F] [--hop-limit H] [--static-rate R]",
		Short: "Validate an address handle and show, field by field, the frame it puts on the wire",
		Long: `ah builds the struct ibv_ah_attr a verbs application would pass to ibv_create_ah
(is_global = 1, port_num, sl, static_rate and the GRH: dgid, sgid_index,
flow_label, hop_limit, traffic_class), validates it with the rules RoCE drivers
apply (EINVAL and ENODATA causes), and resolves it to the wire as the kernel and
the device's driver do: source and destination MAC (neighbour table, multicast
mapping, link-local GID), VLAN tags and PCP (vlan and pcp are the outermost
tag's, vlan_chain lists every tag), IP version and addresses, DSCP and ECN, TTL
/ hop limit (the kernel replaces the requested one with the route's), flow
label, UDP source port, RoCE version and path MTU. Every field the kernel or the
driver overrides is listed as a warning.

--gid-index auto picks the entry as 'roce-probe select' does. The route and
neighbour tables are read once; no packet is sent. When the next hop's MAC is
not in the neighbour table the output says so: ibv_create_ah would send ARP /
neighbour discovery and fail with ETIMEDOUT if nobody answers.
--resolve-neighbour makes the kernel try (one UDP datagram to the destination's
discard port through the sgid's netdev; no privileges) and reports the answer.
--dmac MAC gives the next hop's MAC instead (a peer that has not talked to this
host yet, a snapshot taken before it did): the frame is predicted with it, and
a warning says the kernel would still have to resolve it.

--from FILE resolves against a snapshot written by 'roce-probe collect' (the
host's GID tables, netdevs, routes, neighbours and DCB) instead of the live
host. On a host without RDMA devices the predicted Soft-RoCE tables are used
(said so).

--pcap FILE writes the predicted UD SEND frame (opcode 0x64, with --src-qpn,
--dest-qpn, --qkey, --psn and --payload; valid ICRC) as a capture Wireshark
opens. The analysis is printed whether or not the frame can be written; when
it cannot (an unresolved next hop without --dmac, a driver whose PCP or UDP
source port is not known), the output says why and the exit status is 1. --create (binaries built with -tags ibverbs) also calls ibv_create_ah on
the device and reports its result next to the prediction.

--from-wc HEX explains a received datagram instead: it takes the 40-byte GRH
buffer in front of a UD payload (80 hex digits) and the completion's flags (--wc),
tells IPv4 from IPv6 as the kernel and rdma-core do (their rules differ: see
docs/ah.md) and prints the AH that answers the sender under both rules.

-o json prints one document (docs/json.md). Exit status 1 when the AH is invalid
or cannot be resolved (the problems or the error say why), 2 on bad flags.
Reading needs no privileges. See docs/ah.md.`,
		Example: `  roce-probe ah --dev mlx5_0 --gid-index 3 --dst 10.0.100.2 --sl 3 --tclass 106
  roce-probe ah --dev rxe0 --gid-index auto --dst 10.0.100.2 --pcap ah.pcap
  roce-probe ah --dev mlx5_0 --gid-index 3 --dst 10.0.100.2 --path kernel-ah -o json
  roce-probe ah --dev rxe0 --from-wc 00000000000000000000000000000000000000004568003c12344000401114130a0000020a000001 --wc grh`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := src.requireDev("rxe0, mlx5_0"); err != nil {
				return err
			}
			if fromWC != "" {
				return runFromWC(cmd, &src, format, fromWC, wcFlags, behaviour)
			}
			// No flag group says "only with": without --from-wc these
			// would be silently ignored.
			for _, name := range []string{"wc", "behaviour"} {
				if cmd.Flags().Changed(name) {
					return usagef("--%s goes with --from-wc HEX only: it describes the completion --from-wc explains", name)
				}
			}
			g, err := parseDst(dst)
			if err != nil {
				return err
			}
			a.IsGlobal = true
			a.GRH.DGID = g
			a.PortNum = uint8(src.port)
			if !ah.ValidStaticRate(a.StaticRate) {
				return usagef("--static-rate %d is not an enum ibv_rate value: want 0 (port rate) or 2..%d", a.StaticRate, ah.MaxStaticRate)
			}
			d.Payload = []byte(payload)
			auto := gidIndex == "auto"
			if !auto {
				v, err := parseInt("--gid-index", gidIndex, 0, 255, false, "or auto")
				if err != nil {
					return err
				}
				a.GRH.SGIDIndex = uint8(v)
			}
			if pcapFile != "" {
				if err := checkOutputDir("--pcap", pcapFile); err != nil {
					return err
				}
			}
			var nextHop vlan.MAC
			if dmac != "" {
				if nextHop, err = parseMAC("--dmac", dmac); err != nil {
					return err
				}
			}
			v, err := src.view(collect.SectionDCB)
			if err != nil {
				return err
			}
			if err := src.checkDev(v); err != nil {
				return err
			}
			src.notePredicted(cmd.ErrOrStderr(), v)
			req := host.AHRequest{Device: src.dev, Attr: a, AutoIndex: auto, Driver: driver, Path: path, SrcQPN: d.SrcQPN, NextHopMAC: nextHop}
			res, rerr := v.ResolveAH(req)
			switch {
			case errors.Is(rerr, gid.ErrNoEntry):
				return findingError{fmt.Sprintf("--gid-index auto: %v (roce-probe select --dev %s --dst %s explains every entry)", rerr, src.dev, dst)}
			case errors.Is(rerr, host.ErrNoDevice), errors.Is(rerr, host.ErrNetdevAbsent):
				return usagef("--dev %s --gid-index %s: %v", src.dev, gidIndex, rerr)
			case res == nil:
				return usageError{rerr}
			}
			if res.Selection != nil {
				a.GRH.SGIDIndex = uint8(res.Selection.Entry.Index)
			}
			var probe *ahProbeJSON
			var ne *ah.NeighborError
			if probeNeigh && errors.As(rerr, &ne) {
				nb, perr := collect.ProbeNeighbor(res.Resolution.Source.GID.Addr(), a.GRH.DGID.Addr(), ne.Route, time.Second)
				probe = neighborProbeJSON(ne.Route, nb, perr)
				if perr == nil {
					if v2, err := src.view(collect.SectionDCB); err == nil {
						req.Attr, req.AutoIndex = a, false
						res, rerr = v2.ResolveAH(req)
					}
				}
			}
			doc := ahDoc(a, res, rerr, v)
			doc.Probe = probe
			for i, w := range doc.Warnings {
				if w.Field == "udp_sport" && doc.Driver != nil && *doc.Driver == string(qos.DriverRXE) && !cmd.Flags().Changed("src-qpn") {
					doc.Warnings[i].Reason += ": give it with --src-qpn"
				}
			}
			// The frame is written only when the AH resolved completely;
			// the analysis is printed either way.
			var pcapErr error
			if pcapFile != "" {
				frame, err := ahFrame(res, rerr, d)
				if err == nil {
					err = writePcap(pcapFile, frame)
				}
				if err == nil {
					doc.Pcap = &ahPcapJSON{File: pcapFile, Bytes: len(frame)}
				} else {
					pcapErr = fmt.Errorf("--pcap %s not written: %w", pcapFile, err)
				}
			}
			if create {
				h, err := ah.Create(src.dev, a, ah.CreateOptions{})
				var qpn uint32
				if err == nil {
					qpn = h.QPN()
					h.Close()
				}
				doc.Create = createJSON(qpn, err)
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				if err := writeJSONIndent(out, doc); err != nil {
					return err
				}
			} else {
				writeAHTable(out, doc, src.dev)
				if pcapErr != nil {
					fmt.Fprintf(out, "\n%v\n", pcapErr)
				}
			}
			var verr *ah.ValidationError
			var ue usageError
			switch {
			case errors.As(rerr, &verr):
				return findingError{fmt.Sprintf("ibv_create_ah would fail: %v", verr)}
			case rerr != nil:
				return findingError{rerr.Error()}
			case errors.As(pcapErr, &ue):
				return pcapErr // the file could not be written: exit 2
			case pcapErr != nil:
				return findingError{pcapErr.Error()}
			case doc.Create != nil && !doc.Create.OK:
				return findingError{"ibv_create_ah failed: " + *doc.Create.Error}
			}
			return nil
		},
	}
	src.add(c, hostFlagSet{dev: true, port: true, portDef: 1, devUsage: "RDMA device, e.g. rxe0 or mlx5_0 (required)"})
	fl := c.Flags()
	fl.StringVar(&gidIndex, "gid-index", "", "source GID index 0..255 (sgid_index), or auto (required)")
	fl.StringVar(&dst, "dst", "", "destination: the peer's IP address or GID (required)")
	intVar(fl, &a.SL, "sl", 0, 0, ah.MaxSL, "service level 0..15")
	intVar(fl, &a.GRH.TrafficClass, "tclass", 0, 0, 255, "traffic class 0..255 (DSCP << 2 | ECN)")
	intVar(fl, &a.GRH.FlowLabel, "flow-label", 0, 0, ah.MaxFlowLabel, "flow label 0..0xfffff")
	intVar(fl, &a.GRH.HopLimit, "hop-limit", 64, 0, 255, "hop limit 0..255")
	intVar(fl, &a.StaticRate, "static-rate", 0, 0, ah.MaxStaticRate, "static rate (enum ibv_rate): 0 or 2..24")
	outputVar(fl, &format, "table", "json")
	fl.StringVar(&pcapFile, "pcap", "", "write the predicted UD SEND frame to this pcap file")
	intVar(fl, &d.SrcQPN, "src-qpn", 0, 0, 0xFFFFFF, "the sending QP's number (DETH SrcQP; rxe's UDP source port)")
	intVar(fl, &d.DestQPN, "dest-qpn", 1, 0, 0xFFFFFF, "the destination QP (BTH DestQP) for --pcap")
	intVar(fl, &d.QKey, "qkey", 0x11111111, 0, 0xFFFFFFFF, "the Q_Key (DETH) for --pcap")
	intVar(fl, &d.PSN, "psn", 0, 0, 0xFFFFFF, "the PSN (BTH) for --pcap")
	intVar(fl, &d.IPID, "ip-id", 0, 0, 0xFFFF, "the IPv4 identification for --pcap (the kernel's is not predictable)")
	fl.StringVar(&payload, "payload", "roce-probe", "the UD payload for --pcap")
	driverVar(fl, &driver, "the RDMA driver's wire profile: rxe, mlx5, irdma, bnxt_re, hns, erdma, ionic or hiroce3 (default: the driver detected from sysfs)")
	pathVar(fl, &path, "how the AH reaches the driver: user-ah (default), kernel-ah or connected-qp")
	fl.StringVar(&dmac, "dmac", "", "the next hop's MAC, for a neighbour the table does not have (aa:bb:cc:dd:ee:ff): the frame is predicted with it")
	fl.BoolVar(&probeNeigh, "resolve-neighbour", false, "when the next hop's MAC is not known, make the kernel resolve it (one UDP datagram to its discard port, as ibv_create_ah's ARP would) and wait up to 1 s; live own namespace only")
	fl.BoolVar(&create, "create", false, "also call ibv_create_ah on the device (needs a binary built with -tags ibverbs; live only)")
	fl.StringVar(&fromWC, "from-wc", "", "instead: derive the AH that answers a received datagram from its 40-byte GRH buffer (80 hex digits), as ibv_init_ah_from_wc does")
	fl.StringVar(&wcFlags, "wc", "grh", "with --from-wc: the completion's flags, comma-separated: grh, vlan=ID, net=ipv4|ipv6|roce-v1, sl=N, src-qp=N")
	enumVar(fl, &behaviour, "behaviour", "both", "with --from-wc: kernel, rdma-core or both",
		choice("both", "both"), choice("kernel", "kernel"), choice("rdma-core", "rdma-core"))
	allowEmpty(c, "payload") // a SEND without payload
	allowEmpty(c, "wc")      // a completion without flags
	for _, name := range ahFlags {
		flagsExclusive(c, "from-wc", name)
	}
	flagsOneRequired(c, "gid-index", "from-wc")
	flagsExclusive(c, "from", "resolve-neighbour")
	flagsExclusive(c, "netns", "resolve-neighbour")
	flagsExclusive(c, "from", "create")
	flagsExclusive(c, "dmac", "resolve-neighbour")
	return c
}

// ahDoc builds the `ah -o json` document from a resolution.
func ahDoc(a ah.Attr, res *host.AHResult, rerr error, v *host.View) ahJSON {
	doc := ahJSON{Attr: a, Predicted: v.Predicted, Warnings: []ah.Warning{}, Problems: []ah.Problem{}, Steps: []qos.Step{}}
	var verr *ah.ValidationError
	switch {
	case errors.As(rerr, &verr):
		doc.Problems = verr.Problems
	case rerr != nil:
		e, en := rerr.Error(), ah.ErrnoOf(rerr)
		doc.Error, doc.Errno = &e, null.String(en)
	}
	if r := res.Resolution; r != nil {
		doc.Driver, doc.Path = null.String(string(r.Driver)), null.String(string(r.Path))
		doc.Source, doc.Wire, doc.Route, doc.Neighbor, doc.Warnings, doc.Steps = r.Source, &r.Wire, r.Route, r.Neighbor, r.Warnings, r.Steps
		if doc.Steps == nil {
			doc.Steps = []qos.Step{}
		}
	}
	return doc
}

// ahFrame is the frame --pcap writes: the UD SEND d of the resolved AH,
// or why there is none.
func ahFrame(res *host.AHResult, rerr error, d ah.Datagram) ([]byte, error) {
	var ne *ah.NeighborError
	switch {
	case errors.As(rerr, &ne):
		return nil, fmt.Errorf("the MAC of next hop %s is not known: give it with --dmac", ne.Route.NextHop)
	case rerr != nil || res == nil || res.Resolution == nil:
		return nil, errors.New("the AH did not resolve")
	}
	return res.Frame(d)
}

// parseMAC parses the value of flag name as an Ethernet unicast MAC
// address (six bytes, colon-, dash- or dot-separated as net.ParseMAC
// takes them).
func parseMAC(name, s string) (vlan.MAC, error) {
	hw, err := net.ParseMAC(strings.TrimSpace(s))
	if err != nil || len(hw) != 6 {
		return nil, usagef("%s %q is not a MAC address: want six hex bytes, e.g. 02:00:00:00:00:02", name, s)
	}
	if hw[0]&1 != 0 {
		return nil, usagef("%s %s is a group (multicast or broadcast) address: want the next hop's unicast MAC", name, hw)
	}
	return vlan.MAC(hw), nil
}

// writePcap writes one Ethernet frame as a classic pcap file, replacing
// path only when the file is complete.
func writePcap(path string, frame []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".roce-probe-*.pcap")
	if err != nil {
		return usagef("--pcap %s: %v", path, err)
	}
	defer os.Remove(tmp.Name())
	w := pcapgo.NewWriter(tmp)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		tmp.Close()
		return err
	}
	ci := gopacket.CaptureInfo{Timestamp: time.Now(), CaptureLength: len(frame), Length: len(frame)}
	if err := w.WritePacket(ci, frame); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return usagef("--pcap %s: %v", path, err)
	}
	return nil
}

// ptrOr formats *p with f, or returns none for a nil p (a field the
// output does not know).
func ptrOr[T any](p *T, none string, f func(T) string) string {
	if p == nil {
		return none
	}
	return f(*p)
}

// u8Text formats a uint8 in decimal, for ptrOr.
func u8Text(v uint8) string { return strconv.Itoa(int(v)) }

func writeAHTable(out io.Writer, doc ahJSON, dev string) {
	a := doc.Attr
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "address handle\t%s port %d\n", dev, a.PortNum)
	src := ""
	if doc.Source != nil {
		src = fmt.Sprintf(" (%s on %s, %s)", doc.Source.GID, orDash(doc.Source.Netdev), doc.Source.Type)
	}
	fmt.Fprintf(tw, "  is_global\t1\n  sl\t%d\n  static_rate\t%d\n", a.SL, a.StaticRate)
	fmt.Fprintf(tw, "  grh.sgid_index\t%d%s\n  grh.dgid\t%s\n  grh.hop_limit\t%d\n  grh.traffic_class\t%d (0x%02x)\n  grh.flow_label\t%#x\n",
		a.GRH.SGIDIndex, src, a.GRH.DGID, a.GRH.HopLimit, a.GRH.TrafficClass, a.GRH.TrafficClass, a.GRH.FlowLabel)
	if len(doc.Problems) > 0 {
		fmt.Fprintf(tw, "\nproblems (ibv_create_ah would fail)\n")
		for _, p := range doc.Problems {
			fmt.Fprintf(tw, "  %s\t%s\twant %s: %s%s\n", p.Field, p.Value, p.Allowed, p.Reason, errnoSuffix(p.Errno))
		}
	}
	if w := doc.Wire; w != nil {
		fmt.Fprintf(tw, "\nwire (driver %s, %s)\n", ptrOr(doc.Driver, "-", str), ptrOr(doc.Path, "-", str))
		fmt.Fprintf(tw, "  roce_version\t%d\n  netdev\t%s\n  smac\t%s\n", w.RoCEVersion, orDash(w.Netdev), orDash(w.SMAC.String()))
		dmac := "unresolved"
		if len(w.DMAC) > 0 {
			dmac = w.DMAC.String()
		}
		from := w.DMACFrom
		if doc.Neighbor != nil {
			from += fmt.Sprintf(" %s %s on %s", doc.Neighbor.IP, doc.Neighbor.State, doc.Neighbor.Dev)
		}
		fmt.Fprintf(tw, "  dmac\t%s\t%s\n", dmac, from)
		switch {
		case w.NetnsBoundary != "":
			fmt.Fprintf(tw, "  vlan\tunknown\t%s\n", w.NetnsBoundary)
		case len(w.VLANChain) == 0:
			fmt.Fprintf(tw, "  vlan\tnone (untagged)\n")
		}
		for i, t := range w.VLANChain {
			which := "outermost"
			if i > 0 {
				which = "inner"
			}
			fmt.Fprintf(tw, "  vlan\t%d (%s, %s)\tpcp %s\t%s\n", t.ID, t.TPID, which, ptrOr(t.PCP, "unknown", u8Text), t.Netdev)
		}
		ipv := "none (RoCE v1: GRH)"
		if w.IPVersion != 0 {
			ipv = "IPv" + strconv.Itoa(w.IPVersion)
		}
		fmt.Fprintf(tw, "  ip_version\t%s\n  src\t%s\n  dst\t%s\n", ipv, w.Src, w.Dst)
		fmt.Fprintf(tw, "  dscp\t%s\n  ecn\t%s\n", ptrOr(w.DSCP, "unknown", u8Text),
			ptrOr(w.ECN, "unknown", func(v uint8) string { return fmt.Sprintf("%d (%s)", v, qos.ECN(v)) }))
		fmt.Fprintf(tw, "  ttl\t%d\n  flow_label\t%s\n", w.TTL, ptrOr(w.FlowLabel, "none (IPv4)", func(v uint32) string { return fmt.Sprintf("%#x", v) }))
		if w.RoCEVersion == 2 {
			fmt.Fprintf(tw, "  udp_sport\t%s\t%s\n  udp_dport\t4791\n", ptrOr(w.UDPSport, "unknown", func(v uint16) string { return fmt.Sprintf("%d (%#04x)", v, v) }), w.UDPSportFrom)
		}
		fmt.Fprintf(tw, "  mtu\t%d\n", w.MTU)
	}
	if doc.Error != nil {
		fmt.Fprintf(tw, "\nerror\t%s\n", *doc.Error)
	}
	if len(doc.Warnings) > 0 {
		fmt.Fprintf(tw, "\nwarnings\n")
		for _, w := range doc.Warnings {
			fmt.Fprintf(tw, "  - %s\n", w)
		}
	}
	if p := doc.Probe; p != nil {
		if p.Error != nil {
			fmt.Fprintf(tw, "\nneighbour probe\t%s\n", *p.Error)
		} else {
			fmt.Fprintf(tw, "\nneighbour probe\t%s on %s answered (%s)\n", p.NextHop, p.Dev, p.State)
		}
	}
	if doc.Pcap != nil {
		fmt.Fprintf(tw, "\nwrote the predicted frame (%d bytes) to %s\n", doc.Pcap.Bytes, doc.Pcap.File)
	}
	if c := doc.Create; c != nil {
		if c.OK {
			fmt.Fprintf(tw, "\nibv_create_ah\tsucceeded (UD QPN %s)\n", ptrOr(c.QPN, "-", func(q uint32) string { return fmt.Sprintf("%#x", q) }))
		} else {
			fmt.Fprintf(tw, "\nibv_create_ah\tfailed: %s\n", ptrOr(c.Error, "-", str))
		}
	}
	tw.Flush()
}

func errnoSuffix(e string) string {
	if e == "" {
		return " (accepted, silently changed)"
	}
	return " (" + e + ")"
}

// ahFromWCJSON is one behaviour's answer in `ah --from-wc -o json`: the
// behaviour, ah.FromWCResult's keys, and error and errno (null when it
// succeeds).
type ahFromWCJSON struct {
	Behaviour ah.Behaviour
	ah.FromWCResult
	Error string
	Errno string
}

// MarshalJSON writes {behaviour, ...the ah.FromWCResult keys, error,
// errno}.
func (d ahFromWCJSON) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(struct {
		Behaviour string `json:"behaviour"`
	}{d.Behaviour.String()})
	if err != nil {
		return nil, err
	}
	res, err := json.Marshal(d.FromWCResult)
	if err != nil {
		return nil, err
	}
	tail, err := json.Marshal(struct {
		Error *string `json:"error"`
		Errno *string `json:"errno"`
	}{null.String(d.Error), null.String(d.Errno)})
	if err != nil {
		return nil, err
	}
	// {"behaviour":..} + the result's keys + {"error":..,"errno":..}
	out := append(head[:len(head)-1], ',')
	out = append(out, res[1:len(res)-1]...)
	out = append(out, ',')
	return append(out, tail[1:]...), nil
}

func parseWC(s string) (ah.WC, error) {
	var wc ah.WC
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		k, v, hasV := strings.Cut(part, "=")
		switch {
		case part == "":
		case k == "grh" && !hasV:
			wc.GRH = true
		case k == "vlan" && hasV:
			n, err := parseInt("--wc vlan", v, 0, 4095, false, "")
			if err != nil {
				return wc, err
			}
			id := uint16(n)
			wc.VLAN = &id
		case k == "net" && hasV:
			var t ah.NetworkType
			switch strings.ToLower(v) {
			case "ipv4":
				t = ah.NetworkIPv4
			case "ipv6":
				t = ah.NetworkIPv6
			case "roce-v1", "v1":
				t = ah.NetworkRoCEv1
			case "ib":
				t = ah.NetworkIB
			default:
				return wc, usagef("--wc net=%q: want ipv4, ipv6, roce-v1 or ib", v)
			}
			wc.NetworkHdrType = &t
		case k == "sl" && hasV:
			n, err := parseInt("--wc sl", v, 0, ah.MaxSL, false, "")
			if err != nil {
				return wc, err
			}
			wc.SL = uint8(n)
		case k == "src-qp" && hasV:
			n, err := parseInt("--wc src-qp", v, 0, 0xFFFFFF, true, "")
			if err != nil {
				return wc, err
			}
			wc.SrcQP = uint32(n)
		default:
			return wc, usagef("--wc %q: want a comma-separated list of grh, vlan=ID, net=ipv4|ipv6|roce-v1, sl=N, src-qp=N", part)
		}
	}
	return wc, nil
}

func runFromWC(cmd *cobra.Command, src *hostFlags, format, hexBuf, wcFlags, behaviour string) error {
	h := strings.NewReplacer(" ", "", ":", "", "\n", "").Replace(hexBuf)
	if len(h) != 80 {
		return usagef("--from-wc has %d hex digits: want 80 (the 40-byte GRH buffer)", len(h))
	}
	var grh [40]byte
	if _, err := hex.Decode(grh[:], []byte(h)); err != nil {
		return usagef("--from-wc %q is not hex: %v: want 80 hex digits (the 40-byte GRH buffer)", hexBuf, err)
	}
	wc, err := parseWC(wcFlags)
	if err != nil {
		return err
	}
	bs := []ah.Behaviour{ah.Kernel, ah.RDMACore}
	if behaviour != "both" {
		b, err := ah.ParseBehaviour(behaviour)
		if err != nil {
			return usagef("--behaviour %q: want kernel, rdma-core or both", behaviour)
		}
		bs = []ah.Behaviour{b}
	}
	v, err := src.view(0)
	if err != nil {
		return err
	}
	if err := src.checkDev(v); err != nil {
		return err
	}
	src.notePredicted(cmd.ErrOrStderr(), v)
	port, err := v.Port(src.dev, src.port)
	if err != nil {
		return usagef("--dev %q: %v", src.dev, err)
	}
	table := ah.Table{Entries: port.Entries, Len: len(port.Entries)}
	// The kernel rule replaces hop_limit with the route's: the namespace's
	// routes.
	n := v.NS
	var docs []ahFromWCJSON
	failed := false
	for _, b := range bs {
		r, err := ah.FromWC(wc, grh, table, ah.FromWCOptions{Behaviour: b, Port: port.Port, Net: n})
		d := ahFromWCJSON{Behaviour: b, FromWCResult: r}
		if err != nil {
			d.Error, d.Errno = err.Error(), ah.ErrnoOf(err)
			failed = true
		}
		docs = append(docs, d)
	}
	out := cmd.OutOrStdout()
	if format == "json" {
		if err := writeJSONIndent(out, map[string]any{"from_wc": docs}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		for i, d := range docs {
			if i > 0 {
				fmt.Fprintln(tw)
			}
			fmt.Fprintf(tw, "%s (%s)\n", d.Behaviour, d.Behaviour.Function())
			fmt.Fprintf(tw, "  detection\t%s\n", d.Detection)
			if d.Error != "" {
				fmt.Fprintf(tw, "  error\t%s\n", d.Error)
				continue
			}
			g := d.Attr.GRH
			fmt.Fprintf(tw, "  is_global\t%v\n", d.Attr.IsGlobal)
			if d.Attr.IsGlobal {
				fmt.Fprintf(tw, "  grh.dgid\t%s (the sender)\n  grh.sgid_index\t%d\n  grh.hop_limit\t%d\n  grh.traffic_class\t%d (0x%02x)\n  grh.flow_label\t%#x\n",
					g.DGID, g.SGIDIndex, g.HopLimit, g.TrafficClass, g.TrafficClass, g.FlowLabel)
			}
			fmt.Fprintf(tw, "  sl\t%d\n", d.Attr.SL)
			for _, n := range d.Notes {
				fmt.Fprintf(tw, "  note\t%s\n", n)
			}
		}
		tw.Flush()
	}
	if failed {
		return findingError{"ibv_init_ah_from_wc fails on this completion (see error)"}
	}
	return nil
}
