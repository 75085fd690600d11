package agent

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/roce-probe/roce-probe/topology"
)

// DefaultListen is the agent's default HTTP address (/metrics, /snapshot,
// /healthz).
const DefaultListen = ":9469"

// Config is the agent's configuration: what `roce-probe agent` reads from
// its flags and its optional file (YAML or JSON, the keys in the yaml
// tags; docs/agent.md). Default returns the defaults; Validate checks
// every field.
type Config struct {
	// Listen is the HTTP address of /metrics, /snapshot and /healthz.
	Listen string `yaml:"listen"`
	// Interval is how often GID tables, QoS/DCB, counters and settings
	// are read again (also on link and address changes).
	Interval time.Duration `yaml:"interval"`
	// ShutdownTimeout bounds how long a stop may take: HTTP requests in
	// progress are given this long to finish.
	ShutdownTimeout time.Duration  `yaml:"shutdown_timeout"`
	Peers           PeersConfig    `yaml:"peers"`
	Probe           ProbeConfig    `yaml:"probe"`
	Listener        ListenerConfig `yaml:"listener"`
	Metrics         MetricsConfig  `yaml:"metrics"`
	Flows           []FlowConfig   `yaml:"flows"`
	Topology        TopologyConfig `yaml:"topology"`
	Trace           TraceConfig    `yaml:"trace"`
	// WebConfigFile is the Prometheus exporters' web configuration file
	// (prometheus/exporter-toolkit, node_exporter's --web.config.file):
	// TLS (tls_server_config) and basic auth (basic_auth_users, bcrypt
	// hashes) of the HTTP endpoint. "": plain HTTP, no authentication.
	WebConfigFile string `yaml:"web_config_file"`
	// Snapshot is what /snapshot serves: SnapshotFull, SnapshotRoCE or
	// SnapshotOff (docs/agent.md, "Securing the endpoint").
	Snapshot string `yaml:"snapshot"`
	// ServeOnly lets the agent run with no flow: it then only serves the
	// host's metrics and answers its peers' probes. Without it an agent
	// with no flow is a configuration error (Purpose).
	ServeOnly bool `yaml:"serve_only"`
}

// What /snapshot serves (Config.Snapshot).
const (
	// SnapshotFull serves the whole host snapshot, as `roce-probe
	// collect` writes it: every namespace's links, addresses, routes,
	// neighbours and sysctls included.
	SnapshotFull = "full"
	// SnapshotRoCE serves the RoCE-relevant sections only: the RDMA
	// devices and GID tables, DCB, counters, settings and errors, and of
	// the namespaces only the links that carry a GID or are an RDMA
	// port's or DCB's netdev, with the devices below them and their
	// bond; routes and neighbours are left out (empty lists), and of the
	// IPv6 hop limits only those of the kept links.
	SnapshotRoCE = "roce"
	// SnapshotOff answers /snapshot with 404.
	SnapshotOff = "off"
)

// PeersConfig says where the peers come from; the peers are the union of
// the three sources, without this host's own addresses.
type PeersConfig struct {
	// Static lists peers as "ADDRESS" or "NAME=ADDRESS" (NAME becomes the
	// peer label).
	Static []string `yaml:"static"`
	// DNS is a name whose A and AAAA records are the peers (a Kubernetes
	// headless Service), resolved every DNSInterval.
	DNS         string        `yaml:"dns"`
	DNSInterval time.Duration `yaml:"dns_interval"`
	// File lists peers one per line as Static does ('#' starts a
	// comment); it is read again every FileInterval and used when its
	// content changed.
	File         string        `yaml:"file"`
	FileInterval time.Duration `yaml:"file_interval"`
	// Max is no longer used: it chose the lowest addresses as the peers
	// probed. The probe plan (ProbeConfig) bounds what is probed now; the
	// key and --peers-max are accepted, range-checked and ignored, and
	// the agent logs so at its start (docs/agent.md, "Probe plan").
	Max int `yaml:"max"`
}

