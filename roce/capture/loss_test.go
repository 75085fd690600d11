package capture_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// rcCases are simulated RC connections (rocegen.RCConn: go-back-N, what rxe
// does) with losses and reordering on the requests' link.
func rcCases() []struct {
	name string
	conn rocegen.RCConn
} {
	writes := func(n, size int) []rocegen.RCOp {
		var ops []rocegen.RCOp
		for i := 0; i < n; i++ {
			ops = append(ops, rocegen.RCOp{Kind: "write", Len: size})
		}
		return ops
	}
	mixed := []rocegen.RCOp{{Kind: "write", Len: 3000}, {Kind: "send", Len: 100}, {Kind: "read", Len: 4096},
		{Kind: "write", Len: 1024}, {Kind: "read", Len: 10}, {Kind: "send", Len: 2500}, {Kind: "read", Len: 0},
		{Kind: "write", Len: 8192}, {Kind: "read", Len: 3000}, {Kind: "send", Len: 1}}
	mixed = append(mixed, mixed...)
	every := func(k int) func(uint32, int) bool {
		return func(psn uint32, n int) bool { return n == 0 && psn%uint32(k) == 3 }
	}
	return []struct {
		name string
		conn rocegen.RCConn
	}{
		{"no loss", rocegen.RCConn{Ops: writes(20, 4096), PMTU: 1024}},
		{"writes, every 7th PSN lost once", rocegen.RCConn{Ops: writes(30, 4096), PMTU: 1024, Drop: every(7)}},
		{"writes, lost twice", rocegen.RCConn{Ops: writes(30, 2048), PMTU: 1024, Drop: func(psn uint32, n int) bool { return psn%11 == 5 && n < 2 }}},
		{"retransmissions lost again", rocegen.RCConn{Ops: writes(30, 4096), PMTU: 1024,
			Drop: func(psn uint32, n int) bool { return n == 0 && psn%7 == 3 || n == 1 && psn%7 == 4 }}},
		{"tail loss: timeouts", rocegen.RCConn{Ops: writes(3, 1024), PMTU: 1024, Window: 3, Drop: func(psn uint32, n int) bool { return psn == 2 && n < 3 }}},
		{"PSNs wrap", rocegen.RCConn{Ops: writes(20, 4096), PMTU: 1024, FirstPSN: 0xFFFFF0, Drop: every(5)}},
		{"mixed, with READs", rocegen.RCConn{Ops: mixed, PMTU: 1024, Drop: every(6)}},
		{"mixed, READs lost", rocegen.RCConn{Ops: mixed, PMTU: 1024, Window: 4, Drop: func(psn uint32, n int) bool { return n == 0 && psn%4 == 2 }}},
		{"reordered", rocegen.RCConn{Ops: writes(20, 1024), PMTU: 1024, Reorder: func(psn uint32) bool { return psn%6 == 1 }}},
		{"reordered and lost", rocegen.RCConn{Ops: writes(40, 2048), PMTU: 512, Reorder: func(psn uint32) bool { return psn%9 == 4 },
			Drop: every(13)}},
		{"responses lost: timeouts, duplicates, READs answered again", rocegen.RCConn{Ops: mixed, PMTU: 1024,
			DropResp: func(psn uint32, n int) bool { return n == 0 && psn%3 == 0 }, Drop: every(9)}},
		{"UC: lost for good", rocegen.RCConn{Ops: writes(20, 3000), PMTU: 1024, UC: true, Drop: every(4), Reorder: func(psn uint32) bool { return psn == 30 }}},
		{"READs only, one packet each", rocegen.RCConn{Ops: []rocegen.RCOp{{Kind: "read", Len: 64}, {Kind: "read", Len: 64}, {Kind: "read", Len: 64},
			{Kind: "read", Len: 64}, {Kind: "read", Len: 64}, {Kind: "read", Len: 64}},
			PMTU: 1024, Drop: every(4)}},
	}
}

