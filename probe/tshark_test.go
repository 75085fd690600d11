package probe

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/internal/testenv"
	"github.com/roce-probe/roce-probe/roce"
)

// Wireshark, an independent decoder, reads a probe as a RoCE v2 UD
// SEND_ONLY with the fields it was built with. Skips without tshark
// unless ROCE_PROBE_CI=1.
func TestTsharkDecodesProbe(t *testing.T) {
	tshark := testenv.Tool(t, "tshark")
	f := testFrame([]roce.VLANTag{{TPID: 0x8100, ID: 100, PCP: 3}}, false)
	pl, err := Payload{Kind: KindProbe, Session: 1, Seq: 258, Sent: f.Markings()}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f.Payload = pl[:55] // 55 bytes: the BTH must announce 1 pad byte
	b, err := f.Build()
	if err != nil {
		t.Fatal(err)
	}
	var pcap bytes.Buffer
	if err := rocegen.WritePcap(&pcap, []rocegen.Frame{{Data: b}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "probe.pcap")
	if err := os.WriteFile(path, pcap.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// What testFrame asks for: VLAN 100 PCP 3, DSCP 26 ECT(0) (ecn 2), TTL 64,
	// DF, ports 0xc123 → 4791, checksum 0, UD SEND_ONLY (100), 1 pad byte,
	// P_Key 0xffff, DestQP 0x7e5701, PSN 0x000102, Q_Key 0xcafe, SrcQP 0x7e5702.
	want := []struct{ field, value string }{
		{"vlan.id", "100"}, {"vlan.priority", "3"}, {"ip.dsfield.dscp", "26"}, {"ip.dsfield.ecn", "2"}, {"ip.ttl", "64"},
		{"ip.flags.df", "1"}, {"udp.srcport", "49443"}, {"udp.dstport", "4791"}, {"udp.checksum", "0x0000"},
		{"infiniband.bth.opcode", "100"}, {"infiniband.bth.padcnt", "1"}, {"infiniband.bth.p_key", "65535"},
		{"infiniband.bth.destqp", "8279809"}, {"infiniband.bth.psn", "258"}, {"infiniband.deth.q_key", "51966"},
		{"infiniband.deth.srcqp", "8279810"},
	}
	var fields []string
	for _, w := range want {
		fields = append(fields, w.field)
	}
	rows := testenv.TsharkFields(t, tshark, path, nil, fields...)
	if len(rows) != 1 {
		t.Fatalf("tshark printed %d lines for the one frame: %v", len(rows), rows)
	}
	t.Logf("tshark: %v", rows[0])
	for _, w := range want {
		if got := rows[0][w.field]; got != w.value && !(strings.HasPrefix(got, "0x") && hexEq(got, w.value)) {
			t.Errorf("%s = %q, want %s", w.field, got, w.value)
		}
	}
}

// hexEq compares tshark's hexadecimal rendering of a field with a decimal
// expectation.
func hexEq(hexv, want string) bool {
	a, err1 := strconv.ParseUint(hexv, 0, 64)
	b, err2 := strconv.ParseUint(want, 10, 64)
	return err1 == nil && err2 == nil && a == b
}
