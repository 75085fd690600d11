package roce_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

// tsharkFields writes frames to a pcap, runs tshark on it with RoCE v2
// decoded on UDP port 4791, the options opts and -e for each field, and
// returns one row of field values per frame.
func tsharkFields(t *testing.T, frames [][]byte, opts []string, fields []string) [][]string {
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
	args := append([]string{"-r", path, "-d", "udp.port==4791,infiniband", "--disable-protocol", "tftp",
		"-T", "fields", "-E", "separator=/t"}, opts...)
	for _, f := range fields {
		args = append(args, "-e", f)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(tshark, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != len(frames) {
		t.Fatalf("tshark printed %d lines for %d frames", len(lines), len(frames))
	}
	rows := make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = strings.Split(l, "\t")
	}
	return rows
}
