// Package agent is `roce-probe agent`: one long-running process per host
// that watches the host's RoCE configuration, probes its peers and serves
// what it finds to Prometheus.
//
// An Agent, built by New from a Config (flags and an optional YAML or JSON
// file: LoadConfig, ParseConfig, ParseFlow; docs/agent.md) and its Deps
// (DefaultDeps: the live host), runs until its context ends (Run):
//
//   - It reads the host snapshot (collect.Collect: GID tables, namespaces,
//     DCB, counters, settings) every Config.Interval and when the kernel
//     announces a link or address change (collect.Watch), and turns it into
//     metrics: every GID entry, the index a workload should use per
//     network and when it moves, each flow's lossless verdict (qos.Check)
//     and the RDMA and per-priority counters.
//   - It keeps the peers of three sources (a static list, a DNS name whose
//     A/AAAA records are the peers, a file re-read when it changes),
//     without its own addresses; a source that fails keeps its last good
//     list.
//   - It probes every peer for every flow that reaches it with real RoCE
//     v2 frames (probe: a Prober per peer and flow, the
//     markings of the flow's address handle resolved as `roce-probe send
//     --dev --gid-index` does), at a bounded, jittered rate, and records
//     what arrived (VLAN, PCP, DSCP, ECN, TTL), loss and round-trip time.
//   - It answers its peers' probes with the listener of `roce-probe
//     listen` (probe.Responder), on every Ethernet netdev.
//   - It serves /metrics (Prometheus text format), /snapshot (the
//     snapshot of the last read, the JSON of `roce-probe collect`) and
//     /healthz, with bounded connections, concurrency and timeouts.
//
// docs/metrics.md lists every metric. Everything the agent reads from the
// kernel goes through package collect; raw sockets through package probe.
// The agent runs on Linux; elsewhere DefaultDeps make Run fail at once.
package agent