// ProbeConfig sets how often and how long probes go out.
type ProbeConfig struct {
	// Rate is the probes per second sent to each peer for each flow.
	Rate float64 `yaml:"rate"`
	// Timeout is how long a probe waits for its reply before it is lost.
	Timeout time.Duration `yaml:"timeout"`
	// Jitter spreads each interval between probes uniformly by ±Jitter of
	// it (0.2: 0.8 s to 1.2 s at rate 1), so that agents started together
	// do not probe in lockstep.
	Jitter float64 `yaml:"jitter"`
	// MaxRate bounds the probes per second sent in all; probes over it
	// are not sent and counted as errors (reason rate_limited).
	MaxRate float64 `yaml:"max_rate"`

	// The probe plan (package fleet; docs/agent.md, "Probe plan"). Rate
	// is the rate to each ToR-mate (every peer, in a fleet of at most
	// SamplePeers peers whose ToRs are not known).
	//
	// SampleToRs other ToRs are probed in each round of Rotation, one
	// NIC each, and SamplePeers peers of unknown ToR, each at
	// SampleRate; each target's probes cycle through the UDP source
	// ports that reach ECMPPaths equal-cost paths with probability
	// ECMPConfidence. SendRate bounds what the plan sends a second,
	// ReceiveRate what it expects any host to receive, in all flows
	// together. Seed seeds the plan: agents of one fleet must share it.
	SampleToRs     int           `yaml:"sample_tors"`
	SamplePeers    int           `yaml:"sample_peers"`
	SampleRate     float64       `yaml:"sample_rate"`
	Rotation       time.Duration `yaml:"rotation"`
	ECMPPaths      int           `yaml:"ecmp_paths"`
	ECMPConfidence float64       `yaml:"ecmp_confidence"`
	SendRate       float64       `yaml:"send_rate"`
	ReceiveRate    float64       `yaml:"receive_rate"`
	Seed           uint64        `yaml:"seed"`
	// CPUBudget is the share of one core the agent may use before it
	// lowers its probe rate (fleet.Governor); 0 turns that off.
	CPUBudget float64 `yaml:"cpu_budget"`
}

// MetricsConfig bounds the probe series (docs/metrics.md gives the count).
type MetricsConfig struct {
	// ToRs is the most peer ToRs with series per flow (the least recently
	// probed goes first).
	ToRs int `yaml:"tors"`
	// WorstPairs is how many of the worst pairs have a loss-ratio series.
	WorstPairs int `yaml:"worst_pairs"`
}

// TopologyConfig says which switch (ToR) the host's RoCE netdevs are
// plugged into, when the operator knows better than LLDP or LLDP cannot
// reach the host (docs/agent.md, "Topology"). A configured name wins over
// LLDP and lldpd.
type TopologyConfig struct {
	// ToR names the switch of every RoCE netdev (one ToR per node: a
	// value set per node, e.g. from NVIDIA topograph's
	// network.topology.nvidia.com/leaf node label); "" for none.
	ToR string `yaml:"tor"`
	// Netdevs names the switch per netdev (rail-optimised hosts, whose
	// NICs go to different leaves); it wins over ToR for its netdevs.
	Netdevs map[string]string `yaml:"netdevs"`
	// LLDP listens for the switches' LLDP frames on the RoCE netdevs (a
	// raw socket each); false leaves it to lldpd and the configuration.
	LLDP bool `yaml:"lldp"`
}

// TraceConfig bounds the automatic traces: when an inter-ToR pair loses
// probes or sees them remarked on some UDP source ports, the agent traces
// those ports (package trace) to find the spine they cross and the hop
// that remarks (docs/fabric.md, "Automatic traces"). One trace runs at a
// time; the budgets do not grow with the fleet.
type TraceConfig struct {
	// Enabled turns the traces on (they need CAP_NET_RAW, as the probes).
	Enabled bool `yaml:"enabled"`
	// MaxPerWindow is the most traces started in any Window.
	MaxPerWindow int           `yaml:"max_per_window"`
	Window       time.Duration `yaml:"window"`
	// Cooldown is the period over which one destination gets at most
	// Ports traced ports (in one trace or several, while ports are
	// left); a trace's results are kept as long.
	Cooldown time.Duration `yaml:"cooldown"`
	// Ports is the most UDP source ports traced to one destination per
	// Cooldown (the pair's faulty ones, worst first).
	Ports int `yaml:"ports"`
	// MaxHops, Tries, Timeout and Rate are trace.Config's: the highest
	// TTL, the probes per hop, the first try's wait, the probes a second.
	MaxHops int           `yaml:"max_hops"`
	Tries   int           `yaml:"tries"`
	Timeout time.Duration `yaml:"timeout"`
	Rate    float64       `yaml:"rate"`
	// Routers names the routers by the addresses they answer traces
	// from: an address or a prefix → a name (a router answers from the
	// address of the port its answer leaves by, so one spine shows a
	// different address to each ToR; naming them lets localisation add up
	// what every ToR's agents found). Without a name a hop is its address.
	Routers map[string]string `yaml:"routers"`
}

