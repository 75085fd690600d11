package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

// tsharkCol is one value that `decode -o json` and tshark (Wireshark's
// dissectors, an independent decoder) both show: decode's key and the
// tshark field(s) for it, the first one tshark fills winning (IPv4 or
// IPv6; the outer tag 802.1ad or 802.1Q).
type tsharkCol struct {
	key    string
	fields []string
	// optional: a frame may lack it; decode has it (not null) exactly
	// where tshark shows it. Otherwise tshark showing none is a failure.
	optional bool
	// hexBytes: decode writes the wire bytes as hex digits, tshark as
	// one 0x number (the ICRC).
	hexBytes bool
}

// bthCols are the BTH fields every RoCE frame has.
var bthCols = []tsharkCol{
	{key: "opcode", fields: []string{"infiniband.bth.opcode"}},
	{key: "pkey", fields: []string{"infiniband.bth.p_key"}},
	{key: "dest_qp", fields: []string{"infiniband.bth.destqp"}},
	{key: "psn", fields: []string{"infiniband.bth.psn"}},
}

// rethAETHCols are the RETH (RDMA WRITE and READ requests: VA, R_Key, DMA
// length) and AETH (ACKs, NAKs, READ responses: the syndrome, its credit
// count, NAK code or RNR timer, the MSN) fields of RC frames.
var rethAETHCols = []tsharkCol{
	{key: "va", fields: []string{"infiniband.reth.va"}, optional: true},
	{key: "rkey", fields: []string{"infiniband.reth.r_key"}, optional: true},
	{key: "dma_len", fields: []string{"infiniband.reth.dmalen"}, optional: true},
	{key: "syndrome", fields: []string{"infiniband.aeth.syndrome"}, optional: true},
	{key: "msn", fields: []string{"infiniband.aeth.msn"}, optional: true},
	{key: "credits", fields: []string{"infiniband.aeth.syndrome.credit_count"}, optional: true},
	{key: "nak_code", fields: []string{"infiniband.aeth.syndrome.error_code"}, optional: true},
	{key: "rnr_timer", fields: []string{"infiniband.aeth.syndrome.timer"}, optional: true},
}

// tsharkPair is one frame as decode -o json and tshark read it.
type tsharkPair struct {
	frame   int
	decoded map[string]any    // decode's line; numbers as json.Number (a VA does not fit a float64)
	tshark  map[string]string // by tshark field
}

// compareWithTshark runs tshark, with opts, and `roce-probe decode -o json`
// on a capture and pairs their frames by number: tshark's are those whose
// BTH it dissects, decode's the RoCE frames it prints. Both must read the
// same frames (at least one), decode every ICRC valid, and decode's value
// of each column be tshark's, numbers exactly. It returns the pairs in
// tshark's order and how many values of each key were compared.
func compareWithTshark(t *testing.T, tshark, capture string, opts []string, cols ...tsharkCol) ([]tsharkPair, map[string]int) {
	t.Helper()
	fields := []string{"frame.number"}
	for _, c := range cols {
		fields = append(fields, c.fields...)
	}
	rows := testenv.TsharkFields(t, tshark, capture, append([]string{"-Y", "infiniband.bth"}, opts...), fields...)
	if len(rows) == 0 {
		t.Fatalf("tshark found no InfiniBand frame in %s", capture)
	}
	out, stderr, code := runCLI(t, "", "decode", "-o", "ndjson", capture)
	if code != exitOK {
		t.Fatalf("decode -o json %s: exit %d: %s", capture, code, stderr)
	}
	decoded := map[int]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue // no RoCE frame at all
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("decode -o json %s: %v: %s", capture, err, line)
		}
		n, _ := m["frame"].(json.Number)
		i, err := strconv.Atoi(n.String())
		if err != nil || i <= 0 {
			t.Fatalf("decode -o json %s: frame %v: %s", capture, m["frame"], line)
		}
		decoded[i] = m
	}
	if len(decoded) != len(rows) {
		t.Errorf("decode has %d RoCE frames in %s, tshark %d", len(decoded), capture, len(rows))
	}
	var pairs []tsharkPair
	compared := map[string]int{}
	for _, row := range rows {
		n, _ := strconv.Atoi(row["frame.number"])
		got, ok := decoded[n]
		if !ok {
			t.Errorf("frame %d: tshark reads opcode %s PSN %s, decode has no such frame", n, row["infiniband.bth.opcode"], row["infiniband.bth.psn"])
			continue
		}
		if got["icrc_valid"] != true {
			t.Errorf("frame %d (opcode %v PSN %v): icrc_valid %v, want true", n, got["opcode"], got["psn"], got["icrc_valid"])
		}
		for _, c := range cols {
			want := ""
			for _, f := range c.fields {
				if want = row[f]; want != "" {
					break
				}
			}
			g := got[c.key]
			if want == "" {
				if !c.optional || g != nil {
					t.Errorf("frame %d (opcode %v): tshark shows no %s, decode has %s = %v", n, got["opcode"], strings.Join(c.fields, "|"), c.key, g)
				}
				continue
			}
			var ok bool
			switch v := g.(type) {
			case json.Number:
				u, err := strconv.ParseUint(want, 0, 64)
				ok = err == nil && v.String() == strconv.FormatUint(u, 10)
			case string:
				if c.hexBytes {
					ok = "0x"+v == want
				} else {
					ok = v == want
				}
			}
			if !ok {
				if s, isString := g.(string); isString {
					g = strconv.Quote(s)
				}
				t.Errorf("frame %d (opcode %v): decode %s = %v, tshark %s = %s", n, got["opcode"], c.key, g, strings.Join(c.fields, "|"), want)
				continue
			}
			compared[c.key]++
		}
		pairs = append(pairs, tsharkPair{n, got, row})
	}
	t.Logf("%s: %d frames compared with tshark; values by key: %v", capture, len(pairs), compared)
	return pairs, compared
}
