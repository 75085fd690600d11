package agent

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const yamlConfig = `# the agent of docs/agent.md's example
listen: ":9470"
interval: 30s
peers:
  static: [10.0.0.2, node3=10.0.0.3]
  dns: roce-probe.monitoring.svc.cluster.local
  dns_interval: 1m
  file: /etc/roce-probe/peers
probe:
  rate: 2
  timeout: 500ms
  jitter: 0.1
flows:
  - name: rdma
    select: {roce: v2, family: ipv4, netdev: eth0.100}
    tclass: 106
    sl: 3
  - name: idx3
    select:
      device: mlx5_0
      port: 1
      gid_index: 3
    tos: 106
`

const jsonConfig = `{
	"listen": ":9470",
	"interval": "30s",
	"peers": {"static": ["10.0.0.2", "node3=10.0.0.3"], "dns": "roce-probe.monitoring.svc.cluster.local",
		"dns_interval": "1m", "file": "/etc/roce-probe/peers"},
	"probe": {"rate": 2, "timeout": "500ms", "jitter": 0.1},
	"flows": [
		{"name": "rdma", "select": {"roce": "v2", "family": "ipv4", "netdev": "eth0.100"}, "tclass": 106, "sl": 3},
		{"name": "idx3", "select": {"device": "mlx5_0", "port": 1, "gid_index": 3}, "tos": 106}
	]
}`

func intp(v int) *int { return &v }

// A YAML file and a JSON file with the same settings give the same
// configuration: the defaults with the file's values.
func TestParseConfigYAMLAndJSON(t *testing.T) {
	want := Default()
	want.Listen, want.Interval = ":9470", 30*time.Second
	want.Peers.Static = []string{"10.0.0.2", "node3=10.0.0.3"}
	want.Peers.DNS, want.Peers.DNSInterval, want.Peers.File = "roce-probe.monitoring.svc.cluster.local", time.Minute, "/etc/roce-probe/peers"
	want.Probe.Rate, want.Probe.Timeout, want.Probe.Jitter = 2, 500*time.Millisecond, 0.1
	want.Flows = []FlowConfig{
		{Name: "rdma", Select: SelectConfig{RoCE: "v2", Family: "ipv4", Netdev: "eth0.100", Port: 1}, TClass: intp(106), SL: intp(3), HopLimit: 64},
		{Name: "idx3", Select: SelectConfig{Device: "mlx5_0", Port: 1, GIDIndex: intp(3)}, TOS: intp(106), HopLimit: 64},
	}
	for name, doc := range map[string]string{"yaml": yamlConfig, "json": jsonConfig} {
		c := Default()
		if err := ParseConfig([]byte(doc), name, &c); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, c, want)
		}
	}
	// Mappings of names (trace.routers, topology.netdevs).
	c := Default()
	if err := ParseConfig([]byte("trace:\n  routers:\n    10.31.11.2: spine1\n    \"10.31.12.0/24\": spine2\ntopology:\n  netdevs: {eth0: leaf1}\n"), "f", &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil || !reflect.DeepEqual(c.Trace.Routers, map[string]string{"10.31.11.2": "spine1", "10.31.12.0/24": "spine2"}) ||
		!reflect.DeepEqual(c.Topology.Netdevs, map[string]string{"eth0": "leaf1"}) {
		t.Errorf("routers %v netdevs %v (%v)", c.Trace.Routers, c.Topology.Netdevs, err)
	}
	// An empty file and a null value keep the defaults.
	for _, doc := range []string{"", "# nothing\n", "interval:\n", "{}"} {
		c := Default()
		if err := ParseConfig([]byte(doc), "f", &c); err != nil || !reflect.DeepEqual(c, Default()) {
			t.Errorf("%q: %v, %+v", doc, err, c)
		}
	}
}

