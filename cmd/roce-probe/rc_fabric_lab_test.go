//go:build lab

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/internal/lab"
)

// RC traffic as decode and tshark read it: the frames of ibv_rc_pingpong,
// ib_write_bw and ib_read_bw between two hosts, captured on the server's
// switch port, decode with valid ICRCs, and decode's BTH (opcode, P_Key,
// DestQP, PSN), RETH and AETH equal tshark's for every frame, each RETH
// and AETH field there exactly when tshark shows it (compareWithTshark);
// each program's own opcodes are there (SEND FIRST/MIDDLE/LAST, RDMA
// WRITE, RDMA READ request and responses, ACK).
func TestFabricRCDecodeMatchesTshark(t *testing.T) {
	sw := lab.UseFabric(t)
	cases := []struct {
		name, client, server, net string
		v6                        bool
		prog                      string
		want                      []uint8  // opcodes that must appear
		keys                      []string // RETH/AETH values (decode's keys) that must have been compared
	}{
		{"ibv_rc_pingpong", "h1", "h2", "vlan100", false, "", []uint8{0x00, 0x01, 0x02, 0x11}, // 4 KiB SENDs: FIRST, MIDDLE, LAST
			[]string{"syndrome", "msn", "credits"}},
		{"ib_write_bw", "h2", "h1", "untagged", true, "ib_write_bw", []uint8{0x06, 0x07, 0x08, 0x11},
			[]string{"va", "rkey", "dma_len", "msn"}},
		{"ib_read_bw", "h4", "h2", "vlan200", false, "ib_read_bw", []uint8{0x0c, 0x0d, 0x0e, 0x0f},
			[]string{"va", "dma_len", "syndrome", "msn"}},
	}
	tshark, err := exec.LookPath("tshark")
	if err != nil {
		t.Fatalf("tshark: %v (scripts/lab.sh installs it)", err)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, srv := sw.Host(c.client), sw.Host(c.server)
			n, _ := lab.FabricNetByName(c.net)
			ci := gidIdx(t, cl, cl.Addr(n, c.v6), n.Netdev)
			si := gidIdx(t, srv, srv.Addr(n, c.v6), n.Netdev)
			var tool lab.Tool
			if c.prog == "" {
				tool = lab.RCPingpong(cl, srv, ci, si, 21200+i, 10)
			} else {
				// 4 KiB messages over the 1024-byte path MTU: FIRST, MIDDLE
				// and LAST packets.
				tool = lab.Perftest(c.prog, cl, srv, ci, si, 21200+i, 10, 4096, "-m", "1024")
			}
			capt := sw.Capture(srv.Name)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			tool.Run(t, ctx)
			file := filepath.Join(lab.ArtifactDir(t), "rc-"+c.name+".pcapng")
			if err := lab.WritePcapng(file, srv.Port, capt.Stop()); err != nil {
				t.Fatal(err)
			}
			pairs, compared := compareWithTshark(t, tshark, file, []string{"-E", "occurrence=f"}, append(bthCols, rethAETHCols...)...)
			ops := map[uint8]int{}
			for _, p := range pairs {
				op, err := strconv.ParseUint(p.tshark["infiniband.bth.opcode"], 0, 8)
				if err != nil {
					t.Fatalf("frame %d: tshark's opcode %q: %v", p.frame, p.tshark["infiniband.bth.opcode"], err)
				}
				ops[uint8(op)]++
			}
			t.Logf("%s: opcodes %v", c.name, ops)
			for _, op := range c.want {
				if ops[op] == 0 {
					t.Errorf("no frame with opcode %#x (opcodes seen: %v)", op, ops)
				}
			}
			for _, k := range c.keys {
				if compared[k] == 0 {
					t.Errorf("no %s compared with tshark (compared: %v)", k, compared)
				}
			}
		})
	}
}

// lossFlow is a flow of `decode --summary -o json` with its loss analysis.
type lossFlow struct {
	Src    string   `json:"src"`
	Dst    string   `json:"dst"`
	DestQP uint32   `json:"dest_qp"`
	Loss   lossJSON `json:"loss"`
}

