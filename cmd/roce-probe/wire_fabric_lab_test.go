//go:build lab

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/roce"
)

// wirePrediction is what `roce-probe check` predicts for a flow's frames.
type wirePrediction struct {
	tags []struct{ id, pcp int } // outermost first; pcp -1 when unknown
	dscp int
	ecn  int
}

// checkPredicts runs `roce-probe check --rdma-cm --tos T -o json` (the
// lab's binary) inside host h's namespace for its GID index idx and
// returns the predicted tags, DSCP and ECN. This is the one place that
// reads check's JSON in the fabric tests.
func checkPredicts(t *testing.T, h lab.Host, idx, tos int) wirePrediction {
	t.Helper()
	rp, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(rp, "check", "--dev", h.RDMADevice, "--port", "1", "--gid-index", fmt.Sprint(idx), "--rdma-cm", "--tos", fmt.Sprint(tos), "-o", "json")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.StartIn(h.Name, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != exitFinding {
		t.Fatalf("check in %s: %v: %s", h.Name, err, errb.String())
	}
	var r struct {
		VLANChain []struct {
			ID  int  `json:"id"`
			PCP *int `json:"pcp"`
		} `json:"vlan_chain"`
		DSCP *int            `json:"dscp"`
		ECN  json.RawMessage `json:"ecn"` // "ECT(0)" today, a number after issue 12
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("check -o json in %s: %v\n%s", h.Name, err, out.String())
	}
	var w wirePrediction
	for _, tg := range r.VLANChain {
		p := -1
		if tg.PCP != nil {
			p = *tg.PCP
		}
		w.tags = append(w.tags, struct{ id, pcp int }{tg.ID, p})
	}
	if r.DSCP == nil {
		t.Fatalf("check predicted no DSCP: %s", out.String())
	}
	w.dscp = *r.DSCP
	w.ecn = -1
	if n, err := strconv.Atoi(string(r.ECN)); err == nil {
		w.ecn = n
	} else {
		var name string
		_ = json.Unmarshal(r.ECN, &name)
		for i, s := range []string{"Not-ECT", "ECT(1)", "ECT(0)", "CE"} {
			if s == name {
				w.ecn = i
			}
		}
	}
	return w
}

// matches compares a decoded frame with the prediction.
func (w wirePrediction) matches(p *roce.Packet) string {
	var got []string
	for i := 0; i < p.NumVLANs; i++ {
		got = append(got, fmt.Sprintf("%d/pcp%d", p.VLANs[i].ID, p.VLANs[i].PCP))
	}
	var want []string
	for _, tg := range w.tags {
		want = append(want, fmt.Sprintf("%d/pcp%d", tg.id, tg.pcp))
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || int(p.DSCP()) != w.dscp || int(p.ECN()) != w.ecn {
		return fmt.Sprintf("frame: tags [%s] DSCP %d ECN %d; check predicted tags [%s] DSCP %d ECN %d",
			strings.Join(got, " "), p.DSCP(), p.ECN(), strings.Join(want, " "), w.dscp, w.ecn)
	}
	return ""
}

// rcFramesFrom decodes the RC frames (BTH opcode < 0x20) src sent to dst.
func rcFramesFrom(frames []lab.Frame, src, dst netip.Addr) []roce.Packet {
	var out []roce.Packet
	d := roce.NewDecoder()
	for _, f := range frames {
		var p roce.Packet
		if d.Decode(f.Data, &p) == nil && p.Src == src && p.Dst == dst && p.BTH.Opcode < 0x20 {
			out = append(out, p)
		}
	}
	return out
}

func gidIdx(t *testing.T, h lab.Host, a netip.Addr, netdev string) int {
	t.Helper()
	i, err := lab.GIDIndex(h.RDMADevice, a, netdev)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// rdma_cm ToS on the wire: for several ToS values and clients whose VLAN
// devices have different egress-qos-maps (or none), the VLAN tags, PCPs,
// DSCP and ECN that `check --rdma-cm --tos T` predicts in the client's
// namespace are those of every RC frame of a real rdma_cm connection
// (ucmatose -t T), as the server's NIC receives them through the switch.
func TestFabricRDMACMCheckPredictsWire(t *testing.T) {
	sw := lab.UseFabric(t)
	cases := []struct {
		client, server, net string
		v6                  bool
		tos                 int
	}{
		{"h1", "h3", "vlan100", false, 0},
		{"h1", "h3", "vlan100", false, 106},
		{"h1", "h3", "vlan100", true, 184},
		{"h4", "h3", "vlan100", false, 72},
		{"h3", "h1", "vlan100", false, 106},
		{"h2", "h4", "vlan200", false, 106},
		{"h2", "h4", "vlan200", true, 0x2b},
		{"h1", "h2", "untagged", true, 106},
		{"h1", "h2", "qinq1000.10", false, 72},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s-%s-%s-v6=%v-tos%d", c.client, c.server, c.net, c.v6, c.tos), func(t *testing.T) {
			cl, srv := sw.Host(c.client), sw.Host(c.server)
			n, err := lab.FabricNetByName(c.net)
			if err != nil {
				t.Fatal(err)
			}
			caddr, saddr := cl.Addr(n, c.v6), srv.Addr(n, c.v6)
			pred := checkPredicts(t, cl, gidIdx(t, cl, caddr, n.Netdev), c.tos)
			capt := sw.CaptureHost(srv.Name)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			lab.Ucmatose(cl, srv, saddr, 21000+i, 2, c.tos).Run(t, ctx)
			frames := capt.Stop()
			rc := rcFramesFrom(frames, caddr, saddr)
			if len(rc) == 0 {
				t.Fatalf("no RC frame from %s to %s among %d on %s's NIC", caddr, saddr, len(frames), srv.Name)
			}
			bad := 0
			for _, p := range rc {
				if m := pred.matches(&p); m != "" {
					bad++
					if bad <= 3 {
						t.Errorf("PSN %#x: %s", p.BTH.PSN, m)
					}
				}
			}
			t.Logf("%d RC frames %s → %s, egress map %v; predicted %+v; %d differ", len(rc), cl.Name, srv.Name, cl.EgressMap(n), pred, bad)
			_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), fmt.Sprintf("rdmacm-tos-%d.pcapng", i)), lab.HostNIC, frames)
		})
	}
}

