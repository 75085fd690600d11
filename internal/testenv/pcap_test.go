package testenv

import (
	"bytes"
	"testing"
)

// The fixture is lldpd's capture of a Cisco SG 200 (lldpd's test data): an
// LLDP frame, to the nearest-bridge group address 01:80:c2:00:00:0e with
// EtherType 0x88cc (IEEE 802.1AB).
func TestFirstFrame(t *testing.T) {
	b := FirstFrame(t, "../../topology/testdata/cisco-sg200.pcap")
	if len(b) < 14 || !bytes.Equal(b[:6], []byte{0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e}) || b[12] != 0x88 || b[13] != 0xcc {
		t.Errorf("first frame starts % x; want destination 01:80:c2:00:00:0e and EtherType 88 cc", b[:min(len(b), 14)])
	}
}