// maxRouters bounds trace.routers.
const maxRouters = 4096

// switches is the configuration as collect.Options.Switches takes it.
func (t TopologyConfig) switches() map[string]string {
	if t.ToR == "" && len(t.Netdevs) == 0 {
		return nil
	}
	m := map[string]string{}
	if t.ToR != "" {
		m[""] = t.ToR
	}
	for nd, sw := range t.Netdevs {
		m[nd] = sw
	}
	return m
}

// ListenerConfig sets the probe listener's reply rate limits (the
// listener of `roce-probe listen`: docs/probe.md).
type ListenerConfig struct {
	// Rate is the replies per second to one sender.
	Rate float64 `yaml:"rate"`
	// GlobalRate is the replies per second to all senders together.
	GlobalRate float64 `yaml:"global_rate"`
}

// FlowConfig is one flow the agent watches and probes with: a source GID
// and the markings an application would ask for.
type FlowConfig struct {
	// Name labels the flow's metrics (flow="...").
	Name   string       `yaml:"name"`
	Select SelectConfig `yaml:"select"`
	// TClass and SL are the address handle's traffic class and service
	// level (verbs); RDMACM or TOS makes it an rdma_cm flow instead, whose
	// traffic class and SL come from the ToS: TOS, or without it the
	// port's configfs default_roce_tos, as rdma_cm uses it for an
	// application that sets none. Nil: not given (TClass and SL default
	// to 0 for a verbs flow).
	TClass *int `yaml:"tclass"`
	SL     *int `yaml:"sl"`
	RDMACM bool `yaml:"rdma_cm"`
	TOS    *int `yaml:"tos"`
	// HopLimit is the AH's hop limit (the kernel uses the route's).
	HopLimit int `yaml:"hop_limit"`
}

// SelectConfig chooses a flow's source GID: either an entry by device,
// port and index (GIDIndex set), or a rule — the lowest usable entry of
// RoCE version RoCE and address family Family, on Netdev and Device/Port
// when given (the index roce_probe_gid_index reports).
type SelectConfig struct {
	RoCE     string `yaml:"roce"`   // "v2" (probes are RoCE v2 frames)
	Family   string `yaml:"family"` // "ipv4" or "ipv6"
	Netdev   string `yaml:"netdev"`
	Device   string `yaml:"device"`
	Port     int    `yaml:"port"`
	GIDIndex *int   `yaml:"gid_index"`
}

// Bounds of the configuration values.
const (
	MaxFlows      = 16
	MaxPeersLimit = 65536
	maxProbeRate  = 10
	// maxTopologyNetdevs bounds topology.netdevs (and the series of
	// roce_probe_topology_info the configuration can make).
	maxTopologyNetdevs = 64
)

// Default returns the default configuration: listen on DefaultListen,
// read every 15 s, no peers and no flows (the agent then serves the host's
// GID, QoS and counter metrics and answers probes), one probe per second
// per peer and flow with a 1 s timeout and ±20 % jitter.
func Default() Config {
	return Config{
		Listen:          DefaultListen,
		Interval:        15 * time.Second,
		ShutdownTimeout: 5 * time.Second,
		Peers:           PeersConfig{DNSInterval: 30 * time.Second, FileInterval: 5 * time.Second, Max: 1024},
		Probe: ProbeConfig{Rate: 1, Timeout: time.Second, Jitter: 0.2, MaxRate: 5000,
			SampleToRs: 5, SamplePeers: 64, SampleRate: 1, Rotation: 30 * time.Second, ECMPPaths: 16, ECMPConfidence: 0.99,
			SendRate: 500, ReceiveRate: 500, CPUBudget: 0.03},
		Metrics:  MetricsConfig{ToRs: 16, WorstPairs: 10},
		Listener: ListenerConfig{Rate: 100, GlobalRate: 5000},
		Topology: TopologyConfig{LLDP: true},
		Trace: TraceConfig{Enabled: true, MaxPerWindow: 10, Window: 10 * time.Minute, Cooldown: 10 * time.Minute, Ports: 4,
			MaxHops: 8, Tries: 2, Timeout: 500 * time.Millisecond, Rate: 20},
		Snapshot: SnapshotFull,
	}
}

