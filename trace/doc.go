// Package trace finds where along the path a fabric changes the markings
// of RoCE v2 traffic, and which ECMP path a UDP source port (and so a
// flow label) takes: `roce-probe trace` and the agent's automatic traces
// (docs/fabric.md, "Automatic traces") are built on it.
//
// A trace sends real RoCE v2 probes — the frames `roce-probe send` builds
// (probe.Prober: BTH, DETH, a probe payload, a valid ICRC) — to one
// destination with TTL / hop limit 1, 2, 3, ..., keeping the 5-tuple of a
// path fixed (source and destination address, UDP source port, UDP port
// 4791), so every probe of a path is hashed onto the same ECMP next hops.
// A router where the TTL runs out answers with an ICMP or ICMPv6 Time
// Exceeded message that quotes the probe as it arrived there (RFC 792,
// RFC 1812 4.3.2.3, RFC 4443 3.3): the quote's IP header shows the DSCP,
// ECN and TTL that hop received. The destination answers with a probe
// reply when a `roce-probe listen` or the agent runs there (probe's
// responder: every marking that arrived, VLAN and PCP included), or with
// Port Unreachable when nothing owns UDP port 4791 there.
//
// The package is split as probe is:
//
//   - ParseICMP and Match (pure, fuzzed): what an ICMP error quotes and
//     which probe it quotes, by the quoted addresses, UDP ports and
//     lengths, BTH PSN and payload session and sequence number — as many
//     as the quote holds. Each TTL's probe is padded to its own length, so
//     a quote of only the IP and UDP headers (RFC 792's minimum, what many
//     switch ASICs send) still tells the TTL.
//   - Changes, Group, SamePath, Transit, Ports, PortsWithoutNewPath,
//     FlowLabelFor (pure): which marking changed between which hops, which
//     traces took the same path, which hops lie between the two ToRs,
//     which ports to try and when to stop trying.
//   - Run (Linux): the probes and answers, bounded — at most Config.Rate
//     probes per second, Config.Tries per hop with doubling waits (so an
//     ICMP rate limit refills), Config.MaxHops, Config.MaxPorts — with no
//     state kept between calls and nothing sent but probes to the
//     destination. It needs CAP_NET_RAW (a *probe.PermissionError says
//     so); elsewhere it returns an error wrapping collect.ErrNotLinux.
//
// docs/trace.md explains how to read a trace and what routers can hide.
package trace
