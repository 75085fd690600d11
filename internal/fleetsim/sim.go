package fleetsim

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/roce-probe/roce-probe/fleet"
)

// Config is one simulation run.
type Config struct {
	// NICs is the fleet's size; every NIC has an agent. Its ToRs have
	// MinPerToR..MaxPerToR NICs, linked to Spines spines.
	NICs                 int
	MinPerToR, MaxPerToR int
	Spines               int
	// Settings are the agents' probe plan (fleet.DefaultSettings: the
	// agent's defaults); MaxToRs and WorstPairs its metrics' bounds
	// (metrics.tors, metrics.worst_pairs); CPUBudget its Governor's
	// (probe.cpu_budget).
	Settings            fleet.Settings
	MaxToRs, WorstPairs int
	CPUBudget           float64
	// Seed seeds the fabric, the faults, the plan and every probe's fate.
	Seed uint64
	// Epochs of Epoch each: FaultsPerEpoch faults in each, each in a ToR
	// of its own, starting within Onset of the epoch's start and lasting
	// Duration. Epoch must leave Window after the last fault ends, so that
	// the next epoch starts clean.
	Epochs, FaultsPerEpoch int
	Epoch, Onset, Duration time.Duration
	Tick, Window, DetectBy time.Duration
	// Persist is how many localisations in a row must name a suspect
	// before it counts (an alert's `for`: Persist−1 ticks): a noisy
	// host's losses show before its agent's Governor has judged the
	// period and marked them.
	Persist        int
	BackgroundLoss float64
	Localize       Localizer
}

// DefaultConfig is a run of n NICs with the agent's defaults: ToRs of
// 32..64 NICs, 16 spines (the plan's ECMP width), 7 epochs of 15 faults
// (105 faults), 90 s each (faults start in the first 15 s and last 45 s),
// the outcomes added up in 5 s ticks, localised every tick over the last
// 30 s by fabric.Localize (FabricLocalize), a suspect counted once named 3
// times in a row, detection wanted within 30 s, and one probe in 100,000
// lost at random anywhere (background loss the localisation must not
// blame).
func DefaultConfig(n int) Config {
	return Config{NICs: n, MinPerToR: 32, MaxPerToR: 64, Spines: 16, Settings: fleet.DefaultSettings(),
		MaxToRs: 16, WorstPairs: 10, CPUBudget: 0.03, Seed: 1,
		Epochs: 7, FaultsPerEpoch: 15, Epoch: 90 * time.Second, Onset: 15 * time.Second, Duration: 45 * time.Second,
		Tick: 5 * time.Second, Window: 30 * time.Second, DetectBy: 30 * time.Second, Persist: 3, BackgroundLoss: 1e-5,
		Localize: FabricLocalize}
}

// Validate checks the run's settings.
func (c Config) Validate() error {
	if err := c.Settings.Validate(); err != nil {
		return err
	}
	switch {
	case c.Tick <= 0 || c.Settings.Rotation%c.Tick != 0:
		return fmt.Errorf("Tick: %v must divide the rotation %v", c.Tick, c.Settings.Rotation)
	case c.Window < c.Tick || c.Window%c.Tick != 0:
		return fmt.Errorf("Window: %v must be a multiple of the tick %v", c.Window, c.Tick)
	case c.Epochs < 1 || c.FaultsPerEpoch < 0:
		return fmt.Errorf("Epochs, FaultsPerEpoch: %d, %d: want at least 1 epoch", c.Epochs, c.FaultsPerEpoch)
	case c.Onset+c.Duration+c.Window > c.Epoch:
		return fmt.Errorf("Epoch: %v is shorter than Onset + Duration + Window (%v)", c.Epoch, c.Onset+c.Duration+c.Window)
	case c.MaxToRs < 1 || c.WorstPairs < 0:
		return fmt.Errorf("MaxToRs, WorstPairs: %d, %d: want at least 1 ToR group", c.MaxToRs, c.WorstPairs)
	case c.BackgroundLoss < 0 || c.BackgroundLoss > 0.01:
		return fmt.Errorf("BackgroundLoss: %g is out of range: want 0..0.01", c.BackgroundLoss)
	}
	return nil
}

// flow is the one flow every simulated agent probes with.
const flow = "rdma"

// maxSports is how many UDP source ports with lost or remarked probes a
// pair's observation keeps (the agent's pair detail keeps a few, and a
// bounded trace follows a few).
const maxSports = 4

// SportObs is what happened to one UDP source port's probes of a pair,
// and where a trace of the port would see its DSCP change (RemarkAt).
type SportObs struct {
	Sport          uint16
	Lost, Remarked uint16
	// RemarkAt is the hop (TTL) from which the agent's automatic trace of
	// the port (internal/agent's tracer: trace.Changes, the first DSCP
	// change along the path) sees the remarked DSCP: 2, the spine (the
	// ToR–spine link up from the prober's ToR remarked), or 3, the peer's
	// ToR (the link down from the spine to it); the hop before it (1, 2)
	// still shows the value sent. 0: the port saw no remarking.
	RemarkAt uint8
}

