//go:build lab

package collect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/roce-probe/roce-probe/host"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/roce-probe/roce-probe/counters"
	"github.com/roce-probe/roce-probe/internal/lab"
)

// The collector's two sources of rxe0's driver counters agree, on both
// kernels: RDMA netlink (RDMA_NLDEV_CMD_STAT_GET, source "netlink") and,
// when netlink is not used, sysfs hw_counters/ (source "sysfs") give the
// same names and values with nothing moving between the reads — the
// kernel's names (KernelFacts.HWCounters) without lifespan, which netlink
// never lists and the sysfs reader leaves out (docs/counters.md) — and the
// same counters/ (none on 6.1; on 7.x the four rxe fills).
func TestLabCountersNetlinkEqualsSysfs(t *testing.T) {
	f, err := lab.Facts()
	if err != nil {
		t.Fatal(err)
	}
	s := &sysfs{}
	devs, err := readAllOK(s)
	if err != nil {
		t.Fatal(err)
	}
	var rxe []host.Device
	for _, d := range devs {
		if d.Name == lab.RDMADevice {
			rxe = append(rxe, d)
		}
	}
	if len(rxe) != 1 {
		t.Fatalf("no %s among %d devices", lab.RDMADevice, len(devs))
	}
	nl, err := openRDMANetlink()
	if err != nil {
		t.Fatalf("RDMA netlink: %v", err)
	}
	defer nl.close()
	viaNL, errs := s.readRDMACounters(rxe, nl)
	viaFS, errs2 := s.readRDMACounters(rxe, nil)
	if len(errs)+len(errs2) != 0 || len(viaNL) != 1 || len(viaFS) != 1 {
		t.Fatalf("netlink %+v %v; sysfs %+v %v", viaNL, errs, viaFS, errs2)
	}
	n, fs := viaNL[0], viaFS[0]
	if n.Source != counters.SourceNetlink || fs.Source != counters.SourceSysfs {
		t.Errorf("sources %q and %q", n.Source, fs.Source)
	}
	if fmt.Sprint(n.HWCounters) != fmt.Sprint(fs.HWCounters) || fmt.Sprint(n.Counters) != fmt.Sprint(fs.Counters) {
		t.Errorf("netlink %v %v\nsysfs   %v %v", n.HWCounters, n.Counters, fs.HWCounters, fs.Counters)
	}
	want := map[string]bool{}
	for _, name := range f.HWCounters {
		if name != "lifespan" {
			want[name] = true
		}
	}
	for name := range n.HWCounters {
		if !want[name] {
			t.Errorf("Linux %s: %s from netlink is not one of the kernel's counters %v", lab.KernelRelease(), name, f.HWCounters)
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("Linux %s: netlink lacks %v", lab.KernelRelease(), want)
	}
	if len(n.Counters) != map[bool]int{true: 4, false: 0}[len(f.PMACounters) > 0] {
		t.Errorf("Linux %s: counters/ %v: want the four PMA counters rxe fills on 7.x, none on 6.1", lab.KernelRelease(), n.Counters)
	}
	// iproute2's `rdma statistic show` (its own netlink client) reads the
	// same values (its JSON: one object per port, each counter a key).
	ip := iprouteRDMAStats(t, lab.RDMADevice)
	if fmt.Sprint(ip) != fmt.Sprint(n.HWCounters) {
		t.Errorf("Linux %s: rdma -j statistic show link %s/1: %v\nroce-probe's netlink read: %v", lab.KernelRelease(), lab.RDMADevice, ip, n.HWCounters)
	}
	t.Logf("Linux %s: %d hw counters and %d PMA counters, equal from netlink and sysfs: %v %v", lab.KernelRelease(), len(n.HWCounters), len(n.Counters), n.HWCounters, n.Counters)
}

// iprouteRDMAStats runs iproute2's `rdma -j statistic show link DEV/1`
// and returns its counters: every numeric key of the port's object but
// ifindex and port.
func iprouteRDMAStats(t *testing.T, dev string) map[string]uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "rdma", "-j", "statistic", "show", "link", dev+"/1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rdma -j statistic show link %s/1: %v", dev, err)
	}
	var ports []map[string]any
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	if err := d.Decode(&ports); err != nil {
		t.Fatalf("rdma -j statistic show link %s/1: %v\n%s", dev, err, out)
	}
	if len(ports) != 1 || ports[0]["ifname"] != dev {
		t.Fatalf("rdma -j statistic show link %s/1: %s", dev, out)
	}
	m := map[string]uint64{}
	for k, v := range ports[0] {
		num, ok := v.(json.Number)
		if !ok || k == "ifindex" || k == "port" {
			continue
		}
		u, err := strconv.ParseUint(num.String(), 10, 64)
		if err != nil {
			t.Fatalf("rdma statistic: %s %v: %v", k, v, err)
		}
		m[k] = u
	}
	return m
}
