package agent

import (
	"log/slog"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/roce-probe/roce-probe/fleet"
	"github.com/roce-probe/roce-probe/probe"
)

// planSettings are the fleet plan's settings of the configuration for
// flows flows: the send and receive bounds are for all flows together,
// so each flow's share is theirs divided by the flows.
func planSettings(c ProbeConfig, flows int) fleet.Settings {
	f := float64(max(flows, 1))
	return fleet.Settings{MateRate: c.Rate, SampleToRs: c.SampleToRs, SamplePeers: c.SamplePeers, SampleRate: c.SampleRate,
		Rotation: c.Rotation, ECMPWidth: c.ECMPPaths, Confidence: c.ECMPConfidence, MaxSports: maxSports,
		SendCap: max(c.SendRate/f, 1), ReceiveShare: max(c.ReceiveRate/f, 1)}
}

// maxSports bounds the UDP source ports of one target (fleet.Settings).
const maxSports = 1024

// planInput is what the planner was built from: when none of it changed,
// a round's plan reuses the planner.
type planInput struct {
	peers   []Peer // a.peers as received (the same slice: compared by identity)
	own     []netip.Addr
	ownToR  string // this host's ToR by its topology ("": from the peer list)
	learned uint64 // the changes of the ToRs learned from replies
	flows   int
}

func (p planInput) same(q planInput) bool {
	return len(p.peers) == len(q.peers) && (len(p.peers) == 0 || &p.peers[0] == &q.peers[0]) &&
		slices.Equal(p.own, q.own) && p.ownToR == q.ownToR && p.learned == q.learned && p.flows == q.flows
}

// ownToR is this host's ToR as its topology says (configuration, LLDP,
// lldpd: the last read's), for the netdev of the first flow that has one.
func (a *Agent) ownToR() string {
	for _, fs := range a.flows {
		if fs.src == nil {
			continue
		}
		if t := a.ownToRs.of(fs.netdev()); t != "" {
			return t
		}
	}
	return a.ownToRs.of("")
}

// planner is the control loop's fleet planner and the peers it indexes.
type planner struct {
	in     planInput
	p      *fleet.Planner
	probed []Peer // the peers without this host's addresses, names made unique
	self   fleet.Peer
}

// buildPlanner indexes the peers for planning: this host's own addresses
// are left out; this host's ToR is its topology's, else that of the peer
// of the list that is one of its addresses (so that one peers file
// serves every host); a peer without a ToR in the list takes the one its
// replies told (learnedToRs). O(n log n) in the peers.
func (a *Agent) buildPlanner(in planInput) *planner {
	ownSet := make(map[netip.Addr]bool, len(in.own))
	for _, o := range in.own {
		ownSet[o] = true
	}
	self := fleet.Peer{Addr: netip.IPv4Unspecified()}
	if len(in.own) > 0 {
		self.Addr = slices.MinFunc(in.own, netip.Addr.Compare)
	}
	probed := make([]Peer, 0, len(in.peers))
	fp := make([]fleet.Peer, 0, len(in.peers))
	names := make(map[string]bool, len(in.peers))
	for _, p := range in.peers {
		if ownSet[p.Addr] {
			if p.ToR != "" {
				self = fleet.Peer{Addr: p.Addr, ToR: p.ToR}
			}
			continue
		}
		if p.ToR == "" {
			p.ToR = a.tors.get(p.Addr) // what its replies said
		}
		if names[p.Name] { // two addresses under one name: label by address
			p.Name = p.Addr.String()
		}
		names[p.Name] = true
		probed = append(probed, p)
		fp = append(fp, fleet.Peer{Addr: p.Addr, ToR: p.ToR})
	}
	if in.ownToR != "" {
		self.ToR = in.ownToR
	}
	a.tors.keep(probed)
	pl, err := fleet.New(self, fp, planSettings(a.cfg.Probe, in.flows), a.cfg.Probe.Seed)
	if err != nil { // Validate checked every setting
		a.logOnce("plan", slog.LevelError, "cannot plan the probes", "err", err)
		return nil
	}
	if a.plan == nil || len(a.plan.probed) != len(probed) || pl.Mates() != a.plan.p.Mates() || pl.ToRs() != a.plan.p.ToRs() {
		a.log.Info("peers", "known", len(probed), "tor", self.ToR, "tor_mates", pl.Mates(), "other_tors", pl.ToRs(), "unknown_tor", pl.Pool())
	}
	return &planner{in: in, p: pl, probed: probed, self: self}
}