// PairObs is one probed pair's outcome over a localisation window: probes
// sent, lost and answered with their DSCP remarked, and up to maxSports of
// the UDP source ports that lost or were remarked.
type PairObs struct {
	Src, Dst             int32
	Kind                 fleet.Kind
	Sent, Lost, Remarked uint32
	Sports               []SportObs
}

// Input is what a localisation sees at one moment: the fabric (the ToR
// of every NIC, as the agents learn it, and Trace, the bounded trace of
// a pair's UDP source port), the pairs that lost probes or saw them
// remarked over the last Window (every other pair probed in it lost
// nothing and saw no remarking), and the agents that marked their results
// (their Governor saw their host under pressure).
type Input struct {
	Fabric *Fabric
	At     time.Duration
	Window time.Duration
	Pairs  []PairObs
	Noisy  []int32
}

// SuspectKind is what a localisation blames.
type SuspectKind uint8

// Suspect kinds.
const (
	SuspectNIC    SuspectKind = iota // a NIC, its host or its ToR port (NIC)
	SuspectToR                       // a ToR (ToR)
	SuspectLink                      // the link between a ToR and a spine (ToR, Spine; Spine -1: one of the ToR's uplinks)
	SuspectSpine                     // a spine (Spine)
	SuspectRemark                    // a hop that remarks, on the link between ToR and Spine
	SuspectNoise                     // host noise, not the network (NIC)
)

// numSuspectKinds is the number of suspect kinds.
const numSuspectKinds = SuspectNoise + 1

func (k SuspectKind) String() string {
	return [...]string{"nic", "tor", "link", "spine", "remark", "host_noise"}[k]
}

// Names is the suspect kind that names a fault of kind k when Matches:
// nic for a dead NIC and a lossy port alike.
func (k FaultKind) Names() SuspectKind {
	return [...]SuspectKind{DeadNIC: SuspectNIC, LossyPort: SuspectNIC, LossyLink: SuspectLink, RemarkLink: SuspectRemark,
		NoisyHost: SuspectNoise}[k]
}

// Suspect is one thing a localisation names.
type Suspect struct {
	Kind            SuspectKind
	NIC, ToR, Spine int32
}

func (s Suspect) String() string {
	return fmt.Sprintf("%s nic %d tor %d spine %d", s.Kind, s.NIC, s.ToR, s.Spine)
}

// Localizer names suspects from what the agents saw.
type Localizer func(Input) []Suspect

// Matches says whether suspect s names fault f: a dead NIC or a lossy
// port by its NIC, a lossy link by its ToR and spine, a remarking link by
// its ToR and spine as a remarking hop, a noisy host as host noise.
func Matches(s Suspect, f Fault) bool {
	switch f.Kind {
	case DeadNIC, LossyPort:
		return s.Kind == SuspectNIC && s.NIC == f.NIC
	case LossyLink:
		return s.Kind == SuspectLink && s.ToR == f.ToR && s.Spine == f.Spine
	case RemarkLink:
		return s.Kind == SuspectRemark && s.ToR == f.ToR && s.Spine == f.Spine
	case NoisyHost:
		return s.Kind == SuspectNoise && s.NIC == f.NIC
	}
	return false
}

// FaultResult is one fault and when the run saw it: Evidence is the time
// from its start to the first window with a lost or remarked probe it
// caused, Detected to the first localisation that named it (-1: never).
type FaultResult struct {
	Fault
	Evidence, Detected time.Duration
}

// Stats are a distribution's mean and maximum.
type Stats struct{ Mean, Max float64 }

// acc accumulates a Stats: summed in a fixed order, so that a seed gives
// the same figures to the last bit.
type acc struct {
	sum, max float64
	n        int
}

func (a *acc) add(v float64) {
	a.sum += v
	a.max = max(a.max, v)
	a.n++
}

func (a *acc) merge(b acc) {
	a.sum += b.sum
	a.max = max(a.max, b.max)
	a.n += b.n
}

func (a acc) stats() Stats {
	if a.n == 0 {
		return Stats{}
	}
	return Stats{Mean: a.sum / float64(a.n), Max: a.max}
}

