package fabric

import (
	"fmt"
	"strings"
	"testing"
)

// A remarking hop: the ports of leaf0's pairs with three other ToRs
// arrive remarked through spine1, and their traces saw the DSCP change
// after spine1's answer (10.31.11.2); one port's trace saw it elsewhere
// (a second opinion, outvoted). The remark suspect on leaf0–spine1 names
// the hop most traces saw.
func TestLocalizeRemarkHop(t *testing.T) {
	const hop = "dscp 26→0 between 10.31.11.2 and 10.31.21.1"
	var in LocalizeInput
	for r := 1; r <= 3; r++ {
		p := PairObservation{Src: "nic0", Dst: fmt.Sprintf("nic%d", r), SrcToR: "leaf0", DstToR: fmt.Sprintf("leaf%d", r), Sent: 40}
		for s := 0; s < 4; s++ {
			remark := hop
			if r == 3 && s == 3 {
				remark = "dscp 26→0 between 10.31.11.2 and 10.31.41.1"
			}
			p.Sports = append(p.Sports, SportObservation{Sport: uint16(49152 + s), Remarked: 2, Spine: "spine1", Remark: remark})
			p.Remarked += 2
		}
		in.Pairs = append(in.Pairs, p)
	}
	sus := Localize(in)
	if len(sus) != 1 || sus[0].Kind != SuspectRemark || sus[0].ToR != "leaf0" || sus[0].Spine != "spine1" {
		t.Fatalf("suspects %+v, want a remark on leaf0–spine1", sus)
	}
	if want := "the traces saw " + hop + " (11 of its ports)"; !strings.Contains(sus[0].Evidence, want) {
		t.Errorf("evidence %q, want it to say %q", sus[0].Evidence, want)
	}
}

// leaf0's link to spine1 remarks: one pair's trace saw the DSCP change
// between leaf0 and spine1 (a traced remark), the traces of two other
// pairs' remarked ports (to leaf2 and leaf3) crossed spine1 but did not
// show the hop (a silent hop at the change), so they vote for the same
// link. One suspect is named, explaining the three pairs, not the same
// link twice.
func TestLocalizeTracedAndVotedRemarkOnce(t *testing.T) {
	traced := PairObservation{Src: "nic0", Dst: "nic1", SrcToR: "leaf0", DstToR: "leaf1", Sent: 40, Remarked: 2,
		Sports: []SportObservation{{Sport: 49152, Remarked: 2, Spine: "spine1", Remark: "dscp 26→0 between 10.0.0.1 and 10.1.0.2", RemarkBeforeTTL: 1, RemarkAtTTL: 2}}}
	in := LocalizeInput{Pairs: []PairObservation{traced}}
	for r := 2; r <= 3; r++ {
		p := PairObservation{Src: "nic0", Dst: fmt.Sprintf("nic%d", r), SrcToR: "leaf0", DstToR: fmt.Sprintf("leaf%d", r), Sent: 40, Remarked: 4}
		for s := 0; s < 2; s++ {
			p.Sports = append(p.Sports, SportObservation{Sport: uint16(49152 + s), Remarked: 2, Spine: "spine1"})
		}
		in.Pairs = append(in.Pairs, p)
	}
	sus := Localize(in)
	if len(sus) != 1 || sus[0].Kind != SuspectRemark || sus[0].ToR != "leaf0" || sus[0].Spine != "spine1" || sus[0].NIC != "" || sus[0].Pairs != 3 {
		t.Fatalf("suspects %+v, want one remark on leaf0–spine1 explaining 3 pairs", sus)
	}
}
