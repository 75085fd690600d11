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
		Long: `decode reads a pcap or pcapng capture of an Ethernet interface, or of Linux's
"any" (tcpdump -i any: Linux cooked, SLL or SLL2), (the format is detected
from the file's magic number; - reads standard input) and prints one
line per RoCE packet: VLAN tag and PCP, addresses, DSCP/ECN, TTL, UDP source
port, BTH fields (opcode, P_Key, destination QP, PSN, AckReq, FECN, BECN),
DETH (source QP, Q_Key), immediate data, payload and pad length, and whether
the ICRC is valid. RoCE v2 is recognised by UDP destination port 4791, RoCE v1
by EtherType 0x8915. Other frames are counted and skipped.

The extension headers are shown as the opcode carries them: RETH (VA, R_Key,
DMA length), AETH (ACK with its credit count, RNR NAK with its timer, or NAK
with its code, and the MSN), AtomicETH, AtomicAckETH, IETH, XRCETH, RDETH.

--summary prints one row per flow (addresses, UDP ports, QPs) instead: packets,
bytes, first and last PSN, the VLAN/PCP/DSCP/ECN values seen, CE-marked
packets, CNPs and ICRC failures, and what the PSNs and AETHs say about loss:
packets sent again (RETX), PSNs lost before the capture point (LOST: missing,
or lost and sent again), out of order (OOO), NAKs, RNR NAKs, and a verdict
(loss, retransmitted, reordered, none) with its reason below the table.
-o json prints one JSON document: an array of packets, written as they are
decoded, one per line (for --summary: the summary object); -o ndjson one JSON
object per line (a stream: each packet as soon as it is decoded).
See docs/decode.md.

Reading a capture needs no privileges. Exit status: 0 ok; 1 with
--fail-on-bad-icrc when a packet has an invalid ICRC; 2 bad usage or an
unreadable, truncated or damaged capture.`,
		Example: `  tcpdump -i eth0 -w roce.pcap 'udp dst port 4791 or ether proto 0x8915'
  roce-probe decode roce.pcap
  roce-probe decode --summary -o json roce.pcapng
  tcpdump -i eth0 -w - udp port 4791 | roce-probe decode -
  tcpdump -i any -y LINUX_SLL -w any.pcap udp port 4791 && roce-probe decode any.pcap`,
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
	outputVar(c.Flags(), &f.output, "table", "json", ndjson)
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
	var arr *jsonArray
	if format == "json" {
		arr = newJSONArray(out)
	}
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
		ci, err := cr.NextPacket(&p)
		var fe capture.FrameError
		if errors.As(err, &fe) {
			bw.Flush() // keep stdout and stderr in frame order
			fmt.Fprintf(stderr, "roce-probe: %v\n", fe)
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		switch format {
		case "json":
			if err := arr.add(packetJSON(cr.Frame(), ci.Timestamp, &p)); err != nil {
				return err
			}
		case ndjson:
			if err := writeJSON(out, packetJSON(cr.Frame(), ci.Timestamp, &p)); err != nil {
				return err
			}
		default:
			fmt.Fprintln(out, packetLine(cr.Frame(), ci.Timestamp, &p))
		}
	}
	if arr != nil {
		// The document ends also when the capture is damaged: what was
		// decoded before, then the error on stderr (exit 2).
		if err := arr.end(); err != nil {
			return err
		}
		fmt.Fprintln(out)
	}
	return finishDecode(path, f, format, bw, stderr, cr.Stats(), readErr)
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
func finishDecode(path string, f decodeFlags, format string, bw *bufio.Writer, stderr io.Writer, st capture.Stats, readErr error) error {
	if err := bw.Flush(); err != nil {
		return err
	}
	if readErr != nil {
		return usagef("FILE %q: %v", path, readErr)
	}
	if !f.summary || format == "table" {
		fmt.Fprintf(stderr, "%d frames: %d RoCE (%d invalid ICRC, %d unchecked), %d not RoCE, %d malformed\n",
			st.Frames, st.RoCE, st.BadICRC, st.Unchecked, st.NonRoCE, st.Malformed)
	}
	if f.failOnBadICRC && st.BadICRC > 0 {
		return findingError{fmt.Sprintf("%d RoCE packets have an invalid ICRC", st.BadICRC)}
	}
	return nil
}

