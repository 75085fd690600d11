package testenv

import (
	"os"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// FirstFrame returns the first frame of the pcap file at path (a test's
// fixture or a capture it wrote); any error fails the test.
func FirstFrame(t testing.TB, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, _, err := r.ReadPacketData()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}
