package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
	"github.com/roce-probe/roce-probe/vlan"
)

func init() { register(newDecodeCmd) }

type decodeFlags struct {
	output        string
	summary       bool
	failOnBadICRC bool
}

func newDecodeCmd() *cobra.Command {
	var f decodeFlags
	c := &cobra.Command{
		Use:   "decode FILE|-",
		Short: "Decode the RoCE v1/v2 packets of a pcap or pcapng capture and check their ICRC",
		Long: `decode reads a pcap or pcapng capture of an Ethernet interface (the format is
detected from the file's magic number; - reads standard input) and prints one
line per RoCE packet: VLAN tag and PCP, addresses, DSCP/ECN, TTL, UDP source
port, BTH fields (opcode, P_Key, destination QP, PSN, AckReq, FECN, BECN),
DETH (source QP, Q_Key), immediate data, payload and pad length, and whether
the ICRC is valid. RoCE v2 is recognised by UDP destination port 4791, RoCE v1
by EtherType 0x8915. Other frames are counted and skipped.

--summary prints one row per flow (addresses, UDP ports, QPs) instead: packets,
bytes, first and last PSN, the VLAN/PCP/DSCP/ECN values seen, CE-marked
packets, CNPs and ICRC failures. -o json prints one JSON object per packet
(or one document for --summary). See docs/decode.md.

Reading a capture needs no privileges. Exit status: 0 ok; 1 with
--fail-on-bad-icrc when a packet has an invalid ICRC; 2 bad usage or an
unreadable, truncated or damaged capture.`,
		Example: `  tcpdump -i eth0 -w roce.pcap 'udp dst port 4791 or ether proto 0x8915'
  roce-probe decode roce.pcap
  roce-probe decode --summary -o json roce.pcapng
  tcpdump -i eth0 -w - udp port 4791 | roce-probe decode -`,
		Args: func(c *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return usagef("%s needs FILE: a pcap or pcapng capture, or - for standard input", c.CommandPath())
			case 1:
				return nil
			}
			return usagef("%s takes one FILE: got %d arguments (%q, %q, ...)", c.CommandPath(), len(args), args[0], args[1])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDecode(cmd, args[0], f)
		},
	}
	outputVar(c.Flags(), &f.output, "table", "json")
	c.Flags().BoolVar(&f.summary, "summary", false, "print one row per flow instead of one line per packet")
	c.Flags().BoolVar(&f.failOnBadICRC, "fail-on-bad-icrc", false, "exit 1 when any packet has an invalid ICRC")
	return c
}

func runDecode(cmd *cobra.Command, path string, f decodeFlags) error {
	format := f.output
	var in io.Reader
	if path == "-" {
		in = cmd.InOrStdin()
		stop := finishOnInterrupt(cmd.ErrOrStderr())
		defer stop()
	} else {
		fh, err := os.Open(path)
		if err != nil {
			return usagef("FILE %q: %v: want a pcap or pcapng capture, or - for standard input", path, pathErr(err))
		}
		defer fh.Close()
		in = fh
	}
	cr, err := capture.NewReader(in)
	if err != nil {
		return usagef("FILE %q: %v", path, err)
	}
	bw := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
	defer bw.Flush()
	out, stderr := bw, cmd.ErrOrStderr()
	if f.summary {
		return runDecodeSummary(path, cr, f, format, bw, stderr)
	}
	cr.ReadAhead() // read the file on one core, decode on another
	defer cr.Close()
	dec := roce.NewDecoder()
	var st decodeStats
	var p roce.Packet
	var readErr error
	for {
		if !cr.Ready() {
			// print what has been decoded before waiting for more input
			// (a live capture on standard input)
			if err := bw.Flush(); err != nil {
				return err
			}
		}
		data, ci, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		st.frames++
		err = dec.DecodeCaptured(data, ci, &p)
		if errors.Is(err, roce.ErrNotRoCE) {
			st.nonRoCE++
			continue
		}
		if err != nil {
			st.malformed++
			bw.Flush() // keep stdout and stderr in frame order
			fmt.Fprintf(stderr, "roce-probe: frame %d: malformed RoCE packet: %v\n", cr.Frame(), err)
			continue
		}
		st.roce++
		switch p.ICRCStatus {
		case roce.ICRCInvalid:
			st.badICRC++
		case roce.ICRCUnchecked:
			st.unchecked++
		}
		if format == "json" {
			if err := writeJSON(out, packetJSON(cr.Frame(), ci.Timestamp, &p)); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(out, packetLine(cr.Frame(), ci.Timestamp, &p))
		}
	}
	return finishDecode(path, f, format, bw, stderr, st, readErr)
}

