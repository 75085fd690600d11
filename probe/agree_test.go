package probe

import (
	"errors"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
)

// FuzzWalkersAgree: roce.Decoder and the ICRC functions (VerifyFrameICRC)
// walk a frame with the one roce.WalkFrame, and ParseFrame decodes it with
// roce.Decoder, so on every input they agree: a frame the walk refuses is refused by all three with
// the same verdict (not RoCE, or malformed); an ICRC Decoder checks is the
// one VerifyFrameICRC computes; and ParseFrame accepts exactly the whole
// RoCE v2 UD SEND_ONLY frames with a valid ICRC that Decoder decodes,
// with the same fields.
func FuzzWalkersAgree(f *testing.F) {
	for _, e := range rocegen.Edges() {
		f.Add(e.Data)
	}
	for _, fr := range rocegen.Sample() {
		f.Add(fr.Data)
	}
	dec := roce.NewDecoder()
	f.Fuzz(func(t *testing.T, frame []byte) {
		var w roce.Walk
		werr := roce.WalkFrame(frame, &w)
		var p roce.Packet
		derr := dec.Decode(frame, &p)
		computed, icrcOK, ierr := roce.VerifyFrameICRC(frame)
		pf, perr := ParseFrame(frame)
		if werr != nil {
			notRoCE := errors.Is(werr, roce.ErrNotRoCE)
			if derr == nil || ierr == nil || perr == nil {
				t.Fatalf("the walk refuses (%v), Decoder %v, VerifyFrameICRC %v, ParseFrame %v", werr, derr, ierr, perr)
			}
			if errors.Is(derr, roce.ErrNotRoCE) != notRoCE || errors.Is(ierr, roce.ErrNotRoCE) != notRoCE || !errors.Is(perr, ErrNotRoCEv2) || errors.Is(perr, roce.ErrNotRoCE) != notRoCE {
				t.Fatalf("verdicts differ: walk %v, Decoder %v, VerifyFrameICRC %v, ParseFrame %v", werr, derr, ierr, perr)
			}
			return
		}
		if derr == nil {
			if p.Walk != w {
				t.Fatalf("Decoder's walk %+v, WalkFrame's %+v", p.Walk, w)
			}
			if p.ICRCStatus == roce.ICRCUnchecked {
				if ierr == nil {
					t.Fatalf("Decoder leaves the ICRC unchecked (%q), VerifyFrameICRC checks it", p.UncheckedReason())
				}
			} else if ierr != nil || computed != p.Computed || icrcOK != (p.ICRCStatus == roce.ICRCValid) {
				t.Fatalf("ICRC: Decoder %s %#x, VerifyFrameICRC %v %#x %v", p.ICRCStatus, p.Computed, icrcOK, computed, ierr)
			}
		}
		probe := derr == nil && p.Version == 2 && p.ICRCStatus == roce.ICRCValid &&
			p.BTH.Opcode == roce.OpcodeUDSendOnly && p.BTH.TVer == 0
		if (perr == nil) != probe {
			t.Fatalf("ParseFrame %v; Decoder %v: v%d %s TVer %d ICRC %s", perr, derr, p.Version, p.BTH.Opcode, p.BTH.TVer, p.ICRCStatus)
		}
		if perr != nil {
			return
		}
		m := pf.Markings()
		if len(pf.Tags) != min(p.NumVLANs, roce.MaxVLANTags) || (len(pf.Tags) > 0 && pf.Tags[0] != p.VLANs[0]) ||
			pf.Src != p.Src || pf.Dst != p.Dst || m.ToS() != p.TOS || pf.TTL != p.TTL || pf.Sport != p.SrcPort ||
			pf.PKey != p.BTH.PKey || pf.DestQP != p.BTH.DestQP || pf.PSN != p.BTH.PSN ||
			pf.QKey != p.QKey || pf.SrcQP != p.SrcQP || len(pf.Payload) != p.PayloadLen {
			t.Fatalf("ParseFrame %+v, Decoder %+v", pf, p)
		}
	})
}

// The edge frames through the three walkers' users (the fuzz target's
// checks, on the table's frames: run as a plain test too).
func TestWalkersAgreeOnEdges(t *testing.T) {
	dec := roce.NewDecoder()
	for _, e := range rocegen.Edges() {
		_, err := ParseFrame(e.Data)
		var p roce.Packet
		derr := dec.Decode(e.Data, &p)
		probe := derr == nil && p.Version == 2 && p.ICRCStatus == roce.ICRCValid && p.BTH.Opcode == roce.OpcodeUDSendOnly
		if (err == nil) != probe {
			t.Errorf("%s: ParseFrame %v, Decoder %v (ICRC %s)", e.Name, err, derr, p.ICRCStatus)
		}
	}
}