// Result is what a run measured.
type Result struct {
	NICs, ToRs, Spines, Rounds int
	// SendRate is the probes per second one agent sends (the plan's rate
	// times its Governor's scale), over agents and rounds; ReceiveRate the
	// probes per second one NIC receives, over NICs and rounds; Targets
	// the targets of one agent's round.
	SendRate, ReceiveRate, Targets Stats
	// Groups is the number of groups (series sets) an agent's
	// fleet.Aggregator held at the end; Series the agent's probe series
	// by SeriesPerAgent, TotalSeries their sum over the fleet.
	Groups, Series Stats
	TotalSeries    int64
	// ToRWindow is the longest Plan.ToRWindow: within it every ToR pair
	// is probed.
	ToRWindow time.Duration
	Faults    []FaultResult
	// Suspects named that matched a fault (TruePositives) or none
	// (FalsePositives, with the first few), each counted once per epoch.
	TruePositives, FalsePositives int
	FalseSuspects                 []string
	// Recall is the share of faults named within DetectBy; Precision the
	// share of suspects that were right. Both are NaN without a Localizer.
	Recall, Precision float64
	// EvidenceMax and DetectMax are the longest Evidence and Detected of
	// the faults that have them; Undetected the faults never named
	// (never showing evidence, for EvidenceMissing).
	EvidenceMax, DetectMax time.Duration
	// DetectMedian and Detect95 are the median and 95th percentile of
	// Detected over the faults named.
	DetectMedian, Detect95      time.Duration
	EvidenceMissing, Undetected int
	// Kinds are the faults and the recall by fault kind (FaultKind),
	// Suspects the suspects named and the precision by suspect kind
	// (SuspectKind): a fault kind's precision is that of the suspect kind
	// that names it (FaultKind.Names).
	Kinds    [numKinds]KindScore
	Suspects [numSuspectKinds]SuspectScore
	// Records is the number of pair-tick records the run kept (its memory).
	Records int
}

// KindScore is the faults of one kind and how many were named within
// DetectBy; Recall their share (NaN without a Localizer or a fault).
type KindScore struct {
	Faults, Named int
	Recall        float64
}

// SuspectScore is the suspects of one kind named right and wrong, each
// counted once per epoch; Precision the share right (NaN: none named).
type SuspectScore struct {
	Right, Wrong int
	Precision    float64
}

// rec is one pair's probes in one tick, kept when the pair touches a
// fault (or lost a probe at random): the simulation keeps nothing of the
// probes that went well elsewhere.
type rec struct {
	src, dst             int32
	kind                 fleet.Kind
	nsp                  uint8
	sent, lost, remarked uint16
	sports               [maxSports]SportObs
}

type sim struct {
	cfg    Config
	f      *Fabric
	idx    *fleet.Index // the fleet's peers, indexed once for every agent's planner
	faults []Fault
	byNIC  [][]int32 // faults at a NIC: dead, lossy port, noisy host
	byToR  [][]int32 // link faults at a ToR's uplinks
	ticks  int
	recs   [][]rec   // per tick
	noisy  [][]int32 // per tick: agents whose Governor saw pressure
	res    Result
}

// shard is what the agents of a contiguous range of NICs saw: the shards
// run in parallel and are joined in order, so that the run is the same
// whatever the machine's cores.
type shard struct {
	recs                          [][]rec
	noisy                         [][]int32
	recv                          [][]float32 // per round: probes/s expected at each NIC
	send, targets, groups, series acc
	totalSeries                   int64
	torWindow                     time.Duration
	err                           error
}

// shards is the number of parts the agents are simulated in.
const shards = 4