// finishOnInterrupt makes the first Ctrl-C (SIGINT) not end decode of
// standard input: in `tcpdump -w - | roce-probe decode -` the interrupt
// reaches both programs, and the capture program ends the stream, after
// which decode prints what it has (the --summary, the frame counts). A
// second Ctrl-C exits at once (status 130). stop restores the default.
func finishOnInterrupt(stderr io.Writer) (stop func()) {
	sig := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(sig, os.Interrupt)
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		fmt.Fprintln(stderr, "roce-probe: interrupt: reading standard input to its end, then printing what it held (Ctrl-C again to quit now)")
		select {
		case <-sig:
			os.Exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}

// finishDecode flushes the output and prints the frame counts and the
// read error, if any.
func finishDecode(path string, f decodeFlags, format string, bw *bufio.Writer, stderr io.Writer, st decodeStats, readErr error) error {
	if err := bw.Flush(); err != nil {
		return err
	}
	if readErr != nil {
		return usagef("FILE %q: %v", path, readErr)
	}
	if !f.summary || format != "json" {
		fmt.Fprintf(stderr, "%d frames: %d RoCE (%d invalid ICRC, %d unchecked), %d not RoCE, %d malformed\n",
			st.frames, st.roce, st.badICRC, st.unchecked, st.nonRoCE, st.malformed)
	}
	if f.failOnBadICRC && st.badICRC > 0 {
		return findingError{fmt.Sprintf("%d RoCE packets have an invalid ICRC", st.badICRC)}
	}
	return nil
}

// runDecodeSummary is decode --summary: capture.Reader.Summarize
// decodes the frames on all cores.
func runDecodeSummary(path string, cr *capture.Reader, f decodeFlags, format string, bw *bufio.Writer, stderr io.Writer) error {
	sum, cs, readErr := cr.Summarize(func(e capture.FrameError) {
		fmt.Fprintf(stderr, "roce-probe: frame %d: malformed RoCE packet: %v\n", e.Frame, e.Err)
	})
	st := decodeStats{frames: cs.Frames, roce: cs.RoCE, nonRoCE: cs.NonRoCE, malformed: cs.Malformed,
		badICRC: cs.BadICRC, unchecked: cs.Unchecked}
	if err := printDecodeSummary(bw, format, sum.Flows(), st); err != nil {
		return err
	}
	return finishDecode(path, f, format, bw, stderr, st, readErr)
}

type decodeStats struct {
	frames, roce, nonRoCE, malformed, badICRC, unchecked int
}

// decodedPacket is the JSON form of one packet (keys in this order;
// docs/json.md, "packet": a key added here is added there too, which
// TestVocabulary checks).
type decodedPacket struct {
	Frame       int    `json:"frame"`
	Time        string `json:"time"`
	RoCEVersion int    `json:"roce_version"`
	// VLAN, PCP and DEI are the outermost tag's, the one the first switch
	// classifies on; VLANChain lists every tag, outermost first.
	VLAN       *uint16         `json:"vlan"`
	PCP        *uint8          `json:"pcp"`
	DEI        *bool           `json:"dei"`
	VLANChain  []vlan.ChainTag `json:"vlan_chain"`
	IPVersion  *int            `json:"ip_version"`
	Src        string          `json:"src"`
	Dst        string          `json:"dst"`
	DSCP       uint8           `json:"dscp"`
	ECN        uint8           `json:"ecn"`
	ECNName    string          `json:"ecn_name"`
	TTL        uint8           `json:"ttl"`
	FlowLabel  *uint32         `json:"flow_label"`
	UDPSport   *uint16         `json:"udp_sport"`
	Opcode     uint8           `json:"opcode"`
	OpcodeName string          `json:"opcode_name"`
	PKey       uint16          `json:"pkey"`
	DestQP     uint32          `json:"dest_qp"`
	PSN        uint32          `json:"psn"`
	AckReq     bool            `json:"ack_req"`
	FECN       bool            `json:"fecn"`
	BECN       bool            `json:"becn"`
	SrcQP      *uint32         `json:"src_qp"`
	QKey       *uint32         `json:"qkey"`
	Imm        *uint32         `json:"imm"`
	PayloadLen int             `json:"payload_len"`
	Pad        int             `json:"pad"`
	ICRC       *string         `json:"icrc"`
	ICRCValid  *bool           `json:"icrc_valid"`
}

const decodeTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func decodePtr[T any](v T) *T { return &v }

func packetJSON(frame int, ts time.Time, p *roce.Packet) decodedPacket {
	j := decodedPacket{
		Frame:       frame,
		Time:        ts.UTC().Format(decodeTimeFormat),
		RoCEVersion: p.Version,
		Src:         p.Src.String(),
		Dst:         p.Dst.String(),
		DSCP:        p.DSCP(),
		ECN:         p.ECN(),
		ECNName:     qos.ECN(p.ECN()).String(),
		TTL:         p.TTL,
		VLANChain:   []vlan.ChainTag{},
		Opcode:      uint8(p.BTH.Opcode),
		OpcodeName:  p.BTH.Opcode.String(),
		PKey:        p.BTH.PKey,
		DestQP:      p.BTH.DestQP,
		PSN:         p.BTH.PSN,
		AckReq:      p.BTH.AckReq,
		FECN:        p.BTH.FECN,
		BECN:        p.BTH.BECN,
		PayloadLen:  p.PayloadLen,
		Pad:         p.PadLen,
	}
	if p.NumVLANs > 0 {
		j.VLAN, j.PCP, j.DEI = decodePtr(p.VLANs[0].ID), decodePtr(p.VLANs[0].PCP), decodePtr(p.VLANs[0].DEI)
	}
	switch {
	case p.NumVLANs > roce.MaxVLANTags:
		j.VLANChain = nil // more tags than the walk records: the chain is not known
	case p.NumVLANs > 0:
		j.VLANChain = make([]vlan.ChainTag, p.NumVLANs)
		for i, t := range p.VLANs[:p.NumVLANs] {
			j.VLANChain[i] = vlan.ChainTag{Tag: vlan.Tag{ID: t.ID, TPID: vlan.TPID(t.TPID)}, PCP: decodePtr(t.PCP)}
		}
	}
	if p.Version == 2 {
		j.IPVersion, j.UDPSport = decodePtr(p.IPVersion), decodePtr(p.SrcPort)
	}
	if p.Version == 1 || p.IPVersion == 6 {
		j.FlowLabel = decodePtr(p.FlowLabel) // the GRH's or IPv6's; IPv4 has none
	}
	if p.HasDETH {
		j.SrcQP, j.QKey = decodePtr(p.SrcQP), decodePtr(p.QKey)
	}
	if p.HasImm {
		j.Imm = decodePtr(p.Imm)
	}
	if p.ICRCStatus != roce.ICRCUnchecked {
		j.ICRC = decodePtr(fmt.Sprintf("%x", p.ICRC[:]))
		j.ICRCValid = decodePtr(p.ICRCStatus == roce.ICRCValid)
	}
	return j
}

// packetLine is the readable one-line form of a packet.
func packetLine(frame int, ts time.Time, p *roce.Packet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s RoCEv%d", frame, ts.UTC().Format("15:04:05.000000000"), p.Version)
	for i := 0; i < p.NumVLANs && i < roce.MaxVLANTags; i++ {
		v := p.VLANs[i]
		fmt.Fprintf(&b, " vlan %d pcp %d", v.ID, v.PCP)
		if v.DEI {
			b.WriteString(" dei")
		}
	}
	if p.Version == 2 {
		if p.IPVersion == 6 {
			fmt.Fprintf(&b, " [%s]:%d > [%s]:%d", p.Src, p.SrcPort, p.Dst, p.DstPort)
		} else {
			fmt.Fprintf(&b, " %s:%d > %s:%d", p.Src, p.SrcPort, p.Dst, p.DstPort)
		}
	} else {
		fmt.Fprintf(&b, " %s > %s", p.Src, p.Dst)
	}
	fmt.Fprintf(&b, " dscp %d ecn %d ttl %d", p.DSCP(), p.ECN(), p.TTL)
	if p.FlowLabel != 0 {
		fmt.Fprintf(&b, " fl %#05x", p.FlowLabel)
	}
	h := &p.BTH
	fmt.Fprintf(&b, " %s qp %#x psn %d pkey %#04x", h.Opcode, h.DestQP, h.PSN, h.PKey)
	for _, fl := range []struct {
		on   bool
		name string
	}{{h.AckReq, "ack-req"}, {h.FECN, "FECN"}, {h.BECN, "BECN"}, {h.SolicitedEvent, "se"}} {
		if fl.on {
			b.WriteString(" " + fl.name)
		}
	}
	if p.HasDETH {
		fmt.Fprintf(&b, " src-qp %#x qkey %#x", p.SrcQP, p.QKey)
	}
	if p.HasImm {
		fmt.Fprintf(&b, " imm %#08x", p.Imm)
	}
	if p.HasAETH {
		fmt.Fprintf(&b, " %s msn %d", p.AETH.Describe(), p.AETH.MSN)
	}
	fmt.Fprintf(&b, " len %d pad %d", p.PayloadLen, p.PadLen)
	switch p.ICRCStatus {
	case roce.ICRCValid:
		b.WriteString(" icrc ok")
	case roce.ICRCInvalid:
		fmt.Fprintf(&b, " icrc BAD (wire %x, want %x)", p.ICRC[:], icrcWire(p.Computed))
	default:
		b.WriteString(" icrc unchecked (" + p.UncheckedReason() + ")")
	}
	return b.String()
}

func icrcWire(v uint32) []byte {
	var b [4]byte
	roce.PutICRC(b[:], v)
	return b[:]
}

// decodeFlowJSON is the JSON form of one flow of --summary (docs/json.md,
// "flow"). The *_values keys list the distinct values the flow's packets
// had for the packet keys of the same name: vlan and pcp are the outermost
// tag's.
type decodeFlowJSON struct {
	RoCEVersion   int      `json:"roce_version"`
	Src           string   `json:"src"`
	Dst           string   `json:"dst"`
	UDPSport      *uint16  `json:"udp_sport"`
	UDPDport      *uint16  `json:"udp_dport"`
	DestQP        uint32   `json:"dest_qp"`
	SrcQP         *uint32  `json:"src_qp"`
	Packets       uint64   `json:"packets"`
	Bytes         uint64   `json:"bytes"`
	FirstPSN      uint32   `json:"first_psn"`
	LastPSN       uint32   `json:"last_psn"`
	VLANs         []uint16 `json:"vlan_values"`
	Untagged      uint64   `json:"untagged"`
	PCPs          []int    `json:"pcp_values"`
	DSCPs         []int    `json:"dscp_values"`
	ECNs          []int    `json:"ecn_values"`
	CE            uint64   `json:"ce"`
	CNPs          uint64   `json:"cnps"`
	ICRCFailures  uint64   `json:"icrc_failures"`
	ICRCUnchecked uint64   `json:"icrc_unchecked"`
}

type decodeSummaryJSON struct {
	Frames    int              `json:"frames"`
	RoCE      int              `json:"roce_packets"`
	NonRoCE   int              `json:"non_roce"`
	Malformed int              `json:"malformed"`
	BadICRC   int              `json:"icrc_failures"`
	Flows     []decodeFlowJSON `json:"flows"`
}

func printDecodeSummary(w io.Writer, format string, flows []capture.FlowSummary, st decodeStats) error {
	if format == "json" {
		s := decodeSummaryJSON{Frames: st.frames, RoCE: st.roce, NonRoCE: st.nonRoCE, Malformed: st.malformed,
			BadICRC: st.badICRC, Flows: []decodeFlowJSON{}}
		for _, f := range flows {
			j := decodeFlowJSON{RoCEVersion: f.Version, Src: f.Src.String(), Dst: f.Dst.String(),
				DestQP: f.DestQP, Packets: f.Packets, Bytes: f.Bytes, FirstPSN: f.FirstPSN, LastPSN: f.LastPSN,
				VLANs: f.VLANs, Untagged: f.Untagged, PCPs: ints(f.PCPs), DSCPs: ints(f.DSCPs), ECNs: ints(f.ECNs), CE: f.CE,
				CNPs: f.CNPs, ICRCFailures: f.ICRCFailures, ICRCUnchecked: f.ICRCUnchecked}
			if f.Version == 2 {
				j.UDPSport, j.UDPDport = decodePtr(f.SrcPort), decodePtr(f.DstPort)
			}
			if f.HasSrcQP {
				j.SrcQP = decodePtr(f.SrcQP)
			}
			s.Flows = append(s.Flows, j)
		}
		return writeJSONIndent(w, s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VER\tSRC\tDST\tQP\tPACKETS\tBYTES\tPSN\tVLAN\tPCP\tDSCP\tECN\tCE\tCNP\tBAD-ICRC")
	for _, f := range flows {
		src, dst := f.Src.String(), f.Dst.String()
		if f.Version == 2 {
			src, dst = netip.AddrPortFrom(f.Src, f.SrcPort).String(), netip.AddrPortFrom(f.Dst, f.DstPort).String()
		}
		qp := fmt.Sprintf("%#x", f.DestQP)
		if f.HasSrcQP {
			qp = fmt.Sprintf("%#x>%#x", f.SrcQP, f.DestQP)
		}
		vlans := decodeJoinNums(f.VLANs)
		if f.Untagged > 0 {
			vlans = strings.TrimPrefix(vlans+",untagged", "-,")
		}
		fmt.Fprintf(tw, "v%d\t%s\t%s\t%s\t%d\t%d\t%d-%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", f.Version, src, dst, qp,
			f.Packets, f.Bytes, f.FirstPSN, f.LastPSN, vlans, decodeJoinNums(f.PCPs), decodeJoinNums(f.DSCPs), decodeJoinNums(f.ECNs),
			f.CE, f.CNPs, f.ICRCFailures)
	}
	return tw.Flush()
}

func decodeJoinNums[T uint8 | uint16](v []T) string {
	if len(v) == 0 {
		return "-"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// ints converts small numbers for JSON ([]uint8 would marshal as base64).
func ints(v []uint8) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}
