package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/roce"
)

const (
	auditBefore = "../../audit/testdata/mlx5-prio0-before.json"
	auditAfter  = "../../audit/testdata/mlx5-prio0-after.json"
)

// auditCapture writes a capture of the rxe fixture host's traffic (the
// lab's 10.0.100.1 on VLAN 100, PCP 3 from its egress-qos-map): an RC QP
// sending with traffic class 106 and one with 0, and a frame received
// from the peer. It returns the file's path.
func auditCapture(t *testing.T, dir string) string {
	t.Helper()
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var frames []rocegen.Frame
	for i, f := range []struct {
		src, dst string
		tos      uint8
		qp       uint32
	}{{"10.0.100.1", "10.0.100.2", 106, 0x12}, {"10.0.100.1", "10.0.100.2", 0, 0x13}, {"10.0.100.2", "10.0.100.1", 0, 0x11}} {
		s := roce.FrameSpec{DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1},
			VLANs: []roce.VLANTag{{TPID: 0x8100, ID: 100, PCP: 3}}, Src: netip.MustParseAddr(f.src), Dst: netip.MustParseAddr(f.dst),
			TOS: f.tos, TTL: 64, SrcPort: 0xc000, BTH: roce.BTH{Opcode: roce.OpcodeRCSendOnly, PKey: 0xffff, DestQP: f.qp}, Payload: make([]byte, 8)}
		b, err := s.Build()
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, rocegen.Frame{Data: b, Time: at.Add(time.Duration(i) * time.Millisecond)})
	}
	var buf bytes.Buffer
	if err := rocegen.WritePcap(&buf, frames); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "audit.pcap")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two snapshots of an mlx5 host (the real ConnectX-6 Dx ethtool set)
// between which an application sent 2000000 RoCE packets on priority 0:
// exit 1, priority 0 named.
func TestAuditSnapshots(t *testing.T) {
	out, stderr, code := runCLI(t, "", "audit", "--from", auditBefore, "--then", auditAfter)
	if code != exitFinding {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	for _, w := range []string{"rdma_off_priority", "2000000 RDMA packets left on another priority", "priority 0 grew by +2030000", "not lossless"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	out, _, code = runCLI(t, "", "audit", "--from", auditBefore, "--then", auditAfter, "-o", "json")
	var r struct {
		Findings []struct {
			Code     string `json:"code"`
			Priority *int   `json:"priority"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != exitFinding || len(r.Findings) != 1 || r.Findings[0].Priority == nil || *r.Findings[0].Priority != 0 {
		t.Errorf("-o json: exit %d, %v, findings %+v; want one naming priority 0", code, err, r.Findings)
	}
	// One snapshot: information, exit 0.
	if out, stderr, code := runCLI(t, "", "audit", "--from", auditAfter); code != exitOK || !strings.Contains(out, "one sample") {
		t.Errorf("one snapshot: exit %d, want 0 and information: %s%s", code, out, stderr)
	}
}

// A capture of the rxe host's traffic, expecting traffic class 106: the
// QP sending with traffic class 0 is reported, the other is not.
func TestAuditPcap(t *testing.T) {
	p := auditCapture(t, t.TempDir())
	out, stderr, code := runCLI(t, "", "audit", "--from", fixture("rxe"), "--tclass", "106", "--pcap", p)
	if code != exitFinding {
		t.Fatalf("exit %d, want 1: %s%s", code, out, stderr)
	}
	for _, w := range []string{"2 frames leaving the host on " + p, "1 from other hosts", "qp_markings_differ", "QP sending to QP 0x13", "DSCP 0, PCP 3", "expects DSCP 26"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "QP sending to QP 0x12") {
		t.Errorf("the QP with traffic class 106 is reported:\n%s", out)
	}
}

func TestAuditBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tclass", "256"}, "--tclass"},
		{[]string{"--sl", "3"}, "--sl 3 goes with --tclass"},
		{[]string{"--tclass", "106", "--tos", "106"}, "tclass"},
		{[]string{"--flow", "name=x,tclass=999"}, `--flow "name=x,tclass=999" (flow 1): tclass`},
		{[]string{"--flow", "bogus"}, `--flow "bogus" (flow 1)`},
		{[]string{"--then", auditAfter}, "--then"},
		{[]string{"--from", auditBefore, "--watch"}, "--watch needs the live host"},
		{[]string{"--from", auditBefore, "--then", auditBefore}, "not after --from's"},
		{[]string{"--from", auditBefore, "--pcap", "/nonexistent.pcap"}, `--pcap "/nonexistent.pcap"`},
		{[]string{"--interval", "10ms"}, "--interval"},
		{[]string{"--count", "2"}, "--count 2 is for --watch"},
	} {
		_, stderr, code := runCLI(t, "", append([]string{"audit"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("audit %v: exit %d, stderr %q; want 2 naming %q", c.args, code, stderr, c.want)
		}
	}
}
