package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/roce-probe/roce-probe/collect"
	"github.com/roce-probe/roce-probe/internal/agent"
	"github.com/roce-probe/roce-probe/probe"
)

func init() { register(newAgentCmd) }

// agentFlags are the agent's flags; each one given overrides the
// configuration file's value.
type agentFlags struct {
	config      string
	checkConfig bool
	cfg         agent.Config // flag values over the defaults
	peers       []string
	flows       []string
	logLevel    slog.Level
}

// agentFlagFields maps configuration fields to the flags that set them,
// so that an error names what the user typed.
var agentFlagFields = map[string]string{
	"listen": "--listen", "interval": "--interval", "shutdown_timeout": "--shutdown-timeout",
	"peers.dns": "--peers-dns", "peers.dns_interval": "--peers-dns-interval", "peers.file": "--peers-file",
	"peers.file_interval": "--peers-file-interval", "peers.max": "--peers-max",
	"probe.rate": "--probe-rate", "probe.timeout": "--probe-timeout", "probe.jitter": "--probe-jitter",
	"probe.max_rate": "--probe-max-rate", "listener.rate": "--listener-rate", "listener.global_rate": "--listener-global-rate",
	"probe.sample_tors": "--probe-sample-tors", "probe.sample_peers": "--probe-sample-peers", "probe.sample_rate": "--probe-sample-rate",
	"probe.rotation": "--probe-rotation", "probe.send_rate": "--probe-send-rate", "probe.receive_rate": "--probe-receive-rate",
	"probe.cpu_budget": "--probe-cpu-budget",
	"web_config_file":  "--web.config.file", "snapshot": "--snapshot", "serve_only": "--serve-only",
	"topology.tor": "--tor",
}

func newAgentCmd() *cobra.Command {
	c, _ := agentCommand()
	return c
}

