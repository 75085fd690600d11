package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/testenv"
)

// TestAHPcapUnresolvedPrintsAnalysis: with a next hop whose MAC the
// neighbour table does not have (10.0.0.3 is FAILED in the fixture),
// --pcap cannot write the frame, but ah still prints its analysis, says
// why the file was not written and what to give, and writes nothing.
// (It printed nothing but the error before.)
func TestAHPcapUnresolvedPrintsAnalysis(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "ah.pcap")
	out, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "1", "--dst", "10.0.0.3", "--pcap", pcap)...)
	if code != exitFinding {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	for _, want := range []string{"address handle", "grh.dgid", "dmac", "unresolved", "10.0.0.3 FAILED",
		"--pcap " + pcap + " not written: the MAC of next hop 10.0.0.3 is not known: give it with --dmac"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "ETIMEDOUT") {
		t.Errorf("stderr %q does not give the reason ibv_create_ah would fail", stderr)
	}
	if _, err := os.Stat(pcap); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v): nothing may be written", pcap, err)
	}
	out, _, code = runCLI(t, "", ahArgs(t, "--gid-index", "1", "--dst", "10.0.0.3", "--pcap", pcap, "-o", "json")...)
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitFinding {
		t.Fatalf("exit %d, %v: %s", code, err, out)
	}
	if doc["pcap"] != nil || doc["errno"] != "ETIMEDOUT" || doc["wire"] == nil {
		t.Errorf("pcap %v, errno %v, wire %v: want null, ETIMEDOUT and the wire analysis", doc["pcap"], doc["errno"], doc["wire"])
	}
}

// TestAHDmac: --dmac gives the unresolved next hop's MAC; the frame is
// written with it as its Ethernet destination (read back from the pcap
// record's bytes and by tshark), and the JSON says where it came from.
func TestAHDmac(t *testing.T) {
	pcap := filepath.Join(t.TempDir(), "ah.pcap")
	out, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "1", "--dst", "10.0.0.3", "--dmac", "02:00:00:00:00:03",
		"--src-qpn", "0x11", "--pcap", pcap, "-o", "json")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		Wire struct {
			DMAC     string `json:"dmac"`
			DMACFrom string `json:"dmac_from"`
		} `json:"wire"`
		Warnings []struct {
			Field string `json:"field"`
		} `json:"field_warnings"`
		Pcap *struct {
			Bytes int `json:"bytes"`
		} `json:"pcap"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	warned := false
	for _, w := range doc.Warnings {
		warned = warned || w.Field == "dmac"
	}
	if doc.Wire.DMAC != "02:00:00:00:00:03" || doc.Wire.DMACFrom != "given" || !warned || doc.Pcap == nil {
		t.Errorf("wire dmac %q from %q, dmac warning %v, pcap %v; want 02:00:00:00:00:03 from given, a warning, a pcap", doc.Wire.DMAC, doc.Wire.DMACFrom, warned, doc.Pcap)
	}
	data := testenv.FirstFrame(t, pcap)
	if want := "\x02\x00\x00\x00\x00\x03"; string(data[:6]) != want {
		t.Errorf("the frame's destination is % x, want 02 00 00 00 00 03", data[:6])
	}
	tshark := testenv.Tool(t, "tshark")
	rows := testenv.TsharkFields(t, tshark, pcap, nil, "eth.dst", "ip.dst", "infiniband.bth.opcode")
	if len(rows) != 1 || rows[0]["eth.dst"] != "02:00:00:00:00:03" || rows[0]["ip.dst"] != "10.0.0.3" || rows[0]["infiniband.bth.opcode"] != "100" {
		t.Errorf("tshark: %v; want one UD SEND (opcode 100) to 10.0.0.3 at 02:00:00:00:00:03", rows)
	}
}

func TestAHDmacBad(t *testing.T) {
	for _, c := range []struct {
		dmac, want string
	}{
		{"zz", `--dmac "zz" is not a MAC address: want six hex bytes`},
		{"02:00:00:00:00:00:00:03", `--dmac "02:00:00:00:00:00:00:03" is not a MAC address`},
		{"ff:ff:ff:ff:ff:ff", "--dmac ff:ff:ff:ff:ff:ff is a group (multicast or broadcast) address"},
		{"01:00:5e:00:00:01", "--dmac 01:00:5e:00:00:01 is a group"},
	} {
		_, stderr, code := runCLI(t, "", ahArgs(t, "--gid-index", "1", "--dst", "10.0.0.3", "--dmac", c.dmac)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("--dmac %s: exit %d, %q; want 2 and %q", c.dmac, code, stderr, c.want)
		}
	}
}

// TestAHFromWCErrno: a completion without the GRH flag makes the kernel
// rule fail with EPROTOTYPE (drivers/infiniband/core/verbs.c,
// ib_init_ah_attr_from_wc: "if (!(wc->wc_flags & IB_WC_GRH)) return
// -EPROTOTYPE;" for a RoCE port). The JSON's errno said null for it.
func TestAHFromWCErrno(t *testing.T) {
	args := append([]string{"ah", "--dev", "rxe0"}, fromArgs("rxe")...)
	args = append(args, "--from-wc", strings.Repeat("00", 40), "--wc", "", "--behaviour", "kernel", "-o", "json")
	out, stderr, code := runCLI(t, "", args...)
	if code != exitFinding {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	var doc struct {
		FromWC []struct {
			Errno *string `json:"errno"`
		} `json:"from_wc"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.FromWC) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	if e := doc.FromWC[0].Errno; e == nil || *e != "EPROTOTYPE" {
		t.Errorf("errno %v, want EPROTOTYPE", e)
	}
}

// TestAHFromWCTable: the table names each rule by its function, the
// kernel's ib_init_ah_attr_from_wc and rdma-core's ibv_init_ah_from_wc
// (docs/ah.md).
func TestAHFromWCTable(t *testing.T) {
	args := append([]string{"ah", "--dev", "rxe0"}, fromArgs("rxe")...)
	args = append(args, "--from-wc", strings.Repeat("00", 40), "--wc", "")
	out, _, _ := runCLI(t, "", args...)
	for _, want := range []string{"kernel (ib_init_ah_attr_from_wc)\n", "rdma-core (ibv_init_ah_from_wc)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
