//go:build lab && ibverbs && cgo

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/internal/lab"
)

// roce-probe ah on the live lab: --gid-index auto, the live neighbour
// table (resolved on demand) and a real ibv_create_ah agree with the
// prediction; an address nobody has is reported as ETIMEDOUT by both.
func TestLabAHCommand(t *testing.T) {
	n := lab.Nets[1] // vlan100, egress-qos-map 0:3
	out, stderr, code := runCLI(t, "", "ah", "--dev", lab.RDMADevice, "--gid-index", "auto", "--dst", n.PeerIPv4.Addr().String(),
		"--sl", "5", "--tclass", "0x6a", "--hop-limit", "8", "--resolve-neighbour", "--create", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	var doc struct {
		Wire struct {
			DMAC string `json:"dmac"`
			VLAN *int   `json:"vlan"`
			PCP  *int   `json:"pcp"`
			TTL  int    `json:"ttl"`
			Src  string `json:"src"`
		} `json:"wire"`
		Create *struct {
			OK bool `json:"ok"`
		} `json:"create"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	w := doc.Wire
	if w.DMAC != lab.PeerMAC || w.VLAN == nil || *w.VLAN != 100 || w.PCP == nil || *w.PCP != 3 || w.TTL != 64 || w.Src != n.HostIPv4.Addr().String() {
		t.Errorf("wire %+v", w)
	}
	if doc.Create == nil || !doc.Create.OK {
		t.Errorf("ibv_create_ah did not succeed: %s", out)
	}

	out, stderr, code = runCLI(t, "", "ah", "--dev", lab.RDMADevice, "--gid-index", "auto", "--dst", "10.0.0.97", "--resolve-neighbour", "--create")
	if code != exitFinding {
		t.Fatalf("10.0.0.97: exit %d, want 1: %s\n%s", code, stderr, out)
	}
	all := out + stderr
	if strings.Count(all, "ETIMEDOUT") < 2 || !strings.Contains(all, "ibv_create_ah") {
		t.Errorf("want ETIMEDOUT from the prediction and from ibv_create_ah:\n%s", all)
	}
}
