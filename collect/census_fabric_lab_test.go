//go:build lab

package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/census"
	"github.com/roce-probe/roce-probe/internal/lab"
	"github.com/roce-probe/roce-probe/internal/rdmatool"
)

// The QP census against iproute2's rdma tool, on rxe (Linux 7.x fabric):
// with two ib_send_lat pairs (traffic classes 106 and 0) and an rping pair
// connected between h1 and h2 (paused), `roce-probe qps -o json` lists every QP and
// rdma_cm ID `rdma -j resource show qp` / `cm_id` list, field for field,
// with the perftest and rping processes' PIDs and commands; the dump bytes
// decode to the same (census/testdata keeps them as fixtures). As root the
// raw QP dump is "not exposed" on rxe (no fill_res_qp_entry_raw: the kernel
// answers EINVAL); as an unprivileged user (setpriv to nobody, no
// capabilities) it is "not permitted" (EPERM: RDMA_NL_ADMIN_PERM) while the
// QP and rdma_cm ID dumps list the same entries.
func TestFabricCensus(t *testing.T) {
	sw := lab.UseFabric(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	h1, h2 := sw.Host("h1"), sw.Host("h2")
	untagged, _ := lab.FabricNetByName("untagged")
	vlan100, _ := lab.FabricNetByName("vlan100")
	gid := func(h lab.Host, n lab.FabricNet) int {
		t.Helper()
		i, err := lab.GIDIndex(h.RDMADevice, h.IPv4(n).Addr(), n.Netdev)
		if err != nil {
			t.Fatal(err)
		}
		return i
	}
	t0 := time.Now()
	// A million exchanges: they run until the test stops them.
	// Each pair is paused once connected: the census needs the QPs, not
	// their traffic, which would take the VM's CPUs (lab.App.Pause).
	start := func(tl lab.Tool) *lab.App {
		app := tl.Start(t, ctx)
		if err := app.Pause(); err != nil {
			t.Fatal(err)
		}
		return app
	}
	a := start(lab.Perftest("ib_send_lat", h1, h2, gid(h1, vlan100), gid(h2, vlan100), 21600, 1000000, 64, "--tclass=106").Niced())
	b := start(lab.Perftest("ib_send_lat", h1, h2, gid(h1, untagged), gid(h2, untagged), 21601, 1000000, 64, "--tclass=0").Niced())
	r := start(lab.RpingForever(h1, h2, h2.IPv4(untagged).Addr().String(), 21602))
	t.Logf("applications connected in %v", time.Since(t0))
	rp, err := lab.RoceProbe()
	if err != nil {
		t.Fatal(err)
	}
	art := lab.ArtifactDir(t)

	// rdma, roce-probe, rdma again, until both rdma readings agree: the
	// census was then taken at a moment the QPs did not change.
	var qpOut, idOut, cliOut []byte
	var lib *census.Census
	var dumps map[string][]byte
	for try := 0; ; try++ {
		q1, i1 := rdmaJSON(t, ctx, "qp"), rdmaJSON(t, ctx, "cm_id")
		dumps = map[string][]byte{}
		censusDumpHook = func(dev string, d census.Dump, reply []byte) {
			dumps[fmt.Sprintf("%s-%s.nl", dev, dumpFile(d))] = append([]byte(nil), reply...)
		}
		lib, err = Census(CensusOptions{Raw: true})
		censusDumpHook = nil
		if err != nil {
			t.Fatal(err)
		}
		cliOut, err = exec.CommandContext(ctx, rp, "qps", "-o", "json").Output()
		if err != nil {
			t.Fatalf("roce-probe qps -o json: %v", err)
		}
		q2, i2 := rdmaJSON(t, ctx, "qp"), rdmaJSON(t, ctx, "cm_id")
		t.Logf("reading %d done at %v", try, time.Since(t0))
		if bytes.Equal(q1, q2) && bytes.Equal(i1, i2) {
			qpOut, idOut = q1, i1
			break
		}
		if try == 4 {
			t.Fatalf("rdma resource show changed across every reading:\n%s\n%s", q1, q2)
		}
	}
	for name, data := range map[string][]byte{"rdma-qp.json": qpOut, "rdma-cm_id.json": idOut, "qps.json": cliOut} {
		_ = os.WriteFile(filepath.Join(art, name), data, 0o644)
	}
	for name, data := range dumps {
		_ = os.WriteFile(filepath.Join(art, name), data, 0o644)
	}
	qps, err := rdmatool.ParseQPs(qpOut)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := rdmatool.ParseCMIDs(idOut)
	if err != nil {
		t.Fatal(err)
	}
	var cli census.Census
	if err := json.Unmarshal(cliOut, &cli); err != nil {
		t.Fatalf("qps -o json: %v\n%s", err, cliOut)
	}
	for _, d := range rdmatool.Compare(qps, ids, &cli, true) {
		t.Errorf("qps -o json vs rdma: %s", d)
	}
	// The dump bytes alone decode to the same entries (commands of
	// processes come from /proc, not from the dump).
	var decoded census.Census
	for name, data := range dumps {
		if strings.HasSuffix(name, "-qp_raw.nl") {
			continue
		}
		c, err := census.Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		decoded.QPs = append(decoded.QPs, c.QPs...)
		decoded.CMIDs = append(decoded.CMIDs, c.CMIDs...)
	}
	for _, d := range rdmatool.Compare(qps, ids, &decoded, false) {
		t.Errorf("decoded dump bytes vs rdma: %s", d)
	}

	// The applications' processes, by the PIDs the lab started.
	owned := func(pid int) (qps []census.QP, ids []census.CMID) {
		for _, q := range cli.QPs {
			if q.PID == pid {
				qps = append(qps, q)
			}
		}
		for _, id := range cli.CMIDs {
			if id.PID == pid {
				ids = append(ids, id)
			}
		}
		return qps, ids
	}
	for _, app := range []struct {
		app  *lab.App
		comm string
		cm   bool
	}{{a, "ib_send_lat", false}, {b, "ib_send_lat", false}, {r, "rping", true}} {
		sp, cp := app.app.PIDs()
		for _, pid := range []int{sp, cp} {
			q, ids := owned(pid)
			if len(q) == 0 {
				t.Errorf("%s PID %d: no QP in the census", app.comm, pid)
			}
			for _, x := range q {
				if x.Comm != app.comm || x.Owner != census.OwnerProcess || x.Type != "RC" || x.State != "RTS" || x.DestQP == nil {
					t.Errorf("%s PID %d: QP %+v, want an RC QP in RTS with a dest_qp, owner process %s", app.comm, pid, x, app.comm)
				}
				if x.TrafficClass != nil || x.SL != nil || x.DSCP != nil || x.MarkingsReason == "" {
					t.Errorf("%s PID %d QP %d: markings %v %v %v (%q): rxe reports none", app.comm, pid, x.QPN, x.TrafficClass, x.SL, x.DSCP, x.MarkingsReason)
				}
			}
			if app.cm && len(ids) == 0 {
				t.Errorf("%s PID %d: no rdma_cm ID in the census", app.comm, pid)
			}
		}
	}
	// Root: the QP and rdma_cm ID dumps are read; the raw one is not
	// exposed by rxe.
	for _, s := range lib.Sources {
		want := census.StatusRead
		if s.Source == census.DumpQPRaw.String() {
			want = census.StatusNotExposed
		}
		if s.Device != "" && s.Status != want {
			t.Errorf("as root: %s of %s: %s (%s), want %s", s.Source, s.Device, s.Status, s.Reason, want)
		}
	}

	// Unprivileged: nobody, without capabilities.
	dir, err := os.MkdirTemp("", "qps-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "roce-probe")
	data, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil || os.Chmod(dir, 0o755) != nil {
		t.Fatal(err)
	}
	t.Logf("as root done at %v", time.Since(t0))
	out, err := exec.CommandContext(ctx, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", bin, "qps", "--raw", "-o", "json").Output()
	if err != nil {
		t.Fatalf("qps --raw as nobody: %v\n%s", err, out)
	}
	_ = os.WriteFile(filepath.Join(art, "qps-nobody.json"), out, 0o644)
	var nobody census.Census
	if err := json.Unmarshal(out, &nobody); err != nil {
		t.Fatal(err)
	}
	if len(nobody.QPs) != len(cli.QPs) || len(nobody.CMIDs) != len(cli.CMIDs) {
		t.Errorf("as nobody: %d QPs and %d rdma_cm IDs, as root %d and %d", len(nobody.QPs), len(nobody.CMIDs), len(cli.QPs), len(cli.CMIDs))
	}
	for _, q := range cli.QPs {
		if n := nobody.QP(q.Device, q.QPN); n == nil || n.PID != q.PID || n.Comm != q.Comm {
			t.Errorf("as nobody: %s QP %d is %+v, as root pid %d comm %q", q.Device, q.QPN, n, q.PID, q.Comm)
		}
	}
	for _, s := range nobody.Sources {
		want := census.StatusRead
		if s.Source == census.DumpQPRaw.String() {
			want = census.StatusNotPermitted
		}
		if s.Device != "" && s.Status != want {
			t.Errorf("as nobody: %s of %s: %s (%s), want %s", s.Source, s.Device, s.Status, s.Reason, want)
		}
	}
	t.Logf("%d QPs, %d rdma_cm IDs; as nobody: %d, %d", len(cli.QPs), len(cli.CMIDs), len(nobody.QPs), len(nobody.CMIDs))
}

// rdmaJSON runs `rdma -j resource show WHAT`.
func rdmaJSON(t *testing.T, ctx context.Context, what string) []byte {
	t.Helper()
	out, err := exec.CommandContext(ctx, "rdma", "-j", "resource", "show", what).Output()
	if err != nil {
		t.Fatalf("rdma -j resource show %s: %v", what, err)
	}
	return out
}

// dumpFile names a dump in fixture file names.
func dumpFile(d census.Dump) string {
	switch d {
	case census.DumpQP:
		return "qp"
	case census.DumpCMID:
		return "cm_id"
	case census.DumpQPRaw:
		return "qp_raw"
	}
	return fmt.Sprint(int(d))
}
