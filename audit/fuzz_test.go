package audit

import (
	"net/netip"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/roce"
)

// FuzzWireAdd: any bytes as a captured frame — never a panic, and the
// sample stays within its bounds (frames, entries) and its counts add up.
func FuzzWireAdd(f *testing.F) {
	f.Add(frame(&testing.T{}, "10.0.100.1", "10.0.100.2", 100, 3, 106, roce.OpcodeRCSendOnly, 0x12, 0))
	f.Add(frame(&testing.T{}, "10.0.100.1", "10.0.100.2", 0, 0, 0, roce.OpcodeUDSendOnly, 0x12, 0x21))
	f.Add([]byte{})
	local := []netip.Addr{netip.MustParseAddr("10.0.100.1")}
	f.Fuzz(func(t *testing.T, b []byte) {
		w := NewWire(local, Limits{Frames: 4, Entries: 2})
		for i := 0; i < 6; i++ {
			w.Add("eth0", b, time.Unix(int64(i), 0))
		}
		if w.Frames > 4 || len(w.entries) > 2 || w.Frames+w.Foreign+w.Undecodable > 6 {
			t.Fatalf("frames %d, entries %d, foreign %d, undecodable %d: over the bounds", w.Frames, len(w.entries), w.Foreign, w.Undecodable)
		}
		var kept uint64
		for _, e := range w.entries {
			kept += e.packets
		}
		if kept+uint64(w.LeftOut) != uint64(w.Frames) {
			t.Fatalf("%d kept + %d left out != %d frames", kept, w.LeftOut, w.Frames)
		}
	})
}

// BenchmarkWireAdd: one frame taken into a sample (decode and count).
func BenchmarkWireAdd(b *testing.B) {
	fr := frame(&testing.T{}, "10.0.100.1", "10.0.100.2", 100, 3, 106, roce.OpcodeRCRDMAWriteOnly, 0x12, 0)
	w := NewWire([]netip.Addr{netip.MustParseAddr("10.0.100.1")}, Limits{Frames: 1 << 62})
	at := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(fr)))
	for i := 0; i < b.N; i++ {
		w.Add("eth0", fr, at)
	}
}