// Run simulates the fleet: every NIC's agent plans its probes with
// fleet.Index.Planner (the fleet indexed once) and Plan, round after
// round, adds their outcomes up in a fleet.Aggregator and steps a
// fleet.Governor when its host is noisy;
// each probe's fate is computed from the faults on its path (forward and
// reply, each taking the spine its ECMP hash picks). Then every tick the
// Localizer gets the last Window of what the agents saw.
func Run(cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, err := NewFabric(cfg.NICs, cfg.MinPerToR, cfg.MaxPerToR, cfg.Spines, cfg.Seed)
	if err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, f: f, idx: fleet.NewIndex(f.NICs)}
	s.faults = drawFaults(f, cfg.Seed, cfg.Epochs, cfg.FaultsPerEpoch, cfg.Epoch, cfg.Onset, cfg.Duration)
	s.byNIC = make([][]int32, len(f.NICs))
	s.byToR = make([][]int32, len(f.ToRs))
	for i, ft := range s.faults {
		if ft.NIC >= 0 {
			s.byNIC[ft.NIC] = append(s.byNIC[ft.NIC], int32(i))
		} else {
			s.byToR[ft.ToR] = append(s.byToR[ft.ToR], int32(i))
		}
	}
	total := time.Duration(cfg.Epochs) * cfg.Epoch
	rot := cfg.Settings.Rotation
	rounds := int((total + rot - 1) / rot)
	s.ticks = int(time.Duration(rounds) * rot / cfg.Tick)
	s.res = Result{NICs: len(f.NICs), ToRs: len(f.ToRs), Spines: f.Spines, Rounds: rounds}
	parts := make([]shard, shards)
	var wg sync.WaitGroup
	for i := range parts {
		sh := &parts[i]
		sh.recs = make([][]rec, s.ticks)
		sh.noisy = make([][]int32, s.ticks)
		sh.recv = make([][]float32, rounds)
		for r := range sh.recv {
			sh.recv[r] = make([]float32, len(f.NICs))
		}
		wg.Go(func() {
			for a := i * len(f.NICs) / shards; a < (i+1)*len(f.NICs)/shards && sh.err == nil; a++ {
				sh.err = s.agent(sh, int32(a), rounds)
			}
		})
	}
	wg.Wait()
	s.recs = make([][]rec, s.ticks)
	s.noisy = make([][]int32, s.ticks)
	var send, targets, groups, series, recv acc
	for i := range parts {
		sh := &parts[i]
		if sh.err != nil {
			return nil, sh.err
		}
		for t := range s.ticks {
			s.recs[t] = append(s.recs[t], sh.recs[t]...)
			s.noisy[t] = append(s.noisy[t], sh.noisy[t]...)
		}
		send.merge(sh.send)
		targets.merge(sh.targets)
		groups.merge(sh.groups)
		series.merge(sh.series)
		s.res.TotalSeries += sh.totalSeries
		s.res.ToRWindow = max(s.res.ToRWindow, sh.torWindow)
		if i > 0 {
			for r, rv := range sh.recv {
				for b, v := range rv {
					parts[0].recv[r][b] += v
				}
			}
		}
		sh.recs, sh.noisy = nil, nil
		if i > 0 {
			sh.recv = nil
		}
	}
	for _, rv := range parts[0].recv {
		for _, v := range rv {
			recv.add(float64(v))
		}
	}
	parts = nil
	s.res.SendRate, s.res.Targets, s.res.Groups, s.res.Series, s.res.ReceiveRate = send.stats(), targets.stats(), groups.stats(), series.stats(), recv.stats()
	for _, t := range s.recs {
		s.res.Records += len(t)
	}
	s.localise()
	return &s.res, nil
}

// governorPeriod is how often the agent's Governor judges its host
// (internal/agent: every 10 s).
const governorPeriod = 10 * time.Second

// round0 is the first round's number: rounds are wall-clock multiples of
// the rotation (fleet.Planner.Round), so the run starts at some time of
// 2027.
const round0 = 1_800_000_000 / 30

