package agent

import (
	"errors"
	"net"
	"net/netip"

	"github.com/roce-probe/roce-probe/ah"
	"github.com/roce-probe/roce-probe/gid"
	"github.com/roce-probe/roce-probe/host"
	"github.com/roce-probe/roce-probe/probe"
	"github.com/roce-probe/roce-probe/roce"
	"github.com/roce-probe/roce-probe/vlan"
)

// neighborKick asks the kernel to resolve a peer's next hop (an ARP or
// NDP request): probes go out raw, so the kernel would never learn it
// otherwise.
type neighborKick struct {
	src, dst netip.Addr
	route    vlan.RouteResult
}

// plan is what one read of the host makes of the flows and peers.
type plan struct {
	specs     []streamSpec
	flowPeers map[string]int
	errors    []peerError // peers no flow can probe
	kicks     []neighborKick
}

type peerError struct {
	peer   Peer
	reason string
}

// flowFamily is the address family a flow probes.
func flowFamily(fs *flowSource) string {
	if fs.src != nil {
		return familyOf(fs.src.Entry.IP)
	}
	return fs.cfg.Select.Family // "" for an unresolved gid_index flow: none
}

// makePlan decides which flows probe which peers and how: a flow probes
// the peers of its family whose route (as `ip route get`) leaves through
// its source netdev; a flow whose source is unusable now keeps the peers
// it probed (prev), which then count no_source errors. Each stream's
// target comes from the flow's address handle to the peer, resolved as
// `roce-probe send --dev --gid-index` resolves it (View.ResolveAH's
// resolution, by one probe.AHResolver per flow: flowTargets); a next hop
// without MAC keeps the last known one (the kernel forgets neighbours it
// does not use) and is kicked.
func makePlan(v *host.View, flows []*flowSource, peers []Peer, sports map[string]uint16, prev map[streamKey]target) plan {
	p := plan{flowPeers: map[string]int{}}
	fts := make([]*flowTargets, len(flows)) // made at a flow's first peer
	for _, peer := range peers {
		probed, family := false, false
		var route *vlan.RouteResult
		if rr, err := v.NS.RouteGet(peer.Addr); err == nil {
			route = &rr
		}
		for i, fs := range flows {
			if flowFamily(fs) != familyOf(peer.Addr) {
				continue
			}
			family = true
			key := streamKey{peer.Addr, fs.cfg.Name}
			var t target
			switch {
			case fs.src == nil:
				if _, ok := prev[key]; !ok {
					continue
				}
				t = target{reason: reasonNoSource}
			case route == nil || route.Dev != fs.netdev():
				continue
			default:
				if fts[i] == nil {
					fts[i] = newFlowTargets(v, fs, sports[fs.cfg.Name])
				}
				var kick *neighborKick
				t, kick = fts[i].resolve(peer.Addr, prev[key])
				if kick != nil {
					p.kicks = append(p.kicks, *kick)
				}
			}
			probed = true
			p.flowPeers[fs.cfg.Name]++
			p.specs = append(p.specs, streamSpec{peer: peer, flow: fs.cfg.Name, tgt: t})
		}
		switch {
		case probed || len(flows) == 0:
		case !family:
			p.errors = append(p.errors, peerError{peer, reasonFamily})
		default:
			p.errors = append(p.errors, peerError{peer, reasonNoRoute})
		}
	}
	return p
}

// flowTargets is one flow's targets in one plan: the flow's address
// handle, resolved to each peer by one probe.AHResolver, so that what does
// not depend on the peer (the source entry and its netdev's stack, the
// driver's profile, the wire device) is worked out once.
type flowTargets struct {
	r    *probe.AHResolver // nil when the flow's AH cannot be resolved here
	wire string            // the flow's wire device ("": the resolution's netdev)
}

func newFlowTargets(v *host.View, fs *flowSource, sport uint16) *flowTargets {
	ft := &flowTargets{wire: fs.src.Desc.Real}
	ft.r, _ = probe.NewAHResolver(v, probe.AHFlow{Device: fs.src.Port.Device, Port: fs.src.Port.Port, GIDIndex: fs.src.Entry.Index,
		SL: fs.sl, TrafficClass: fs.tclass, HopLimit: uint8(fs.cfg.HopLimit), Path: fs.path, Sport: sport}) // fails as each resolution would: no route
	return ft
}

// resolve resolves the flow's address handle to peer, as View.ResolveAH
// resolves it.
func (ft *flowTargets) resolve(peer netip.Addr, prev target) (target, *neighborKick) {
	if ft.r == nil {
		return target{reason: reasonNoRoute}, nil
	}
	res, m, _, err := ft.r.Resolve(gid.FromAddr(peer))
	if res == nil {
		return target{reason: reasonNoRoute}, nil
	}
	var kick *neighborKick
	var nerr *ah.NeighborError
	if errors.As(err, &nerr) {
		kick = &neighborKick{src: res.Wire.Src, dst: peer, route: nerr.Route}
	}
	w := res.Wire
	tags := make([]roce.VLANTag, len(w.VLANChain))
	for i, c := range w.VLANChain {
		tags[i] = roce.VLANTag{TPID: uint16(c.TPID), ID: c.ID, PCP: m.PCP}
		if c.PCP != nil {
			tags[i].PCP = *c.PCP
		}
	}
	if m.Tagged = len(tags) > 0; m.Tagged {
		m.VLAN, m.PCP = tags[0].ID, tags[0].PCP
	} else {
		m.VLAN, m.PCP = 0, 0
	}
	wire := ft.wire
	if wire == "" {
		wire = w.Netdev
	}
	dmac := net.HardwareAddr(w.DMAC)
	if len(dmac) != 6 {
		if prev.reason != "" || len(prev.frame.DstMAC) != 6 {
			return target{reason: reasonNoNeighbor}, kick
		}
		dmac = prev.frame.DstMAC
	}
	return target{wire: wire, marks: m, frame: targetFrame(net.HardwareAddr(w.SMAC), dmac, tags, w.Src, w.Dst)}, kick
}