// agentCommand builds the command and returns the flags it fills.
func agentCommand() (*cobra.Command, *agentFlags) {
	f := &agentFlags{cfg: agent.Default()}
	c := &cobra.Command{
		Use:   "agent [--config FILE] [flags]",
		Short: "Run the per-host agent: probe the peers, watch the RoCE configuration, serve Prometheus metrics",
		Long: `agent runs until stopped (SIGTERM or SIGINT): it reads this host's GID tables,
QoS/DCB, counters and settings every --interval and when a link or address
changes, probes its peers for every flow with real RoCE v2 frames at a bounded,
jittered rate (as 'roce-probe send' does) — the peers under its ToR as a mesh,
other ToRs and peers of unknown ToR by a rotating sample, within
--probe-send-rate whatever the fleet's size —, answers its peers' probes (as
'roce-probe listen' does), and serves on --listen:

  /metrics   Prometheus text format (docs/metrics.md)
  /snapshot  the host snapshot of the last read, as 'roce-probe collect' writes it
             (--snapshot full), its RoCE sections only (roce) or 404 (off)
  /pairs     the pairs probed this round, JSON
  /healthz   200 while the agent runs, JSON details

--web.config.file FILE serves them over TLS and/or with basic auth: the
Prometheus exporters' web configuration file (as node_exporter's; keys
tls_server_config, basic_auth_users with bcrypt hashes; docs/agent.md).

A flow is a source GID and the markings an application asks for:
  --flow name=rdma,netdev=eth0.100,family=ipv4,tclass=106,sl=3
  --flow name=idx3,device=mlx5_0,port=1,gid_index=3,tclass=106,sl=3
  --flow name=cm,netdev=eth0,tos=106          (an rdma_cm flow)
  --flow name=cm0,netdev=eth0,rdma_cm=true    (rdma_cm without a ToS: the port's default_roce_tos)
Peers come from --peer (ADDRESS or NAME=ADDRESS, optionally followed by
tor=LEAF: the ToR switch of its NIC), --peers-dns (a name whose
A/AAAA records are the peers, e.g. a Kubernetes headless Service) and
--peers-file (re-read when it changes); this host's own addresses are left out.
An agent without a flow has nothing to probe and nothing to watch: it exits 2
unless --serve-only says that serving the host's metrics and answering the
peers' probes is all it should do.

--config FILE reads the same settings from a YAML or JSON file (docs/agent.md);
flags given override it. A bad value exits 2 naming the field.
--check-config checks the configuration (the file, the flags and the web
configuration file with the certificate and key it names), says so and exits:
0 when it is valid, 2 naming the key or flag when not; it reads nothing of the
host and needs no privilege. Running needs CAP_NET_RAW (raw sockets); reads
need no other privilege.`,
		Example: `  roce-probe agent --peers-dns roce-probe.monitoring.svc --flow name=rdma,netdev=eth0,tclass=106,sl=3
  roce-probe agent --config /etc/roce-probe/agent.yaml
  roce-probe agent --config /etc/roce-probe/agent.yaml --web.config.file /etc/roce-probe/web.yml --check-config
  roce-probe agent --serve-only --snapshot roce`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAgent(cmd, f) },
	}
	fl := c.Flags()
	d := agent.Default()
	fl.StringVar(&f.config, "config", "", "configuration file (YAML or JSON; docs/agent.md)")
	fl.BoolVar(&f.checkConfig, "check-config", false, "check the configuration (file, flags, web configuration file) and exit: 0 valid, 2 not")
	fl.StringVar(&f.cfg.WebConfigFile, "web.config.file", "", "the Prometheus exporters' web configuration file: TLS and basic auth (docs/agent.md)")
	enumVar(fl, &f.cfg.Snapshot, "snapshot", d.Snapshot, "what /snapshot serves: full (the whole snapshot), roce (its RoCE sections) or off (404)",
		choice(agent.SnapshotFull, agent.SnapshotFull), choice(agent.SnapshotRoCE, agent.SnapshotRoCE), choice(agent.SnapshotOff, agent.SnapshotOff))
	fl.BoolVar(&f.cfg.ServeOnly, "serve-only", false, "run without a flow: only serve the host's metrics and answer the peers' probes")
	fl.StringVar(&f.cfg.Listen, "listen", d.Listen, "HTTP address of /metrics, /snapshot and /healthz")
	durationVar(fl, &f.cfg.Interval, "interval", d.Interval, time.Second, time.Hour, false, "how often the host is read again (1s..1h)")
	durationVar(fl, &f.cfg.ShutdownTimeout, "shutdown-timeout", d.ShutdownTimeout, 100*time.Millisecond, time.Minute, false, "how long requests in progress may take when stopping (100ms..1m)")
	fl.StringArrayVar(&f.peers, "peer", nil, "a peer: ADDRESS or NAME=ADDRESS (repeatable; replaces the file's peers.static)")
	fl.StringVar(&f.cfg.Peers.DNS, "peers-dns", "", "a DNS name whose A/AAAA records are the peers")
	durationVar(fl, &f.cfg.Peers.DNSInterval, "peers-dns-interval", d.Peers.DNSInterval, time.Second, time.Hour, false, "how often --peers-dns is resolved (1s..1h)")
	fl.StringVar(&f.cfg.Peers.File, "peers-file", "", "a file of peers, one per line (ADDRESS or NAME=ADDRESS), re-read when it changes")
	durationVar(fl, &f.cfg.Peers.FileInterval, "peers-file-interval", d.Peers.FileInterval, 100*time.Millisecond, time.Hour, false, "how often --peers-file is checked (100ms..1h)")
	intVar(fl, &f.cfg.Peers.Max, "peers-max", d.Peers.Max, 1, agent.MaxPeersLimit, "no longer used: accepted and ignored (the probe plan bounds what is probed)")
	fl.MarkDeprecated("peers-max", "the probe plan bounds what is probed (--probe-send-rate, --probe-sample-tors, --probe-sample-peers; docs/agent.md)")
	floatVar(fl, &f.cfg.Probe.Rate, "probe-rate", d.Probe.Rate, 0.001, 10, "probes per second to each ToR-mate for each flow (0.001..10)")
	intVar(fl, &f.cfg.Probe.SampleToRs, "probe-sample-tors", d.Probe.SampleToRs, 0, 4096, "other ToRs probed each round, one NIC each (0..4096)")
	intVar(fl, &f.cfg.Probe.SamplePeers, "probe-sample-peers", d.Probe.SamplePeers, 0, 65536, "peers of unknown ToR probed each round (0..65536)")
	floatVar(fl, &f.cfg.Probe.SampleRate, "probe-sample-rate", d.Probe.SampleRate, 0.001, 10, "probes per second to each sampled target for each flow (0.001..10)")
	durationVar(fl, &f.cfg.Probe.Rotation, "probe-rotation", d.Probe.Rotation, time.Second, 24*time.Hour, false, "how long a round of the probe plan lasts (1s..24h)")
	floatVar(fl, &f.cfg.Probe.SendRate, "probe-send-rate", d.Probe.SendRate, 1, 100000, "most probes per second the plan sends, all flows together (1..100000, at most --probe-max-rate)")
	floatVar(fl, &f.cfg.Probe.ReceiveRate, "probe-receive-rate", d.Probe.ReceiveRate, 1, 100000, "most probes per second the plan expects any host to receive (1..100000)")
	floatVar(fl, &f.cfg.Probe.CPUBudget, "probe-cpu-budget", d.Probe.CPUBudget, 0, 1, "share of one core over which the agent lowers its probe rate (0..1; 0: never)")
	durationVar(fl, &f.cfg.Probe.Timeout, "probe-timeout", d.Probe.Timeout, time.Millisecond, time.Minute, false, "how long a probe waits for its reply (1ms..1m)")
	floatVar(fl, &f.cfg.Probe.Jitter, "probe-jitter", d.Probe.Jitter, 0, 0.9, "spread of the interval between probes, as a fraction of it (0..0.9)")
	floatVar(fl, &f.cfg.Probe.MaxRate, "probe-max-rate", d.Probe.MaxRate, 1, 100000, "most probes per second in all (1..100000)")
	floatVar(fl, &f.cfg.Listener.Rate, "listener-rate", d.Listener.Rate, 0.1, 10000, "replies per second to one sender (0.1..10000)")
	floatVar(fl, &f.cfg.Listener.GlobalRate, "listener-global-rate", d.Listener.GlobalRate, 1, 100000, "replies per second to all senders (1..100000)")
	fl.StringVar(&f.cfg.Topology.ToR, "tor", "", "the switch (ToR) this host's RoCE netdevs are plugged into, as the fleet names it (wins over LLDP; \"\": none)")
	allowEmpty(c, "tor")
	fl.StringArrayVar(&f.flows, "flow", nil, "a flow: KEY=VALUE,... with name, netdev, family, roce, device, port, gid_index, tclass, sl, rdma_cm, tos, hop_limit (repeatable; replaces the file's flows)")
	enumVar(fl, &f.logLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error",
		choice("debug", slog.LevelDebug), choice("info", slog.LevelInfo), choice("warn", slog.LevelWarn), choice("error", slog.LevelError))
	return c, f
}