// agent simulates agent a's whole run.
func (s *sim) agent(sh *shard, a int32, rounds int) error {
	cfg, f := s.cfg, s.f
	pl, err := s.idx.Planner(f.NICs[a], cfg.Settings, cfg.Seed)
	if err != nil {
		return err
	}
	agg := fleet.NewAggregator(cfg.MaxToRs)
	remarkedToRs := map[string]bool{} // peer ToR groups held with a marking-event series
	add := func(b int32, k fleet.Kind, c fleet.Counts, remarked bool) {
		if g, ok := agg.Add(flow, f.NICs[b], k, c); ok {
			delete(remarkedToRs, g.ToR)
		}
		if remarked && k != fleet.Mate {
			remarkedToRs[f.NICs[b].ToR] = true
		}
	}
	rot := cfg.Settings.Rotation
	perRound := int(rot / cfg.Tick)
	var gov *fleet.Governor
	var noisy *Fault
	for _, i := range s.byNIC[a] {
		if s.faults[i].Kind == NoisyHost {
			gov, noisy = fleet.NewGovernor(cfg.CPUBudget), &s.faults[i]
		}
	}
	scale := 1.0
	for r := range rounds {
		plan := pl.Plan(round0 + int64(r))
		rs := time.Duration(r) * rot
		re := rs + rot
		if r == 0 {
			sh.torWindow = max(sh.torWindow, plan.ToRWindow)
		}
		sh.targets.add(float64(len(plan.Targets)))
		// The Governor's scale per tick of the round (noisy hosts only).
		// The Governor's scale per tick of the round (noisy hosts only):
		// it judges each period (governorPeriod, as the agent) at its
		// end, from the share of the period the host was noisy, and its
		// scale holds for the next period; the period's results are
		// marked when it saw pressure, the mark known at the period's
		// end (its last tick).
		scales := make([]float64, perRound)
		perPeriod := max(1, int(governorPeriod/cfg.Tick))
		for k := range scales {
			scales[k] = scale
			if gov == nil || (k+1)%perPeriod != 0 {
				continue
			}
			t1 := rs + time.Duration(k+1)*cfg.Tick
			t0 := t1 - time.Duration(perPeriod)*cfg.Tick
			share := (min(t1, noisy.End) - max(t0, noisy.Start)).Seconds() / (t1 - t0).Seconds()
			smp := fleet.Sample{Wall: t1 - t0, Wakeups: 1000}
			if share > 0 {
				if a%2 == 0 {
					smp.Late = int(share * noisy.Late * 1000)
				} else {
					smp.CPU = time.Duration(share * 2 * cfg.CPUBudget * float64(t1-t0))
				}
			}
			var pressure string
			scale, pressure, _ = gov.Observe(smp)
			if pressure != fleet.PressureNone {
				tick := r*perRound + k
				sh.noisy[tick] = append(sh.noisy[tick], a)
			}
		}
		send := 0.0
		for k := range scales {
			send += plan.SendRate * scales[k] / float64(perRound)
		}
		sh.send.add(send)
		for _, tg := range plan.Targets {
			b := int32(tg.Peer)
			sh.recv[r][b] += float32(tg.Rate * scales[0])
			// Mates' probes count from the run's start (the same pair all
			// along), the sampled targets' from the round's.
			base := rs
			if tg.Kind == fleet.Mate {
				base = 0
			}
			if gov == nil && !s.touches(a, b, rs, re+cfg.Window) {
				n := probes(base, rs, re, tg.Rate)
				c := fleet.Counts{Sent: n, Answered: n}
				if u := uniform(cfg.Seed, 0xb9, uint64(a), uint64(b), uint64(r)); n > 0 && u < float64(n)*cfg.BackgroundLoss {
					c.Answered--
					c.Lost++
					k := int(mix(cfg.Seed, 0xba, uint64(a), uint64(b), uint64(r)) % uint64(perRound))
					i := probes(base, rs, rs+time.Duration(k)*cfg.Tick, tg.Rate)
					sh.add(r*perRound+k, rec{src: a, dst: b, kind: tg.Kind, sent: uint16(probes(base, rs+time.Duration(k)*cfg.Tick, rs+time.Duration(k+1)*cfg.Tick, tg.Rate)), lost: 1,
						nsp: 1, sports: [maxSports]SportObs{{Sport: tg.Sport(uint32(i)), Lost: 1}}})
				}
				add(b, tg.Kind, c, false)
				continue
			}
			var c fleet.Counts
			remarked := false
			for k := range perRound {
				t0 := rs + time.Duration(k)*cfg.Tick
				t1 := t0 + cfg.Tick
				rate := tg.Rate * scales[k]
				first := probes(base, base, t0, rate)
				n := probes(base, t0, t1, rate)
				rc := rec{src: a, dst: b, kind: tg.Kind, sent: uint16(n)}
				for j := range n {
					i := first + j
					sport := tg.Sport(uint32(i))
					at := t0 + time.Duration(float64(j)/float64(n)*float64(cfg.Tick))
					lost, remarkAt := s.probe(a, b, sport, at, i)
					if lost {
						rc.lost++
					} else if remarkAt > 0 {
						rc.remarked++
					}
					if lost || remarkAt > 0 {
						rc.note(sport, lost, remarkAt)
					}
				}
				c.Sent += n
				c.Lost += uint64(rc.lost)
				c.Answered += n - uint64(rc.lost)
				remarked = remarked || rc.remarked > 0
				sh.add(r*perRound+k, rc)
			}
			add(b, tg.Kind, c, remarked)
		}
	}
	g := agg.Len()
	sh.groups.add(float64(g))
	ser := SeriesPerAgent(pl.Mates(), g-pl.Mates(), len(remarkedToRs), cfg.WorstPairs)
	sh.series.add(float64(ser))
	sh.totalSeries += int64(ser)
	return nil
}

// SeriesPerAgent is the number of probe series an agent of the
// simulation exports at the end of the run, by the formula of
// docs/metrics.md ("How many series") with one untagged flow (F = 1,
// r = s = 3 marking fields received and sent), both scopes in use (S =
// 2), no marking events of ToR-mates (the simulated remarking is on the
// spine links), one (dscp, remarked) event series per peer-ToR group
// that saw remarking, and K worst pairs at most (two series each):
//
//	M·(3 + 3 + 3) + T·3 + e' + 2·14 + 2·K + 1 + 32
func SeriesPerAgent(mates, torGroups, remarkedGroups, worst int) int {
	return mates*(3+3+3) + torGroups*3 + remarkedGroups + 2*14 + 2*worst + 1 + 32
}

// probes is the number of probes a target at rate sends in [t0, t1), its
// probes counted from base (the i-th leaves at base + i/rate).
func probes(base, t0, t1 time.Duration, rate float64) uint64 {
	c := func(t time.Duration) uint64 { return uint64(math.Ceil((t-base).Seconds()*rate - 1e-9)) }
	return c(t1) - c(t0)
}

