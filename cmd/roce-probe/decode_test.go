package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/roce-probe/roce-probe/internal/rocegen"
	"github.com/roce-probe/roce-probe/internal/testenv"
)

const sampleCapture = "../../roce/testdata/sample.pcapng"

// The keys of one decode -o json object, in order (issue #2; vlan_chain
// and ecn_name since issue 12: every output lists the tag chain, and ecn
// has its name next to it; the extension headers since issue 14).
var decodeKeys = []string{"frame", "time", "roce_version", "vlan", "pcp", "dei", "vlan_chain", "ip_version", "src", "dst",
	"dscp", "ecn", "ecn_name", "ttl", "flow_label", "udp_sport", "opcode", "opcode_name", "pkey", "dest_qp", "psn",
	"ack_req", "fecn", "becn", "src_qp", "qkey", "imm",
	"va", "rkey", "dma_len", // RETH, AtomicETH (issue 14)
	"syndrome", "syndrome_type", "credits", "rnr_timer", "rnr_timer_us", "nak_code", "nak_name", "msn", // AETH
	"swap_add", "compare", "orig_remote_data", "invalidate_rkey", "xrc_srq", "eec", // AtomicETH, AtomicAckETH, IETH, XRCETH, RDETH
	"payload_len", "pad", "icrc", "icrc_valid"}

func TestDecodeText(t *testing.T) {
	out, stderr, code := runCLI(t, "", "decode", sampleCapture)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d lines, want 9 (10 frames, one not RoCE):\n%s", len(lines), out)
	}
	for _, want := range []string{
		"1 03:04:05.000000001 RoCEv2 192.168.100.1:57236 > 192.168.100.2:4791 dscp 0 ecn 0 ttl 64 UD_SEND_ONLY qp 0x12 psn 1 pkey 0xffff src-qp 0x11 qkey 0x11111111 len 17 pad 3 icrc ok",
		"RoCEv2 vlan 1000 pcp 5 vlan 10 pcp 2 [fd00:100::1]:",
		"RC_ACKNOWLEDGE qp 0x20 psn 100 pkey 0xffff ACK credits=31 (unlimited) msn 1",
		"RC_RDMA_WRITE_ONLY qp 0x21 psn 100 pkey 0xffff ack-req va 0x7f7e91000000 rkey 0x1234 dma-len 16 len 16",
		"CNP qp 0x20 psn 0 pkey 0xffff BECN",
		"7 03:04:05.006000001 RoCEv1 ::ffff:192.168.100.1 > ::ffff:192.168.100.2",
		"imm 0xdeadbeef",
		"icrc BAD (wire",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "10 frames: 9 RoCE (1 invalid ICRC, 0 unchecked), 1 not RoCE, 0 malformed") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestDecodeJSON(t *testing.T) {
	out, _, code := runCLI(t, "", "decode", "-o", "ndjson", sampleCapture)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d JSON lines, want 9", len(lines))
	}
	for i, line := range lines {
		// Keys, in order.
		dec := json.NewDecoder(strings.NewReader(line))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for dec.More() {
			k, _ := dec.Token()
			keys = append(keys, k.(string))
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		if strings.Join(keys, ",") != strings.Join(decodeKeys, ",") {
			t.Fatalf("line %d keys\n got %v\nwant %v", i+1, keys, decodeKeys)
		}
	}
	var first, write, ack, v1, bad map[string]any
	for _, p := range []struct {
		line int
		m    *map[string]any
	}{{0, &first}, {2, &write}, {3, &ack}, {6, &v1}, {8, &bad}} {
		if err := json.Unmarshal([]byte(lines[p.line]), p.m); err != nil {
			t.Fatal(err)
		}
	}
	// An untagged IPv4 frame: no tag, so no DEI (null) and an empty
	// chain; IPv4 has no flow label (null).
	want := map[string]any{"frame": 1.0, "time": "2026-01-02T03:04:05.000000001Z", "roce_version": 2.0, "vlan": nil,
		"pcp": nil, "dei": nil, "ip_version": 4.0, "src": "192.168.100.1", "dst": "192.168.100.2", "dscp": 0.0,
		"ecn": 0.0, "ecn_name": "Not-ECT", "ttl": 64.0, "flow_label": nil, "udp_sport": float64(0xDF94), "opcode": 100.0,
		"opcode_name": "UD_SEND_ONLY", "pkey": 65535.0, "dest_qp": 18.0, "psn": 1.0, "ack_req": false,
		"fecn": false, "becn": false, "src_qp": 17.0, "qkey": float64(0x11111111), "imm": nil,
		"payload_len": 17.0, "pad": 3.0, "icrc_valid": true}
	for _, k := range decodeKeys[slices.Index(decodeKeys, "va") : slices.Index(decodeKeys, "eec")+1] { // the extension headers a UD packet lacks
		want[k] = nil
	}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("frame 1 %s = %#v, want %#v", k, first[k], v)
		}
	}
	if !jsonIs(first["vlan_chain"], `[]`) {
		t.Errorf("frame 1 vlan_chain = %v, want []", first["vlan_chain"])
	}
	// frame 3: RDMA WRITE ONLY with a RETH (rocegen.Sample: VA 0x7f7e91000000,
	// R_Key 0x1234, 16 bytes); frame 4: an ACK with credits 31, MSN 1
	for k, v := range map[string]any{"va": float64(0x7f7e91000000), "rkey": float64(0x1234), "dma_len": 16.0, "syndrome": nil, "msn": nil} {
		if write[k] != v {
			t.Errorf("frame 3 %s = %#v, want %#v", k, write[k], v)
		}
	}
	for k, v := range map[string]any{"va": nil, "syndrome": 31.0, "syndrome_type": "ACK", "credits": 31.0, "rnr_timer": nil,
		"nak_code": nil, "nak_name": nil, "msn": 1.0} {
		if ack[k] != v {
			t.Errorf("frame 4 %s = %#v, want %#v", k, ack[k], v)
		}
	}
	if s, _ := first["icrc"].(string); len(s) != 8 {
		t.Errorf("icrc %q, want 8 hex digits", first["icrc"])
	}
	// rocegen writes it as 802.1ad 1000 PCP 5 outside 802.1Q 10 PCP 2
	// (the text form above shows the same tags in frame order).
	if ack["vlan"] != 1000.0 || ack["pcp"] != 5.0 || ack["dei"] != false || ack["ip_version"] != 6.0 || ack["src_qp"] != nil || ack["qkey"] != nil ||
		!jsonIs(ack["vlan_chain"], `[{"id":1000,"tpid":34984,"pcp":5,"netdev":null},{"id":10,"tpid":33024,"pcp":2,"netdev":null}]`) {
		t.Errorf("QinQ ACK: %v", ack)
	}
	if v1["roce_version"] != 1.0 || v1["ip_version"] != nil || v1["udp_sport"] != nil || v1["src"] != "::ffff:192.168.100.1" || v1["ttl"] != 1.0 {
		t.Errorf("v1: %v", v1)
	}
	if bad["icrc_valid"] != false {
		t.Errorf("bad ICRC frame: %v", bad)
	}
}