// runDecodeSummary is decode --summary: capture.Reader.Summarize
// decodes the frames on all cores.
func runDecodeSummary(path string, cr *capture.Reader, f decodeFlags, format string, bw *bufio.Writer, stderr io.Writer) error {
	sum, st, readErr := cr.Summarize(func(e capture.FrameError) {
		fmt.Fprintf(stderr, "roce-probe: %v\n", e)
	})
	if err := printDecodeSummary(bw, format, sum.Flows(), st); err != nil {
		return err
	}
	return finishDecode(path, f, format, bw, stderr, st, readErr)
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
	// RETH and AtomicETH: the remote buffer
	VA     *uint64 `json:"va"`
	RKey   *uint32 `json:"rkey"`
	DMALen *uint32 `json:"dma_len"`
	// AETH
	Syndrome     *uint8  `json:"syndrome"`
	SyndromeType *string `json:"syndrome_type"`
	Credits      *uint8  `json:"credits"`
	RNRTimer     *uint8  `json:"rnr_timer"`
	RNRTimerUS   *uint32 `json:"rnr_timer_us"`
	NAKCode      *uint8  `json:"nak_code"`
	NAKName      *string `json:"nak_name"`
	MSN          *uint32 `json:"msn"`
	// AtomicETH, AtomicAckETH
	SwapAdd        *uint64 `json:"swap_add"`
	Compare        *uint64 `json:"compare"`
	OrigRemoteData *uint64 `json:"orig_remote_data"`
	// IETH, XRCETH, RDETH
	InvalidateRKey *uint32 `json:"invalidate_rkey"`
	XRCSRQ         *uint32 `json:"xrc_srq"`
	EEC            *uint32 `json:"eec"`
	PayloadLen     int     `json:"payload_len"`
	Pad            int     `json:"pad"`
	ICRC           *string `json:"icrc"`
	ICRCValid      *bool   `json:"icrc_valid"`
}

const decodeTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

func decodePtr[T any](v T) *T { return &v }