// note counts a lost probe, or one remarked from hop remarkAt on, of
// port sport.
func (rc *rec) note(sport uint16, lost bool, remarkAt uint8) {
	for i := range int(rc.nsp) {
		if o := &rc.sports[i]; o.Sport == sport {
			if lost {
				o.Lost++
			} else {
				o.Remarked++
				o.RemarkAt = cmp.Or(o.RemarkAt, remarkAt)
			}
			return
		}
	}
	if int(rc.nsp) < maxSports {
		o := SportObs{Sport: sport}
		if lost {
			o.Lost = 1
		} else {
			o.Remarked, o.RemarkAt = 1, remarkAt
		}
		rc.sports[rc.nsp] = o
		rc.nsp++
	}
}

func (sh *shard) add(tick int, rc rec) {
	if tick < len(sh.recs) && rc.sent > 0 {
		sh.recs[tick] = append(sh.recs[tick], rc)
	}
}

// touches says whether a fault acts on the pair's probes at some time in
// [t0, t1): one at either NIC, or on an uplink of either ToR when they
// differ.
func (s *sim) touches(a, b int32, t0, t1 time.Duration) bool {
	for _, l := range [...][]int32{s.byNIC[a], s.byNIC[b]} {
		for _, i := range l {
			if s.faults[i].overlaps(t0, t1) {
				return true
			}
		}
	}
	ta, tb := s.f.ToROf[a], s.f.ToROf[b]
	if ta == tb {
		return false
	}
	for _, l := range [...][]int32{s.byToR[ta], s.byToR[tb]} {
		for _, i := range l {
			if s.faults[i].overlaps(t0, t1) {
				return true
			}
		}
	}
	return false
}

// probe is the fate of probe number i from a to b with sport at time t:
// lost (the probe or its reply dropped, or answered or read too late), or
// answered with its DSCP remarked on the way there, remarkAt > 0 the
// first hop of its path that sees the new value (SportObs.RemarkAt): a
// link rewrites what crosses it, so the hop at its far end is the first
// to hold the new value — the spine for the link up from a's ToR, b's
// ToR for the link down to it.
func (s *sim) probe(a, b int32, sport uint16, t time.Duration, i uint64) (lost bool, remarkAt uint8) {
	seed := s.cfg.Seed
	draw := func(p float64, hop uint64) bool {
		return p > 0 && uniform(seed, 0xd1, uint64(a), uint64(b), uint64(sport), uint64(t), i, hop) < p
	}
	if draw(s.cfg.BackgroundLoss, 0) {
		return true, 0
	}
	for side, n := range [2]int32{a, b} {
		for _, fi := range s.byNIC[n] {
			ft := &s.faults[fi]
			if !ft.active(t) {
				continue
			}
			switch ft.Kind {
			case DeadNIC:
				return true, 0
			case LossyPort: // crossed twice: the probe and the reply
				if draw(ft.Loss, uint64(10+2*side)) || draw(ft.Loss, uint64(11+2*side)) {
					return true, 0
				}
			case NoisyHost:
				if draw(ft.Loss, uint64(14+side)) {
					return true, 0
				}
			}
		}
	}
	ta, tb := s.f.ToROf[a], s.f.ToROf[b]
	if ta == tb {
		return false, 0
	}
	fwd, back := s.f.Spine(a, b, sport), s.f.Spine(b, a, sport)
	// A link fault at ToR tor: the probe goes up at a's ToR and down at
	// b's, the reply up at b's and down at a's.
	for side, tor := range [2]int32{ta, tb} {
		for _, fi := range s.byToR[tor] {
			ft := &s.faults[fi]
			if !ft.active(t) {
				continue
			}
			probeDir, replyDir := Up, Down
			if side == 1 {
				probeDir, replyDir = Down, Up
			}
			onProbe := fwd == ft.Spine && ft.Dir&probeDir != 0
			onReply := back == ft.Spine && ft.Dir&replyDir != 0
			switch ft.Kind {
			case LossyLink:
				if (onProbe && draw(ft.Loss, uint64(20+2*side))) || (onReply && draw(ft.Loss, uint64(21+2*side))) {
					return true, 0
				}
			case RemarkLink:
				// Up from a's ToR: the spine (hop 2) sees it first; down
				// to b's: b's ToR (hop 3). The first along the path wins.
				if hop := uint8(2 + side); onProbe && (remarkAt == 0 || hop < remarkAt) {
					remarkAt = hop
				}
			}
		}
	}
	return false, remarkAt
}

