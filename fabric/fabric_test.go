package fabric

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/roce-probe/roce-probe/fabric/fabrictest"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/qos"
	"github.com/roce-probe/roce-probe/vlan"
)

const hostTestdata = "../host/testdata"

func loadFixture(t testing.TB, name string) *host.Snapshot {
	t.Helper()
	s, err := host.Load(filepath.Join(hostTestdata, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The usable indexes of the fixtures' tables, as their README and
// `roce-probe gids` show them: rxe is a fresh table; in rxe-churned
// 10.0.0.1 moved to 13, 10.0.0.5 at 14 is an address no netdev has (no
// network), index 5's netdev is not visible and fd00:1010::1 is missing;
// mlx5 has v1/v2 pairs, enp1s0f0 (192.168.1.10) at 2/3, enp1s0f0.100
// (10.100.0.10) at 4/5, mv0 (10.100.0.20, fd00:100::20) at 8/9 and 10/11,
// and port 2 (DOWN, link-local only) none.
func TestGIDIndexesFixtures(t *testing.T) {
	for _, c := range []struct {
		fixture string
		want    []string // device/port type network=index
	}{
		{"rxe", []string{
			"rxe0/1 RoCE v2 10.0.0.0/24=1", "rxe0/1 RoCE v2 10.0.100.0/24=3", "rxe0/1 RoCE v2 10.0.200.0/24=6",
			"rxe0/1 RoCE v2 10.10.10.0/24=10", "rxe0/1 RoCE v2 fd00:100::/64=4", "rxe0/1 RoCE v2 fd00:1010::/64=11",
			"rxe0/1 RoCE v2 fd00:200::/64=7", "rxe0/1 RoCE v2 fd00::/64=2"}},
		{"rxe-churned", []string{
			"rxe0/1 RoCE v2 10.0.0.0/24=13", "rxe0/1 RoCE v2 10.0.100.0/24=3", "rxe0/1 RoCE v2 10.0.200.0/24=6",
			"rxe0/1 RoCE v2 10.10.10.0/24=10", "rxe0/1 RoCE v2 fd00:100::/64=4",
			"rxe0/1 RoCE v2 fd00:200::/64=7", "rxe0/1 RoCE v2 fd00::/64=2"}},
		{"mlx5", []string{
			"mlx5_0/1 RoCE v1 10.100.0.0/24=4", "mlx5_0/1 RoCE v2 10.100.0.0/24=5",
			"mlx5_0/1 RoCE v1 192.168.1.0/24=2", "mlx5_0/1 RoCE v2 192.168.1.0/24=3",
			"mlx5_0/1 RoCE v1 fd00:100::/64=10", "mlx5_0/1 RoCE v2 fd00:100::/64=11"}},
	} {
		s := loadFixture(t, c.fixture)
		v, err := s.View("")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, gi := range GIDIndexes(v) {
			got = append(got, fmt.Sprintf("%s/%d %s %s=%d", gi.Device, gi.Port, gi.Type, gi.Network, gi.Index))
			if want := map[bool]string{true: FamilyIPv4, false: FamilyIPv6}[strings.Contains(gi.Network, ".")]; gi.Family != want {
				t.Errorf("%s: %s family %s", c.fixture, gi.Network, gi.Family)
			}
		}
		sort.Strings(got)
		sort.Strings(c.want)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got  %q\n want %q", c.fixture, got, c.want)
		}
	}
}

// Network: the masked prefix of the netdev address the GID is;
// link-local for link-local GIDs; "" for an address no netdev has.
func TestNetwork(t *testing.T) {
	v, err := loadFixture(t, "rxe-churned").View("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{0: NetworkLinkLocal, 2: "fd00::/64", 3: "10.0.100.0/24", 5: NetworkLinkLocal, 13: "10.0.0.0/24", 14: "", 1: ""}
	for idx, w := range want {
		if got := Network(v.Ports[0].Entries[idx], v.NS); got != w {
			t.Errorf("index %d: network %q, want %q", idx, got, w)
		}
	}
	stale := v.Stale(v.Ports[0])
	if why := gid.Unusable(v.Ports[0].Entries[14], stale); !strings.Contains(why, "stale") {
		t.Errorf("index 14 (10.0.0.5, no netdev has it): gid.Unusable %q, want stale", why)
	}
	if why := gid.Unusable(v.Ports[0].Entries[0], stale); !strings.Contains(why, "link-local") {
		t.Errorf("index 0 (the default GID): gid.Unusable %q, want link-local", why)
	}
	if why := gid.Unusable(v.Ports[0].Entries[13], stale); why != "" {
		t.Errorf("index 13 (10.0.0.1 on veth0, moved) is not usable: %q", why)
	}
}

// fleet makes n hosts from the fixture (fabrictest.Host: one network for
// all, per-host addresses) and applies vary to each.
func fleet(t testing.TB, fixture string, n int, vary func(i int, s *host.Snapshot)) []Host {
	t.Helper()
	base, err := os.ReadFile(filepath.Join(hostTestdata, fixture+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var hosts []Host
	for i := 0; i < n; i++ {
		s, err := fabrictest.Host(base, fmt.Sprintf("node-%d", i), i)
		if err != nil {
			t.Fatal(err)
		}
		if vary != nil {
			vary(i, s)
			// Re-decode: the changed snapshot is checked as any
			// file is.
			var buf bytes.Buffer
			if err := s.Encode(&buf); err != nil {
				t.Fatal(err)
			}
			if s, err = host.Decode(&buf); err != nil {
				t.Fatalf("varied snapshot of node-%d: %v", i, err)
			}
		}
		h, err := FromSnapshot(s, fmt.Sprintf("node-%d.json", i))
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	return hosts
}

func link(s *host.Snapshot, name string) *vlan.Link {
	l, ok := s.Namespaces[0].ByName(name)
	if !ok {
		panic("no link " + name)
	}
	return l
}

func dcb(s *host.Snapshot) *qos.DCB {
	for i := range s.DCB {
		if s.DCB[i].Netdev == "enp1s0f0" {
			return &s.DCB[i].DCB
		}
	}
	panic("no DCB of enp1s0f0")
}

func u8(v uint8) *uint8 { return &v }

// The networks of the mlx5-counters fleet (fabrictest widens IPv4 /24s to
// /16) and where port 1's facts come from on each: 192.168.0.0/16 on
// enp1s0f0 (untagged), 10.100.0.0/16 on enp1s0f0.100 (VLAN 100; mv0 has
// an address there too), fd00:100::/64 on mv0 (a macvlan on
// enp1s0f0.100). All three sit on the real netdev enp1s0f0.
const (
	netUntagged = "192.168.0.0/16"
	netVLAN     = "10.100.0.0/16"
	netV6       = "fd00:100::/64"
)

// A finding on each network of port 1 for checks of the real netdev.
var allNets = []string{netVLAN, netUntagged, netV6}

// Four hosts from mlx5-counters (DSCP trust, PFC on 3, DSCP 26→3 48→6,
// ETS 50/50 with priority 3 in TC 1, VLAN 100 egress map 0:3, rdma_cm ToS
// 106 RoCE v2 on port 1, no traffic class override, DCQCN np/rp on 3 with
// CNP DSCP 48 priority 6: host/testdata/README.md); node-2 is
// changed. Each case lists the findings (check network [type]) and the
// value of node-2 and of the others in the first one.
func TestAnalyzeOddHost(t *testing.T) {
	cases := []struct {
		name     string
		vary     func(s *host.Snapshot)
		findings []string // "check network" or "check network type"
		key      string   // the group key of the first finding's value
		odd      any      // node-2's value (JSON form)
		common   any      // the other three's
	}{
		{name: "consistent", vary: func(s *host.Snapshot) {}},
		{name: "GID entries moved", vary: func(s *host.Snapshot) {
			// enp1s0f0.100's v1/v2 pair (4, 5) moves to 14, 15: the
			// lowest usable entries of 10.100.0.0/16 are mv0's 8, 9.
			p := &s.RDMA.Devices[0].Ports[0]
			for i := range p.GIDs {
				switch p.GIDs[i].Index {
				case 4:
					p.GIDs[i].Index = 14
				case 5:
					p.GIDs[i].Index = 15
				}
			}
		}, findings: []string{"gid_index " + netVLAN + " RoCE v1", "gid_index " + netVLAN + " RoCE v2"}, key: "index", odd: 8.0, common: 4.0},
		{name: "RoCE v1 gone", vary: func(s *host.Snapshot) {
			p := &s.RDMA.Devices[0].Ports[0]
			var keep []host.Slot
			for _, g := range p.GIDs {
				if g.Type == gid.TypeRoCEv2 {
					keep = append(keep, g)
				}
			}
			p.GIDs = keep
		}, findings: []string{"roce_version " + netVLAN, "roce_version " + netUntagged, "roce_version " + netV6},
			key: "roce_versions", odd: []any{2.0}, common: []any{1.0, 2.0}},
		{name: "VLAN ID", vary: func(s *host.Snapshot) { link(s, "enp1s0f0.100").Tag.ID = 101 },
			findings: []string{"vlan " + netVLAN, "vlan " + netV6}, key: "vlan_ids", odd: []any{101.0}, common: []any{100.0}},
		{name: "MTU", vary: func(s *host.Snapshot) { link(s, "enp1s0f0").MTU = 1500 },
			findings: []string{"mtu " + netUntagged}, key: "mtu", odd: 1500.0, common: 9000.0},
		{name: "PCP trust", vary: func(s *host.Snapshot) { dcb(s).Apps = nil },
			findings: []string{"trust " + netVLAN, "trust " + netUntagged, "trust " + netV6}, key: "trust", odd: "pcp", common: "dscp"},
		{name: "PFC", vary: func(s *host.Snapshot) { dcb(s).PFC.Enabled = 0x18 },
			findings: prefixed("pfc ", allNets), key: "pfc_priorities", odd: []any{3.0, 4.0}, common: []any{3.0}},
		{name: "DSCP map", vary: func(s *host.Snapshot) { dcb(s).Apps[0].Priority = 4 },
			findings: prefixed("dscp_prio ", allNets), key: "dscp_prio", odd: map[string]any{"26": []any{4.0}, "48": []any{6.0}}, common: map[string]any{"26": []any{3.0}, "48": []any{6.0}}},
		{name: "ETS", vary: func(s *host.Snapshot) { dcb(s).ETS.PrioTC = [8]uint8{0, 0, 0, 0, 1, 0, 0, 0} },
			findings: prefixed("ets ", allNets), key: "ets", // TSA 2 ETS, 0 strict (struct ieee_ets)
			odd:    map[string]any{"prio_tc": []any{0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0}, "tc_tsa": []any{2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, "tc_tx_bw": []any{50.0, 50.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
			common: map[string]any{"prio_tc": []any{0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0}, "tc_tsa": []any{2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}, "tc_tx_bw": []any{50.0, 50.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}}},
		{name: "egress map", vary: func(s *host.Snapshot) { link(s, "enp1s0f0.100").EgressQoS = vlan.QoSMap{0: 4} },
			findings: []string{"egress_qos_map " + netVLAN, "egress_qos_map " + netV6}, key: "egress_qos_maps", odd: []any{map[string]any{"0": 4.0}}, common: []any{map[string]any{"0": 3.0}}},
		{name: "rdma_cm ToS", vary: func(s *host.Snapshot) { s.Settings.RDMACM[0].ToS = u8(96) },
			findings: prefixed("rdma_cm_tos ", allNets), key: "default_roce_tos", odd: 96.0, common: 106.0},
		{name: "rdma_cm mode", vary: func(s *host.Snapshot) { m := "IB/RoCE v1"; s.Settings.RDMACM[0].Mode = &m },
			findings: prefixed("rdma_cm_mode ", allNets), key: "default_roce_mode", odd: "IB/RoCE v1", common: "RoCE v2"},
		{name: "traffic class override", vary: func(s *host.Snapshot) {
			o := &s.Settings.TrafficClass[0]
			o.Status, o.Reason, o.Global = qos.SettingRead, nil, u8(96)
		}, findings: prefixed("traffic_class ", allNets), key: "traffic_class_override",
			odd: map[string]any{"traffic_class": 96.0, "rules": []any{}}, common: map[string]any{"traffic_class": nil, "rules": []any{}}},
		{name: "DCQCN", vary: func(s *host.Snapshot) { f := false; s.Settings.DCQCN[0].RP[3] = &f },
			findings: prefixed("dcqcn ", allNets), key: "dcqcn",
			odd: map[string]any{"np_enable": []any{false, false, false, true, false, false, false, false}, "rp_enable": []any{false, false, false, false, false, false, false, false},
				"cnp_dscp": 48.0, "cnp_802p_prio": 6.0},
			common: map[string]any{"np_enable": []any{false, false, false, true, false, false, false, false}, "rp_enable": []any{false, false, false, true, false, false, false, false},
				"cnp_dscp": 48.0, "cnp_802p_prio": 6.0}},
		{name: "settings not collected", vary: func(s *host.Snapshot) { s.Settings = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hosts := fleet(t, "mlx5-counters", 4, func(i int, s *host.Snapshot) {
				if i == 2 {
					c.vary(s)
				}
			})
			r, err := Analyze(hosts, SourceFiles)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range r.Findings {
				k := f.Check + " " + f.Network
				if f.PerType {
					k += " " + f.Type.String()
				}
				got = append(got, k)
				// node-2 alone on one side, the other three on the
				// other, each port named.
				if len(f.Groups) != 2 || len(f.Groups[0].Ports) != 3 || len(f.Groups[1].Ports) != 1 || f.Groups[1].Ports[0].Host != "node-2" {
					t.Errorf("%s: groups %+v", k, f.Groups)
					continue
				}
				for _, p := range f.Groups[0].Ports {
					if p.Host == "node-2" || p.Device != "mlx5_0" || p.Port != 1 || p.RealNetdev != "enp1s0f0" {
						t.Errorf("%s: majority port %+v", k, p)
					}
				}
				if !strings.Contains(f.Message, "on node-2") || !strings.Contains(f.Message, "on node-0, node-1, node-3") {
					t.Errorf("%s: message %q", k, f.Message)
				}
			}
			sort.Strings(got)
			want := append([]string(nil), c.findings...)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("findings\n got  %q\n want %q", got, want)
			}
			if c.odd == nil || len(r.Findings) == 0 {
				return
			}
			// The values as JSON has them: every value key in every
			// group, null but the check's (docs/json.md, fabric_group).
			b, err := json.Marshal(r.Findings[0])
			if err != nil {
				t.Fatal(err)
			}
			var f struct {
				Groups []map[string]any `json:"groups"`
			}
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			for i, g := range f.Groups {
				for _, k := range valueKeys {
					v, ok := g[k]
					if !ok {
						t.Errorf("group %d has no key %q", i, k)
					} else if (v != nil) != (k == c.key) {
						t.Errorf("group %d: %s = %v, want null but for %s", i, k, v, c.key)
					}
				}
			}
			if !reflect.DeepEqual(f.Groups[0][c.key], c.common) || !reflect.DeepEqual(f.Groups[1][c.key], c.odd) {
				t.Errorf("%s: %#v (others) and %#v (node-2), want %#v and %#v", c.key, f.Groups[0][c.key], f.Groups[1][c.key], c.common, c.odd)
			}
		})
	}
}

// valueKeys are the keys of a group's value, one per kind (docs/json.md,
// `fabric_group`).
var valueKeys = []string{"index", "roce_versions", "vlan_ids", "mtu", "trust", "pfc_priorities", "dscp_prio", "ets",
	"egress_qos_maps", "default_roce_tos", "default_roce_mode", "traffic_class_override", "dcqcn"}

func prefixed(p string, nets []string) []string {
	out := make([]string, len(nets))
	for i, n := range nets {
		out[i] = p + n
	}
	return out
}

// A port whose value is not known is listed as unknown, not as a side: a
// host without rdma_cm's configfs group next to two disagreeing ones.
func TestAnalyzeUnknown(t *testing.T) {
	hosts := fleet(t, "mlx5-counters", 3, func(i int, s *host.Snapshot) {
		switch i {
		case 1:
			c := &s.Settings.RDMACM[0]
			why := "no rdma_cm configfs group"
			c.Status, c.Reason, c.ToS, c.Mode = qos.SettingNotExposed, &why, nil, nil
		case 2:
			s.Settings.RDMACM[0].ToS = u8(0)
		}
	})
	r, err := Analyze(hosts, SourceFiles)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range r.Findings {
		if f.Check != CheckRDMACMToS {
			t.Errorf("finding %s %s", f.Check, f.Network)
			continue
		}
		n++
		if len(f.Unknown) != 1 || f.Unknown[0].Host != "node-1" || len(f.Groups) != 2 {
			t.Errorf("%s: groups %+v unknown %+v", f.Network, f.Groups, f.Unknown)
		}
	}
	if n != 3 {
		t.Errorf("%d rdma_cm_tos findings, want one per network of port 1", n)
	}
}

// Bad input: a host read twice, a snapshot without hostname.
func TestAnalyzeBadInput(t *testing.T) {
	a := fleet(t, "rxe", 1, nil)
	b := fleet(t, "rxe", 1, nil)
	b[0].Origin = "other.json"
	_, err := Analyze(append(a, b...), SourceFiles)
	if !errors.Is(err, ErrDuplicateHost) || !strings.Contains(err.Error(), `"node-0"`) || !strings.Contains(err.Error(), "node-0.json") || !strings.Contains(err.Error(), "other.json") {
		t.Errorf("duplicate host: %v", err)
	}
	s := loadFixture(t, "rxe")
	s.Hostname = ""
	if _, err := FromSnapshot(s, "x.json"); err == nil || !strings.Contains(err.Error(), "x.json: the snapshot has no hostname") {
		t.Errorf("no hostname: %v", err)
	}
}

// A host without RDMA devices is compared on the Soft-RoCE tables every
// command (and the agent's metrics) predict for it, and says so: the rxe
// fixture's netdevs without its device give rxe_veth0, whose fresh table
// is rxe0's (the same kernel rules), 10.0.0.1 at index 1.
func TestHostWithoutRDMA(t *testing.T) {
	s := loadFixture(t, "rxe")
	s.RDMA.Devices = nil
	h, err := FromSnapshot(s, "x")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Notes) == 0 || !strings.Contains(h.Notes[0], "no RDMA device") {
		t.Errorf("notes %q", h.Notes)
	}
	found := false
	for _, a := range h.Attachments {
		if a.Network == "10.0.0.0/24" {
			found = true
			if a.Device != "rxe_veth0" || a.indexOf(gid.TypeRoCEv2) == nil || *a.indexOf(gid.TypeRoCEv2) != 1 {
				t.Errorf("%+v", a)
			}
		}
	}
	if !found {
		t.Errorf("no attachment on 10.0.0.0/24: %+v", h.Attachments)
	}
}

// The GID index from two real tables: rxe and rxe-churned disagree only
// on 10.0.0.0/24 (1 and 13); fd00:1010::/64 is on rxe only.
func TestAnalyzeRXEChurned(t *testing.T) {
	var hosts []Host
	for _, n := range []string{"rxe", "rxe-churned"} {
		h, err := FromSnapshot(loadFixture(t, n), n+".json")
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	r, err := Analyze(hosts, SourceFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	f := r.Findings[0]
	if f.Check != CheckGIDIndex || f.Network != "10.0.0.0/24" || f.Type != gid.TypeRoCEv2 || *f.Groups[0].Value.Index != 1 || *f.Groups[1].Value.Index != 13 ||
		f.Groups[0].Ports[0].Host != "fixture-rxe" || f.Groups[1].Ports[0].Host != "fixture-rxe-churned" {
		t.Errorf("%+v", f)
	}
	for _, n := range r.Networks {
		if n.Network == "fd00:1010::/64" && (n.HostCount != 1 || n.PortCount != 1) {
			t.Errorf("%+v", n)
		}
	}
}

// IndexesOf takes, per port, the first usable entry of each (type,
// network) — a port's choice does not hide the same (type, network) on
// the next port — and orders each port's indexes by network, then type,
// ports in the order of the entries.
func TestIndexesOfPerPort(t *testing.T) {
	e := func(dev string, port, index int, typ gid.Type, network string, usable bool) GIDEntry {
		return GIDEntry{Device: dev, Port: port, Entry: gid.Entry{Index: index, Type: typ}, Family: FamilyIPv4, Network: network, Usable: usable}
	}
	v1, v2 := gid.TypeRoCEv1, gid.TypeRoCEv2
	entries := []GIDEntry{
		e("mlx5_0", 1, 0, v1, "10.1.0.0/16", false), // not usable: its network's first usable entry is 4
		e("mlx5_0", 1, 2, v1, "10.9.0.0/16", true),
		e("mlx5_0", 1, 3, v2, "10.9.0.0/16", true),
		e("mlx5_0", 1, 4, v1, "10.1.0.0/16", true),
		e("mlx5_0", 1, 5, v2, "10.1.0.0/16", true),
		e("mlx5_0", 1, 6, v2, "10.1.0.0/16", true), // a second v2 on 10.1: the first stays
		e("mlx5_0", 2, 0, v2, "10.9.0.0/16", true), // the same (type, network) as port 1's 3
		e("mlx5_0", 2, 1, v1, "10.9.0.0/16", true),
		e("mlx5_1", 1, 7, v2, "10.1.0.0/16", true),
	}
	var got []string
	for _, gi := range IndexesOf(entries) {
		got = append(got, fmt.Sprintf("%s/%d %s %s %d", gi.Device, gi.Port, gi.Network, gi.Type, gi.Index))
	}
	want := []string{
		"mlx5_0/1 10.1.0.0/16 " + v1.String() + " 4",
		"mlx5_0/1 10.1.0.0/16 " + v2.String() + " 5",
		"mlx5_0/1 10.9.0.0/16 " + v1.String() + " 2",
		"mlx5_0/1 10.9.0.0/16 " + v2.String() + " 3",
		"mlx5_0/2 10.9.0.0/16 " + v1.String() + " 1",
		"mlx5_0/2 10.9.0.0/16 " + v2.String() + " 0",
		"mlx5_1/1 10.1.0.0/16 " + v2.String() + " 7",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("IndexesOf:\n got %q\nwant %q", got, want)
	}
}

// NameList names at most max names and counts the rest; HostList names
// each host once.
func TestNameList(t *testing.T) {
	for _, tc := range []struct {
		names []string
		max   int
		want  string
	}{
		{nil, 3, ""}, {[]string{"a"}, 3, "a"}, {[]string{"a", "b", "c"}, 3, "a, b, c"},
		{[]string{"a", "b", "c", "d"}, 3, "a, b, c and 1 more"}, {[]string{"a", "b", "c", "d", "e"}, 2, "a, b and 3 more"},
	} {
		if got := NameList(tc.names, tc.max); got != tc.want {
			t.Errorf("NameList(%q, %d) = %q, want %q", tc.names, tc.max, got, tc.want)
		}
	}
	ports := []PortRef{{Host: "h1", Device: "mlx5_0", Port: 1}, {Host: "h1", Device: "mlx5_0", Port: 2}, {Host: "h2"}, {Host: "h3"}, {Host: "h4"}}
	if got, want := HostList(ports, 2), "h1, h2 and 2 more"; got != want {
		t.Errorf("HostList = %q, want %q", got, want)
	}
}
