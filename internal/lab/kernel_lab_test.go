//go:build lab && linux

package lab

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// rxe0's hw_counters are the kernel's (KernelFacts.HWCounters): 7.x adds
// sent_bytes and rcvd_bytes to 6.1.192's set (which has lifespan,
// backported); 7.x also has the IB PMA counters/ directory
// (KernelFacts.PMACounters), 6.1 none.
func TestRXEHWCounterNames(t *testing.T) {
	f, err := Facts()
	if err != nil {
		t.Fatal(err)
	}
	list := func(dir string) []string {
		ents, err := os.ReadDir(filepath.Join("/sys/class/infiniband", RDMADevice, "ports/1", dir))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		sort.Strings(got)
		return got
	}
	for _, c := range []struct {
		dir  string
		want []string
	}{{"hw_counters", f.HWCounters}, {"counters", f.PMACounters}} {
		got := list(c.dir)
		want := append([]string(nil), c.want...)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("Linux %s: %s %v, want (measured on %s) %v", KernelRelease(), c.dir, got, f.Measured, want)
		}
	}
}

// rxe in namespaces other than the initial one, per kernel
// (KernelFacts.RXEInNetns): two namespaces joined by a veth pair, an rxe
// device created inside each (rdma link add run there), and
// ibv_rc_pingpong between them. On 7.x the RC exchange completes and the
// devices count the packets; on 6.1 the client fails and its device sends
// nothing.
func TestRXEInNetns(t *testing.T) {
	f, err := Facts()
	if err != nil {
		t.Fatal(err)
	}
	const a, b, da, db = "nsrxe-a", "nsrxe-b", "rxensa", "rxensb"
	for _, ns := range []string{a, b} {
		h, err := newNamedNetns(ns)
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		ns := ns
		t.Cleanup(func() { _ = netns.DeleteNamed(ns) })
	}
	t.Cleanup(func() {
		_ = netlink.RdmaLinkDel(da)
		_ = netlink.RdmaLinkDel(db)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, c := range [][]string{
		{"", "ip", "link", "add", "va", "netns", a, "type", "veth", "peer", "name", "vb", "netns", b},
		{a, "ip", "addr", "add", "10.99.0.1/24", "dev", "va"},
		{b, "ip", "addr", "add", "10.99.0.2/24", "dev", "vb"},
		{a, "ip", "link", "set", "va", "up"},
		{b, "ip", "link", "set", "vb", "up"},
		{a, "rdma", "link", "add", da, "type", "rxe", "netdev", "va"},
		{b, "rdma", "link", "add", db, "type", "rxe", "netdev", "vb"},
	} {
		if out, err := RunIn(ctx, c[0], c[1], c[2:]...); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	for _, d := range []string{da, db} {
		if err := WaitPortActive(d, 1, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	// GID index 1: the IPv4 address (0 is the link-local default GID).
	if err := waitGIDs(da, 1, []gidKey{{netip.MustParseAddr("10.99.0.1"), "va"}}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := waitGIDs(db, 1, []gidKey{{netip.MustParseAddr("10.99.0.2"), "vb"}}, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv := Start(t, b, "ibv_rc_pingpong", "-d", db, "-g", "1", "-n", "5", "-p", "19999")
	if err := WaitTCPListen(ctx, srv, b, 19999); err != nil {
		t.Fatal(err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
	defer ccancel()
	cli := Start(t, a, "ibv_rc_pingpong", "-d", da, "-g", "1", "-n", "5", "-p", "19999", "10.99.0.2")
	cerr := cli.Wait(cctx)
	sent := hwCounter(t, da, "sent_pkts")
	t.Logf("Linux %s: client: %v; %s sent_pkts %d\n%s", KernelRelease(), cerr, da, sent, cli.Output())
	if f.RXEInNetns {
		if cerr != nil || sent == 0 {
			t.Errorf("Linux %s (like %s): want the RC exchange to complete between namespaced rxe devices; client %v, sent_pkts %d", KernelRelease(), f.Measured, cerr, sent)
		}
		if err := srv.Wait(ctx); err != nil {
			t.Errorf("server: %v", err)
		}
	} else if cerr == nil || !strings.Contains(cli.Output(), "local QP operation error") {
		t.Errorf("Linux %s (like %s): want the client to fail with a local QP operation error (rxe works only in the initial namespace); client %v", KernelRelease(), f.Measured, cerr)
	}
}

// hwCounter reads one rxe hw_counter of port 1 (in the initial namespace's
// sysfs, where every device shows its counters).
func hwCounter(t *testing.T, dev, name string) uint64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/sys/class/infiniband", dev, "ports/1/hw_counters", name))
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