// replan applies the peers and the round's plan to the last read of the
// host: the streams of the round's targets, the sockets, the probe errors
// of targets no flow reaches. It returns the next hops to resolve. Its
// work is the plan's targets', not the fleet's (but for indexing the
// peers again when they changed), and it holds no lock the sender,
// /metrics or /healthz wait on but for mesh.sync, which is O(targets).
func (a *Agent) replan() []neighborKick {
	a.upkeep.begin()
	defer a.upkeep.end()
	if a.view == nil {
		return nil
	}
	own, _ := probe.LocalAddresses(a.view.NS)
	in := planInput{peers: a.peers, own: own, ownToR: a.ownToR(), learned: a.tors.changes(), flows: len(a.cfg.Flows)}
	if a.plan == nil || !a.plan.in.same(in) {
		a.plan = a.buildPlanner(in)
		if a.plan == nil {
			return nil
		}
	}
	now := a.d.Now()
	round := a.plan.p.Round(now)
	pl := a.plan.p.Plan(round)
	a.nextRound = time.Unix(0, (round+1)*int64(a.cfg.Probe.Rotation))
	targets := make([]Peer, len(pl.Targets))
	byAddr := make(map[netip.Addr]fleet.Target, len(pl.Targets))
	var scopes [3]int
	for i, t := range pl.Targets {
		targets[i] = a.plan.probed[t.Peer]
		byAddr[targets[i].Addr] = t
		scopes[t.Kind]++
	}
	p := makePlan(a.view, a.flows, targets, a.sports, a.mesh.targets())
	for i := range p.specs {
		p.specs[i].plan = byAddr[p.specs[i].peer.Addr]
	}
	a.mesh.sync(p.specs, round)
	for _, e := range p.errors {
		a.mm.probeErrors.WithLabelValues(e.reason).Inc()
	}
	wires := map[string]bool{}
	for _, w := range probe.WireDevices(a.view.NS) {
		wires[w] = true
	}
	for _, s := range p.specs {
		if s.tgt.wire != "" {
			wires[s.tgt.wire] = true
		}
	}
	list := make([]string, 0, len(wires))
	for w := range wires {
		list = append(list, w)
	}
	sort.Strings(list)
	a.cap.sync(list)
	st := *a.state.Load()
	st.peers, st.flowPeers = len(a.plan.probed), p.flowPeers
	st.addresses, st.tor = a.flowAddresses(), nil
	if a.plan.self.ToR != "" {
		t := a.plan.self.ToR
		st.tor = &t
	}
	st.plan = planState{targets: scopes, send: pl.SendRate * float64(max(len(a.cfg.Flows), 1)),
		receive: pl.ReceiveRate * float64(max(len(a.cfg.Flows), 1)), tors: a.plan.p.ToRs(), torWindow: pl.ToRWindow, peerWindow: pl.PeerWindow}
	a.state.Store(&st)
	return p.kicks
}

// flowAddresses are the distinct addresses the flows' probes leave from
// (their source GIDs'), in order.
func (a *Agent) flowAddresses() []string {
	var as []netip.Addr
	for _, fs := range a.flows {
		if fs.src != nil && fs.src.Entry.IP.IsValid() {
			as = append(as, fs.src.Entry.IP.Unmap())
		}
	}
	slices.SortFunc(as, netip.Addr.Compare)
	as = slices.Compact(as)
	out := make([]string, len(as))
	for i, x := range as {
		out[i] = x.String()
	}
	return out
}