// summaryFlow runs `decode --summary -o json FILE` and returns the flow
// from src to dst that carries the most sequenced packets (the RC
// connection's, not the rdma_cm or perftest handshakes').
func summaryFlow(t *testing.T, file string, src, dst netip.Addr) lossFlow {
	t.Helper()
	out, stderr, code := runCLI(t, "", "decode", "--summary", "-o", "json", file)
	if code != exitOK {
		t.Fatalf("decode --summary %s: exit %d: %s", file, code, stderr)
	}
	var s struct{ Flows []lossFlow }
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	var best lossFlow
	found := false
	for _, f := range s.Flows {
		if f.Src == src.String() && f.Dst == dst.String() && (!found || f.Loss.Sequenced+f.Loss.NAKs.PSNSequenceError > best.Loss.Sequenced+best.Loss.NAKs.PSNSequenceError) {
			best, found = f, true
		}
	}
	if !found {
		t.Fatalf("%s: no flow %s > %s in %s", file, src, dst, out)
	}
	return best
}

// Loss on an RC path, three ways. netem drops 10 % of what h1 sends to h2
// (on h2's switch port) while ib_write_bw writes from h1 to h2; the frames
// are captured on h1's switch port (before the loss: all h1 sent, all h2
// answered) and on h2's NIC (what h2 received); rxe's hw_counters are read
// before and after, and `roce-probe counters --watch` runs across. What rxe
// does (drivers/infiniband/sw/rxe, Linux 6.1.192 and 7.3.4, the same code):
//
//   - rxe_resp.c check_psn: a request whose PSN is beyond the one expected,
//     while no NAK is outstanding, increments out_of_seq_request and goes
//     to RESPST_ERR_PSN_OUT_OF_SEQ, which sends one PSN sequence error NAK
//     (send_ack(qp, AETH_NAK_PSN_SEQ_ERROR, ...)); nothing else sends that
//     NAK. The way back to h1 loses nothing, so h2's out_of_seq_request
//     rise EQUALS the sequence-error NAKs decode counts in h2 → h1 on h1's
//     port.
//   - rxe_comp.c check_ack counts rcvd_seq_err for a sequence-error NAK
//     only if its PSN is beyond qp->comp.psn, so h1's rcvd_seq_err rise is
//     AT MOST those NAKs.
//   - rxe_comp.c (COMPST_ERROR_RETRY) increments completer_retry_err each
//     time it sets qp->req.need_retry, and the completer does nothing more
//     until the requester has run req_retry (rxe_completer: "if
//     (qp->req.need_retry) goto exit"); need_retry is set nowhere else but
//     by the RNR NAK timer (rxe_req.c rnr_nak_timer), and RDMA WRITEs get
//     no RNR NAK. req_retry sends again from qp->comp.psn: each rewind of
//     the PSN sequence on h1's port comes from one retry, so decode's
//     rewinds are AT MOST h1's completer_retry_err rise (a retry finds
//     nothing to send again when ACKs acknowledged everything meanwhile).
//   - rxe_resp.c check_psn counts duplicate_request for a request whose PSN
//     is below the one expected: one the responder accepted before, so one
//     h2 received before. h2's duplicate_request rise is AT MOST the
//     packets decode finds sent again (PSN seen before) on h2's NIC.
//   - check_psn NAKs a request beyond the expected PSN only while no NAK is
//     outstanding, that is when the request before it was accepted (its
//     PSN the expected one less one) or a duplicate (below): the NAKed
//     request skips ahead of the one after the request before it. So
//     out_of_seq_request is AT MOST the gaps decode finds in the requests
//     on h2's NIC (packets beyond the PSN after the one before). (Not the
//     PSNs lost or late there: a PSN NAKed in a retransmission round may
//     have arrived before, while h2 was dropping out-of-sequence requests.)
//
// And `roce-probe counters` reads the same counters: the rises of its
// reports add up to the sysfs rises, and its loss findings name them.
func TestFabricLossRetransmits(t *testing.T) {
	sw := lab.UseFabric(t)
	facts, err := lab.Facts()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"out_of_seq_request", "duplicate_request", "rcvd_seq_err", "completer_retry_err"}
	for _, n := range names {
		if !slices.Contains(facts.HWCounters, n) {
			t.Fatalf("rxe on %s has no hw_counter %s (KernelFacts: %v)", facts.Measured, n, facts.HWCounters)
		}
	}
	cl, srv := sw.Host("h1"), sw.Host("h2")
	n, _ := lab.FabricNetByName("vlan100")
	ci := gidIdx(t, cl, cl.IPv4(n).Addr(), n.Netdev)
	si := gidIdx(t, srv, srv.IPv4(n).Addr(), n.Netdev)
	sw.Link("h1", "h2").Loss(10)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	watch := startCountersWatch(t, "--interval", "1s")
	reports := watch.after(t, ctx, time.Time{}) // one report, sampled before the traffic
	first := reports[0]
	c0, s0 := sysfsCounters(t, cl.RDMADevice, "hw_counters"), sysfsCounters(t, srv.RDMADevice, "hw_counters")
	atReq, atResp := sw.Capture("h1"), sw.CaptureHost("h2")
	lab.Perftest("ib_write_bw", cl, srv, ci, si, 21300, 100, 4096, "-m", "1024").Run(t, ctx)
	reqFrames, respFrames := atReq.Stop(), atResp.Stop()
	c1, s1 := sysfsCounters(t, cl.RDMADevice, "hw_counters"), sysfsCounters(t, srv.RDMADevice, "hw_counters")
	reports = append(reports, watch.after(t, ctx, time.Now())...) // up to one sampled after c1, s1
	reports = append(reports, watch.stop(t, ctx)...)

	if d1, d2 := atReq.Drops(), atResp.Drops(); d1+d2 > 0 {
		t.Fatalf("the captures dropped frames (ring full): %d on %s, %d on h2's NIC: the counts below would not hold", d1, cl.Port, d2)
	}
	dir := lab.ArtifactDir(t)
	reqFile, respFile := filepath.Join(dir, "rc-loss-h1-port.pcapng"), filepath.Join(dir, "rc-loss-h2-nic.pcapng")
	if err := lab.WritePcapng(reqFile, cl.Port, reqFrames); err != nil {
		t.Fatal(err)
	}
	if err := lab.WritePcapng(respFile, lab.HostNIC, respFrames); err != nil {
		t.Fatal(err)
	}
	rise := func(a, b map[string]uint64, k string) uint64 { return b[k] - a[k] }
	outOfSeq, dup := rise(s0, s1, "out_of_seq_request"), rise(s0, s1, "duplicate_request")
	seqErr, retry := rise(c0, c1, "rcvd_seq_err"), rise(c0, c1, "completer_retry_err")

	h1, h2 := cl.IPv4(n).Addr(), srv.IPv4(n).Addr()
	sent := summaryFlow(t, reqFile, h1, h2)   // the requests, before the loss
	naks := summaryFlow(t, reqFile, h2, h1)   // the ACKs and NAKs h1 received
	recvd := summaryFlow(t, respFile, h1, h2) // the requests h2 received
	t.Logf("%s: rcvd_seq_err +%d completer_retry_err +%d; %s: out_of_seq_request +%d duplicate_request +%d",
		cl.RDMADevice, seqErr, retry, srv.RDMADevice, outOfSeq, dup)
	t.Logf("decode at %s: requests %s; responses %s", cl.Port, mustJSON(sent.Loss), mustJSON(naks.Loss))
	t.Logf("decode at h2's NIC: requests %s", mustJSON(recvd.Loss))

	if outOfSeq == 0 || retry == 0 {
		t.Fatalf("no loss under 10 %% netem loss: out_of_seq_request +%d, completer_retry_err +%d", outOfSeq, retry)
	}
	if got := naks.Loss.NAKs.PSNSequenceError; got != outOfSeq {
		t.Errorf("decode counts %d PSN sequence error NAKs from %s, %s out_of_seq_request rose by %d: want equal", got, srv.Name, srv.RDMADevice, outOfSeq)
	}
	if seqErr > naks.Loss.NAKs.PSNSequenceError {
		t.Errorf("%s rcvd_seq_err +%d, more than the %d sequence-error NAKs it received", cl.RDMADevice, seqErr, naks.Loss.NAKs.PSNSequenceError)
	}
	l := sent.Loss
	if l.Rewinds == 0 || l.Rewinds > retry || l.Retransmitted < l.Rewinds {
		t.Errorf("at %s: %d rewinds, %d packets sent again; want 1 ≤ rewinds ≤ completer_retry_err +%d ≤ ... and at least one packet per rewind", cl.Port, l.Rewinds, l.Retransmitted, retry)
	}
	if l.Missing != 0 || l.LostResent != 0 || l.OutOfOrder != 0 || l.Gaps != 0 || l.Verdict == nil || *l.Verdict != "retransmitted" {
		t.Errorf("at %s (before the loss): %s; want nothing missing, late, out of order or skipped, verdict retransmitted", cl.Port, mustJSON(l))
	}
	if naks.Loss.Verdict == nil || *naks.Loss.Verdict != "loss" {
		t.Errorf("the responses' verdict: %s, want loss (sequence-error NAKs)", mustJSON(naks.Loss))
	}
	r := recvd.Loss
	if dup > r.Retransmitted {
		t.Errorf("%s duplicate_request +%d, more than the %d packets decode finds received again on its NIC", srv.RDMADevice, dup, r.Retransmitted)
	}
	if outOfSeq > r.Gaps {
		t.Errorf("%s out_of_seq_request +%d, more than the %d gaps decode finds on its NIC", srv.RDMADevice, outOfSeq, r.Gaps)
	}
	if r.Verdict == nil || *r.Verdict != "loss" || r.LostResent+r.Missing == 0 {
		t.Errorf("at h2's NIC: %s; want verdict loss, PSNs lost before the capture point", mustJSON(r))
	}

	// roce-probe counters: its reports' rises add up to sysfs's; each
	// report where a loss counter rose has the one loss finding for a
	// netdev without DCB, naming exactly what rose (checkLossFindings); a
	// one-sample read afterwards reports it as information with the
	// totals.
	rose := map[string]map[string]uint64{
		cl.RDMADevice:  checkLossFindings(t, cl.RDMADevice, first, reports[1:]),
		srv.RDMADevice: checkLossFindings(t, srv.RDMADevice, first, reports[1:]),
	}
	last := reports[len(reports)-1]
	for _, c := range []struct {
		dev, name string
		want      uint64
	}{{srv.RDMADevice, "out_of_seq_request", outOfSeq}, {srv.RDMADevice, "duplicate_request", dup},
		{cl.RDMADevice, "rcvd_seq_err", seqErr}, {cl.RDMADevice, "completer_retry_err", retry}} {
		v0, ok0 := first.value(c.dev, c.name)
		v1, ok1 := last.value(c.dev, c.name)
		if !ok0 || !ok1 || v1-v0 != c.want {
			t.Errorf("counters: %s %s rose by %d over its reports (%v %v), sysfs by %d", c.dev, c.name, v1-v0, ok0, ok1, c.want)
		}
		if got := rose[c.dev][c.name]; got != c.want {
			t.Errorf("counters: the loss findings name %s %s +%d in all, sysfs rose by %d", c.dev, c.name, got, c.want)
		}
	}
	t.Logf("loss findings: %s %v, %s %v", cl.RDMADevice, rose[cl.RDMADevice], srv.RDMADevice, rose[srv.RDMADevice])
	for _, h := range []lab.Host{cl, srv} {
		checkOneSampleLoss(t, h.RDMADevice)
	}
}

