//go:build lab

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/qos"
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
// returns the predicted tags, DSCP and ECN.
func checkPredicts(t *testing.T, h lab.Host, idx, tos int) wirePrediction {
	t.Helper()
	w, _ := checkWire(t, h, idx, tos)
	return w
}

// checkWire is checkPredicts, without --tos when tos is negative (the
// flow of an application that sets no ToS: rdma_cm's configfs
// default_roce_tos applies), returning the whole report too (its steps
// and warnings).
func checkWire(t *testing.T, h lab.Host, idx, tos int) (wirePrediction, checkJSON) {
	t.Helper()
	rp, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"check", "--dev", h.RDMADevice, "--port", "1", "--gid-index", fmt.Sprint(idx), "--rdma-cm", "-o", "json"}
	if tos >= 0 {
		args = append(args, "--tos", fmt.Sprint(tos))
	}
	cmd := exec.Command(rp, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := lab.StartIn(h.Name, cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil && cmd.ProcessState.ExitCode() != exitFinding {
		t.Fatalf("check in %s: %v: %s", h.Name, err, errb.String())
	}
	r := decodeCheck(t, out.String(), errb.String())
	if r.DSCP == nil || r.ECN == nil {
		t.Fatalf("check in %s predicted no DSCP or no ECN: %s", h.Name, out.String())
	}
	w := wirePrediction{dscp: *r.DSCP, ecn: *r.ECN}
	for _, tg := range r.VLANChain {
		p := -1
		if tg.PCP != nil {
			p = *tg.PCP
		}
		w.tags = append(w.tags, struct{ id, pcp int }{tg.ID, p})
	}
	return w, r
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

// collectRDMACM runs `roce-probe collect --out FILE` and returns the
// rdma_cm default the snapshot records for dev's port 1.
func collectRDMACM(t *testing.T, dev string) qos.RDMACMDefault {
	t.Helper()
	file := filepath.Join(t.TempDir(), "snap.json")
	if _, stderr, code := runCLI(t, "", "collect", "--out", file); code != exitOK {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	s, err := host.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if s.Settings == nil {
		t.Fatalf("the snapshot has no settings")
	}
	for _, c := range s.Settings.RDMACM {
		if c.Device == dev && c.Port == 1 {
			return c
		}
	}
	t.Fatalf("the snapshot has no rdma_cm default for %s/1: %+v", dev, s.Settings.RDMACM)
	return qos.RDMACMDefault{}
}

// rdma_cm's configfs default ToS, read and applied (7.x): before the
// group exists, `collect` records h1's rxe1 port 1 as "not exposed" with
// the mkdir to do, and `check --rdma-cm` without --tos assumes 0 with a
// warning; after `mkdir /sys/kernel/config/rdma_cm/rxe1` and writing
// ports/1/default_roce_tos = 72, then 106, `collect` records "read" with
// the value and the mode configfs shows, `check --rdma-cm` without --tos
// (in h1) names the configfs file in its tos step and predicts the VLAN
// tags, PCP, DSCP and ECN of every RC frame of an rdma_cm connection whose
// application sets no ToS (ucmatose without -t), as h2's NIC receives them.
func TestFabricRDMACMDefaultToS(t *testing.T) {
	sw := lab.UseFabric(t)
	cl, srv := sw.Host("h1"), sw.Host("h2")
	n, _ := lab.FabricNetByName("vlan100")
	caddr, saddr := cl.IPv4(n).Addr(), srv.IPv4(n).Addr()
	idx := gidIdx(t, cl, caddr, n.Netdev)
	cfg := "/sys/kernel/config"
	if _, err := os.Stat(filepath.Join(cfg, "rdma_cm")); err != nil {
		if out, err := exec.Command("mount", "-t", "configfs", "none", cfg).CombinedOutput(); err != nil {
			t.Fatalf("mount configfs: %v: %s", err, out)
		}
	}
	dir := filepath.Join(cfg, "rdma_cm", cl.RDMADevice)
	file := filepath.Join(dir, "ports/1/default_roce_tos")
	reset := func() {
		// The value lives in the kernel's cma_device, not in the group:
		// set it back to 0 before removing the group.
		_ = os.WriteFile(file, []byte("0"), 0o644)
		_ = os.Remove(dir)
	}
	reset()
	t.Cleanup(reset)

	c := collectRDMACM(t, cl.RDMADevice)
	if c.Status != qos.SettingNotExposed || c.ToS != nil || c.Mode != nil || c.Source != file || c.Reason == nil || !strings.Contains(*c.Reason, "mkdir "+dir) {
		t.Errorf("before mkdir: %+v (reason %v); want not exposed, source %s, the mkdir to do", c, c.Reason, file)
	}
	_, steps := checkWire(t, cl, idx, -1)
	if !hasStep(steps, "tos", "0 (assumed)", "") || len(steps.Warnings) == 0 || !strings.Contains(strings.Join(steps.Warnings, "\n"), "default_roce_tos") {
		t.Errorf("before mkdir: check without --tos: steps %+v warnings %q; want ToS 0 assumed, with a warning", steps.Steps, steps.Warnings)
	}

	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, tos := range []int{72, 106} {
		if err := os.WriteFile(file, []byte(fmt.Sprint(tos)), 0o644); err != nil {
			t.Fatal(err)
		}
		mode, err := os.ReadFile(filepath.Join(dir, "ports/1/default_roce_mode"))
		if err != nil {
			t.Fatal(err)
		}
		c := collectRDMACM(t, cl.RDMADevice)
		if c.Status != qos.SettingRead || c.ToS == nil || int(*c.ToS) != tos || c.Mode == nil || *c.Mode != strings.TrimSpace(string(mode)) || c.Source != file || c.Reason != nil {
			t.Errorf("default_roce_tos %d: collect recorded %+v; want read, %d, mode %q", tos, c, tos, strings.TrimSpace(string(mode)))
		}
		pred, steps := checkWire(t, cl, idx, -1)
		if !hasStep(steps, "tos", fmt.Sprint(tos), file) {
			t.Errorf("default_roce_tos %d: check's steps %+v do not take ToS %d from %s", tos, steps.Steps, tos, file)
		}
		if pred.dscp != tos>>2 || pred.ecn != tos&3 {
			t.Errorf("default_roce_tos %d: check predicts DSCP %d ECN %d", tos, pred.dscp, pred.ecn)
		}
		capt := sw.CaptureHost(srv.Name)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		lab.Ucmatose(cl, srv, saddr, 21600+i, 2, -1).Run(t, ctx)
		cancel()
		frames := capt.Stop()
		_ = lab.WritePcapng(filepath.Join(lab.ArtifactDir(t), fmt.Sprintf("counters-default-tos-%d.pcapng", tos)), lab.HostNIC, frames)
		rc := rcFramesFrom(frames, caddr, saddr)
		if len(rc) == 0 {
			t.Fatalf("default_roce_tos %d: no RC frame from %s to %s among %d", tos, caddr, saddr, len(frames))
		}
		for _, p := range rc {
			if m := pred.matches(&p); m != "" {
				t.Fatalf("default_roce_tos %d: PSN %#x: %s", tos, p.BTH.PSN, m)
			}
		}
		t.Logf("default_roce_tos %d: %d RC frames as check predicted: %+v", tos, len(rc), pred)
	}
}

// hasStep reports whether a check has step name with result, its why
// naming source (when not empty).
func hasStep(s checkJSON, name, result, source string) bool {
	for _, st := range s.Steps {
		if st.Step == name && st.Result == result && strings.Contains(st.Why, source) {
			return true
		}
	}
	return false
}
