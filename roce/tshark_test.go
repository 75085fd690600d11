package roce

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/roce-probe/roce-probe/internal/testenv"
)

var tsharkFields = []string{
	"frame.number",
	"infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m", "infiniband.bth.padcnt",
	"infiniband.bth.tver", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.a",
	"infiniband.bth.reserved7", "infiniband.bth.psn",
	"infiniband.deth.q_key", "infiniband.deth.srcqp",
	"infiniband.invariant.crc",
	"infiniband.grh.tclass", "infiniband.grh.flowlabel", "infiniband.grh.hoplmt",
	"infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
	"infiniband.aeth.syndrome", "infiniband.aeth.msn",
	"infiniband.aeth.syndrome.opcode", "infiniband.aeth.syndrome.credit_count", "infiniband.aeth.syndrome.timer",
	"infiniband.aeth.syndrome.error_code",
	"infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt", "infiniband.atomicacketh.origremdt",
	"infiniband.ieth",
}

// TestTsharkInterop writes frames serialized by this package to a pcap,
// decodes them with tshark (Wireshark's InfiniBand dissector, an
// independent decoder) and checks that every BTH and DETH field, and the
// ICRC bytes, equal ours. Wireshark does not verify the ICRC; it shows the
// 4 wire bytes as a big-endian number (byte-swapped CRC-32).
func TestTsharkInterop(t *testing.T) {
	var frames [][]byte
	var specs []frameSpec
	n := 0
	for _, e := range encaps {
		for _, op := range knownOpcodes() {
			n++
			if n%3 != 0 && op.Transport() != TransportUD { // every UD opcode, a third of the rest
				continue
			}
			f := specFor(e, op, n)
			f.bth.TVer = uint8(n % 2)
			f.bth.Reserved7 = uint8(n % 5)
			specs = append(specs, f)
			frames = append(frames, buildFrame(t, f))
		}
	}
	rows := TsharkRows(t, frames, nil, tsharkFields)
	dec := NewDecoder()
	checked := map[string]int{}
	for i, field := range rows {
		var p Packet
		if err := dec.Decode(frames[i], &p); err != nil {
			t.Fatalf("frame %d: %v", i+1, err)
		}
		f := specs[i]
		name := fmt.Sprintf("frame %d (%s %s)", i+1, f.encap.name, p.BTH.Opcode)
		b := &p.BTH
		ours := map[string]uint64{
			"infiniband.bth.opcode": uint64(b.Opcode), "infiniband.bth.se": b2u(b.SolicitedEvent),
			"infiniband.bth.m": b2u(b.MigReq), "infiniband.bth.padcnt": uint64(b.PadCount),
			"infiniband.bth.tver": uint64(b.TVer), "infiniband.bth.p_key": uint64(b.PKey),
			"infiniband.bth.destqp": uint64(b.DestQP), "infiniband.bth.a": b2u(b.AckReq),
			"infiniband.bth.reserved7": uint64(b.Reserved7), "infiniband.bth.psn": uint64(b.PSN),
		}
		// Wireshark 4.0 does not split the ICRC off CNPs or XRC packets
		// (opcodes it does not know), and tshark 4.0.17 decodes the RDETH
		// of RD packets 8 bytes after where it is (its EE context shows
		// the DETH's SrcQP), so RD extension headers are not compared.
		if p.HasDETH && b.Opcode.Transport() != TransportRD {
			ours["infiniband.deth.q_key"] = uint64(p.QKey)
			ours["infiniband.deth.srcqp"] = uint64(p.SrcQP)
		}
		if field["infiniband.invariant.crc"] != "" && b.Opcode.Transport() != TransportRD {
			ours["infiniband.invariant.crc"] = uint64(binary.BigEndian.Uint32(p.ICRC[:]))
			if p.ICRCStatus != ICRCValid {
				t.Errorf("%s: our ICRC is %v", name, p.ICRCStatus)
			}
			checked["icrc"]++
		}
		// The extension headers as our decoder read them, on RC and UC
		// (Wireshark 4.0 does not know XRC or the newer RC FLUSH 0x1C and
		// ATOMIC_WRITE 0x1D, and misplaces RD headers). Wireshark shows an
		// AtomicETH's VA and R_Key in the RETH's fields (parse_ATOMICETH,
		// epan/dissectors/packet-infiniband.c), the IETH as 4 bytes, and
		// the AETH syndrome split as IBTA 9.7.5.2 (table 43) does: the
		// type in bits 6-5 ("opcode"), then a credit count, an RNR timer
		// or a NAK code in bits 4-0.
		if tr := b.Opcode.Transport(); (tr == TransportRC || tr == TransportUC) && b.Opcode != 0x1C && b.Opcode != 0x1D {
			if p.HasRETH {
				ours["infiniband.reth.va"], ours["infiniband.reth.r_key"] = p.RETH.VA, uint64(p.RETH.RKey)
				ours["infiniband.reth.dmalen"] = uint64(p.RETH.DMALen)
			}
			if p.HasAETH {
				a := &p.AETH
				ours["infiniband.aeth.syndrome"], ours["infiniband.aeth.msn"] = uint64(a.Syndrome), uint64(a.MSN)
				ours["infiniband.aeth.syndrome.opcode"] = uint64(a.Kind())
				switch a.Kind() {
				case AckKindACK:
					ours["infiniband.aeth.syndrome.credit_count"] = uint64(a.Credits())
				case AckKindRNRNAK:
					ours["infiniband.aeth.syndrome.timer"] = uint64(a.RNRTimer())
				case AckKindNAK:
					ours["infiniband.aeth.syndrome.error_code"] = uint64(a.NAKCode())
				}
			}
			if p.HasAtomicETH {
				a := &p.AtomicETH
				ours["infiniband.reth.va"], ours["infiniband.reth.r_key"] = a.VA, uint64(a.RKey)
				ours["infiniband.atomiceth.swapdt"], ours["infiniband.atomiceth.cmpdt"] = a.SwapAddData, a.CompareData
			}
			if p.HasAtomicAckETH {
				ours["infiniband.atomicacketh.origremdt"] = p.AtomicAckETH.OrigRemoteData
			}
			if p.HasIETH {
				ours["infiniband.ieth"] = uint64(p.IETH.RKey)
			}
		}
		if p.Version == 1 {
			ours["infiniband.grh.tclass"] = uint64(p.TOS)
			ours["infiniband.grh.flowlabel"] = uint64(p.FlowLabel)
			ours["infiniband.grh.hoplmt"] = uint64(p.TTL)
		}
		for k, want := range ours {
			s := field[k]
			if s == "" {
				// Only UD frames are asked for DETH fields (RD is left
				// out above), and Wireshark decodes UD DETHs: none may be
				// missing.
				t.Errorf("%s: tshark has no %s", name, k)
				continue
			}
			if k == "infiniband.ieth" {
				// FT_BYTES, hex digits, twice: Wireshark 4.0 names the
				// header and its R_Key field both "infiniband.ieth"
				v := strings.Split(s, ",")
				if len(v) != 2 || v[0] != v[1] {
					t.Errorf("%s: tshark %s = %q, want the R_Key twice", name, k, s)
					continue
				}
				s = "0x" + strings.ReplaceAll(v[0], ":", "")
			}
			got, err := strconv.ParseUint(s, 0, 64)
			if err != nil {
				t.Errorf("%s: tshark %s = %q: %v", name, k, s, err)
				continue
			}
			if got != want {
				t.Errorf("%s: tshark %s = %#x, ours %#x", name, k, got, want)
			}
			checked[k]++
		}
	}
	if checked["infiniband.deth.srcqp"] == 0 || checked["icrc"] == 0 || checked["infiniband.grh.flowlabel"] == 0 ||
		checked["infiniband.reth.va"] == 0 || checked["infiniband.aeth.msn"] == 0 || checked["infiniband.atomiceth.cmpdt"] == 0 ||
		checked["infiniband.atomicacketh.origremdt"] == 0 || checked["infiniband.ieth"] == 0 ||
		checked["infiniband.aeth.syndrome.credit_count"] == 0 || checked["infiniband.aeth.syndrome.timer"] == 0 ||
		checked["infiniband.aeth.syndrome.error_code"] == 0 {
		t.Errorf("too little compared: %v", checked)
	}
	t.Logf("compared with tshark over %d frames: %v", len(frames), checked)
}

func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// TsharkRows (exported for the package roce_test tests) writes frames to a
// pcap, runs tshark on it with RoCE v2 decoded on UDP port 4791 and the
// options opts (testenv.TsharkFields), and returns one row per frame, by
// field name.
func TsharkRows(t *testing.T, frames [][]byte, opts []string, fields []string) []map[string]string {
	t.Helper()
	tshark := testenv.Tool(t, "tshark")
	var buf bytes.Buffer
	w := pcapgo.NewWriter(&buf)
	if err := w.WriteFileHeader(65536, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(f), Length: len(f)}, f); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "frames.pcap")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := testenv.TsharkFields(t, tshark, path, append([]string{"-d", "udp.port==4791,infiniband", "--disable-protocol", "tftp"}, opts...), fields...)
	if len(rows) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames", len(rows), len(frames))
	}
	return rows
}
