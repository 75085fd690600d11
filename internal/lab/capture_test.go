//go:build linux

package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

func TestWritePcapngRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 21, 22, 0, 0, 123456789, time.UTC)
	frames := []Frame{
		{Data: []byte{0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x81, 0x00, 0x60, 0x64, 0x08, 0x00, 0x45}, Info: gopacket.CaptureInfo{Timestamp: ts, Length: 15}},
		{Data: bytes.Repeat([]byte{0xab}, 1514), Info: gopacket.CaptureInfo{Timestamp: ts.Add(time.Millisecond)}},
	}
	path := filepath.Join(t.TempDir(), "x.pcapng")
	if err := WritePcapng(path, "veth1", frames); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		t.Errorf("link type %v, want Ethernet", r.LinkType())
	}
	for i, want := range frames {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.Equal(data, want.Data) || !ci.Timestamp.Equal(want.Info.Timestamp) || ci.Length != len(want.Data) {
			t.Errorf("frame %d: %d bytes at %v (length %d), want %d bytes at %v", i, len(data), ci.Timestamp, ci.Length, len(want.Data), want.Info.Timestamp)
		}
	}
	if _, _, err := r.ReadPacketData(); err == nil {
		t.Error("more frames than written")
	}
	// A failed write leaves no file behind.
	bad := filepath.Join(t.TempDir(), "missing-dir", "y.pcapng")
	if err := WritePcapng(bad, "veth1", frames); err == nil {
		t.Error("WritePcapng into a missing directory: no error")
	}
}
