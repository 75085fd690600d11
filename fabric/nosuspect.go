package fabric

import "fmt"

// NoSuspectReason says, in one sentence, what a window of probe results
// holds when localisation named no suspect in it: no probe lost or
// remarked ("no suspect: …"), or pairs that lost or saw remarking that
// none of Localize's rules has the evidence to pin on anything ("no
// single suspect: …"). The table and the HTML report of `roce-probe
// fabric` both say it.
func NoSuspectReason(pairs []PairObservation) string {
	lost, remarked := 0, 0
	for _, o := range pairs {
		if o.Lost > 0 {
			lost++
		}
		if o.Remarked > 0 {
			remarked++
		}
	}
	if lost+remarked == 0 {
		return "no suspect: no probe was lost or remarked"
	}
	nPairs := func(n int) string {
		if n == 1 {
			return "1 pair"
		}
		return fmt.Sprintf("%d pairs", n)
	}
	return fmt.Sprintf("no single suspect: %s lost probes and %s saw them remarked, "+
		"but none of localisation's rules (docs/fabric.md, \"Localising a fault\") has the evidence to name a NIC, ToR, link, spine or remarking hop: "+
		"loss at random, or too little yet (too few pairs or ToRs, or no trace of the faulty source ports)", nPairs(lost), nPairs(remarked))
}