func TestDecodeSummary(t *testing.T) {
	out, _, code := runCLI(t, "", "decode", "--summary", "-o", "json", sampleCapture)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var s struct {
		Frames, RoCEPackets, NonRoCE, ICRCFailures int
		Flows                                      []map[string]any
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	json.Unmarshal(raw["frames"], &s.Frames)
	json.Unmarshal(raw["roce_packets"], &s.RoCEPackets)
	json.Unmarshal(raw["non_roce"], &s.NonRoCE)
	json.Unmarshal(raw["icrc_failures"], &s.ICRCFailures)
	json.Unmarshal(raw["flows"], &s.Flows)
	if s.Frames != 10 || s.RoCEPackets != 9 || s.NonRoCE != 1 || s.ICRCFailures != 1 {
		t.Errorf("totals %+v", s)
	}
	var udp map[string]any
	var cnps, ce float64
	for _, f := range s.Flows {
		if f["roce_version"] == 2.0 && f["src_qp"] == 17.0 && f["dest_qp"] == 18.0 {
			udp = f
		}
		cnps += f["cnps"].(float64)
		ce += f["ce"].(float64)
	}
	if udp == nil {
		t.Fatalf("no UD flow 0x11 > 0x12 in %v", s.Flows)
	}
	// Frames 1, 2 and 9: PSN 1, 2, 4; untagged twice, VLAN 100 PCP 3 once; DSCP 0 and 26; ECN 0 and 2.
	if udp["packets"] != 3.0 || udp["first_psn"] != 1.0 || udp["last_psn"] != 4.0 || udp["icrc_failures"] != 1.0 ||
		udp["untagged"] != 2.0 || !sameJSON(udp["vlan_values"], []any{100.0}) || !sameJSON(udp["pcp_values"], []any{3.0}) ||
		!sameJSON(udp["dscp_values"], []any{0.0, 26.0}) || !sameJSON(udp["ecn_values"], []any{0.0, 2.0}) {
		t.Errorf("UD flow: %v", udp)
	}
	if cnps != 1 || ce != 1 {
		t.Errorf("CNPs %v, CE %v; want 1, 1", cnps, ce)
	}
	// the UD flow's PSN 4 has a bad ICRC: left out of the PSN analysis,
	// and a loss (a receiver drops it); the CNP flow has nothing to judge
	loss, _ := udp["loss"].(map[string]any)
	if loss["verdict"] != "loss" || loss["sequenced"] != 2.0 || loss["missing"] != 0.0 || loss["retransmitted"] != 0.0 || loss["gaps"] != 0.0 ||
		!strings.Contains(fmt.Sprint(loss["reason"]), "invalid ICRC") {
		t.Errorf("UD flow loss: %v", loss)
	}
	for _, f := range s.Flows {
		if l, _ := f["loss"].(map[string]any); f["cnps"] == 1.0 && (l["verdict"] != nil || l["reason"] == "") {
			t.Errorf("CNP flow loss: %v", l)
		}
	}
	table, _, code := runCLI(t, "", "decode", "--summary", sampleCapture)
	if code != exitOK || !strings.Contains(table, "VER") || !strings.Contains(table, "0x11>0x12") {
		t.Errorf("summary table (exit %d):\n%s", code, table)
	}
}

func sameJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestDecodeExitCodes(t *testing.T) {
	data, err := os.ReadFile(sampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	trunc := filepath.Join(dir, "trunc.pcapng")
	os.WriteFile(trunc, data[:len(data)-30], 0o644)
	junk := filepath.Join(dir, "junk.pcap")
	os.WriteFile(junk, []byte("this is not a capture"), 0o644)
	for _, tc := range []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stderr string
	}{
		{"bad icrc fails", "", []string{"decode", "--fail-on-bad-icrc", sampleCapture}, exitFinding, "1 RoCE packets have an invalid ICRC"},
		{"stdin", string(data), []string{"decode", "--fail-on-bad-icrc", "-"}, exitFinding, "invalid ICRC"},
		{"missing file", "", []string{"decode", filepath.Join(dir, "nope.pcap")}, exitUsage, "no such file"},
		{"not a capture", "", []string{"decode", junk}, exitUsage, "magic number 0x74686973"},
		{"truncated", "", []string{"decode", trunc}, exitUsage, "frame 10"},
		{"bad output", "", []string{"decode", "-o", "xml", sampleCapture}, exitUsage, `-o "xml"`},
		{"no file", "", []string{"decode"}, exitUsage, "needs FILE: a pcap or pcapng capture, or - for standard input"},
	} {
		_, stderr, code := runCLI(t, tc.stdin, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%s: exit %d stderr %q; want exit %d and %q", tc.name, code, stderr, tc.code, tc.stderr)
		}
	}
}

// A RoCE frame whose BTH is cut short is reported (naming the frame and
// the header) and skipped; a frame cut by the capture's snap length is
// decoded with its ICRC unchecked.
func TestDecodeMalformedAndSnapped(t *testing.T) {
	frames := rocegen.Sample()
	good := frames[0].Data // untagged IPv4 UD SEND_ONLY
	short := append([]byte(nil), good[:14+20+8+7]...)
	binary.BigEndian.PutUint16(short[14+2:], 20+8+7) // IPv4 total length
	binary.BigEndian.PutUint16(short[14+20+4:], 8+7) // UDP length
	short[14+10], short[14+11] = 0, 0                // IPv4 header checksum, recomputed (RFC 1071)
	var sum uint32
	for i := 14; i < 34; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(short[i:]))
	}
	sum = sum&0xffff + sum>>16
	binary.BigEndian.PutUint16(short[14+10:], ^uint16(sum+sum>>16))
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	w.WriteFileHeader(65536, layers.LinkTypeEthernet)
	ts := frames[0].Time
	w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(good), Length: len(good)}, good)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(short), Length: len(short)}, short)
	w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: 70, Length: len(good)}, good[:70])
	w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: 60, Length: len(good)}, good[:60])
	path := filepath.Join(t.TempDir(), "bad.pcap")
	os.WriteFile(path, buf.Bytes(), 0o644)

	out, stderr, code := runCLI(t, "", "decode", path)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "frame 2: malformed RoCE packet: BTH: 7 bytes, want at least 12") {
		t.Errorf("stderr %q does not report frame 2's short BTH", stderr)
	}
	if !strings.Contains(stderr, "frame 4: malformed RoCE packet: cut short by the capture's snap length (60 of 86 bytes): RoCE UD_SEND_ONLY: DETH: 6 bytes, want at least 8") {
		t.Errorf("stderr %q does not report frame 4's snap length", stderr)
	}
	if !strings.Contains(stderr, "4 frames: 2 RoCE (0 invalid ICRC, 1 unchecked), 0 not RoCE, 2 malformed") {
		t.Errorf("stderr %q", stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "icrc ok") || !strings.HasSuffix(lines[1], "icrc unchecked (truncated)") {
		t.Errorf("output:\n%s", out)
	}
	js, _, _ := runCLI(t, "", "decode", "-o", "ndjson", path)
	jl := strings.Split(strings.TrimSpace(js), "\n")
	if len(jl) != 2 || !strings.Contains(jl[1], `"frame":3`) || !strings.Contains(jl[1], `"icrc":null,"icrc_valid":null`) {
		t.Errorf("JSON:\n%s", js)
	}
}

