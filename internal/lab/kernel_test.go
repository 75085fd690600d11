//go:build linux

package lab

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFactsFor(t *testing.T) {
	for _, c := range []struct {
		release string
		series  string
		netns   bool
		err     string
	}{
		{"6.1.0-56-amd64", "6.1", false, ""},
		{"7.3.4+deb13-amd64", "7", true, ""},
		{"7.4.1+deb13-amd64", "7", true, ""},
		{"6.12.57+deb13-amd64", "", false, "no measurements of Linux 6.12"},
		{"garbage", "", false, "want MAJOR.MINOR"},
	} {
		f, err := FactsFor(c.release)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.release, err, c.err)
			}
			continue
		}
		if err != nil || f.Series != c.series || f.RXEInNetns != c.netns {
			t.Errorf("%s: %+v, %v; want series %s RXEInNetns %v", c.release, f, err, c.series, c.netns)
		}
	}
	f7, _ := FactsFor("7.3.4+deb13-amd64")
	f6, _ := FactsFor("6.1.0-56-amd64")
	extra := map[string]bool{}
	for _, n := range f7.HWCounters {
		extra[n] = true
	}
	for _, n := range f6.HWCounters {
		delete(extra, n)
	}
	if len(extra) != 2 || !extra["sent_bytes"] || !extra["rcvd_bytes"] {
		t.Errorf("7.x counters beyond 6.1's: %v, want sent_bytes rcvd_bytes (6.1.192 has lifespan too)", extra)
	}
}

func TestFabricTopology(t *testing.T) {
	seen := map[string]bool{}
	for i, h := range Hosts {
		if h.index != i+1 {
			t.Errorf("%s: index %d, want %d", h.Name, h.index, i+1)
		}
		for _, v := range []string{h.Name, h.RDMADevice, h.MAC, h.Port, h.PortMAC} {
			if seen[v] {
				t.Errorf("%q used twice", v)
			}
			seen[v] = true
		}
	}
	h2, _ := HostByName("h2")
	n, _ := FabricNetByName("vlan100")
	if got := h2.IPv4(n); got != netip.MustParsePrefix("10.100.0.2/24") {
		t.Errorf("h2 vlan100 IPv4 %v", got)
	}
	if got := h2.Addr(n, true); got != netip.MustParseAddr("fd01:100::2") {
		t.Errorf("h2 vlan100 IPv6 %v", got)
	}
	if _, err := HostByName("h9"); err == nil || !strings.Contains(err.Error(), "h1..h4") {
		t.Errorf("HostByName(h9): %v", err)
	}
	q, _ := FabricNetByName("qinq1000.10")
	h3, _ := HostByName("h3")
	if q.Has(h3) || !q.Has(h2) {
		t.Errorf("QinQ hosts %v", q.Hosts)
	}
}

func TestNetemArgs(t *testing.T) {
	for _, c := range []struct {
		n    Netem
		want string
	}{
		{Netem{Loss: 1}, "loss 1%"},
		{Netem{Loss: 0.5, Duplicate: 100}, "loss 0.5% duplicate 100%"},
		{Netem{Delay: 200 * time.Millisecond, Jitter: time.Millisecond, Reorder: 100, ReorderGap: 2}, "delay 200000us 1000us reorder 100% gap 2"},
	} {
		if got := strings.Join(c.n.args(), " "); got != c.want {
			t.Errorf("%+v: %q, want %q", c.n, got, c.want)
		}
	}
}

func TestTCPListening(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tcp")
	os.WriteFile(p, []byte(`  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1
`), 0o644)
	for port, want := range map[int]bool{18515: true, 8080: false, 1: false} {
		if got, err := tcpListening(p, port); err != nil || got != want {
			t.Errorf("port %d: %v, %v; want %v (8080 is established, not listening)", port, got, err, want)
		}
	}
}

func TestCMIDSrcPort(t *testing.T) {
	for addr, want := range map[string]int{"0.0.0.0:20004": 20004, "fd01:200::1:7001": 7001, "10.100.0.2:7000": 7000, "x": -1, "a:b": -1} {
		if got := (CMID{SrcAddr: addr}).SrcPort(); got != want {
			t.Errorf("%q: %d, want %d", addr, got, want)
		}
	}
}