// planState is the round's plan as /metrics and /healthz show it.
type planState struct {
	targets               [3]int // by fleet.Kind
	send, receive         float64
	tors                  int
	torWindow, peerWindow time.Duration
}

// upkeep measures the CPU time of the agent's work whose cost does not
// depend on its probe rate — reading the host (at every interval, and
// after each change: a netdev's churn), planning, reading and parsing the
// peer list (at start-up: 100,000 peers) — so that the Governor's budget
// counts what probing less would save (fleet.Sample.Upkeep). A span's
// CPU is the process's over its duration: the probe path's CPU meanwhile
// (a few probes; the garbage the span made, if collected before it ends)
// is counted with it. Spans may overlap (the control loop and the peer
// watcher run at once): their union is counted, once. A nil *upkeep
// measures nothing.
type upkeep struct {
	cpu   func() time.Duration
	mu    sync.Mutex
	open  int
	from  time.Duration // CPU when the first open span began
	total time.Duration // of the spans ended
}

// begin starts a span; end (deferred) ends it.
func (u *upkeep) begin() {
	if u == nil || u.cpu == nil {
		return
	}
	u.mu.Lock()
	if u.open == 0 {
		u.from = u.cpu()
	}
	u.open++
	u.mu.Unlock()
}

func (u *upkeep) end() {
	if u == nil || u.cpu == nil {
		return
	}
	u.mu.Lock()
	if u.open--; u.open == 0 {
		u.total += u.cpu() - u.from
	}
	u.mu.Unlock()
}

// spent is the CPU time of every span so far, the open ones' until now.
func (u *upkeep) spent() time.Duration {
	if u == nil || u.cpu == nil {
		return 0
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	t := u.total
	if u.open > 0 {
		t += u.cpu() - u.from
	}
	return t
}

// governPeriod is how often the agent measures itself for the Governor.
const governPeriod = 10 * time.Second

// govern measures the last period (the process's CPU time and the part
// of it that was upkeep, the sender's wake-ups and how many came late)
// and has the Governor decide the
// probe rate's scale; a change is logged, and shown on /metrics and
// /healthz.
func (a *Agent) govern() {
	now := a.d.Now()
	var cpu time.Duration
	if a.d.CPU != nil {
		cpu = a.d.CPU()
	}
	up := a.upkeep.spent()
	s := fleet.Sample{Wall: now.Sub(a.govAt), CPU: cpu - a.govCPU, Upkeep: up - a.govUpkeep,
		Wakeups: int(a.mesh.wakeups.Swap(0)), Late: int(a.mesh.late.Swap(0))}
	a.govAt, a.govCPU, a.govUpkeep = now, cpu, up
	scale, pressure, changed := a.gov.Observe(s)
	if pressure != fleet.PressureNone {
		a.pressure.WithLabelValues(pressure).Inc()
	}
	if !changed {
		return
	}
	a.mesh.setScale(scale)
	st := *a.state.Load()
	st.scale, st.pressure = scale, a.gov.Pressure()
	a.state.Store(&st)
	cpuShare := 0.0
	if s.Wall > 0 {
		cpuShare = s.CPU.Seconds() / s.Wall.Seconds()
	}
	if pressure != fleet.PressureNone {
		a.log.Warn("probe rate lowered: the host is under pressure", "scale", scale, "pressure", pressure,
			"cpu", cpuShare, "upkeep_cpu", s.Upkeep.Seconds()/max(s.Wall.Seconds(), 1e-9), "cpu_budget", a.cfg.Probe.CPUBudget, "wakeups", s.Wakeups, "late_wakeups", s.Late)
	} else {
		a.log.Info("probe rate raised", "scale", scale, "cpu", cpuShare)
	}
}