// Every bad configuration is refused with the file, the line, the field,
// the value and what is allowed.
func TestParseConfigRejects(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"listne: :9469\n", `f:1: unknown key "listne" in the configuration: want one of listen, interval, shutdown_timeout, peers, probe, listener, metrics, flows`},
		{"peers:\n  dnss: x\n", `f:2: unknown key "dnss" in peers: want one of static, dns, dns_interval, file, file_interval, max`},
		{"listen: :1\nlisten: :2\n", `f:2: listen: given twice: want each key once`},
		{"interval: 15\n", `f:1: interval: "15" is not a duration: want a number with a unit, e.g. 15s, 500ms, 2m`},
		{"probe:\n  rate: fast\n", `f:2: probe.rate: "fast" is not a number: want a decimal number`},
		{"probe:\n  rate: .nan\n", `f:2: probe.rate: ".nan" is not a number`},
		{"peers: [a, b]\n", `f:1: peers: is a list: want a mapping of static, dns, dns_interval, file, file_interval, max`},
		{"peers:\n  static: 10.0.0.1\n", `f:2: peers.static: is "10.0.0.1": want a list`},
		{"flows:\n  - name: a\n    tclass: x\n", `f:3: flows[0].tclass: "x" is not a whole number`},
		{"flows:\n  - name: a\n    select: {netdev: eth0, speed: 1}\n", `unknown key "speed" in flows[0].select: want one of roce, family, netdev, device, port, gid_index`},
		{"interval: &x 15s\nshutdown_timeout: *x\n", `f:1: interval: YAML anchors and aliases are not allowed here`},
		{"listen: [\n", `f: is not YAML or JSON`},
		{"- 1\n", `f:1: is a list: want a mapping of listen`},
		{"trace:\n  routers: [spine1]\n", `f:2: trace.routers: is a list: want a mapping of names to text`},
		{"trace:\n  routers:\n    10.0.0.1: [x]\n", `f:3: trace.routers.10.0.0.1: is a list: want text`},
		{"trace:\n  routers:\n    10.0.0.1: a\n    10.0.0.1: b\n", `trace.routers.10.0.0.1: given twice: want each key once`},
	} {
		c := Default()
		err := ParseConfig([]byte(tc.doc), "f", &c)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant …%s…", tc.doc, err, tc.want)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Listen = "9469" }, `listen: "9469" is not an address: want HOST:PORT`},
		{func(c *Config) { c.Listen = ":http" }, `listen: ":http" has port "http": want a number 0..65535`},
		{func(c *Config) { c.Interval = 100 * time.Millisecond }, "interval: 100ms is out of range: want 1s..1h0m0s"},
		{func(c *Config) { c.Probe.Rate = 11 }, "probe.rate: 11 is out of range: want 0.001..10"},
		{func(c *Config) { c.Probe.Rate = 0 }, "probe.rate: 0 is out of range"},
		{func(c *Config) { c.Probe.Jitter = 1 }, "probe.jitter: 1 is out of range: want 0..0.9"},
		{func(c *Config) { c.Peers.Max = 0 }, "peers.max: 0 is out of range: want 1..65536"},
		{func(c *Config) { c.Peers.Static = []string{"10.0.0.1", "x=fe80::1"} }, `peers.static[1]: "x=fe80::1": fe80::1 is not a unicast address another host can have`},
		{func(c *Config) { c.Peers.Static = []string{"node"} }, `peers.static[0]: "node" is not a peer: want an IP address or NAME=ADDRESS`},
		{func(c *Config) { c.Peers.DNS = "10.0.0.1" }, `peers.dns: "10.0.0.1" is an address`},
		{func(c *Config) { c.Peers.DNS = "a..b" }, `peers.dns: "a..b" has label ""`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a b"}} }, `flows[0].name: "a b": want 1..64 characters`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a"}, {Name: "a"}} }, `flows[1].name: "a" is also the name of flows[0]`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", Select: SelectConfig{RoCE: "v1"}}} }, `flows[0].select.roce: "v1": probes are RoCE v2 frames (UDP 4791): want v2`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", Select: SelectConfig{Family: "inet"}}} }, `flows[0].select.family: "inet": want ipv4 or ipv6`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", Select: SelectConfig{GIDIndex: intp(3)}}} }, `flows[0].select.device: missing: gid_index names an entry`},
		{func(c *Config) {
			c.Flows = []FlowConfig{{Name: "a", Select: SelectConfig{Device: "mlx5_0", GIDIndex: intp(3), Netdev: "eth0"}}}
		}, `flows[0].select.netdev: "eth0" given with gid_index`},
		{func(c *Config) {
			c.Flows = []FlowConfig{{Name: "a", Select: SelectConfig{Device: "d", GIDIndex: intp(256)}}}
		}, `flows[0].select.gid_index: 256 is out of range: want 0..255`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", TClass: intp(256)}} }, `flows[0].tclass: 256 is out of range: want 0..255`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", SL: intp(16)}} }, `flows[0].sl: 16 is out of range: want 0..15`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", TOS: intp(1), SL: intp(1)}} }, `flows[0].tos: given with tclass or sl`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", RDMACM: true, TClass: intp(106)}} }, `flows[0].rdma_cm: given with tclass or sl`},
		{func(c *Config) { c.Flows = []FlowConfig{{Name: "a", HopLimit: 256}} }, `flows[0].hop_limit: 256 is out of range: want 1..255`},
		{func(c *Config) { c.Flows = make([]FlowConfig, MaxFlows+1) }, `flows: 17 flows: want at most 16`},
		{func(c *Config) { c.Trace.Ports = 9 }, `trace.ports: 9 is out of range: want 1..8`},
		{func(c *Config) { c.Trace.MaxPerWindow = 0 }, `trace.max_per_window: 0 is out of range: want 1..1000`},
		{func(c *Config) { c.Trace.Rate = 500 }, `trace.rate: 500 is out of range: want 1..100`},
		{func(c *Config) { c.Trace.Routers = map[string]string{"10.0.0.x": "spine1"} }, `trace.routers: "10.0.0.x" is not an address or a prefix`},
		{func(c *Config) { c.Trace.Routers = map[string]string{"10.0.0.1": "spine 1"} }, `trace.routers.10.0.0.1: "spine 1": want 1..`},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v\nwant …%s…", err, tc.want)
		}
	}
	c := Default()
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

