// Package probe is the machinery behind `roce-probe send` and `roce-probe
// listen`: active probing of the markings a fabric applies to RoCE v2
// traffic.
//
// A probe is a real RoCE v2 UD SEND_ONLY frame (BTH opcode 0x64 and a
// DETH, valid ICRC) whose payload carries a signature, a version, a session
// ID, a sequence number, the sender's timestamp and the markings the sender
// put on the frame: VLAN ID and PCP (or untagged), DSCP, ECN, TTL / hop
// limit and UDP source port. A listener that receives a well-formed probe
// answers its sender with one reply frame, never larger than the probe,
// reporting the markings that arrived. Compare turns the (sent, received)
// pair into findings: DSCP or PCP remarked, tag stripped or changed, ECN
// marked CE, routed hops, loss.
//
// The package is split in layers that can be tested apart:
//
//   - Payload, Marshal and ParsePayload: the probe and reply payload format.
//   - Frame.Build and ParseFrame: whole Ethernet frames around a payload,
//     built with roce.FrameSpec and decoded with roce.Decoder (the one
//     decoder of `roce-probe decode`, on roce.WalkFrame's walk), ICRC
//     checked.
//   - Responder: the listener's decision logic (validation, per-sender rate
//     limiting with bounded memory in RateLimiter, counters), free of sockets:
//     Handle returns the reply and an Event describing the probe (listen),
//     HandleReply the same decision's reply alone (the agent).
//   - Prober: the sender's logic (numbered probes, matching replies and the
//     egress copies), free of sockets.
//   - Compare and Sweep: findings and the DSCP/PCP map a path applies.
//   - The markings a probe run asks for, one rule each for `send` and the
//     agent: RandomSport (the run's UDP source port), BaseMarkings (sl and
//     traffic class to PCP, DSCP, ECN), and AHResolver, which resolves an
//     AHFlow's address handle on a host snapshot (host.View.NewAHResolver)
//     to each destination's frame and markings (MarkingsFromAH).
//   - Linux only: Conn (AF_PACKET send and capture in Go's network poller,
//     with a kernel filter that passes only RoCE v2 frames), Send and Listen
//     (the commands' loops). On other systems the package builds, and these
//     return an error wrapping collect.ErrNotLinux. Where a probe goes (the
//     Endpoint: wire device, tags, addresses, next hop and its MAC) is worked
//     out from the host snapshot by this package (ResolveEndpoint,
//     WireDevice): this package reads no netdev.
//
// `roce-probe send`, `listen` and the agent are built on it. Opening a
// Conn (Send, Listen) needs CAP_NET_RAW; everything else needs no privilege.
package probe
