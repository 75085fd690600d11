package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/internal/testenv"
)

// lossyRC is an RC connection with RDMA WRITEs, SENDs and READs whose
// requests lose every 6th PSN once and whose responses lose some ACKs and
// READ responses (rocegen.RCConn: go-back-N, as rxe).
func lossyRC() rocegen.RCConn {
	ops := []rocegen.RCOp{{Kind: "write", Len: 3000}, {Kind: "send", Len: 100}, {Kind: "read", Len: 4096},
		{Kind: "write", Len: 1024}, {Kind: "read", Len: 10}, {Kind: "send", Len: 2500}, {Kind: "write", Len: 8192}}
	return rocegen.RCConn{Ops: append(ops, ops...), PMTU: 1024,
		Drop:     func(psn uint32, n int) bool { return n == 0 && psn%6 == 3 },
		DropResp: func(psn uint32, n int) bool { return n == 0 && psn%7 == 2 }}
}

// writeCapture writes frames to a pcap file in a test directory.
func writeCapture(t *testing.T, name string, frames []rocegen.Frame) string {
	t.Helper()
	var b bytes.Buffer
	if err := rocegen.WritePcap(&b, frames); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// decode -o json shows the BTH, RETH and AETH of RC frames (WRITE, READ
// request and responses, ACKs, NAKs) as tshark reads them: VA, R_Key, DMA
// length, the syndrome, its type and credit count or NAK code, the MSN.
// The numbers are read from the JSON text exactly (json.Number): a VA
// does not fit a float64.
func TestDecodeRCHeadersMatchTshark(t *testing.T) {
	tshark := testenv.Tool(t, "tshark")
	path := writeCapture(t, "rc.pcap", lossyRC().Simulate().After)
	pairs, seen := compareWithTshark(t, tshark, path, []string{"-d", "udp.port==4791,infiniband"}, append(bthCols, rethAETHCols...)...)
	for _, p := range pairs {
		// the syndrome's type, as tshark's 2-bit "opcode" would name it
		if s, ok := p.decoded["syndrome"].(json.Number); ok {
			n, _ := s.Int64()
			want := []string{"ACK", "RNR_NAK", "RESERVED", "NAK"}[n>>5&3]
			if p.decoded["syndrome_type"] != want {
				t.Errorf("frame %d: syndrome %d, type %v, want %s", p.frame, n, p.decoded["syndrome_type"], want)
			}
		}
	}
	for _, k := range []string{"va", "rkey", "dma_len", "syndrome", "msn", "credits", "nak_code"} {
		if seen[k] == 0 {
			t.Errorf("no frame with %s compared: %v", k, seen)
		}
	}
}

// decode --summary -o json on a capture of a lossy RC connection says
// what the simulation did: at the responder (what it received), every
// PSN lost on the way came late and was sent again in a retransmission
// round; at the requester, every PSN sent again, one rewind per round,
// and the NAKs that came back.
func TestDecodeSummaryLoss(t *testing.T) {
	sim := lossyRC().Simulate()
	tr := sim.Truth
	type flow struct {
		DestQP uint32   `json:"dest_qp"`
		Loss   lossJSON `json:"loss"`
	}
	summary := func(frames []rocegen.Frame) (req, resp flow) {
		out, stderr, code := runCLI(t, "", "decode", "--summary", "-o", "json", writeCapture(t, "rc.pcap", frames))
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var s struct{ Flows []flow }
		if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.Flows) != 2 {
			t.Fatalf("%v: %s", err, out)
		}
		for _, f := range s.Flows {
			if f.DestQP == sim.QPB {
				req = f
			} else {
				resp = f
			}
		}
		return req, resp
	}
	req, resp := summary(sim.After)
	l := req.Loss
	if l.LostResent != uint64(tr.RecvResent) || l.Retransmitted != uint64(tr.RecvAgain) || l.Missing != 0 || l.OutOfOrder != 0 ||
		l.Verdict == nil || *l.Verdict != "loss" || !strings.Contains(l.Reason, "lost before the capture point and sent again") ||
		l.PathMTU == nil || *l.PathMTU != 1024 {
		t.Errorf("at the responder: %+v; want %d lost and sent again, %d received again, verdict loss, path MTU 1024 (truth %+v)",
			l, tr.RecvResent, tr.RecvAgain, tr)
	}
	if n := resp.Loss.NAKs.PSNSequenceError; n != uint64(tr.NAKs) || tr.NAKs == 0 {
		t.Errorf("the responder sent %d sequence-error NAKs, decode counts %d", tr.NAKs, n)
	}
	req, resp = summary(sim.Before)
	l = req.Loss
	if l.Retransmitted != uint64(tr.Resent) || l.Rewinds != uint64(tr.Rounds) || l.LostResent != 0 || l.Missing != 0 ||
		l.Verdict == nil || *l.Verdict != "retransmitted" {
		t.Errorf("at the requester: %+v; want %d sent again in %d rounds (truth %+v)", l, tr.Resent, tr.Rounds, tr)
	}
	if n := resp.Loss.NAKs.PSNSequenceError; n != uint64(tr.NAKsAtA) {
		t.Errorf("%d sequence-error NAKs reached the requester, decode counts %d", tr.NAKsAtA, n)
	}
	// the table: the counts and the verdict's reason under it
	out, _, code := runCLI(t, "", "decode", "--summary", writeCapture(t, "rc.pcap", sim.After))
	if code != exitOK || !strings.Contains(out, "RETX") || !strings.Contains(out, ": loss: ") {
		t.Errorf("summary table (exit %d):\n%s", code, out)
	}
}