// IPv6 flows in the summary table write address and port the way URLs and
// ss do, [addr]:port, so the port cannot be read as part of the address.
func TestDecodeSummaryTableBracketsIPv6(t *testing.T) {
	out, _, code := runCLI(t, "", "decode", "--summary", "../../roce/testdata/sample.pcapng")
	if code != exitOK {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(out, "[fd00:100::1]:50208") || strings.Contains(out, " fd00:100::1:50208") {
		t.Errorf("IPv6 flow not written as [addr]:port:\n%s", out)
	}
}

// udCols are the columns of RoCE v2 UD SEND frames decode and tshark both
// show. The outer tag is 802.1ad on QinQ frames; IPv4 has no flow label,
// an untagged frame no VLAN.
func udCols() []tsharkCol {
	return append([]tsharkCol{
		{key: "vlan", fields: []string{"ieee8021ad.id", "vlan.id"}, optional: true},
		{key: "pcp", fields: []string{"ieee8021ad.priority", "vlan.priority"}, optional: true},
		{key: "src", fields: []string{"ip.src", "ipv6.src"}},
		{key: "dst", fields: []string{"ip.dst", "ipv6.dst"}},
		{key: "dscp", fields: []string{"ip.dsfield.dscp", "ipv6.tclass.dscp"}},
		{key: "ecn", fields: []string{"ip.dsfield.ecn", "ipv6.tclass.ecn"}},
		{key: "ttl", fields: []string{"ip.ttl", "ipv6.hlim"}},
		{key: "flow_label", fields: []string{"ipv6.flow"}, optional: true},
		{key: "udp_sport", fields: []string{"udp.srcport"}},
		{key: "src_qp", fields: []string{"infiniband.deth.srcqp"}},
		{key: "qkey", fields: []string{"infiniband.deth.q_key"}},
		{key: "icrc", fields: []string{"infiniband.invariant.crc"}, hexBytes: true}, // the 4 wire bytes, as tshark shows them
	}, bthCols...)
}

// decode -o json on the real Soft-RoCE capture (roce/testdata, frames the
// Linux kernel built) agrees field by field with tshark, an independent
// decoder: nothing here is computed by roce-probe. Fails without tshark
// under ROCE_PROBE_CI=1.
func TestDecodeRXECaptureMatchesTshark(t *testing.T) {
	const capture = "../../roce/testdata/rxe-ud-send.pcapng"
	tshark := testenv.Tool(t, "tshark")
	pairs, compared := compareWithTshark(t, tshark, capture, []string{"-E", "occurrence=f"}, udCols()...)
	if len(pairs) != 8 {
		t.Fatalf("%d frames compared, want 8", len(pairs))
	}
	qinq := 0
	for _, p := range pairs {
		// vlan_chain: every tag, outermost first, as tshark dissects them
		// (802.1ad outside 802.1Q on the QinQ frames); netdev is not known
		// from a capture.
		chain := []string{}
		for _, tag := range []struct {
			id, pcp string
			tpid    int
		}{{p.tshark["ieee8021ad.id"], p.tshark["ieee8021ad.priority"], 0x88a8}, {p.tshark["vlan.id"], p.tshark["vlan.priority"], 0x8100}} {
			if tag.id != "" {
				chain = append(chain, fmt.Sprintf(`{"id":%s,"tpid":%d,"pcp":%s,"netdev":null}`, tag.id, tag.tpid, tag.pcp))
			}
		}
		if want := "[" + strings.Join(chain, ",") + "]"; !jsonIs(p.decoded["vlan_chain"], want) {
			t.Errorf("frame %d: vlan_chain = %v, tshark %s", p.frame, p.decoded["vlan_chain"], want)
		}
		if len(chain) == 2 {
			qinq++
		}
	}
	if qinq != 2 {
		t.Errorf("%d QinQ frames compared, want 2 (frames 7 and 8)", qinq)
	}
	total := 0
	for _, n := range compared {
		total += n
	}
	if total < 8*14 {
		t.Errorf("only %d values compared: %v", total, compared)
	}
}

// decode -o json is one JSON document, an array of the packets -o ndjson
// prints one per line; with nothing to show it is the empty array. A
// damaged capture still ends the document (what was decoded before the
// damage) and exits 2.
func TestDecodeJSONDocument(t *testing.T) {
	doc, _, code := runCLI(t, "", "decode", "-o", "json", sampleCapture)
	lines, _, code2 := runCLI(t, "", "decode", "-o", "ndjson", sampleCapture)
	if code != exitOK || code2 != exitOK {
		t.Fatalf("exit %d / %d", code, code2)
	}
	var arr []json.RawMessage
	dec := json.NewDecoder(strings.NewReader(doc))
	if err := dec.Decode(&arr); err != nil || dec.More() {
		t.Fatalf("-o json is not one JSON array (%v):\n%s", err, doc)
	}
	nl := strings.Split(strings.TrimSuffix(lines, "\n"), "\n")
	if len(arr) != 9 || len(nl) != 9 {
		t.Fatalf("%d elements, %d ndjson lines; want the 9 RoCE packets of the sample", len(arr), len(nl))
	}
	for i := range arr {
		if string(arr[i]) != nl[i] {
			t.Errorf("element %d %s, ndjson line %s", i, arr[i], nl[i])
		}
	}
	// No RoCE frame: [] (the sample's one non-RoCE frame alone).
	b, err := os.ReadFile(sampleCapture)
	if err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "none.pcap")
	var w bytes.Buffer
	if err := rocegen.WritePcap(&w, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := runCLI(t, "", "decode", "-o", "json", empty); code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("no packets: exit %d, %q; want []", code, out)
	}
	// Truncated in the middle of the last record (frame 10, not RoCE):
	// the 9 packets before it, then the error.
	cut := filepath.Join(t.TempDir(), "cut.pcap")
	if err := os.WriteFile(cut, b[:len(b)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, "", "decode", "-o", "json", cut)
	arr = nil
	if err := json.Unmarshal([]byte(out), &arr); code != exitUsage || err != nil || len(arr) != 9 || !strings.Contains(stderr, "frame 10") {
		t.Errorf("truncated: exit %d, %d packets (%v), stderr %q:\n%s", code, len(arr), err, stderr, out)
	}
}

// Linux cooked captures (tcpdump -i any: LINUX_SLL and LINUX_SLL2, made
// by roce/testdata/make-cooked-captures.sh from the real rxe frames of
// rxe-ud-send.pcapng crossing a veth pair, each seen leaving and
// arriving) decode as tshark dissects them, field by field, ICRCs valid;
// their frames are those of the Ethernet capture (the same PSNs, each
// twice except the QinQ frames that arrive, which libpcap does not put
// back together and neither decode nor tshark reads as RoCE); with
// LINUX_SLL the VLAN tags are there (libpcap puts back those the kernel
// took off), with LINUX_SLL2 they are not (libpcap 1.10 does not).
func TestDecodeCookedCapturesMatchTshark(t *testing.T) {
	tshark := testenv.Tool(t, "tshark")
	for _, tc := range []struct {
		file   string
		tagged int // frames with a VLAN tag
	}{
		{"../../roce/testdata/rxe-ud-send-sll.pcap", 10}, // 4 VLAN frames twice, 2 QinQ once
		{"../../roce/testdata/rxe-ud-send-sll2.pcap", 0},
	} {
		pairs, _ := compareWithTshark(t, tshark, tc.file, []string{"-E", "occurrence=f"}, udCols()...)
		if len(pairs) != 14 {
			t.Errorf("%s: %d frames compared, want 14 (8 sent, 6 received)", tc.file, len(pairs))
		}
		psns := map[string]int{}
		tagged := 0
		for _, p := range pairs {
			psns[fmt.Sprint(p.decoded["psn"])]++
			if p.decoded["vlan"] != nil {
				tagged++
			}
		}
		for psn := 658188; psn <= 658195; psn++ {
			want := 2
			if psn >= 658194 {
				want = 1 // QinQ: only the copy that leaves
			}
			if psns[fmt.Sprint(psn)] != want {
				t.Errorf("%s: PSN %d in %d frames, want %d (%v)", tc.file, psn, psns[fmt.Sprint(psn)], want, psns)
			}
		}
		if tagged != tc.tagged {
			t.Errorf("%s: %d tagged frames, want %d", tc.file, tagged, tc.tagged)
		}
	}
}