// localise runs the Localizer every tick over the last window and scores
// what it names; without one, it only finds each fault's first evidence.
func (s *sim) localise() {
	cfg := s.cfg
	res := &s.res
	res.Faults = make([]FaultResult, len(s.faults))
	for i, ft := range s.faults {
		res.Faults[i] = FaultResult{Fault: ft, Evidence: -1, Detected: -1}
	}
	perWindow := int(cfg.Window / cfg.Tick)
	type key struct {
		src, dst int32
		kind     fleet.Kind
	}
	seen := map[string]bool{} // suspects per epoch
	streak := map[Suspect]int{}
	for k := 1; k <= s.ticks; k++ {
		at := time.Duration(k) * cfg.Tick
		merged := map[key]*PairObs{}
		var order []key
		noisy := map[int32]bool{}
		for t := max(0, k-perWindow); t < k; t++ {
			for _, rc := range s.recs[t] {
				kk := key{rc.src, rc.dst, rc.kind}
				o := merged[kk]
				if o == nil {
					o = &PairObs{Src: rc.src, Dst: rc.dst, Kind: rc.kind}
					merged[kk] = o
					order = append(order, kk)
				}
				o.Sent += uint32(rc.sent)
				o.Lost += uint32(rc.lost)
				o.Remarked += uint32(rc.remarked)
				for _, sp := range rc.sports[:rc.nsp] {
					if j := slices.IndexFunc(o.Sports, func(x SportObs) bool { return x.Sport == sp.Sport }); j >= 0 {
						o.Sports[j].Lost += sp.Lost
						o.Sports[j].Remarked += sp.Remarked
						o.Sports[j].RemarkAt = cmp.Or(o.Sports[j].RemarkAt, sp.RemarkAt)
					} else if len(o.Sports) < maxSports {
						o.Sports = append(o.Sports, sp)
					}
				}
			}
			for _, a := range s.noisy[t] {
				noisy[a] = true
			}
		}
		in := Input{Fabric: s.f, At: at, Window: cfg.Window}
		for _, kk := range order {
			if o := merged[kk]; o.Lost > 0 || o.Remarked > 0 {
				in.Pairs = append(in.Pairs, *o)
			}
		}
		for a := range noisy {
			in.Noisy = append(in.Noisy, a)
		}
		slices.Sort(in.Noisy)
		// Evidence: a lost or remarked probe of a pair the fault touches.
		for i := range res.Faults {
			fr := &res.Faults[i]
			if fr.Evidence >= 0 || at <= fr.Start || at-cfg.Window >= fr.End {
				continue
			}
			for _, o := range in.Pairs {
				if s.caused(fr.Fault, o) {
					fr.Evidence = at - fr.Start
					break
				}
			}
		}
		if cfg.Localize == nil {
			continue
		}
		epoch := int((at - 1) / cfg.Epoch) // a window ending at an epoch's end is of that epoch
		named := map[Suspect]int{}
		for _, sus := range cfg.Localize(in) {
			named[sus] = streak[sus] + 1
		}
		streak = named
		for _, sus := range sortedSuspects(named) {
			if named[sus] < max(cfg.Persist, 1) {
				continue
			}
			hit := false
			for i := range res.Faults {
				fr := &res.Faults[i]
				if at > fr.Start && at-cfg.Window < fr.End && Matches(sus, fr.Fault) {
					hit = true
					if fr.Detected < 0 {
						fr.Detected = at - fr.Start
					}
				}
			}
			id := fmt.Sprintf("%d %s", epoch, sus)
			if seen[id] {
				continue
			}
			seen[id] = true
			if hit {
				res.TruePositives++
				res.Suspects[sus.Kind].Right++
			} else {
				res.FalsePositives++
				res.Suspects[sus.Kind].Wrong++
				if len(res.FalseSuspects) < 20 {
					res.FalseSuspects = append(res.FalseSuspects, fmt.Sprintf("at %v: %s", at, sus))
				}
			}
		}
	}
	detected := 0
	res.Recall, res.Precision = math.NaN(), math.NaN()
	for _, fr := range res.Faults {
		res.Kinds[fr.Kind].Faults++
		if fr.Detected >= 0 && fr.Detected <= cfg.DetectBy {
			res.Kinds[fr.Kind].Named++
		}
		if fr.Evidence < 0 {
			res.EvidenceMissing++
		} else {
			res.EvidenceMax = max(res.EvidenceMax, fr.Evidence)
		}
		if fr.Detected < 0 {
			res.Undetected++
		} else {
			res.DetectMax = max(res.DetectMax, fr.Detected)
			if fr.Detected <= cfg.DetectBy {
				detected++
			}
		}
	}
	var times []time.Duration
	for _, fr := range res.Faults {
		if fr.Detected >= 0 {
			times = append(times, fr.Detected)
		}
	}
	if len(times) > 0 {
		slices.Sort(times)
		res.DetectMedian = times[len(times)/2]
		res.Detect95 = times[min(len(times)-1, (len(times)*95+99)/100-1)]
	}
	if cfg.Localize != nil && len(res.Faults) > 0 {
		res.Recall = float64(detected) / float64(len(res.Faults))
		if n := res.TruePositives + res.FalsePositives; n > 0 {
			res.Precision = float64(res.TruePositives) / float64(n)
		}
	}
	for k := range res.Kinds {
		ks := &res.Kinds[k]
		ks.Recall = math.NaN()
		if cfg.Localize != nil && ks.Faults > 0 {
			ks.Recall = float64(ks.Named) / float64(ks.Faults)
		}
	}
	for k := range res.Suspects {
		ss := &res.Suspects[k]
		ss.Precision = math.NaN()
		if n := ss.Right + ss.Wrong; n > 0 {
			ss.Precision = float64(ss.Right) / float64(n)
		}
	}
}

