package probe

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/roce-probe/roce-probe/internal/testenv"
	"github.com/roce-probe/roce-probe/roce"
)

// Wireshark, an independent decoder, reads a probe as a RoCE v2 UD
// SEND_ONLY with the fields it was built with. Skips without tshark
// unless ROCE_PROBE_CI=1.
func TestTsharkDecodesProbe(t *testing.T) {
	testenv.Tool(t, "tshark")
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
	path := filepath.Join(t.TempDir(), "probe.pcap")
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(out)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: time.Unix(0, 0), CaptureLength: len(b), Length: len(b)}, b); err != nil {
		t.Fatal(err)
	}
	out.Close()
	fields := []string{"vlan.id", "vlan.priority", "ip.dsfield.dscp", "ip.dsfield.ecn", "ip.ttl", "ip.flags.df",
		"udp.srcport", "udp.dstport", "udp.checksum", "infiniband.bth.opcode", "infiniband.bth.padcnt", "infiniband.bth.p_key",
		"infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.deth.q_key", "infiniband.deth.srcqp"}
	args := []string{"-r", path, "-T", "fields", "-E", "separator=/t"}
	for _, fl := range fields {
		args = append(args, "-e", fl)
	}
	got, err := exec.Command("tshark", args...).Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	vals := strings.Split(strings.TrimRight(string(got), "\n"), "\t")
	t.Logf("tshark: %q", vals)
	// What testFrame asks for: VLAN 100 PCP 3, DSCP 26 ECT(0) (ecn 2), TTL 64,
	// DF, ports 0xc123 → 4791, checksum 0, UD SEND_ONLY (100), 1 pad byte,
	// P_Key 0xffff, DestQP 0x7e5701, PSN 0x000102, Q_Key 0xcafe, SrcQP 0x7e5702.
	want := []string{"100", "3", "26", "2", "64", "1", "49443", "4791", "0x0000", "100", "1", "65535",
		"8279809", "258", "51966", "8279810"}
	if len(vals) != len(want) {
		t.Fatalf("tshark printed %q for %d fields", got, len(want))
	}
	for i := range want {
		if vals[i] != want[i] && !(strings.HasPrefix(vals[i], "0x") && hexEq(vals[i], want[i])) {
			t.Errorf("%s = %q, want %s", fields[i], vals[i], want[i])
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