// summarize decodes frames into one Summary and returns its flows by
// direction.
func summarizeRC(t *testing.T, frames []rocegen.Frame, qpA, qpB uint32, uc bool) (req, resp *capture.FlowSummary) {
	t.Helper()
	dec, sum := roce.NewDecoder(), capture.NewSummary()
	var p roce.Packet
	for i, f := range frames {
		if err := dec.Decode(f.Data, &p); err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		sum.Add(&p, len(f.Data))
	}
	for _, f := range sum.Flows() {
		f := f
		switch f.DestQP {
		case qpB:
			req = &f
		case qpA:
			resp = &f
		default:
			t.Fatalf("a flow to QP %#x", f.DestQP)
		}
	}
	if resp == nil && uc { // UC: no responses
		resp = &capture.FlowSummary{Loss: capture.Loss{Verdict: capture.VerdictNone, Reason: "no responses"}}
	}
	if req == nil || resp == nil {
		t.Fatalf("flows: requests %v, responses %v", req != nil, resp != nil)
	}
	return req, resp
}

// The loss analysis of simulated RC connections: the capture before the
// lossy link (everything the requester sent) shows each retransmission
// round as a rewind and every PSN sent again, the responses carry the
// NAKs; the capture after it (what the responder received) shows the PSNs
// it never got, the ones it got again or late. The known answers are the
// simulation's own counts of what it did.
func TestLossAnalysisRC(t *testing.T) {
	for _, tc := range rcCases() {
		t.Run(tc.name, func(t *testing.T) {
			sim := tc.conn.Simulate()
			tr := sim.Truth
			t.Logf("truth %+v", tr)
			// at A: everything A sent, what came back
			req, resp := summarizeRC(t, sim.Before, sim.QPA, sim.QPB, tc.conn.UC)
			l := req.Loss
			if l.Retransmitted != uint64(tr.Resent) || l.Rewinds != uint64(tr.Rounds) || l.Missing != 0 || l.OutOfOrder != 0 ||
				l.LostResent != 0 || l.Gaps != 0 || l.Sequenced != uint64(tr.Sent) {
				t.Errorf("at A: requests %+v; want %d sent, %d sent again in %d rounds, none missing or late", l, tr.Sent, tr.Resent, tr.Rounds)
			}
			wantV := capture.VerdictNone
			if tr.Resent > 0 {
				wantV = capture.VerdictRetransmitted
			}
			if l.Verdict != wantV {
				t.Errorf("at A: requests verdict %q (%s), want %q", l.Verdict, l.Reason, wantV)
			}
			r := resp.Loss
			if r.NAKs.PSNSequenceError != uint64(tr.NAKsAtA) || r.NAKs.Total() != uint64(tr.NAKsAtA) || r.Retransmitted != uint64(tr.RespAgainAtA) ||
				(tr.RespDropped == 0 && (r.Missing != 0 || r.Sequenced != uint64(tr.ReadResponses))) {
				t.Errorf("at A: responses %+v; want %d sequence-error NAKs, %d READ responses of which %d again", r, tr.NAKsAtA, tr.ReadResponses, tr.RespAgainAtA)
			}
			if tr.RespDropped == 0 {
				wantV = capture.VerdictNone
				switch {
				case tr.NAKs > 0:
					wantV = capture.VerdictLoss
				case tr.RespResent > 0:
					wantV = capture.VerdictRetransmitted
				}
				if r.Verdict != wantV {
					t.Errorf("at A: responses verdict %q (%s), want %q", r.Verdict, r.Reason, wantV)
				}
			}
			if strings.TrimSpace(l.Reason) == "" || strings.TrimSpace(r.Reason) == "" {
				t.Error("a verdict without a reason")
			}
			// at B: what B received, everything B answered
			req, resp = summarizeRC(t, sim.After, sim.QPA, sim.QPB, tc.conn.UC)
			l = req.Loss
			if l.Retransmitted != uint64(tr.RecvAgain) || l.LostResent != uint64(tr.RecvResent) || l.OutOfOrder != uint64(tr.RecvLate) ||
				l.Rewinds != uint64(tr.RecvRewinds) || l.Missing != uint64(tr.RecvMissing) || l.Gaps != uint64(tr.RecvGaps) {
				t.Errorf("at B: requests %+v; want %d received again, %d lost and sent again, %d reordered, %d rewinds, %d PSNs missing, %d gaps",
					l, tr.RecvAgain, tr.RecvResent, tr.RecvLate, tr.RecvRewinds, tr.RecvMissing, tr.RecvGaps)
			}
			// B NAKs at most once per gap
			if tr.NAKs > int(l.Gaps) {
				t.Errorf("at B: %d NAKs, %d gaps", tr.NAKs, l.Gaps)
			}
			wantV = capture.VerdictNone
			switch {
			case tr.RecvMissing > 0 || tr.RecvResent > 0:
				wantV = capture.VerdictLoss
			case tr.RecvAgain > 0:
				wantV = capture.VerdictRetransmitted
			case tr.RecvLate > 0:
				wantV = capture.VerdictReordered
			}
			if l.Verdict != wantV {
				t.Errorf("at B: requests verdict %q (%s), want %q", l.Verdict, l.Reason, wantV)
			}
			r = resp.Loss
			if r.NAKs.PSNSequenceError != uint64(tr.NAKs) || r.Retransmitted != uint64(tr.RespResent) || r.Missing != 0 ||
				r.Sequenced != uint64(tr.ReadResponses) {
				t.Errorf("at B: responses %+v; want %d NAKs, %d READ responses of which %d sent again", r, tr.NAKs, tr.ReadResponses, tr.RespResent)
			}
		})
	}
}

