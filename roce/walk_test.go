package roce_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
)

// Outcomes of walking a frame.
const (
	notRoCE   = "not RoCE"
	malformed = "malformed"
	decoded   = "decoded"
)

// edgeWant is the decision of roce.Walk's table for one rocegen.Edges frame.
type edgeWant struct {
	outcome   string
	icrc      roce.ICRCStatus // when decoded
	reason    string          // UncheckedReason, when decoded
	errText   string          // part of the error, when malformed
	tags      []roce.VLANTag  // the first tags, when decoded
	numVLANs  int
	trailing  int // bytes after the RoCE packet (padding) when decoded
	ipOptions bool
}

var edgeWants = map[string]edgeWant{
	"whole ipv4":                            {outcome: decoded, icrc: roce.ICRCValid},
	"whole ipv6":                            {outcome: decoded, icrc: roce.ICRCValid},
	"short ethernet":                        {outcome: notRoCE},
	"tpid 0x9100":                           {outcome: decoded, icrc: roce.ICRCValid, numVLANs: 2, tags: []roce.VLANTag{{TPID: 0x9100, PCP: 5, ID: 1000}, {TPID: 0x8100, PCP: 2, ID: 10}}},
	"tpid 0x9200":                           {outcome: notRoCE},
	"six tags":                              {outcome: decoded, icrc: roce.ICRCValid, numVLANs: 6, tags: []roce.VLANTag{{TPID: 0x8100, PCP: 0, ID: 100}, {TPID: 0x8100, PCP: 1, ID: 101}, {TPID: 0x8100, PCP: 2, ID: 102}, {TPID: 0x8100, PCP: 3, ID: 103}}},
	"priority tag":                          {outcome: decoded, icrc: roce.ICRCValid, numVLANs: 1, tags: []roce.VLANTag{{TPID: 0x8100, PCP: 5, ID: 0}}},
	"frame ends inside a tag":               {outcome: notRoCE},
	"ethertype arp":                         {outcome: notRoCE},
	"ipv4 version 5":                        {outcome: notRoCE},
	"ipv4 ihl 4":                            {outcome: notRoCE},
	"ipv4 protocol tcp":                     {outcome: notRoCE},
	"ipv4 more fragments":                   {outcome: notRoCE},
	"ipv4 fragment offset":                  {outcome: notRoCE},
	"ipv4 frame ends inside the udp header": {outcome: notRoCE},
	"udp port 4792":                         {outcome: notRoCE},
	"ipv4 bad checksum":                     {outcome: malformed, errText: "IPv4: header checksum"},
	"ipv4 total length 0":                   {outcome: malformed, errText: "IPv4: total length 0, want at least 28"},
	"ipv4 total length 27":                  {outcome: malformed, errText: "IPv4: total length 27, want at least 28"},
	"ipv4 options":                          {outcome: decoded, icrc: roce.ICRCUnchecked, reason: "IPv4 options", ipOptions: true},
	"ipv4 ethernet padding":                 {outcome: decoded, icrc: roce.ICRCValid, trailing: 6},
	"ipv4 truncated":                        {outcome: decoded, icrc: roce.ICRCUnchecked, reason: "truncated"},
	"udp length 0":                          {outcome: malformed, errText: "UDP: length 0"},
	"udp length 7":                          {outcome: malformed, errText: "UDP: length 7, want 8.."},
	"udp length beyond the ip packet":       {outcome: malformed, errText: "UDP: length 65 exceeds the 64 bytes the IP header leaves for it"},
	"udp length short of the ip packet":     {outcome: decoded, icrc: roce.ICRCValid, trailing: 4},
	"udp checksum wrong":                    {outcome: decoded, icrc: roce.ICRCValid},
	"ipv6 version 4":                        {outcome: notRoCE},
	"ipv6 payload length 0":                 {outcome: malformed, errText: "IPv6: payload length 0"},
	"ipv6 hop-by-hop":                       {outcome: decoded, icrc: roce.ICRCUnchecked, reason: "IPv6 extension headers", ipOptions: true},
	"ipv6 fragment header":                  {outcome: decoded, icrc: roce.ICRCUnchecked, reason: "IPv6 extension headers", ipOptions: true},
	"ipv6 fragment":                         {outcome: notRoCE},
	"ipv6 payload length short of the udp header": {outcome: malformed, errText: "IPv6: payload length 6, want at least 8"},
	"ipv6 udp length 0":                           {outcome: malformed, errText: "UDP: length 0"},
	"ipv6 truncated":                              {outcome: decoded, icrc: roce.ICRCUnchecked, reason: "truncated"},
	"roce v1":                                     {outcome: decoded, icrc: roce.ICRCValid},
	"roce v1 next header udp":                     {outcome: notRoCE},
	"roce v1 short grh":                           {outcome: malformed, errText: "GRH: 30 bytes, want at least 40"},
	"roce v1 padding":                             {outcome: decoded, icrc: roce.ICRCValid, trailing: 4},
}

func outcomeOf(err error) string {
	switch {
	case err == nil:
		return decoded
	case errors.Is(err, roce.ErrNotRoCE):
		return notRoCE
	}
	return malformed
}