// agentConfig is the configuration: the defaults, the file's values, the
// flags given.
func agentConfig(cmd *cobra.Command, f *agentFlags) (agent.Config, error) {
	cfg := agent.Default()
	if f.config != "" {
		if err := agent.LoadConfig(f.config, &cfg); err != nil {
			return cfg, usageError{fmt.Errorf("--config %w", err)}
		}
	}
	fl := cmd.Flags()
	set := func(name string, apply func()) {
		if fl.Changed(name) {
			apply()
		}
	}
	set("listen", func() { cfg.Listen = f.cfg.Listen })
	set("interval", func() { cfg.Interval = f.cfg.Interval })
	set("shutdown-timeout", func() { cfg.ShutdownTimeout = f.cfg.ShutdownTimeout })
	set("peer", func() { cfg.Peers.Static = f.peers })
	set("peers-dns", func() { cfg.Peers.DNS = f.cfg.Peers.DNS })
	set("peers-dns-interval", func() { cfg.Peers.DNSInterval = f.cfg.Peers.DNSInterval })
	set("peers-file", func() { cfg.Peers.File = f.cfg.Peers.File })
	set("peers-file-interval", func() { cfg.Peers.FileInterval = f.cfg.Peers.FileInterval })
	set("peers-max", func() { cfg.Peers.Max = f.cfg.Peers.Max })
	set("probe-rate", func() { cfg.Probe.Rate = f.cfg.Probe.Rate })
	set("probe-timeout", func() { cfg.Probe.Timeout = f.cfg.Probe.Timeout })
	set("probe-jitter", func() { cfg.Probe.Jitter = f.cfg.Probe.Jitter })
	set("probe-max-rate", func() { cfg.Probe.MaxRate = f.cfg.Probe.MaxRate })
	set("probe-sample-tors", func() { cfg.Probe.SampleToRs = f.cfg.Probe.SampleToRs })
	set("probe-sample-peers", func() { cfg.Probe.SamplePeers = f.cfg.Probe.SamplePeers })
	set("probe-sample-rate", func() { cfg.Probe.SampleRate = f.cfg.Probe.SampleRate })
	set("probe-rotation", func() { cfg.Probe.Rotation = f.cfg.Probe.Rotation })
	set("probe-send-rate", func() { cfg.Probe.SendRate = f.cfg.Probe.SendRate })
	set("probe-receive-rate", func() { cfg.Probe.ReceiveRate = f.cfg.Probe.ReceiveRate })
	set("probe-cpu-budget", func() { cfg.Probe.CPUBudget = f.cfg.Probe.CPUBudget })
	set("listener-rate", func() { cfg.Listener.Rate = f.cfg.Listener.Rate })
	set("listener-global-rate", func() { cfg.Listener.GlobalRate = f.cfg.Listener.GlobalRate })
	set("web.config.file", func() { cfg.WebConfigFile = f.cfg.WebConfigFile })
	set("snapshot", func() { cfg.Snapshot = f.cfg.Snapshot })
	set("serve-only", func() { cfg.ServeOnly = f.cfg.ServeOnly })
	set("tor", func() { cfg.Topology.ToR = f.cfg.Topology.ToR })
	if fl.Changed("flow") {
		cfg.Flows = nil
		for i, s := range f.flows {
			fc, err := agent.ParseFlow(s)
			if err != nil {
				return cfg, usagef("--flow %q (flow %d): %v", s, i+1, err)
			}
			cfg.Flows = append(cfg.Flows, fc)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{agentFieldError(cmd, f, err)}
	}
	if err := cfg.Purpose(); err != nil {
		if f.config == "" || fl.Changed("flow") || fl.Changed("serve-only") {
			return cfg, usagef("no --flow given: the agent has nothing to probe and nothing to watch: want --flow (e.g. --flow name=rdma,netdev=eth0,tclass=106,sl=3), or --serve-only to only serve the host's metrics and answer the peers' probes")
		}
		return cfg, usageError{agentFieldError(cmd, f, err)}
	}
	if err := agent.CheckWebConfig(cfg.WebConfigFile); err != nil {
		return cfg, usageError{agentFieldError(cmd, f, err)}
	}
	return cfg, nil
}

// flowIndex parses a field of the i-th flow, "flows[i]" or
// "flows[i].key...": i and the key (without a leading "select.").
func flowIndex(field string) (i int, key string, ok bool) {
	rest, ok := strings.CutPrefix(field, "flows[")
	if !ok {
		return 0, "", false
	}
	n, rest, ok := strings.Cut(rest, "]")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return 0, "", false
	}
	i, err := strconv.Atoi(n)
	if err != nil {
		return 0, "", false
	}
	if rest != "" && rest[0] != '.' {
		return 0, "", false
	}
	return i, strings.TrimPrefix(strings.TrimPrefix(rest, "."), "select."), true
}