// frameChain is the vlan_chain of a frame's tags (outermost first): ID,
// TPID and the PCP each carries; no netdev, the frame does not say.
func frameChain(tags []roce.VLANTag) []vlan.ChainTag {
	out := make([]vlan.ChainTag, len(tags))
	for i, t := range tags {
		out[i] = vlan.ChainTag{Tag: vlan.Tag{ID: t.ID, TPID: vlan.TPID(t.TPID)}, PCP: decodePtr(t.PCP)}
	}
	return out
}

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
		j.VLANChain = frameChain(p.VLANs[:p.NumVLANs])
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
	if p.HasRETH {
		j.VA, j.RKey, j.DMALen = decodePtr(p.RETH.VA), decodePtr(p.RETH.RKey), decodePtr(p.RETH.DMALen)
	}
	if p.HasAtomicETH {
		a := &p.AtomicETH
		j.VA, j.RKey, j.SwapAdd, j.Compare = decodePtr(a.VA), decodePtr(a.RKey), decodePtr(a.SwapAddData), decodePtr(a.CompareData)
	}
	if p.HasAETH {
		a := &p.AETH
		j.Syndrome, j.SyndromeType, j.MSN = decodePtr(a.Syndrome), decodePtr(a.Kind().String()), decodePtr(a.MSN)
		switch a.Kind() {
		case roce.AckKindACK:
			j.Credits = decodePtr(a.Credits())
		case roce.AckKindRNRNAK:
			j.RNRTimer, j.RNRTimerUS = decodePtr(a.RNRTimer()), decodePtr(a.RNRTimerMicros())
		case roce.AckKindNAK:
			j.NAKCode, j.NAKName = decodePtr(uint8(a.NAKCode())), decodePtr(a.NAKCode().String())
		}
	}
	if p.HasAtomicAckETH {
		j.OrigRemoteData = decodePtr(p.AtomicAckETH.OrigRemoteData)
	}
	if p.HasIETH {
		j.InvalidateRKey = decodePtr(p.IETH.RKey)
	}
	if p.HasXRCETH {
		j.XRCSRQ = decodePtr(p.XRCETH.XRCSRQ)
	}
	if p.HasRDETH {
		j.EEC = decodePtr(p.RDETH.EEC)
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
	// the extension headers in wire order
	for _, t := range h.Opcode.Info().Headers {
		switch t {
		case roce.LayerTypeRDETH:
			fmt.Fprintf(&b, " eec %#x", p.RDETH.EEC)
		case roce.LayerTypeXRCETH:
			fmt.Fprintf(&b, " xrc-srq %#x", p.XRCETH.XRCSRQ)
		case roce.LayerTypeDETH:
			fmt.Fprintf(&b, " src-qp %#x qkey %#x", p.SrcQP, p.QKey)
		case roce.LayerTypeRETH:
			fmt.Fprintf(&b, " va %#x rkey %#x dma-len %d", p.RETH.VA, p.RETH.RKey, p.RETH.DMALen)
		case roce.LayerTypeAETH:
			fmt.Fprintf(&b, " %s msn %d", p.AETH.Describe(), p.AETH.MSN)
		case roce.LayerTypeAtomicETH:
			a := &p.AtomicETH
			fmt.Fprintf(&b, " va %#x rkey %#x swap-add %#x compare %#x", a.VA, a.RKey, a.SwapAddData, a.CompareData)
		case roce.LayerTypeAtomicAckETH:
			fmt.Fprintf(&b, " orig-remote-data %#x", p.AtomicAckETH.OrigRemoteData)
		case roce.LayerTypeIETH:
			fmt.Fprintf(&b, " invalidate-rkey %#x", p.IETH.RKey)
		case roce.LayerTypeImmDt:
			fmt.Fprintf(&b, " imm %#08x", p.Imm)
		}
	}
	fmt.Fprintf(&b, " len %d pad %d", p.PayloadLen, p.PadLen)
	switch p.ICRCStatus {
	case roce.ICRCValid:
		b.WriteString(" icrc ok")
	case roce.ICRCInvalid:
		want := p.WantICRC()
		fmt.Fprintf(&b, " icrc BAD (wire %x, want %x)", p.ICRC[:], want[:])
	default:
		b.WriteString(" icrc unchecked (" + p.UncheckedReason() + ")")
	}
	return b.String()
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
	Loss          lossJSON `json:"loss"`
}

// lossJSON is a flow's loss analysis (capture.Loss).
type lossJSON struct {
	Verdict       *string      `json:"verdict"`
	Reason        string       `json:"reason"`
	Sequenced     uint64       `json:"sequenced"`
	Retransmitted uint64       `json:"retransmitted"`
	LostResent    uint64       `json:"lost_resent"`
	Missing       uint64       `json:"missing"`
	OutOfOrder    uint64       `json:"out_of_order"`
	Gaps          uint64       `json:"gaps"`
	Rewinds       uint64       `json:"rewinds"`
	NAKs          nakCountJSON `json:"naks"`
	RNRNAKs       uint64       `json:"rnr_naks"`
	PathMTU       *uint32      `json:"path_mtu"`
}

// nakCountJSON is capture.NAKCounts.
type nakCountJSON struct {
	PSNSequenceError       uint64 `json:"psn_sequence_error"`
	InvalidRequest         uint64 `json:"invalid_request"`
	RemoteAccessError      uint64 `json:"remote_access_error"`
	RemoteOperationalError uint64 `json:"remote_operational_error"`
	InvalidRDRequest       uint64 `json:"invalid_rd_request"`
	Reserved               uint64 `json:"reserved"`
}

