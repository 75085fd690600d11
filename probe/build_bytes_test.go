package probe

import (
	"encoding/hex"
	"testing"

	"github.com/roce-probe/roce-probe/roce"
)

// Frame.Build builds with roce.FrameSpec the bytes its own layer assembly
// built before (untagged IPv4, 802.1Q IPv6, 802.1ad+802.1Q IPv4 with DEI):
// the frames below were written by that code.
func TestBuildBytes(t *testing.T) {
	want := []string{
		"0200000000020200000000010800456a003c000040004011b643c0000201c0000202c12312b7002800006410ffff007e5701000001020000cafe007e570201020304050607007ca43a0c",
		"0200000000020200000000018100606486dd66a0000000281140fd000000000000000000000000000001fd000000000000000000000000000002c12312b7002800006410ffff007e5701000001020000cafe007e57020102030405060700b50575b0",
		"02000000000202000000000188a8b3e88100400a0800456a003c000040004011b643c0000201c0000202c12312b7002800006410ffff007e5701000001020000cafe007e570201020304050607007ca43a0c",
	}
	for i, c := range []struct {
		tags []roce.VLANTag
		v6   bool
	}{{nil, false}, {[]roce.VLANTag{{TPID: 0x8100, ID: 100, PCP: 3}}, true}, {[]roce.VLANTag{{TPID: 0x88a8, ID: 1000, PCP: 5, DEI: true}, {TPID: 0x8100, ID: 10, PCP: 2}}, false}} {
		fr := testFrame(c.tags, c.v6)
		b, err := fr.Build()
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != want[i] {
			t.Errorf("frame %d:\n got  %s\n want %s", i, got, want[i])
		}
	}
}