// agentFieldError names the flag when the bad value came from one, the
// file's field otherwise.
func agentFieldError(cmd *cobra.Command, f *agentFlags, err error) error {
	var ce *agent.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	fl := cmd.Flags()
	if name, ok := agentFlagFields[ce.Field]; ok && fl.Changed(strings.TrimPrefix(name, "--")) {
		return fmt.Errorf("%s: %s", name, ce.Msg)
	}
	if i, key, ok := flowIndex(ce.Field); ok && fl.Changed("flow") && i < len(f.flows) {
		if key == "" {
			return fmt.Errorf("--flow %q (flow %d): %s", f.flows[i], i+1, ce.Msg)
		}
		return fmt.Errorf("--flow %q (flow %d): %s: %s", f.flows[i], i+1, key, ce.Msg)
	}
	if strings.HasPrefix(ce.Field, "peers.static[") && fl.Changed("peer") {
		return fmt.Errorf("--peer: %s", ce.Msg)
	}
	if f.config != "" {
		return fmt.Errorf("--config %s: %s: %s", f.config, ce.Field, ce.Msg)
	}
	return err
}

// agentMemoryLimit is the agent's soft memory limit (runtime/debug
// SetMemoryLimit) unless GOMEMLIMIT says otherwise: 48 MiB, above the
// ~25 MiB live heap of an agent with 100,000 peers (with 24 MiB it
// collected garbage without end: a quarter of a core), below what keeps
// its RSS under 64 MiB. With fewer peers the heap stays far below it
// (GOGC collects at twice the live heap).
const agentMemoryLimit = 48 << 20

func runAgent(cmd *cobra.Command, f *agentFlags) error {
	cfg, err := agentConfig(cmd, f)
	if err != nil {
		return err
	}
	if f.checkConfig {
		fmt.Fprintf(cmd.OutOrStdout(), "the agent's configuration is valid: listen %s, %d flow(s), snapshot %s, web configuration %s\n",
			cfg.Listen, len(cfg.Flows), cfg.Snapshot, orNone(cfg.WebConfigFile))
		return nil
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: f.logLevel}))
	if os.Getenv("GOMEMLIMIT") == "" {
		// A soft limit on the Go runtime's memory: the agent's live heap
		// is a few MiB, but each /metrics render allocates as much again;
		// without a limit the heap may grow to twice its peak before the
		// garbage collector runs. GOMEMLIMIT overrides it.
		debug.SetMemoryLimit(agentMemoryLimit)
	}
	a, err := agent.New(cfg, agent.DefaultDeps(version(), log))
	if err != nil {
		return usageError{err}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		var le *agent.ListenError
		switch {
		case errors.As(err, &le):
			return usagef("--listen %q: %v: want a free HOST:PORT", le.Addr, le.Err)
		case errors.Is(err, collect.ErrNotLinux):
			return usageError{err}
		}
		var perr *probe.PermissionError
		if errors.As(err, &perr) {
			return rawSocketError("agent", err)
		}
		return usageError{err}
	}
	return nil
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