func lossOf(l capture.Loss) lossJSON {
	j := lossJSON{Reason: l.Reason, Sequenced: l.Sequenced, Retransmitted: l.Retransmitted, LostResent: l.LostResent,
		Missing: l.Missing, OutOfOrder: l.OutOfOrder, Gaps: l.Gaps, Rewinds: l.Rewinds, RNRNAKs: l.RNRNAKs,
		NAKs: nakCountJSON{l.NAKs.PSNSequenceError, l.NAKs.InvalidRequest, l.NAKs.RemoteAccessError,
			l.NAKs.RemoteOperationalError, l.NAKs.InvalidRDRequest, l.NAKs.Reserved}}
	if l.Verdict != capture.VerdictUnknown {
		j.Verdict = decodePtr(string(l.Verdict))
	}
	if l.PMTU != 0 {
		j.PathMTU = decodePtr(l.PMTU)
	}
	return j
}

type decodeSummaryJSON struct {
	Frames    int              `json:"frames"`
	RoCE      int              `json:"roce_packets"`
	NonRoCE   int              `json:"non_roce"`
	Malformed int              `json:"malformed"`
	BadICRC   int              `json:"icrc_failures"`
	Flows     []decodeFlowJSON `json:"flows"`
}

func printDecodeSummary(w io.Writer, format string, flows []capture.FlowSummary, st capture.Stats) error {
	if format == "json" || format == ndjson {
		s := decodeSummaryJSON{Frames: st.Frames, RoCE: st.RoCE, NonRoCE: st.NonRoCE, Malformed: st.Malformed,
			BadICRC: st.BadICRC, Flows: []decodeFlowJSON{}}
		for _, f := range flows {
			j := decodeFlowJSON{RoCEVersion: f.Version, Src: f.Src.String(), Dst: f.Dst.String(),
				DestQP: f.DestQP, Packets: f.Packets, Bytes: f.Bytes, FirstPSN: f.FirstPSN, LastPSN: f.LastPSN,
				VLANs: f.VLANs, Untagged: f.Untagged, PCPs: ints(f.PCPs), DSCPs: ints(f.DSCPs), ECNs: ints(f.ECNs), CE: f.CE,
				CNPs: f.CNPs, ICRCFailures: f.ICRCFailures, ICRCUnchecked: f.ICRCUnchecked, Loss: lossOf(f.Loss)}
			if f.Version == 2 {
				j.UDPSport, j.UDPDport = decodePtr(f.SrcPort), decodePtr(f.DstPort)
			}
			if f.HasSrcQP {
				j.SrcQP = decodePtr(f.SrcQP)
			}
			s.Flows = append(s.Flows, j)
		}
		if format == ndjson {
			return writeJSON(w, s)
		}
		return writeJSONIndent(w, s)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VER\tSRC\tDST\tQP\tPACKETS\tBYTES\tPSN\tVLAN\tPCP\tDSCP\tECN\tCE\tCNP\tBAD-ICRC\tRETX\tLOST\tOOO\tNAK\tRNR\tLOSS")
	var reasons []string
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
		l := &f.Loss
		verdict := string(l.Verdict)
		if l.Verdict == capture.VerdictUnknown {
			verdict = "-"
		}
		fmt.Fprintf(tw, "v%d\t%s\t%s\t%s\t%d\t%d\t%d-%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", f.Version, src, dst, qp,
			f.Packets, f.Bytes, f.FirstPSN, f.LastPSN, vlans, decodeJoinNums(f.PCPs), decodeJoinNums(f.DSCPs), decodeJoinNums(f.ECNs),
			f.CE, f.CNPs, f.ICRCFailures, l.Retransmitted, l.Missing+l.LostResent, l.OutOfOrder, l.NAKs.Total(), l.RNRNAKs, verdict)
		if l.Verdict != capture.VerdictNone && l.Verdict != capture.VerdictUnknown {
			reasons = append(reasons, fmt.Sprintf("%s > %s qp %s: %s: %s", src, dst, qp, l.Verdict, l.Reason))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reasons {
		if _, err := fmt.Fprintln(w, r); err != nil {
			return err
		}
	}
	return nil
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