func TestParseFlow(t *testing.T) {
	f, err := ParseFlow("name=rdma, netdev=eth0.100,family=ipv6,tclass=106,sl=3")
	want := FlowConfig{Name: "rdma", Select: SelectConfig{Netdev: "eth0.100", Family: "ipv6"}, TClass: intp(106), SL: intp(3)}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v %v, want %+v", f, err, want)
	}
	f, err = ParseFlow("name=i,device=mlx5_0,port=2,gid_index=3,tos=106,hop_limit=8")
	want = FlowConfig{Name: "i", Select: SelectConfig{Device: "mlx5_0", Port: 2, GIDIndex: intp(3)}, TOS: intp(106), HopLimit: 8}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v %v, want %+v", f, err, want)
	}
	f, err = ParseFlow("name=cm,netdev=eth0,rdma_cm=true")
	want = FlowConfig{Name: "cm", Select: SelectConfig{Netdev: "eth0"}, RDMACM: true}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v %v, want %+v", f, err, want)
	}
	for s, msg := range map[string]string{
		"name=a,speed=1":    `unknown key "speed" in a flow: want one of name, tclass, sl, rdma_cm, tos, hop_limit, roce, family, netdev, device, port, gid_index`,
		"name=a,rdma_cm=on": `rdma_cm: "on" is not a boolean: want true or false`,
		"name=a,tclass=x":   `tclass: "x" is not a whole number`,
		"name=a,name=b":     `name: given twice`,
		"name=a,,":          `"" is not KEY=VALUE`,
		"name=a,gid_index":  `"gid_index" is not KEY=VALUE`,
	} {
		if _, err := ParseFlow(s); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want …%s…", s, err, msg)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.yaml")
	os.WriteFile(p, []byte(yamlConfig), 0o644)
	c := Default()
	if err := LoadConfig(p, &c); err != nil || c.Listen != ":9470" {
		t.Errorf("%v %q", err, c.Listen)
	}
	if err := LoadConfig(filepath.Join(dir, "none"), &c); err == nil || !strings.Contains(err.Error(), "none: cannot be read: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, MaxConfigSize+1), 0o644)
	if err := LoadConfig(big, &c); err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Errorf("big file: %v", err)
	}
}

func TestParsePeer(t *testing.T) {
	for s, want := range map[string]Peer{
		"10.0.0.2":                 {Name: "10.0.0.2", Addr: mustAddr("10.0.0.2")},
		" node-3 = 10.0.0.3 ":      {Name: "node-3", Addr: mustAddr("10.0.0.3")},
		"fd00::7":                  {Name: "fd00::7", Addr: mustAddr("fd00::7")},
		"h=::ffff:10.0.0.4":        {Name: "h", Addr: mustAddr("10.0.0.4")},
		"gpu01.rack2=fd00::9a":     {Name: "gpu01.rack2", Addr: mustAddr("fd00::9a")},
		"n1=10.0.0.5 tor=leaf-3":   {Name: "n1", Addr: mustAddr("10.0.0.5"), ToR: "leaf-3"},
		"10.0.0.6  tor=rack2.leaf": {Name: "10.0.0.6", Addr: mustAddr("10.0.0.6"), ToR: "rack2.leaf"},
	} {
		if p, err := ParsePeer(s); err != nil || p != want {
			t.Errorf("%q: %+v %v, want %+v", s, p, err, want)
		}
	}
	for _, s := range []string{"", "node", "127.0.0.1", "224.0.0.1", "0.0.0.0", "fe80::1%eth0", "a b=10.0.0.1", "=10.0.0.1", "10.0.0.1/24",
		"10.0.0.1 tor=", "10.0.0.1 tor=a/b", "tor=leaf1", "10.0.0.1 rack=2"} {
		if _, err := ParsePeer(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	ps, err := parsePeerFile([]byte("# peers\n10.0.0.2\n\nnode3=10.0.0.3 tor=leaf2 # rack 2\n"))
	if err != nil || len(ps) != 2 || ps[1].Name != "node3" || ps[1].ToR != "leaf2" || ps[0].ToR != "" {
		t.Errorf("%+v %v", ps, err)
	}
	if _, err := parsePeerFile([]byte("10.0.0.2\nbad\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("bad line: %v", err)
	}
}

// Decoders and parsers survive any input: an error or a configuration
// that validates or says why not, never a panic.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{yamlConfig, jsonConfig, "", "a: &x 1\nb: *x\n", "flows: [{name: a, select: {gid_index: 3}}]", "peers: {static: [1]}", "{\"probe\": {\"rate\": 1e308}}",
		"serve_only: true\nsnapshot: roce\nweb_config_file: /etc/w.yml\n", "serve_only: yes\nsnapshot: [off]\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := Default()
		if err := ParseConfig(b, "f", &c); err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("not a ConfigError: %T %v", err, err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field == "" {
				t.Fatalf("Validate: %T %v", err, err)
			}
			return
		}
		if err := c.Purpose(); err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "flows" || len(c.Flows) > 0 || c.ServeOnly {
				t.Fatalf("Purpose: %T %v (flows %d, serve_only %v)", err, err, len(c.Flows), c.ServeOnly)
			}
		}
	})
}

