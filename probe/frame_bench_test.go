package probe

import "testing"

// BenchmarkParseFrame is the listener's first step for every frame it
// takes: a tagged probe parsed and its ICRC checked.
func BenchmarkParseFrame(b *testing.B) {
	m := Markings{Tagged: true, VLAN: 100, PCP: 3, DSCP: 26, ECN: ECNECT0, TTL: 64, Sport: 0xc000}
	frame := probeFrom(b, senderIP, senderMAC, m, m, 0)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseFrame(frame); err != nil {
			b.Fatal(err)
		}
	}
}
