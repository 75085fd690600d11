package capture_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"reflect"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/roce/capture"
)

// cook writes an Ethernet frame as libpcap's Linux cooked capture writes
// the same frame (https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html,
// LINKTYPE_LINUX_SLL2.html): the cooked header, with the source MAC as the
// link-layer address (of addrLen bytes) and the EtherType as protocol,
// then the frame without its Ethernet header.
func cook(frame []byte, lt layers.LinkType, addrLen int) []byte {
	var addr [8]byte
	copy(addr[:addrLen], frame[6:12])
	var h []byte
	switch lt {
	case layers.LinkTypeLinuxSLL:
		h = binary.BigEndian.AppendUint16(nil, 4) // sent by us
		h = binary.BigEndian.AppendUint16(h, 1)   // ARPHRD_ETHER
		h = binary.BigEndian.AppendUint16(h, uint16(addrLen))
		h = append(h, addr[:]...)
		h = append(h, frame[12:14]...)
	case layers.LinkTypeLinuxSLL2:
		h = append(h, frame[12:14]...)
		h = append(h, 0, 0)                     // reserved
		h = binary.BigEndian.AppendUint32(h, 7) // ifindex
		h = binary.BigEndian.AppendUint16(h, 1) // ARPHRD_ETHER
		h = append(h, 0, byte(addrLen))         // to us; address length
		h = append(h, addr[:]...)
	}
	return append(h, frame[14:]...)
}

// writeCooked writes frames, cooked, as a pcap (or pcapng) capture of
// link type lt.
func writeCooked(t testing.TB, frames []rocegen.Frame, lt layers.LinkType, addrLen int, ng bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		WritePacket(gopacket.CaptureInfo, []byte) error
	}
	if ng {
		nw, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{Name: "any", LinkType: lt, TimestampResolution: 9}, pcapgo.DefaultNgWriterOptions)
		if err != nil {
			t.Fatal(err)
		}
		defer nw.Flush()
		w = nw
	} else {
		pw := pcapgo.NewWriterNanos(&buf)
		if err := pw.WriteFileHeader(65536, lt); err != nil {
			t.Fatal(err)
		}
		w = pw
	}
	for _, f := range frames {
		c := cook(f.Data, lt, addrLen)
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: f.Time, CaptureLength: len(c), Length: len(c)}, c); err != nil {
			t.Fatal(err)
		}
	}
	if nw, ok := w.(*pcapgo.NgWriter); ok {
		nw.Flush()
	}
	return buf.Bytes()
}

// A Linux cooked capture (SLL and SLL2, pcap and pcapng) reads as the
// Ethernet frames it was made of — source MAC from the link-layer address
// when it is 6 bytes (else zero), destination MAC zero (the cooked header
// has none), lengths those of the Ethernet frame — and they decode as the
// Ethernet frames do, ICRCs included.
func TestCookedCaptures(t *testing.T) {
	frames := rocegen.Sample()
	for _, lt := range []layers.LinkType{layers.LinkTypeLinuxSLL, layers.LinkTypeLinuxSLL2} {
		for _, ng := range []bool{false, true} {
			for _, addrLen := range []int{6, 0} {
				data := writeCooked(t, frames, lt, addrLen, ng)
				cr, err := capture.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatalf("%v pcapng %v: %v", lt, ng, err)
				}
				dec, want := roce.NewDecoder(), roce.NewDecoder()
				for i, f := range frames {
					got, ci, err := cr.Next()
					if err != nil {
						t.Fatalf("%v pcapng %v frame %d: %v", lt, ng, i+1, err)
					}
					eth := bytes.Clone(f.Data)
					clear(eth[0:6])
					if addrLen != 6 {
						clear(eth[6:12])
					}
					if !bytes.Equal(got, eth) || ci.CaptureLength != len(eth) || ci.Length != len(eth) || roce.CaptureLinkType(&ci) != layers.LinkTypeEthernet {
						t.Errorf("%v pcapng %v address %d frame %d: %x (%d/%d bytes, %v), want %x", lt, ng, addrLen, i+1, got, ci.CaptureLength, ci.Length, roce.CaptureLinkType(&ci), eth)
						continue
					}
					var p, q roce.Packet
					e1 := dec.DecodeCaptured(got, ci, &p)
					e2 := want.Decode(f.Data, &q)
					if !errors.Is(e1, roce.ErrNotRoCE) || !errors.Is(e2, roce.ErrNotRoCE) {
						if (e1 == nil) != (e2 == nil) || !reflect.DeepEqual(p, q) {
							t.Errorf("%v frame %d: decoded %v %+v, the Ethernet frame %v %+v", lt, i+1, e1, p, e2, q)
						}
					}
				}
				if _, _, err := cr.Next(); err != io.EOF {
					t.Errorf("%v: after the frames: %v", lt, err)
				}
			}
		}
	}
}

// A cooked frame shorter than its cooked header is a frame of the capture
// and not RoCE; other link types are still refused, naming what is taken.
func TestCookedShortAndOtherLinkTypes(t *testing.T) {
	var buf bytes.Buffer
	pw := pcapgo.NewWriterNanos(&buf)
	pw.WriteFileHeader(65536, layers.LinkTypeLinuxSLL2)
	pw.WritePacket(gopacket.CaptureInfo{CaptureLength: 10, Length: 10}, make([]byte, 10))
	cr, err := capture.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	data, ci, err := cr.Next()
	var p roce.Packet
	if err != nil || len(data) != 10 || !errors.Is(roce.NewDecoder().DecodeCaptured(data, ci, &p), roce.ErrNotRoCE) {
		t.Errorf("short cooked frame: %d bytes, %v", len(data), err)
	}
	buf.Reset()
	pw = pcapgo.NewWriterNanos(&buf)
	pw.WriteFileHeader(65536, layers.LinkTypeRaw)
	if _, err := capture.NewReader(&buf); err == nil || !bytes.Contains([]byte(err.Error()), []byte("113 or 276 (Linux cooked, tcpdump -i any)")) {
		t.Errorf("raw IP capture: %v", err)
	}
}

// The captures tcpdump -i any wrote (roce/testdata/make-cooked-captures.sh)
// summarise as their frames read one by one do: every RoCE frame, the two
// QinQ frames libpcap could not put back together not RoCE.
func TestCookedFixturesSummarize(t *testing.T) {
	for _, f := range []string{"../testdata/rxe-ud-send-sll.pcap", "../testdata/rxe-ud-send-sll2.pcap"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		_, st, _, err := sequential(t, b)
		if err != nil || st.Frames != 16 || st.RoCE != 14 || st.NonRoCE != 2 || st.BadICRC != 0 {
			t.Errorf("%s: %+v, %v; want 16 frames, 14 RoCE with valid ICRCs, 2 not RoCE", f, st, err)
		}
		if err := sameAsSequential(t, b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