func sortedSuspects(m map[Suspect]int) []Suspect {
	out := make([]Suspect, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Suspect) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.NIC, b.NIC), cmp.Compare(a.ToR, b.ToR), cmp.Compare(a.Spine, b.Spine))
	})
	return out
}

// caused says whether observation o can be fault f's doing: a pair with
// the fault's NIC at one end, or, for a link, an inter-ToR pair with the
// link's ToR at one end.
func (s *sim) caused(f Fault, o PairObs) bool {
	if f.NIC >= 0 {
		return (o.Src == f.NIC || o.Dst == f.NIC) && o.Lost > 0
	}
	ta, tb := s.f.ToROf[o.Src], s.f.ToROf[o.Dst]
	if ta == tb || (ta != f.ToR && tb != f.ToR) {
		return false
	}
	if f.Kind == RemarkLink {
		return o.Remarked > 0
	}
	return o.Lost > 0
}

// WriteSummary writes the run's figures as docs/performance.md shows them.
func (r *Result) WriteSummary(w io.Writer, cfg Config) {
	fmt.Fprintf(w, "fabric: %d NICs in %d ToRs (%d..%d NICs each), %d spines; %d rounds of %v (%v simulated)\n",
		r.NICs, r.ToRs, cfg.MinPerToR, cfg.MaxPerToR, r.Spines, r.Rounds, cfg.Settings.Rotation, time.Duration(r.Rounds)*cfg.Settings.Rotation)
	fmt.Fprintf(w, "probes/s sent per agent:      mean %6.1f  max %6.1f  (cap %g)\n", r.SendRate.Mean, r.SendRate.Max, cfg.Settings.SendCap)
	fmt.Fprintf(w, "probes/s received per NIC:    mean %6.1f  max %6.1f  (share %g)\n", r.ReceiveRate.Mean, r.ReceiveRate.Max, cfg.Settings.ReceiveShare)
	fmt.Fprintf(w, "targets per agent and round:  mean %6.1f  max %6.0f\n", r.Targets.Mean, r.Targets.Max)
	fmt.Fprintf(w, "aggregator groups per agent:  mean %6.1f  max %6.0f  (ToR groups bounded by %d)\n", r.Groups.Mean, r.Groups.Max, cfg.MaxToRs)
	fmt.Fprintf(w, "probe series per agent:       mean %6.1f  max %6.0f  all agents %d\n", r.Series.Mean, r.Series.Max, r.TotalSeries)
	fmt.Fprintf(w, "every ToR pair probed within: %v\n", r.ToRWindow)
	fmt.Fprintf(w, "faults: %d; first evidence within %v (%d never)\n", len(r.Faults), r.EvidenceMax, r.EvidenceMissing)
	if cfg.Localize != nil {
		fmt.Fprintf(w, "localisation: recall %.3f (named within %v), precision %.3f (%d right, %d wrong suspects); named after median %v, 95th percentile %v, slowest %v; %d never named\n",
			r.Recall, cfg.DetectBy, r.Precision, r.TruePositives, r.FalsePositives, r.DetectMedian, r.Detect95, r.DetectMax, r.Undetected)
		for k, ks := range r.Kinds {
			fk := FaultKind(k)
			ss := r.Suspects[fk.Names()]
			fmt.Fprintf(w, "  %-11s %3d faults, recall %.3f (%d named within %v); precision of %s suspects %.3f (%d right, %d wrong)\n",
				fk, ks.Faults, ks.Recall, ks.Named, cfg.DetectBy, fk.Names(), ss.Precision, ss.Right, ss.Wrong)
		}
		for _, k := range []SuspectKind{SuspectToR, SuspectSpine} {
			if ss := r.Suspects[k]; ss.Right+ss.Wrong > 0 {
				fmt.Fprintf(w, "  %s suspects (no fault of the run is one): %d\n", k, ss.Wrong)
			}
		}
		for _, s := range r.FalseSuspects {
			fmt.Fprintf(w, "  false suspect %s\n", s)
		}
		for _, f := range r.Faults {
			if f.Detected < 0 || f.Detected > cfg.DetectBy {
				fmt.Fprintf(w, "  missed %v (named after %v)\n", f.Fault, f.Detected)
			}
		}
	}
	fmt.Fprintf(w, "kept %d pair-tick records\n", r.Records)
}
