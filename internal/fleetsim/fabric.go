package fleetsim

import (
	"fmt"
	"net/netip"

	"github.com/roce-probe/roce-probe/fleet"
)

// Fabric is a two-tier Clos (leaf-spine): ToRs of MinPerToR..MaxPerToR
// NICs each, every ToR linked to every spine, a flow between two ToRs
// taking the spine its 3-tuple (source and destination address, UDP
// source port) hashes to — the equal-cost multipath choice of the ToR.
// NIC i has the address 10.0.0.0 + i + 1, so that the NICs' order is their
// addresses' order; ToR t is named "leafNNNNN".
type Fabric struct {
	// NICs are the fleet as every agent knows it (its peers file with the
	// tor= column): NIC i is NICs[i].
	NICs []fleet.Peer
	// ToROf is the index of NIC i's ToR.
	ToROf []int32
	// ToRs are the NICs of each ToR: NICs [ToRs[t][0], ToRs[t][1]).
	ToRs [][2]int32
	// Spines is the number of spines (the ECMP width between two ToRs).
	Spines int

	hash    uint64
	torNICs map[string]int // each ToR's NICs by its name (ToRNICs)
}

// NewFabric builds a fabric of n NICs in ToRs whose sizes are drawn
// uniformly from minPer..maxPer (the last ToR holds what is left, at
// least one NIC) and spines spines, seeded.
func NewFabric(n, minPer, maxPer, spines int, seed uint64) (*Fabric, error) {
	switch {
	case n < 2 || n > 1<<22:
		return nil, fmt.Errorf("NICs: %d is out of range: want 2..%d", n, 1<<22)
	case minPer < 1 || maxPer < minPer:
		return nil, fmt.Errorf("NICs per ToR: %d..%d is not a range of at least 1", minPer, maxPer)
	case spines < 1 || spines > 1024:
		return nil, fmt.Errorf("spines: %d is out of range: want 1..1024", spines)
	}
	f := &Fabric{Spines: spines, hash: mix(seed, 0xec3b)}
	f.NICs = make([]fleet.Peer, 0, n)
	f.ToROf = make([]int32, 0, n)
	for t := 0; len(f.NICs) < n; t++ {
		size := minPer + int(mix(seed, 0x5123, uint64(t))%uint64(maxPer-minPer+1))
		size = min(size, n-len(f.NICs))
		name := fmt.Sprintf("leaf%05d", t)
		first := int32(len(f.NICs))
		for range size {
			i := uint32(len(f.NICs)) + 1
			f.NICs = append(f.NICs, fleet.Peer{Addr: netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), ToR: name})
			f.ToROf = append(f.ToROf, int32(t))
		}
		f.ToRs = append(f.ToRs, [2]int32{first, int32(len(f.NICs))})
	}
	f.torNICs = make(map[string]int, len(f.ToRs))
	for t, span := range f.ToRs {
		f.torNICs[f.ToRName(int32(t))] = int(span[1] - span[0])
	}
	return f, nil
}

// ToRNICs is how many NICs each ToR has, by its name: what
// fabric.LocalizeInput.ToRNICs holds when every NIC runs an agent (the
// agents' pairs name every NIC of their ToR; roce_probe_topology_info has
// one series per agent's NIC). The map is the fabric's: not to be
// changed.
func (f *Fabric) ToRNICs() map[string]int { return f.torNICs }

// ToRName is ToR t's name.
func (f *Fabric) ToRName(t int32) string { return f.NICs[f.ToRs[t][0]].ToR }

// SpineName is spine s's name.
func SpineName(s int32) string { return fmt.Sprintf("spine%03d", s) }

// Spine is the spine a frame from NIC src to NIC dst with UDP source port
// sport takes when their ToRs differ: the ToR's ECMP hash of the 3-tuple
// (the destination port is RoCE's 4791 for every frame). A probe and its
// reply (source and destination swapped, the same source port:
// probe/responder.go) may take different spines.
func (f *Fabric) Spine(src, dst int32, sport uint16) int32 {
	return int32(mix(f.hash, uint64(src), uint64(dst), uint64(sport)) % uint64(f.Spines))
}

// Path is what a trace of the probe from src to dst with sport would
// report: the ToRs and, between two ToRs, the spine (-1 under one ToR).
type Path struct {
	SrcToR, Spine, DstToR int32
}

// Trace is the forward path of a probe (what a bounded trace from the
// agent that sees the loss or remarking finds).
func (f *Fabric) Trace(src, dst int32, sport uint16) Path {
	p := Path{SrcToR: f.ToROf[src], Spine: -1, DstToR: f.ToROf[dst]}
	if p.SrcToR != p.DstToR {
		p.Spine = f.Spine(src, dst, sport)
	}
	return p
}

// mix hashes its arguments into one value (splitmix64's finaliser over
// each in turn): the simulation's only source of randomness, so that a
// seed gives the same run whatever order the agents are simulated in.
func mix(vs ...uint64) uint64 {
	h := uint64(0x243f6a8885a308d3)
	for _, v := range vs {
		h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

// uniform is mix's value as a float in [0, 1).
func uniform(vs ...uint64) float64 { return float64(mix(vs...)>>11) / (1 << 53) }
