package vlan

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
)

// testdata/lab.json is the host side of the lab topology
// (internal/lab/topology.go): veth0 with VLAN 100 (egress map 0:3 2:5 4:6
// 6:7), VLAN 200, and QinQ 802.1ad 1000 + 802.1Q 10, with the local and
// connected routes the kernel creates for its addresses.
func labSnap(t *testing.T) *Namespace {
	t.Helper()
	f, err := os.Open("testdata/lab.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDescribe(t *testing.T) {
	s := labSnap(t)
	cases := []struct {
		name, chain, real string
		vid               int
	}{
		{"veth0", "", "veth0", -1},
		{"veth0.100", "100", "veth0", 100},
		{"veth0.q1000", "802.1ad:1000", "veth0", 1000},
		// rdma_read_gid_l2_fields gives the inner tag (the netdev's own
		// VID); the chain, outermost first, is what the wire carries.
		{"veth0.q1000.10", "802.1ad:1000 10", "veth0", 10},
	}
	for _, c := range cases {
		d, err := s.Describe(c.name)
		if err != nil {
			t.Fatal(err)
		}
		var tags []string
		for _, tg := range d.Chain {
			tags = append(tags, tg.String())
		}
		if strings.Join(tags, " ") != c.chain || d.Real != c.real {
			t.Errorf("%s: chain %q real %s, want %q %s", c.name, tags, d.Real, c.chain, c.real)
		}
		if (c.vid < 0) != (d.L2VLANID == nil) || (d.L2VLANID != nil && int(*d.L2VLANID) != c.vid) {
			t.Errorf("%s: L2 VLAN ID %v, want %d", c.name, d.L2VLANID, c.vid)
		}
		for _, tg := range d.Chain {
			if tg.Netdev == "" || tg.PCP != nil {
				t.Errorf("%s: chain tag %+v: want its VLAN device and no PCP", c.name, tg)
			}
		}
	}
	d, _ := s.Describe("veth0.100")
	if d.EgressQoS.String() != "0:3 2:5 4:6 6:7" || d.MAC.String() != "02:00:00:00:00:01" || d.MTU != 1500 {
		t.Errorf("veth0.100 = egress %q mac %s mtu %d", d.EgressQoS, d.MAC, d.MTU)
	}
	q, _ := s.Describe("veth0.q1000.10")
	if o, ok := q.Outermost(); !ok || o.ID != 1000 || o.TPID != TPID8021AD || o.Netdev != "veth0.q1000" || q.Chain[1].Netdev != "veth0.q1000.10" || q.Chain[1].EgressQoS.String() != "0:2" {
		t.Errorf("veth0.q1000.10 chain = %+v", q.Chain)
	}
	if _, err := s.Describe("eth9"); !errors.Is(err, ErrNoLink) || !strings.Contains(err.Error(), `"eth9" in this network namespace`) {
		t.Errorf("Describe(eth9) = %v", err)
	}
}

// drivers/infiniband/core/cache.c, rdma_read_gid_l2_fields and
// get_lower_dev_vlan (Linux 6.1): a macvlan on a VLAN device uses the
// VLAN's ID; a macvlan on a macvlan on a VLAN does not (only the
// first-level lower device counts), though its frames are tagged.
func TestMacvlanVLANID(t *testing.T) {
	s := &Namespace{Links: []Link{
		{Name: "eth0", Index: 2, Kind: KindPhysical},
		{Name: "eth0.7", Index: 3, Kind: KindVLAN, ParentIndex: 2, Tag: &Tag{7, TPID8021Q}},
		{Name: "mv0", Index: 4, Kind: KindMacvlan, ParentIndex: 3},
		{Name: "mv1", Index: 5, Kind: KindMacvlan, ParentIndex: 4},
		{Name: "pod0", Index: 6, Kind: KindMacvlan, ParentIndex: 3, ParentOtherNetns: true},
	}}
	d, _ := s.Describe("mv0")
	if d.L2VLANID == nil || *d.L2VLANID != 7 || len(d.Chain) != 1 || d.Real != "eth0" || strings.Join(d.Lowers, ",") != "eth0.7,eth0" {
		t.Errorf("mv0: vid %v chain %v real %s lowers %v", d.L2VLANID, d.Chain, d.Real, d.Lowers)
	}
	d, _ = s.Describe("mv1")
	if d.L2VLANID != nil || len(d.Chain) != 1 {
		t.Errorf("mv1: vid %v chain %v, want no VID (second-level) and chain [7]", d.L2VLANID, d.Chain)
	}
	d, _ = s.Describe("pod0")
	if !d.LowerInOtherNetns || d.Real != "pod0" {
		t.Errorf("pod0: other netns %v real %s", d.LowerInOtherNetns, d.Real)
	}
	if !s.IsUpper("mv1", "eth0") || !s.IsUpper("eth0.7", "eth0") || s.IsUpper("eth0", "eth0.7") || s.IsUpper("eth0", "eth0") {
		t.Errorf("IsUpper relations wrong")
	}
}

func TestDecodeErrors(t *testing.T) {
	for in, want := range map[string]string{
		`{"links":[{"name":"a","ifindex":1},{"name":"a","ifindex":2}]}`:                     `"a" appears twice`,
		`{"links":[{"name":"a","ifindex":0}]}`:                                              "ifindex 0",
		`{"links":[{"name":"a","ifindex":1,"kind":"vlan"}]}`:                                "without a tag",
		`{"links":[{"name":"a","ifindex":1,"kind":"vlan","tag":{"id":4096,"tpid":33024}}]}`: "VLAN ID 4096: want 0..4095",
		`{"links":[{"name":"a","ifindex":1,"bogus":1}]}`:                                    `unknown field "bogus"`,
		`{"links":[{"name":"a","ifindex":1,"mac":"zz"}]}`:                                   "not a MAC address",
		`{"links":[],"routes":[{"table":254,"type":"unicast"}]}`:                            `routes[0] (netdev "", table 254): no destination prefix`,
		`{"links":[],"neighbors":[{"netdev":"eth0","state":"REACHABLE"}]}`:                  `neighbors[0] (netdev "eth0"): no IP address`,
		`{"links":[],"neighbors":[{"ip":"10.0.0.1","netdev":"eth0","state":"SOMETIMES"}]}`:  "unknown neighbour state",
		`{"links":[],"sysctls":{"ipv4_default_ttl":"64"}}`:                                  "cannot unmarshal string",
	} {
		_, err := Decode(strings.NewReader(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Decode(%s) = %v, want error containing %q", in, err, want)
		}
	}
}

// RouteGet answers as `ip route get` does on the lab host: the connected
// route's device and preferred source for IPv4, the address in the
// destination's prefix for IPv6 (the kernel's routes carry no prefsrc
// there), the local route for an own address, ENETUNREACH without a route.
func TestRouteGet(t *testing.T) {
	s := labSnap(t)
	for dst, want := range map[string]string{
		"10.0.100.2": "veth0.100 10.0.100.1", "10.10.10.9": "veth0.q1000.10 10.10.10.1",
		"fd00:200::2": "veth0.200 fd00:200::1", "::ffff:10.0.0.2": "veth0 10.0.0.1",
		"10.0.0.1": "veth0 10.0.0.1",
	} {
		r, err := s.RouteGet(netip.MustParseAddr(dst))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Dev + " " + r.Src.String(); got != want {
			t.Errorf("route to %s = %s, want %s", dst, got, want)
		}
	}
	if r, _ := s.RouteGet(netip.MustParseAddr("10.0.0.1")); !r.Local {
		t.Errorf("route to an own address is not local: %+v", r)
	}
	if _, err := s.RouteGet(netip.MustParseAddr("192.0.2.1")); err == nil || !strings.Contains(err.Error(), "ENETUNREACH") {
		t.Errorf("route to an unconnected address: %v", err)
	}
}

func TestNamespaceJSONRoundTrip(t *testing.T) {
	s := labSnap(t)
	s.Netns = "blue"
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := back.MarshalJSON()
	if string(b) != string(b2) || back.Netns != "blue" {
		t.Errorf("round trip differs:\n%s\n%s", b, b2)
	}
	own, _ := (&Namespace{}).MarshalJSON()
	if !strings.Contains(string(own), `"netns":null`) || !strings.Contains(string(own), `"links":[]`) {
		t.Errorf("empty namespace = %s", own)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

// Operational states (IFLA_OPERSTATE, as sysfs names them): up and
// unknown carry traffic (the kernel's netif_oper_up); the five others do
// not; "" (not known) is neither up nor reported as not up.
func TestOperStates(t *testing.T) {
	for _, tc := range []struct {
		state     string
		up, notUp bool
	}{
		{"up", true, false}, {"unknown", true, false},
		{"down", false, true}, {"lowerlayerdown", false, true}, {"dormant", false, true}, {"testing", false, true}, {"notpresent", false, true},
		{"", false, false},
	} {
		if OperUp(tc.state) != tc.up || OperNotUp(tc.state) != tc.notUp {
			t.Errorf("%q: OperUp %v, OperNotUp %v; want %v, %v", tc.state, OperUp(tc.state), OperNotUp(tc.state), tc.up, tc.notUp)
		}
	}
	if got := OperText("down"); got != "is down" {
		t.Errorf("OperText(down) = %q", got)
	}
	if got := OperText("lowerlayerdown"); !strings.Contains(got, "the device it is stacked on, or a veth's peer, is down") {
		t.Errorf("OperText(lowerlayerdown) = %q: want it to say what is down", got)
	}
}