// Every edge case of roce.Walk's table: WalkFrame, Decoder and
// VerifyFrameICRC decide it as the table says, and alike.
func TestWalkEdgeCases(t *testing.T) {
	dec := roce.NewDecoder()
	seen := map[string]bool{}
	for _, e := range rocegen.Edges() {
		seen[e.Name] = true
		want, ok := edgeWants[e.Name]
		if !ok {
			t.Errorf("%s: no expected decision", e.Name)
			continue
		}
		var w roce.Walk
		werr := roce.WalkFrame(e.Data, &w)
		var p roce.Packet
		derr := dec.Decode(e.Data, &p)
		_, icrcOK, ierr := roce.VerifyFrameICRC(e.Data)
		if got := outcomeOf(werr); got != want.outcome {
			t.Errorf("%s: WalkFrame: %s (%v), want %s", e.Name, got, werr, want.outcome)
			continue
		}
		if got := outcomeOf(derr); got != want.outcome {
			t.Errorf("%s: Decoder: %s (%v), want %s", e.Name, got, derr, want.outcome)
			continue
		}
		if want.outcome != decoded {
			if want.errText != "" && (derr == nil || !strings.Contains(derr.Error(), want.errText)) {
				t.Errorf("%s: error %q, want it to say %q", e.Name, derr, want.errText)
			}
			if ierr == nil || outcomeOf(ierr) != want.outcome {
				t.Errorf("%s: VerifyFrameICRC: %v, want %s", e.Name, ierr, want.outcome)
			}
			continue
		}
		if p.Walk != w {
			t.Errorf("%s: Decoder's walk %+v, WalkFrame's %+v", e.Name, p.Walk, w)
		}
		if p.ICRCStatus != want.icrc || p.UncheckedReason() != want.reason || p.IPOptions != want.ipOptions {
			t.Errorf("%s: ICRC %s (%q, options %v), want %s (%q, %v)", e.Name, p.ICRCStatus, p.UncheckedReason(), p.IPOptions, want.icrc, want.reason, want.ipOptions)
		}
		if p.NumVLANs != want.numVLANs {
			t.Errorf("%s: %d tags, want %d", e.Name, p.NumVLANs, want.numVLANs)
		}
		for i, tg := range want.tags {
			if p.VLANs[i] != tg {
				t.Errorf("%s: tag %d %+v, want %+v", e.Name, i, p.VLANs[i], tg)
			}
		}
		if !p.Truncated && len(e.Data)-p.End != want.trailing {
			t.Errorf("%s: %d bytes after the RoCE packet, want %d", e.Name, len(e.Data)-p.End, want.trailing)
		}
		// The ICRC functions check what Decoder checks and refuse the rest.
		if want.icrc == roce.ICRCUnchecked {
			if ierr == nil {
				t.Errorf("%s: VerifyFrameICRC checked an ICRC Decoder leaves unchecked", e.Name)
			}
		} else if ierr != nil || icrcOK != (want.icrc == roce.ICRCValid) {
			t.Errorf("%s: VerifyFrameICRC ok=%v err=%v, Decoder %s", e.Name, icrcOK, ierr, p.ICRCStatus)
		}
	}
	for name := range edgeWants {
		if !seen[name] {
			t.Errorf("%s: no such rocegen edge frame", name)
		}
	}
}

// Walking allocates nothing, whether the frame is RoCE or not.
func TestWalkAllocatesNothing(t *testing.T) {
	edges := rocegen.Edges()
	var w roce.Walk
	for _, e := range edges {
		werr := roce.WalkFrame(e.Data, &w)
		if outcomeOf(werr) == malformed {
			continue // a malformed frame's error names its values
		}
		if n := testing.AllocsPerRun(100, func() { _ = roce.WalkFrame(e.Data, &w) }); n != 0 {
			t.Errorf("%s: %v allocations", e.Name, n)
		}
	}
}

// Where the walk's decisions follow tshark, tshark 4.0 decodes a BTH in
// exactly the frames Decoder decodes; the only frames where they differ
// are the rows of the table that follow the Linux kernel instead, where
// tshark decodes what Linux drops.
func TestWalkTshark(t *testing.T) {
	kernelRows := map[string]bool{
		"ipv4 bad checksum":               true, // ip_rcv_core: csum_error
		"ipv4 total length 0":             true, // ip_rcv_core: inhdr_error (tshark: TSO)
		"udp length beyond the ip packet": true, // __udp4_lib_rcv: short_packet
		"ipv6 udp length 0":               true, // rxe_udp_encap_recv: paylen from uh->len
	}
	edges := rocegen.Edges()
	var frames [][]byte
	for _, e := range edges {
		frames = append(frames, e.Data)
	}
	rows := roce.TsharkRows(t, frames, nil, []string{"frame.number", "infiniband.bth.opcode", "vlan.id"})
	dec := roce.NewDecoder()
	for i, e := range edges {
		f := rows[i]
		tsharkBTH := f["infiniband.bth.opcode"] != ""
		var p roce.Packet
		ours := dec.Decode(e.Data, &p) == nil
		if kernelRows[e.Name] {
			if !tsharkBTH || ours {
				t.Errorf("%s: tshark decodes a BTH %v, Decoder %v: want tshark true, Decoder false (the kernel's rule)", e.Name, tsharkBTH, ours)
			}
			continue
		}
		if tsharkBTH != ours {
			t.Errorf("%s: tshark decodes a BTH %v, Decoder %v", e.Name, tsharkBTH, ours)
		}
		if ours && p.NumVLANs > 0 {
			var ids []string
			for j := 0; j < p.NumVLANs && j < roce.MaxVLANTags; j++ {
				ids = append(ids, strconv.Itoa(int(p.VLANs[j].ID)))
			}
			if got := f["vlan.id"]; !strings.HasPrefix(got, strings.Join(ids, ",")) {
				t.Errorf("%s: tshark's VLAN IDs %q, ours %v", e.Name, got, ids)
			}
		}
	}
}