// lossListRE finds the counters a loss finding names: "(name +N, ...)"
// with two samples, "(name N, ...)" with one.
var lossListRE = regexp.MustCompile(`losing packets[^(]*\(([^)]*)\)`)

// lossParts returns the counters and amounts a loss finding's message
// names.
func lossParts(t *testing.T, msg string) map[string]uint64 {
	t.Helper()
	m := lossListRE.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("loss finding without its counters: %q", msg)
	}
	out := map[string]uint64{}
	for _, part := range strings.Split(m[1], ", ") {
		name, num, _ := strings.Cut(part, " ")
		v, err := strconv.ParseUint(strings.TrimPrefix(num, "+"), 10, 64)
		if err != nil {
			t.Fatalf("loss finding %q: part %q", msg, part)
		}
		out[name] = v
	}
	return out
}

// lossNames are rxe's counters whose meanings count RC loss
// (docs/counters.md, "Findings": loss_on_lossless / loss_without_pfc).
var lossNames = []string{"out_of_seq_request", "duplicate_request", "rcvd_seq_err", "completer_retry_err", "retry_exceeded_err"}

// lossFindings returns the loss findings of a report about dev's port 1.
func lossFindings(r countersReport, dev string) (found []counters.Finding) {
	for _, f := range r.Findings {
		if (f.Code == "loss_on_lossless" || f.Code == "loss_without_pfc") && strings.HasPrefix(f.Message, dev+" port 1:") {
			found = append(found, f)
		}
	}
	return found
}