// ConfigError is a configuration value that cannot be used: the field
// (a path such as flows[1].select.netdev, or a flag), the value as given
// and what is allowed. File and Line say where when it came from a file.
type ConfigError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error reads "FILE:LINE: FIELD: MSG".
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":" + strconv.Itoa(e.Line))
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func cfgErr(field, format string, args ...any) *ConfigError {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// validName says whether s is a flow's or a peer's name: 1..64 letters,
// digits, '_', '.', ':' and '-' (a Prometheus label value any query can
// match without quoting trouble). A loop, not a regular expression: one
// compiled at package initialisation cost every roce-probe command.
func validName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// Validate checks every field and fills in what follows from others
// (a selection rule's RoCE version and family). The first problem is
// returned as a *ConfigError.
func (c *Config) Validate() error {
	if err := checkListen(c.Listen); err != nil {
		return cfgErr("listen", "%q %v", c.Listen, err)
	}
	for _, d := range []struct {
		field    string
		v        time.Duration
		min, max time.Duration
	}{
		{"interval", c.Interval, time.Second, time.Hour},
		{"shutdown_timeout", c.ShutdownTimeout, 100 * time.Millisecond, time.Minute},
		{"peers.dns_interval", c.Peers.DNSInterval, time.Second, time.Hour},
		{"peers.file_interval", c.Peers.FileInterval, 100 * time.Millisecond, time.Hour},
		{"probe.timeout", c.Probe.Timeout, time.Millisecond, time.Minute},
		{"probe.rotation", c.Probe.Rotation, time.Second, 24 * time.Hour},
		{"trace.window", c.Trace.Window, time.Second, 24 * time.Hour},
		{"trace.cooldown", c.Trace.Cooldown, time.Second, 24 * time.Hour},
		{"trace.timeout", c.Trace.Timeout, time.Millisecond, 10 * time.Second},
	} {
		if d.v < d.min || d.v > d.max {
			return cfgErr(d.field, "%v is out of range: want %v..%v", d.v, d.min, d.max)
		}
	}
	for _, f := range []struct {
		field    string
		v        float64
		min, max float64
	}{
		{"probe.rate", c.Probe.Rate, 0.001, maxProbeRate},
		{"probe.jitter", c.Probe.Jitter, 0, 0.9},
		{"probe.max_rate", c.Probe.MaxRate, 1, 100000},
		{"listener.rate", c.Listener.Rate, 0.1, 10000},
		{"listener.global_rate", c.Listener.GlobalRate, 1, 100000},
		{"probe.sample_rate", c.Probe.SampleRate, 0.001, maxProbeRate},
		{"probe.ecmp_confidence", c.Probe.ECMPConfidence, 0.5, 0.999999},
		{"probe.send_rate", c.Probe.SendRate, 1, 100000},
		{"probe.receive_rate", c.Probe.ReceiveRate, 1, 100000},
		{"probe.cpu_budget", c.Probe.CPUBudget, 0, 1},
		{"trace.rate", c.Trace.Rate, 1, 100},
	} {
		if math.IsNaN(f.v) || f.v > f.max || f.v < f.min {
			return cfgErr(f.field, "%g is out of range: want %g..%g", f.v, f.min, f.max)
		}
	}
	for _, f := range []struct {
		field    string
		v        int
		min, max int
	}{
		{"probe.sample_tors", c.Probe.SampleToRs, 0, 4096},
		{"probe.sample_peers", c.Probe.SamplePeers, 0, 65536},
		{"probe.ecmp_paths", c.Probe.ECMPPaths, 1, 4096},
		{"metrics.tors", c.Metrics.ToRs, 1, 1024},
		{"metrics.worst_pairs", c.Metrics.WorstPairs, 0, 1000},
		{"trace.max_per_window", c.Trace.MaxPerWindow, 1, 1000},
		{"trace.ports", c.Trace.Ports, 1, maxSportFaults},
		{"trace.max_hops", c.Trace.MaxHops, 2, 32},
		{"trace.tries", c.Trace.Tries, 1, 5},
	} {
		if f.v < f.min || f.v > f.max {
			return cfgErr(f.field, "%d is out of range: want %d..%d", f.v, f.min, f.max)
		}
	}
	if c.Probe.SendRate > c.Probe.MaxRate {
		return cfgErr("probe.send_rate", "%g is over probe.max_rate %g: want at most probe.max_rate (the plan's rate must fit under the hard limit)", c.Probe.SendRate, c.Probe.MaxRate)
	}
	if c.Peers.Max < 1 || c.Peers.Max > MaxPeersLimit {
		return cfgErr("peers.max", "%d is out of range: want 1..%d", c.Peers.Max, MaxPeersLimit)
	}
	for i, s := range c.Peers.Static {
		if _, err := ParsePeer(s); err != nil {
			return cfgErr(fmt.Sprintf("peers.static[%d]", i), "%v", err)
		}
	}
	if c.Peers.DNS != "" {
		if err := checkDNSName(c.Peers.DNS); err != nil {
			return cfgErr("peers.dns", "%q %v", c.Peers.DNS, err)
		}
	}
	if c.Topology.ToR != "" && !topology.ValidSwitch(c.Topology.ToR) {
		return cfgErr("topology.tor", "%q: want 1..%d characters of letters, digits, '_', '.', ':' and '-' (a switch name)", c.Topology.ToR, topology.MaxSwitchLen)
	}
	if len(c.Topology.Netdevs) > maxTopologyNetdevs {
		return cfgErr("topology.netdevs", "%d netdevs: want at most %d", len(c.Topology.Netdevs), maxTopologyNetdevs)
	}
	for nd, sw := range c.Topology.Netdevs {
		if nd == "" || len(nd) > 15 || strings.ContainsAny(nd, "/ \x00") {
			return cfgErr("topology.netdevs", "%q is not a netdev name: want 1..15 characters without '/' or spaces", nd)
		}
		if !topology.ValidSwitch(sw) {
			return cfgErr("topology.netdevs."+nd, "%q: want 1..%d characters of letters, digits, '_', '.', ':' and '-' (a switch name)", sw, topology.MaxSwitchLen)
		}
	}
	if len(c.Trace.Routers) > maxRouters {
		return cfgErr("trace.routers", "%d entries: want at most %d", len(c.Trace.Routers), maxRouters)
	}
	for a, name := range c.Trace.Routers {
		if _, err := parseRouterKey(a); err != nil {
			return cfgErr("trace.routers", "%q is not an address or a prefix: want 10.31.11.2, fd31:11::2 or 10.31.0.0/16", a)
		}
		if !topology.ValidSwitch(name) {
			return cfgErr("trace.routers."+a, "%q: want 1..%d characters of letters, digits, '_', '.', ':' and '-' (a router name)", name, topology.MaxSwitchLen)
		}
	}
	if strings.ContainsRune(c.Peers.File, 0) {
		return cfgErr("peers.file", "%q holds a NUL byte: want a path", c.Peers.File)
	}
	switch c.Snapshot {
	case SnapshotFull, SnapshotRoCE, SnapshotOff:
	default:
		return cfgErr("snapshot", "%q: want %s (the whole snapshot), %s (the RoCE-relevant sections) or %s (no /snapshot)", c.Snapshot, SnapshotFull, SnapshotRoCE, SnapshotOff)
	}
	if strings.ContainsRune(c.WebConfigFile, 0) {
		return cfgErr("web_config_file", "%q holds a NUL byte: want a path", c.WebConfigFile)
	}
	if len(c.Flows) > MaxFlows {
		return cfgErr("flows", "%d flows: want at most %d", len(c.Flows), MaxFlows)
	}
	names := map[string]int{}
	for i := range c.Flows {
		field := fmt.Sprintf("flows[%d]", i)
		if err := c.Flows[i].validate(field); err != nil {
			return err
		}
		if j, dup := names[c.Flows[i].Name]; dup {
			return cfgErr(field+".name", "%q is also the name of flows[%d]: want names that differ (they label the metrics)", c.Flows[i].Name, j)
		}
		names[c.Flows[i].Name] = i
	}
	return nil
}

// Purpose returns a *ConfigError (field "flows") when the configuration
// gives the agent nothing to probe and nothing to watch: no flow (probes
// go out per flow and peer, and the flows are what is watched), unless
// ServeOnly says that serving the host's metrics and answering the
// peers' probes is all it should do. Validate does not check it: an
// agent built without a flow still runs (tests, examples);
// `roce-probe agent` and ReadConfig do.
func (c *Config) Purpose() error {
	if len(c.Flows) > 0 || c.ServeOnly {
		return nil
	}
	msg := "none: the agent has nothing to probe and nothing to watch"
	if len(c.Peers.Static) > 0 || c.Peers.DNS != "" || c.Peers.File != "" {
		msg += " (peers are probed once per flow)"
	}
	return cfgErr("flows", "%s: want at least one flow, or serve_only: true to only serve the host's metrics and answer the peers' probes", msg)
}

func (f *FlowConfig) validate(field string) error {
	if !validName(f.Name) {
		return cfgErr(field+".name", "%q: want 1..64 characters of letters, digits, '_', '.', ':' and '-'", f.Name)
	}
	s := &f.Select
	if s.GIDIndex != nil {
		if s.Device == "" {
			return cfgErr(field+".select.device", "missing: gid_index names an entry of a device's port: want the RDMA device (mlx5_0, rxe0)")
		}
		if *s.GIDIndex < 0 || *s.GIDIndex > 255 {
			return cfgErr(field+".select.gid_index", "%d is out of range: want 0..255", *s.GIDIndex)
		}
		for _, x := range []struct{ k, v string }{{"roce", s.RoCE}, {"family", s.Family}, {"netdev", s.Netdev}} {
			if x.v != "" {
				return cfgErr(field+".select."+x.k, "%q given with gid_index: want either device, port and gid_index, or a rule (roce, family, netdev)", x.v)
			}
		}
	} else {
		switch s.RoCE {
		case "":
			s.RoCE = "v2"
		case "v2":
		case "v1":
			return cfgErr(field+".select.roce", "%q: probes are RoCE v2 frames (UDP 4791): want v2", s.RoCE)
		default:
			return cfgErr(field+".select.roce", "%q: want v2", s.RoCE)
		}
		switch s.Family {
		case "":
			s.Family = "ipv4"
		case "ipv4", "ipv6":
		default:
			return cfgErr(field+".select.family", "%q: want ipv4 or ipv6", s.Family)
		}
	}
	if s.Port == 0 {
		s.Port = 1
	}
	if s.Port < 1 || s.Port > 255 {
		return cfgErr(field+".select.port", "%d is out of range: want 1..255", s.Port)
	}
	for _, x := range []struct {
		k   string
		v   *int
		max int
	}{{"tclass", f.TClass, 255}, {"sl", f.SL, 15}, {"tos", f.TOS, 255}} {
		if x.v != nil && (*x.v < 0 || *x.v > x.max) {
			return cfgErr(field+"."+x.k, "%d is out of range: want 0..%d", *x.v, x.max)
		}
	}
	if f.TOS != nil && (f.TClass != nil || f.SL != nil) {
		return cfgErr(field+".tos", "given with tclass or sl: an rdma_cm flow's traffic class and sl come from its ToS: want tos alone, or tclass and sl")
	}
	if f.RDMACM && (f.TClass != nil || f.SL != nil) {
		return cfgErr(field+".rdma_cm", "given with tclass or sl: an rdma_cm flow's traffic class and sl come from its ToS (tos, or rdma_cm's configfs default_roce_tos without it): want rdma_cm with or without tos, or tclass and sl")
	}
	if f.HopLimit == 0 {
		f.HopLimit = 64
	}
	if f.HopLimit < 1 || f.HopLimit > 255 {
		return cfgErr(field+".hop_limit", "%d is out of range: want 1..255", f.HopLimit)
	}
	return nil
}

// checkListen accepts HOST:PORT with a numeric port (HOST may be empty:
// every address).
func checkListen(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("is not an address: want HOST:PORT, e.g. %s or 127.0.0.1:9469", DefaultListen)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("has port %q: want a number 0..65535", port)
	}
	if strings.ContainsAny(host, " /\x00") {
		return fmt.Errorf("has host %q: want an address or a host name", host)
	}
	return nil
}

// checkDNSName accepts a DNS name (RFC 1123 labels, optional final dot).
func checkDNSName(s string) error {
	name := strings.TrimSuffix(s, ".")
	if name == "" || len(name) > 253 {
		return fmt.Errorf("is not a DNS name: want 1..253 characters")
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return fmt.Errorf("is an address: want a DNS name whose A/AAAA records are the peers (put addresses under peers.static)")
	}
	for _, l := range strings.Split(name, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("has label %q: want labels of 1..63 letters, digits and '-', not starting or ending with '-'", l)
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return fmt.Errorf("has label %q: want letters, digits and '-'", l)
			}
		}
	}
	return nil
}