func FuzzParseFlow(f *testing.F) {
	for _, s := range []string{"name=rdma,netdev=eth0,tclass=106,sl=3", "name=i,device=d,gid_index=3,tos=1", "=", ",,,", "select=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fc, err := ParseFlow(s)
		if err != nil {
			return
		}
		c := Default()
		c.Flows = []FlowConfig{fc}
		_ = c.Validate()
	})
}

func FuzzParsePeerFile(f *testing.F) {
	f.Add([]byte("# peers\n10.0.0.2\nnode3=10.0.0.3 # rack 2\nfd00::1\n"))
	f.Add([]byte("=\n==\n::ffff:1.2.3.4\n"))
	f.Add([]byte("n=10.0.0.1 tor=leaf1\n10.0.0.2 tor=\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := parsePeerFile(b)
		if err != nil {
			return
		}
		for _, p := range ps {
			if !p.Addr.IsValid() || p.Name == "" || p.Addr.Is4In6() || (p.ToR != "" && !validName(p.ToR)) {
				t.Fatalf("peer %+v from %q", p, b)
			}
		}
	})
}

// The example file of docs/agent.md ("An example file:") is a
// configuration the agent takes: four flows, the rdma_cm ones with a ToS
// and without (rdma_cm's default), and no traffic class.
func TestDocsExampleConfig(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "agent.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "An example file:\n\n```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/agent.md has no YAML block after \"An example file:\"")
	}
	c, err := ReadConfig([]byte(example), "docs/agent.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Flows) != 4 || c.Flows[2].Name != "rdma-cm" || c.Flows[2].TOS == nil || *c.Flows[2].TOS != 106 || c.Flows[2].TClass != nil ||
		c.Flows[3].Name != "rdma-cm-default" || !c.Flows[3].RDMACM || c.Flows[3].TOS != nil || c.Flows[3].TClass != nil {
		t.Errorf("flows %+v: want rdma, nccl-index3, rdma-cm (ToS 106, no traffic class) and rdma-cm-default (rdma_cm, no ToS)", c.Flows)
	}
}

// Flow and peer names: 1..64 of letters, digits, '_', '.', ':' and '-'
// (docs/agent.md's table), nothing else — no space, '/', '=', non-ASCII
// letter or empty name.
func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"rdma", true}, {"nccl-index3", true}, {"node3.rack_1:a-b", true}, {"AZaz09", true},
		{strings.Repeat("x", 64), true}, {strings.Repeat("x", 65), false}, {"", false},
		{"a b", false}, {"a/b", false}, {"a=b", false}, {"é", false}, {"a\n", false}, {"a,b", false}, {"{a}", false},
	} {
		if got := validName(tc.name); got != tc.ok {
			t.Errorf("validName(%q) = %v, want %v", tc.name, got, tc.ok)
		}
	}
}

// A peer's address follows one rule whether it comes from the
// configuration, the peers file or peers.dns (an answer naming the
// limited broadcast or a link-local address was kept before).
func TestValidPeerAddr(t *testing.T) {
	for s, want := range map[string]bool{"10.0.0.2": true, "fd00::9a": true, "::ffff:10.0.0.4": true,
		"255.255.255.255": false, "fe80::1": false, "169.254.0.9": false, "127.0.0.1": false, "::": false, "ff02::1": false} {
		if got := validPeerAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("%s: %v, want %v", s, got, want)
		}
		if _, err := ParsePeer(s); (err == nil) != want {
			t.Errorf("ParsePeer(%s): %v, want accepted %v", s, err, want)
		}
	}
}