// rdma_cm's default ToS (configfs: rdma_cm/DEV/ports/1/default_roce_tos)
// reaches the wire of a connection whose application sets no ToS, as
// check --rdma-cm --tos predicts for that value.
func TestFabricRDMACMDefaultToS(t *testing.T) {
	sw := lab.UseFabric(t)
	cl, srv := sw.Host("h1"), sw.Host("h2")
	n, _ := lab.FabricNetByName("vlan100")
	const tos = 72 // DSCP 18
	cfg := "/sys/kernel/config"
	if _, err := os.Stat(filepath.Join(cfg, "rdma_cm")); err != nil {
		if out, err := exec.Command("mount", "-t", "configfs", "none", cfg).CombinedOutput(); err != nil {
			t.Fatalf("mount configfs: %v: %s", err, out)
		}
	}
	dir := filepath.Join(cfg, "rdma_cm", cl.RDMADevice)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "ports/1/default_roce_tos")
	t.Cleanup(func() {
		_ = os.WriteFile(file, []byte("0"), 0o644)
		_ = os.Remove(dir)
	})
	if err := os.WriteFile(file, []byte(fmt.Sprint(tos)), 0o644); err != nil {
		t.Fatal(err)
	}
	caddr, saddr := cl.IPv4(n).Addr(), srv.IPv4(n).Addr()
	pred := checkPredicts(t, cl, gidIdx(t, cl, caddr, n.Netdev), tos)
	if pred.dscp != tos>>2 {
		t.Fatalf("check predicts DSCP %d for ToS %d", pred.dscp, tos)
	}
	capt := sw.CaptureHost(srv.Name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lab.Ucmatose(cl, srv, saddr, 21100, 2, -1).Run(t, ctx)
	rc := rcFramesFrom(capt.Stop(), caddr, saddr)
	if len(rc) == 0 {
		t.Fatal("no RC frame")
	}
	for _, p := range rc {
		if m := pred.matches(&p); m != "" {
			t.Fatalf("default_roce_tos %d: PSN %#x: %s", tos, p.BTH.PSN, m)
		}
	}
	t.Logf("%d RC frames carried default_roce_tos %d (DSCP %d)", len(rc), tos, tos>>2)
}