// checkLossFindings checks the watch reports of an rxe port whose netdev
// (a veth: no DCB, so no priority of it is known to be lossless) carried
// RC traffic under loss, each against the one before it (the first
// against base): where a loss counter rose (lossNames), the report has
// exactly one loss finding for the port, the one docs/counters.md gives a
// port whose netdev has no DCB — loss_without_pfc, a warning, "unknown
// (no DCB)" — naming each counter that rose with its rise; where none
// rose, none; never loss_on_lossless. It returns the total rise of each
// loss counter.
func checkLossFindings(t *testing.T, dev string, base countersReport, reps []countersReport) map[string]uint64 {
	t.Helper()
	prev := base.port(t, dev).Counters
	total := map[string]uint64{}
	for i, r := range reps {
		cur := r.port(t, dev).Counters
		rose := map[string]uint64{}
		for _, n := range lossNames {
			if c, ok := cur[n]; ok && c.Value > prev[n].Value {
				rose[n] = c.Value - prev[n].Value
				total[n] += rose[n]
			}
		}
		found := lossFindings(r, dev)
		for _, f := range found {
			if f.Code != "loss_without_pfc" || f.Severity != "warning" || !strings.Contains(f.Message, "unknown (no DCB)") {
				t.Errorf("report %d: %s %s: %s; want a loss_without_pfc warning saying losslessness is unknown (no DCB)", i+1, f.Severity, f.Code, f.Message)
			}
			if got := lossParts(t, f.Message); fmt.Sprint(got) != fmt.Sprint(rose) {
				t.Errorf("report %d: the finding names %v; %s's counters rose by %v", i+1, got, dev, rose)
			}
		}
		if (len(rose) > 0) != (len(found) == 1) || len(found) > 1 {
			t.Errorf("report %d: %s's loss counters rose by %v; loss findings %+v", i+1, dev, rose, found)
		}
		prev = cur
	}
	return total
}

// checkOneSampleLoss reads dev's counters once (`counters --interval 0`):
// the loss finding is then information, naming each loss counter's value
// since the device was created, as sysfs reads it.
func checkOneSampleLoss(t *testing.T, dev string) {
	t.Helper()
	one := readCounters(t, "", dev)
	sys := sysfsCounters(t, dev, "hw_counters")
	want := map[string]uint64{}
	for _, name := range lossNames {
		if v := sys[name]; v > 0 {
			want[name] = v
		}
	}
	found := lossFindings(one, dev)
	if len(found) != 1 {
		t.Fatalf("%s, one sample: loss findings %+v; want one naming %v", dev, found, want)
	}
	f := found[0]
	if got := lossParts(t, f.Message); f.Severity != "info" || f.Code != "loss_without_pfc" || !strings.Contains(f.Message, "one sample") || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s, one sample: %s %s %q; want info loss_without_pfc naming %v", dev, f.Severity, f.Code, f.Message, want)
	}
}
