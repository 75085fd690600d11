package probe_test

import (
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/host"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/vlan"
)

func TestMarkingsFromAH(t *testing.T) {
	u8 := func(v uint8) *uint8 { return &v }
	u16 := func(v uint16) *uint16 { return &v }
	fallback := probe.Markings{Tagged: true, VLAN: 100, PCP: 5, DSCP: 26, ECN: 0, TTL: 8, Sport: 0xc123}

	// Everything known (mlx5-like): the wire's values win, TTL included;
	// the PCP is the outermost tag's.
	w := ah.Wire{VLANChain: []vlan.ChainTag{{PCP: u8(3)}, {PCP: u8(6)}}, DSCP: u8(24), ECN: u8(2), TTL: 64, UDPSport: u16(0xd000)}
	m, notes := probe.MarkingsFromAH(&host.AHResult{Resolution: &ah.Resolution{Wire: w}}, fallback)
	want := probe.Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 24, ECN: 2, TTL: 64, Sport: 0xd000}
	if m != want || len(notes) != 0 {
		t.Errorf("known wire: %+v %v, want %+v and no notes", m, notes, want)
	}

	// Unknown driver: PCP and DSCP/ECN fall back, each with a note; a
	// QPN-derived source port keeps the fallback with a note.
	w = ah.Wire{VLANChain: []vlan.ChainTag{{}}, TTL: 64, UDPSportFrom: "rxe: from the QPN"}
	m, notes = probe.MarkingsFromAH(&host.AHResult{Resolution: &ah.Resolution{Wire: w}}, fallback)
	want = fallback
	want.TTL = 64
	if m != want || len(notes) != 3 || !strings.Contains(notes[0], "PCP 5") || !strings.Contains(notes[1], "DSCP 26") || !strings.Contains(notes[2], "from the QPN") {
		t.Errorf("unknown wire: %+v %q", m, notes)
	}
}