// The cases lose what they say they lose: a test of the test.
func TestRCSimulationLoses(t *testing.T) {
	for _, tc := range rcCases() {
		tr := tc.conn.Simulate().Truth
		lossy := tc.conn.Drop != nil && !tc.conn.UC
		if lossy != (tr.Dropped > 0 && tr.Resent > 0 && tr.Rounds > 0) || tc.conn.UC && tr.RecvMissing == 0 || lossy && !strings.HasPrefix(tc.name, "tail loss") && tr.RecvResent == 0 || (tc.conn.Reorder != nil) != (tr.Reordered > 0) {
			t.Errorf("%s: %+v", tc.name, tr)
		}
		if strings.HasPrefix(tc.name, "responses lost") && (tr.RespResent == 0 || tr.RespDropped == 0 || tr.Duplicates == 0) {
			t.Errorf("%s: no READ response sent again: %+v", tc.name, tr)
		}
	}
}

// ExampleLoss shows the verdict of a flow.
func ExampleLoss() {
	sim := rocegen.RCConn{Ops: []rocegen.RCOp{{Kind: "write", Len: 4096}, {Kind: "write", Len: 4096}}, PMTU: 1024,
		Drop: func(psn uint32, n int) bool { return psn == 2 && n == 0 }}.Simulate()
	dec, sum := roce.NewDecoder(), capture.NewSummary()
	var p roce.Packet
	for _, f := range sim.After { // what the responder received
		if dec.Decode(f.Data, &p) == nil {
			sum.Add(&p, len(f.Data))
		}
	}
	for _, f := range sum.Flows() {
		fmt.Printf("%s > %s qp %#x: %s: %s\n", f.Src, f.Dst, f.DestQP, f.Loss.Verdict, f.Loss.Reason)
	}
	// Output:
	// 192.168.100.1 > 192.168.100.2 qp 0x22b: loss: 1 packet lost before the capture point and sent again (first seen late, in a round that resent PSNs seen before); 5 packets sent again (PSN seen before) in 1 rewind
	// 192.168.100.2 > 192.168.100.1 qp 0x11a: loss: 1 PSN sequence error NAK (the responder saw a gap: requests to it were lost)
}
