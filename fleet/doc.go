// Package fleet plans which peers one agent of a large RoCE fleet probes,
// at what rate and on which UDP source ports, and adds up the outcomes into
// a number of series that does not grow with the fleet. It is pure and
// deterministic (a seed, no clock, no sockets): `roce-probe agent` runs it,
// and a simulation of a 32,000-NIC fabric can run the very same code.
//
// The plan follows the systems that probe fabrics of that size
// (R-Pingmesh, SIGCOMM 2024, and its open-source yuuki/rpingmesh):
//
//   - ToR mesh: every peer under the agent's own ToR (leaf switch) is
//     probed all the time (Mate), at Settings.MateRate;
//   - inter-ToR: every round (Settings.Rotation of wall-clock time) the
//     agent probes one NIC of each of Settings.SampleToRs other ToRs
//     (InterToR). The agents of one ToR walk one permutation of the other
//     ToRs, each its own slice of it, so that together they probe every
//     other ToR within Plan.ToRWindow = ⌈(T−1)/(m·k)⌉ rounds (T ToRs, m
//     agents under this one, k sampled each);
//   - without topology (the agent's ToR, or a peer's, is not known):
//     Settings.SamplePeers of those peers a round, each agent walking its
//     own permutation of them (Sampled), every one within Plan.PeerWindow;
//   - each target's probes cycle through SportCount UDP source ports, so
//     that with the given probability they take every one of
//     Settings.ECMPWidth equal-cost paths (Target.Sport);
//   - every rate is scaled by one factor so that the agent sends at most
//     Settings.SendCap probes a second and, when every agent plans alike,
//     no host expects more than Settings.ReceiveShare a second
//     (Planner.computeRates has the formulas; docs/fabric.md explains
//     them).
//
// New indexes the peers once (O(n log n)); Plan gives a round's targets in
// O(targets), so an agent with 100,000 peers plans in milliseconds.
//
// Aggregator adds probe outcomes up per ToR-mate and per peer ToR (at most
// MaxToRs of those), Worst picks the worst pairs, Window keeps a pair's
// recent counts, and Governor lowers the rate when the agent's host is
// under pressure (CPU over a budget, late wake-ups).
package fleet
